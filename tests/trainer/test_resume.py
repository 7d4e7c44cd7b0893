"""Resuming a run gives exactly the run that never stopped.

In-process: training N epochs, then resuming to M, equals training M at once,
weights and predictions bit for bit; a negative control (the random state not
restored) shows the comparison can fail.  Across processes: the real command
(``--resume`` from the first run, on a directory that does not exist yet) stopped by
SIGTERM and SIGKILL at random moments, mid-epoch included, then run again, writes
byte-identical predictions; a process killed in the middle of a checkpoint write leaves the
previous checkpoint whole and a temporary that the next run removes.
"""
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training import checkpointing
from tapeflow.training.inference import predict_csv
from tapeflow.training.preemption import PREEMPTED_STATUS
from tapeflow.training.run import train

from .helpers import cli, small_config, write_config

PROBE = np.linspace(-2, 6, 8 * 5, dtype=np.float32).reshape(5, 8) * np.float32(
    [1, 10, 1, 1, 100, 1, 5, 10])


def _weights(model):
    return [np.array(w) for w in model.get_weights()]


def _train_in_two(tmp_path, config, first, total, name="split"):
    head = small_config(**config)
    head["training"] = dict(head["training"], epochs=first)
    train(head, output=tmp_path / name, verbose=False)
    full = small_config(**config)
    full["training"] = dict(full["training"], epochs=total)
    return train(full, output=tmp_path / name, resume=True, verbose=False)


def _train_at_once(tmp_path, config, total, name="whole"):
    full = small_config(**config)
    full["training"] = dict(full["training"], epochs=total)
    return train(full, output=tmp_path / name, verbose=False)


@pytest.mark.parametrize("first", [1, 3])
def test_resumed_run_equals_the_uninterrupted_run(tmp_path, first):
    whole = _train_at_once(tmp_path, {}, 5)
    split = _train_in_two(tmp_path, {}, first, 5)
    for a, b in zip(_weights(whole.model), _weights(split.model)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(whole.model.predict(PROBE), split.model.predict(PROBE))
    assert whole.history == split.history
    assert whole.test_metrics == split.test_metrics


def test_resume_restores_early_stopping_and_best_checkpoint(tmp_path):
    early = {"training": dict(small_config()["training"], early_stopping={
        "monitor": "val_loss", "patience": 2, "restore_best_weights": True})}
    whole = _train_at_once(tmp_path, early, 12)
    # stopped at epoch `stop` (6 on the CPU; Dropout's masks are the device's own on a GPU):
    # its best was epoch stop - 2, so the resume at stop - 1 starts one epoch into its
    # patience, with Adam's moments and the best weights so far to carry over
    stop = len(whole.history["loss"])
    assert 3 <= stop < 12 and (stop == 6 or tf.config.get_default_device() != "CPU:0")
    split = _train_in_two(tmp_path, early, stop - 1, 12)
    assert whole.history == split.history
    np.testing.assert_array_equal(whole.model.predict(PROBE), split.model.predict(PROBE))


def test_negative_control_without_the_random_state_resume_differs(tmp_path, monkeypatch):
    whole = _train_at_once(tmp_path, {}, 4)
    monkeypatch.setattr(checkpointing.one_checkpoint, "restore_random_state", lambda ckpt: None)
    split = _train_in_two(tmp_path, {}, 2, 4)
    assert not np.array_equal(whole.model.predict(PROBE), split.model.predict(PROBE))


def test_checkpoint_holds_the_whole_training_state(tmp_path):
    run = train(small_config(), output=tmp_path / "run", verbose=False)
    ckpt = ckpt_io.read_checkpoint(ckpt_io.epoch_path(run.run_dir, 4))
    assert ckpt.epoch == 4 and ckpt.config == run.config
    assert set(ckpt.optimizer_state) == set(run.model.optimizer.get_state())
    assert [k for k in ckpt.training["history"]] == ["loss", "mae", "val_loss", "val_mae"]
    assert ckpt.training["feature_names"][0] == "MedInc"
    seed, _, _ = ckpt.random_state
    assert seed == run.config["training"]["seed"] == 7
    # keep_last: 2 epoch checkpoints remain, and the best one
    names = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert names == ["best.h5", "epoch-0003.h5", "epoch-0004.h5"]
    # a checkpoint is a Keras save: load_model reads it and predicts like the model
    loaded = tf.keras.models.load_model(tmp_path / "run" / "model.h5")
    np.testing.assert_array_equal(loaded.predict(PROBE), run.model.predict(PROBE))


def test_resume_of_a_run_killed_before_its_first_checkpoint(tmp_path):
    whole = _train_at_once(tmp_path, {}, 3)
    run_dir = tmp_path / "early"
    write_config(tmp_path / "c.yaml", small_config())
    # what a kill before the first checkpoint leaves: the resolved config alone
    (run_dir).mkdir()
    (run_dir / "config.yaml").write_text((pathlib.Path(whole.run_dir) / "config.yaml").read_text())
    cfg = small_config()
    cfg["training"] = dict(cfg["training"], epochs=3)
    resumed = train(cfg, output=run_dir, resume=True, verbose=False)
    np.testing.assert_array_equal(whole.model.predict(PROBE), resumed.model.predict(PROBE))


# --- across processes, with SIGKILL and SIGTERM ------------------------------------------------------
# 5 epochs of 182 steps (batch 64), a mid-epoch checkpoint every 25 steps
KILL_CONFIG = {"training": {"epochs": 5, "batch_size": 64, "seed": 3},
               "checkpoint": {"every_steps": 25}}


def _checkpoint_names(run_dir):
    where = run_dir / "checkpoints"
    return {p.name for p in where.glob("*.h5")} if where.is_dir() else set()


def _predict_bytes(run_dir, tmp_path, name):
    """What ``tapeflow predict RUN_DIR`` writes for 50 housing rows (its code, in-process)."""
    x_csv = tmp_path / "x.csv"
    if not x_csv.exists():
        from sklearn.datasets import fetch_california_housing
        h = fetch_california_housing()
        rows = [",".join(h.feature_names)] + [",".join(repr(float(v)) for v in r)
                                              for r in h.data[:50]]
        x_csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / f"{name}.csv"
    predict_csv(ckpt_io.resolve_checkpoint(run_dir), x_csv, out)
    return out.read_bytes()


@pytest.mark.child_process
def test_sigkill_and_sigterm_at_random_moments_then_the_same_command(tmp_path):
    config = write_config(tmp_path / "run.yaml", small_config(**KILL_CONFIG))
    train(config, output=tmp_path / "whole", verbose=False)  # uninterrupted
    expected = _predict_bytes(tmp_path / "whole", tmp_path, "whole")

    target = tmp_path / "killed"  # does not exist yet: the first --resume starts the run
    command = [sys.executable, "-m", "tapeflow.cli", "train", str(config), "--output",
               str(target), "--resume"]
    rng = random.Random(1234)
    outcomes = []
    for how in (signal.SIGTERM, signal.SIGKILL, signal.SIGTERM):
        before = _checkpoint_names(target)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        # once this run has written a checkpoint (it is training), a random moment:
        # mid-epoch, in a checkpoint write, between epochs
        while _checkpoint_names(target) <= before and proc.poll() is None:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.3))
        if proc.poll() is None:
            proc.send_signal(how)
        out, err = proc.communicate(timeout=120)
        outcomes.append(proc.returncode)
        assert out.startswith("--resume: "), out  # where it starts, or goes on from
        if proc.returncode == PREEMPTED_STATUS:  # a checkpoint written, and said so
            assert how == signal.SIGTERM and "--resume goes on from it" in err, err
        elif proc.returncode != 0:
            assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
    assert outcomes[:2] == [PREEMPTED_STATUS, -signal.SIGKILL], \
        f"{outcomes}: the runs ended before they were stopped; lengthen KILL_CONFIG"
    if outcomes[-1] != 0:
        final = cli("train", config, "--output", target, "--resume")
        assert final.returncode == 0, final.stderr
    assert _predict_bytes(target, tmp_path, "killed") == expected
    assert not list((target / "checkpoints").glob(".tmp-*"))


WRITER = textwrap.dedent("""
    import sys, time
    import tapeflow.saving.format as fmt
    from tapeflow.training.run import train
    cfg = {config!r}
    train(cfg, output=sys.argv[1], verbose=False)   # a finished run: its checkpoints
    real_create = fmt._create
    def slow_create(group, name, arr):
        real_create(group, name, arr)
        if name == "3":                  # part-way through the next write
            print("writing", flush=True)
            time.sleep(60)
    fmt._create = slow_create
    from tapeflow.training import checkpoint
    import tapeflow as tf
    model = tf.keras.models.load_model(sys.argv[1] + "/model.h5")
    model.compile(optimizer="adam", loss="mse")
    ckpt = checkpoint.read_checkpoint(sys.argv[1] + "/checkpoints/epoch-0002.h5")
    checkpoint.write_checkpoint(sys.argv[1] + "/checkpoints/epoch-0002.h5", model,
                                ckpt.training)
""")


@pytest.mark.child_process
def test_sigkill_during_a_checkpoint_write_keeps_the_previous_checkpoint(tmp_path):
    cfg = small_config(training={"epochs": 2})
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(config=cfg))
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing", proc.stderr.read()
        before = (run_dir / "checkpoints" / "epoch-0002.h5").read_bytes()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    stale = list((run_dir / "checkpoints").glob(".tmp-*.part"))
    assert stale, "the kill should have left the half-written temporary"
    assert (run_dir / "checkpoints" / "epoch-0002.h5").read_bytes() == before
    ckpt_io.read_checkpoint(run_dir / "checkpoints" / "epoch-0002.h5")  # whole
    # a resume that trains on removes the temporary
    more = small_config(training={"epochs": 3})
    train(more, output=run_dir, resume=True, verbose=False)
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))

