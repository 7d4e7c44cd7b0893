"""Issue 20, item 1: a trainer checkpoint keeps each callback's state under its ``state_key``
(Lightning's ``Callback.state_key``); a run directory written before, whose checkpoints keep
it under the fixed keys ``early_stopping`` and ``best``, still resumes.

``fixtures/old_keys_run`` is such a run, written by the code before the keying: 2 of the tiny
config's epochs with early stopping (restore_best_weights, so arrays too) and a best
checkpoint; its config reads ``data.csv`` beside the config file."""
import shutil

import numpy as np

from tapeflow.saving import training_checkpoint as one_checkpoint
from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training import checkpointing
from tapeflow.training.inference import describe_checkpoint
from tapeflow.training.run import train

from .helpers import rewrite, tiny_config, write_config, write_tiny_csv

FIXTURE = __import__("pathlib").Path(__file__).parent / "fixtures" / "old_keys_run"
STOPPING = "EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"
BEST = "RunCheckpoints{'monitor': 'val_loss', 'mode': 'min'}"
OLD_STATE = {"early_stopping": {"wait": 0, "best": 1.7751175165176392, "best_epoch": 1,
                                "stopped_epoch": 0},
             "best": {"value": 1.7751175165176392, "epoch": 1}}


def _old_run(tmp_path, name="run", epochs=4):
    """A copy of the fixture run, its data file and a config asking for ``epochs``."""
    run_dir = tmp_path / name
    shutil.copytree(FIXTURE, run_dir)
    if not (tmp_path / "data.csv").exists():
        write_tiny_csv(tmp_path / "data.csv")
    config = tiny_config("data.csv", training={"epochs": epochs, "early_stopping": {
        "monitor": "val_loss", "patience": 3, "restore_best_weights": True}})
    return run_dir, write_config(tmp_path / "run.yaml", config)


def _recorded_restores(monkeypatch):
    """The states the resume hands each kept callback's set_state, by class."""
    seen = {}
    real = one_checkpoint.restore_callback

    def record(ckpt, key, callback, state=None):
        real(ckpt, key, callback, state)
        seen[type(callback).__name__] = callback.get_state()
    monkeypatch.setattr(checkpointing.one_checkpoint, "restore_callback", record)
    return seen


def test_the_fixture_keeps_the_fixed_keys():
    ckpt = ckpt_io.read_checkpoint(FIXTURE / "checkpoints" / "epoch-0002.h5")
    assert set(ckpt.training["callbacks"]) == {"early_stopping", "best"}
    assert "early_stopping/best_weights/0" in ckpt.arrays
    assert "best val_loss: 1.7751 (epoch 2)" in "\n".join(describe_checkpoint(ckpt))


def test_a_run_of_the_fixed_keys_resumes_with_their_state(tmp_path, monkeypatch):
    run_dir, config = _old_run(tmp_path)
    seen = _recorded_restores(monkeypatch)
    run = train(config, output=run_dir, resume=True, verbose=False)
    stopping = seen["EarlyStopping"]
    assert {k: stopping[k] for k in OLD_STATE["early_stopping"]} == OLD_STATE["early_stopping"]
    assert len(stopping["best_weights"]) == 6  # the normalization's, and the 2-4-1 MLP's
    assert seen["RunCheckpoints"] == {"best": 1.7751175165176392, "best_epoch": 1}
    assert len(run.history["loss"]) == 4
    # what it writes on is keyed by state_key
    ckpt = ckpt_io.read_checkpoint(ckpt_io.epoch_path(run_dir, 4))
    assert set(ckpt.training["callbacks"]) == {STOPPING, BEST}
    assert f"{STOPPING}/best_weights/0" in ckpt.arrays


def _as_state_keys(document):
    """The fixture's training entry with its states moved to the state_key keys."""
    training = document["training"]
    callbacks = training["callbacks"]
    best = callbacks.pop("best")
    callbacks[BEST] = {"best": best["value"], "best_epoch": best["epoch"]}
    callbacks[STOPPING] = callbacks.pop("early_stopping")
    training["arrays"] = {name.replace("early_stopping/", f"{STOPPING}/"): ref
                          for name, ref in training["arrays"].items()}


def test_the_fixed_keys_resume_as_the_state_keys_do(tmp_path):
    """The same state under either keys: the resumed runs are the same, bit for bit.  The
    state is edited (EarlyStopping's best as if far better than any loss, so that it counts
    to its patience, stops and restores the epoch-2 weights) so that a resume which lost it
    trains another run."""
    old_dir, config = _old_run(tmp_path, "old", epochs=6)
    new_dir, _ = _old_run(tmp_path, "new", epochs=6)

    def better_best(key):
        def edit(document):
            document["training"]["callbacks"][key]["best"] = -1.0
        return edit
    for run_dir, key, edit in ((old_dir, "early_stopping", lambda document: None),
                               (new_dir, STOPPING, _as_state_keys)):
        path = run_dir / "checkpoints" / "epoch-0002.h5"
        rewrite(path, path, lambda document: (edit(document), better_best(key)(document)))
    old = train(config, output=old_dir, resume=True, verbose=False)
    new = train(config, output=new_dir, resume=True, verbose=False)
    assert len(old.history["loss"]) == 5  # stopped by the state restored, not the epochs
    assert old.history == new.history
    for a, b in zip(old.model.get_weights(), new.model.get_weights()):
        np.testing.assert_array_equal(a, b)
