"""The trainer on a "GPU" (the strict stand-in): ``device: gpu`` trains the same numbers as the
CPU, its data reach the device once, and its checkpoints resume on either device.  Dropout's
masks are drawn on the device (Philox), not the CPU's numbers: with Dropout a GPU run equals
itself (same seed, or stopped and resumed), not the CPU's run."""
import copy

import numpy as np
import pytest

from tapeflow import backend, cli
from tapeflow.training.run import train
from tests.trainer.helpers import small_config

from strict_device.strict_array import StrictArray


def _weights(run):
    return [np.asarray(w) for w in run.model.get_weights()]


def _without_dropout(**sections):
    config = small_config(**sections)
    config["model"] = copy.deepcopy(config["model"])
    config["model"]["layers"] = [layer for layer in config["model"]["layers"]
                                 if "Dropout" not in layer]
    return config


@pytest.fixture
def cpu_run(tmp_path):
    return train(_without_dropout(), output=tmp_path / "cpu", device="cpu", verbose=False)


def test_device_gpu_trains_the_numbers_the_cpu_trains(strict_gpu, tmp_path, cpu_run):
    gpu_run = train(_without_dropout(), output=tmp_path / "gpu", device="gpu", verbose=False)
    assert all(isinstance(v._value, StrictArray) for v in gpu_run.model.variables)
    for a, b in zip(_weights(cpu_run), _weights(gpu_run)):
        np.testing.assert_array_equal(b, a)
    assert gpu_run.history == cpu_run.history
    assert gpu_run.test_metrics == cpu_run.test_metrics
    assert gpu_run.config["device"] == "gpu"


def test_a_gpu_checkpoint_resumes_on_the_cpu_and_back(strict_gpu, tmp_path, cpu_run):
    train(_without_dropout(training={"epochs": 2}), output=tmp_path / "run", device="gpu",
          verbose=False)  # stops after epoch 2
    on_cpu = train(_without_dropout(training={"epochs": 3}), output=tmp_path / "run",
                   resume=True, device="cpu", verbose=False)
    assert all(type(v._value) is np.ndarray for v in on_cpu.model.variables)
    back = train(_without_dropout(), output=tmp_path / "run", resume=True, device="gpu",
                 verbose=False)
    assert all(isinstance(v._value, StrictArray) for v in back.model.variables)
    for a, b in zip(_weights(cpu_run), _weights(back)):
        np.testing.assert_array_equal(b, a)  # as if it had never stopped or moved


def test_with_dropout_a_gpu_run_is_reproducible_and_resumes_as_if_never_stopped(strict_gpu,
                                                                                tmp_path):
    whole = train(small_config(), output=tmp_path / "whole", device="gpu", verbose=False)
    again = train(small_config(), output=tmp_path / "again", device="gpu", verbose=False)
    train(small_config(training={"epochs": 2}), output=tmp_path / "run", device="gpu",
          verbose=False)
    resumed = train(small_config(), output=tmp_path / "run", resume=True, device="gpu",
                    verbose=False)
    on_cpu = train(small_config(), output=tmp_path / "cpu", device="cpu", verbose=False)
    for a, b, c in zip(_weights(whole), _weights(again), _weights(resumed)):
        np.testing.assert_array_equal(b, a)
        np.testing.assert_array_equal(c, a)
    # the masks are the device's own: the CPU's run differs
    assert any(not np.array_equal(a, d) for a, d in zip(_weights(whole), _weights(on_cpu)))


def test_the_cli_takes_device_gpu(strict_gpu, tmp_path, capsys):
    import yaml
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(small_config(training={"epochs": 1})))
    assert cli.main(["train", str(path), "--device", "gpu", "--output", str(tmp_path / "run")]) == 0
    assert "device: gpu" in (tmp_path / "run" / "config.yaml").read_text()


def test_without_a_gpu_the_trainer_names_what_is_missing(monkeypatch):
    from tapeflow.training.errors import ConfigError
    monkeypatch.setattr(backend, "gpu_missing", lambda: "CuPy is not installed; install it")
    with pytest.raises(ConfigError, match="device gpu: CuPy is not installed; install it"):
        train(small_config(), output="unused", device="gpu", verbose=False)


def _overflowing_config(batch_size, steps):
    """``steps`` steps an epoch at a sane rate, then 1e6: the loss overflows early in epoch 2."""
    config = small_config(training={"epochs": 4, "batch_size": batch_size},
                          optimizer={"name": "sgd", "schedule": {
                              "name": "ExponentialDecay",
                              "options": {"initial_learning_rate": 0.01, "decay_steps": steps,
                                          "decay_rate": 1e8, "staircase": True}}})
    del config["optimizer"]["learning_rate"]
    return config


@pytest.mark.parametrize("device, batch_size, steps, at", [
    ("cpu", 256, 46, r"at epoch 2, step \d+;"),
    ("gpu", 256, 46, r"at epoch 2, by step (20|40|46);"),
    ("gpu", 1024, 12, r"at epoch 2, by step 12;")])  # read at the epoch's end only
def test_a_nan_loss_stops_the_run_reading_the_gpu_loss_every_20_steps(
        strict_gpu, tmp_path, device, batch_size, steps, at):
    from tapeflow.training.errors import TrainingError
    with pytest.raises(TrainingError, match="the loss became (nan|inf) " + at):
        train(_overflowing_config(batch_size, steps), output=tmp_path / "run", device=device,
              verbose=False)
    kept = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert kept == ["best.h5", "epoch-0001.h5"]  # nothing written after the NaN


def test_the_trainer_reads_the_gpu_once_per_20_steps_not_every_step(strict_gpu, tmp_path):
    from strict_device.strict_array import syncs

    def reads(batch_size):
        before = syncs()
        train(small_config(training={"epochs": 1, "batch_size": batch_size}),
              output=tmp_path / str(batch_size), device="gpu", verbose=False)
        return syncs() - before
    few, many = reads(256), reads(32)  # 46 and 363 steps
    assert many - few <= (363 - 46) // 20 + 2, (few, many)
