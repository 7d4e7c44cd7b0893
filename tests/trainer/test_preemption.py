"""Runs that are killed and run again: ``checkpoint.every_steps``, SIGTERM, ``--resume`` anywhere.

In-process: a SIGTERM mid-epoch (raised at a chosen step) ends the step, writes a
mid-epoch checkpoint and raises ``Preempted``; the resume goes on at the next batch and
ends with the uninterrupted run's weights, history and test metrics, bit for bit (Dropout
and a shuffled order included); a negative control (the batches done replayed) differs.
``--resume`` on a missing or empty directory starts the run.  Across processes (the real
command SIGKILLed and SIGTERMed at random moments, then run again): test_resume.py, and
tests/distribute/test_mpi_train.py under ``mpiexec -n 2``.
"""
import io
import signal

import numpy as np
import pytest

from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training.checkpointing import RunCheckpoints
from tapeflow.training.run_config import parse_config
from tapeflow.training.errors import ConfigError, Preempted
from tapeflow.training.run import train

from .helpers import small_config
from .test_resume import PROBE

# housing's 11,610 training rows in batches of 256: 46 steps an epoch
STEPS = 46
CONFIG = small_config(training={"epochs": 2}, checkpoint={"every_steps": 10})


def _sigterm_at(monkeypatch, epoch, done):
    """A real SIGTERM to this process as step ``done`` of epoch ``epoch`` (0-based) ends."""
    real = RunCheckpoints.end_of_step

    def end_of_step(self, e, d, steps):
        if (e, d) == (epoch, done):
            signal.raise_signal(signal.SIGTERM)  # the handler runs before the next bytecode
        return real(self, e, d, steps)

    monkeypatch.setattr(RunCheckpoints, "end_of_step", end_of_step)


def _same_run(a, b):
    for x, y in zip(a.model.get_weights(), b.model.get_weights()):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.model.predict(PROBE), b.model.predict(PROBE))
    assert a.history == b.history
    assert a.test_metrics == b.test_metrics


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    return train(CONFIG, output=tmp_path_factory.mktemp("whole") / "run", verbose=False)


def test_sigterm_mid_epoch_then_resume_equals_the_uninterrupted_run(whole, tmp_path,
                                                                    monkeypatch):
    before = signal.getsignal(signal.SIGTERM)
    _sigterm_at(monkeypatch, 1, 25)
    with pytest.raises(Preempted, match="after epoch 2, step 25") as stopped:
        train(CONFIG, output=tmp_path / "run", verbose=False)
    assert signal.getsignal(signal.SIGTERM) is before  # the run's handler is gone
    # the step checkpoint it wrote; the older step one (epoch 2, step 24) pruned
    assert stopped.value.path == ckpt_io.step_path(str(tmp_path / "run"), 1, 25)
    names = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert names == ["best.h5", "epoch-0001-step-000025.h5", "epoch-0001.h5"]
    ckpt = ckpt_io.read_checkpoint(stopped.value.path)
    assert (ckpt.epoch, ckpt.training["step"]) == (1, 25)
    monkeypatch.undo()
    out = io.StringIO()
    resumed = train(CONFIG, output=tmp_path / "run", resume=True, stream=out)
    assert f"going on from {stopped.value.path} (after epoch 2, step 25)" in out.getvalue()
    _same_run(whole, resumed)
    # the epoch checkpoint at its end replaced the step checkpoint
    assert not ckpt_io.step_checkpoints(str(tmp_path / "run"))


def test_sigterm_at_an_epochs_last_step_writes_that_epochs_checkpoint(whole, tmp_path,
                                                                      monkeypatch):
    config = small_config(training={"epochs": 2}, checkpoint={"every": 5, "every_steps": 10})
    _sigterm_at(monkeypatch, 0, STEPS)
    with pytest.raises(Preempted, match="after epoch 1;") as stopped:
        train(config, output=tmp_path / "run", verbose=False)
    assert stopped.value.path == ckpt_io.epoch_path(str(tmp_path / "run"), 1)  # every: 5
    monkeypatch.undo()
    _same_run(whole, train(config, output=tmp_path / "run", resume=True, verbose=False))


def test_negative_control_replaying_the_epochs_done_steps_differs(whole, tmp_path, monkeypatch):
    _sigterm_at(monkeypatch, 1, 25)
    with pytest.raises(Preempted):
        train(CONFIG, output=tmp_path / "run", verbose=False)
    monkeypatch.undo()
    # a resume that forgets the steps done (fit starts the epoch over, on a fresh order)
    monkeypatch.setattr(RunCheckpoints, "on_train_begin", lambda self, logs=None: None)
    resumed = train(CONFIG, output=tmp_path / "run", resume=True, verbose=False)
    assert not np.array_equal(whole.model.predict(PROBE), resumed.model.predict(PROBE))


def test_resume_on_a_directory_without_a_run_starts_it(tmp_path):
    # what a first run killed before its config.yaml leaves (a missing directory: the
    # command-line test below starts there)
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / ".tmp-abc.part").write_text("half a config")
    out = io.StringIO()
    config = small_config(training={"epochs": 1})
    run = train(config, output=run_dir, resume=True, stream=out)
    assert f"--resume: {run_dir} holds no run yet; starting it" in out.getvalue()
    assert run.history["loss"] and (run_dir / "model.h5").exists()
    assert not list(run_dir.glob(".tmp-*"))


@pytest.mark.parametrize("value", [0, -3, 2.5, "ten"])
def test_every_steps_out_of_range_is_one_error_naming_it(value):
    config = small_config(checkpoint={"every_steps": value})
    with pytest.raises(ConfigError, match="checkpoint.every_steps"):
        parse_config(config, "run.yaml")


def test_every_steps_may_change_on_resume(whole, tmp_path):
    """It changes when checkpoints are written, never what is trained."""
    head = small_config(training={"epochs": 1})  # no every_steps
    train(head, output=tmp_path / "run", verbose=False)
    _same_run(whole, train(CONFIG, output=tmp_path / "run", resume=True, verbose=False))
