"""Every field of a checkpoint's training state is checked when it is read (issue 21, group 3).

A checkpoint whose training state is wrong anywhere (a type, a range, a length, an array it
refers to) is refused with one ``CheckpointError`` naming the file and the field, even when
its checksums are right (a crafted file, or one written by a buggy tapeflow); ``--resume``
passes over such a checkpoint, or an unreadable one, to the newest good one and says which it
skipped; ``inspect``/``predict``/``evaluate`` print one line and exit 2.  Non-finite history
values (a NaN validation loss) are written and read back.
"""
import copy
import io
import math
import re
import shutil

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import cli
from tapeflow.saving import training_checkpoint as one_checkpoint
from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training import checkpoint_state
from tapeflow.training.errors import CheckpointError
from tapeflow.training.inference import load_checkpoint_model
from tapeflow.training.run import train

from .helpers import rewrite, tiny_config

# early stopping and the best checkpoint keep state of their own
STATEFUL = {"training": {"early_stopping": {"monitor": "val_loss", "patience": 3,
                                            "restore_best_weights": True}},
            "checkpoint": {"every": 1, "keep_last": 2, "keep_best": True}}
# the keys their states are kept under: each callback's state_key
STOPPING = "EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"
BEST = "RunCheckpoints{'monitor': 'val_loss', 'mode': 'min'}"


def _config(data, epochs):
    config = tiny_config(data, **STATEFUL)
    config["training"]["epochs"] = epochs
    return config


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_csv):
    out = tmp_path_factory.mktemp("validation") / "run"
    train(_config(tiny_csv, 2), output=out, verbose=False)
    return out


@pytest.fixture(scope="module")
def saved(run_dir):
    """The last epoch checkpoint, read (its training state and named arrays)."""
    return ckpt_io.read_checkpoint(ckpt_io.epoch_path(run_dir, 2))


def edited(source, target, edit):
    """A copy of the checkpoint ``source`` whose training state ``edit`` changed, its
    checksums right."""
    rewrite(source, target, lambda document: edit(document["training"]))
    return target


def _set(path, value):
    def edit(training):
        *parents, last = path
        node = training
        for key in parents:
            node = node[key]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return edit


class _Delete:
    """The field is removed (a fixed repr: xdist's workers must collect the same test ids)."""

    def __repr__(self):
        return "DELETE"


DELETE = _Delete()

# (the field's path in the training state, a wrong value, the field the message names)
WRONG_FIELDS = [
    (("epoch",), -1, "'epoch'"),
    (("epoch",), DELETE, "'epoch'"),
    (("history",), DELETE, "'history'"),
    (("epoch",), 2.0, "'epoch'"),
    (("epoch",), True, "'epoch'"),
    (("step",), -3, "'step'"),
    (("order_seed",), 2 ** 64, "'order_seed'"),
    (("finished",), 1, "'finished'"),
    (("stopped",), "no", "'stopped'"),
    (("data_fingerprint",), 7, "'data_fingerprint'"),
    (("feature_names",), ["MedInc", 3], "'feature_names'"),
    (("history",), [], "'history'"),
    (("history", "loss"), [1.0, 2.0, 3.0], "'history.loss'"),   # 3 values after 2 epochs
    (("history", "val_loss"), [1.0, "x"], "'history.val_loss[1]'"),
    (("config", "training", "epochs"), -5, "'config'"),
    (("config", "training", "batch_size"), "huge", "'config'"),
    (("config", "data"), DELETE, "'config'"),
    (("random", "state"), "-12", "'random.state'"),
    (("random", "inc"), str(2 ** 128), "'random.inc'"),
    (("random", "inc"), "4", "'random.inc'"),
    (("random", "has_uint32"), 2, "'random.has_uint32'"),
    (("random", "uinteger"), 2 ** 32, "'random.uinteger'"),
    (("random", "op_counts"), [[None, 1]], "'random.op_counts[0]'"),
    (("random", "op_counts"), [[None, 1, -1]], "'random.op_counts[0][2]'"),
    (("callbacks", BEST, "best"), "best", f"'callbacks.{BEST}.best'"),
    (("callbacks", BEST, "best_epoch"), 2, f"'callbacks.{BEST}.best_epoch'"),  # epochs 0, 1 only
    (("callbacks", "other"), {}, "'callbacks.other'"),
    (("callbacks", STOPPING, "wait"), -1, f"'callbacks.{STOPPING}.wait'"),
    (("callbacks", STOPPING, "best"), [1.0], f"'callbacks.{STOPPING}.best'"),
    (("callbacks", STOPPING, "best_weights"), {"$arrays": 99},
     f"'callbacks.{STOPPING}.best_weights'"),
    (("callbacks", STOPPING, "best_weights"), "all", f"'callbacks.{STOPPING}.best_weights'"),
]


@pytest.mark.parametrize("path, value, field", WRONG_FIELDS,
                         ids=[f"{'.'.join(p)}={v!r}"[:40] for p, v, _ in WRONG_FIELDS])
def test_each_wrong_field_is_one_error_naming_file_and_field(saved, path, value, field):
    training = copy.deepcopy(saved.training)
    checkpoint_state.check(training, saved.arrays, "ckpt.h5")   # the edit alone is wrong
    _set(path, value)(training)
    with pytest.raises(CheckpointError) as raised:
        checkpoint_state.check(training, saved.arrays, "ckpt.h5")
    message = str(raised.value)
    assert message.startswith(f"ckpt.h5: the training state's {field} ")
    assert "\n" not in message


def test_the_trainer_and_backup_and_restore_write_one_format(run_dir, tmp_path):
    """Issue 20: one writer.  The trainer's checkpoint reads back through the one reader
    (``saving.training_checkpoint``), as BackupAndRestore's does; the trainer refuses a backup,
    which lacks its run's fields, naming the field."""
    ckpt = one_checkpoint.read(ckpt_io.epoch_path(run_dir, 2))
    assert ckpt.position == (2, 0, None)
    assert set(ckpt.training["callbacks"]) == {BEST, STOPPING}
    assert ckpt.callback_state(STOPPING)["best_weights"][0].dtype.kind == "f"
    model = tf.keras.models.load_model(ckpt_io.epoch_path(run_dir, 2))  # compiled, as saved
    backup = tmp_path / "backup"
    x = np.zeros((4, len(ckpt.training["feature_names"])), "float32")
    model.fit(x, np.zeros((4, 1), "float32"), epochs=1, verbose=0,
              callbacks=[tf.keras.callbacks.BackupAndRestore(backup, delete_checkpoint=False)])
    written = one_checkpoint.read(backup / "checkpoint.h5")
    assert written.position == (1, 0, None)
    assert written.callback_state("BackupAndRestore") == {"epoch": 1, "batches_seen": 0}
    assert set(written.training) == set(ckpt.training) - {"config", "data_dir",
                                                          "data_fingerprint", "feature_names",
                                                          "target_names", "finished", "stopped",
                                                          "history"}
    with pytest.raises(CheckpointError, match="checkpoint.h5: the training state's 'finished'"):
        ckpt_io.read_checkpoint(backup / "checkpoint.h5")


def test_a_crafted_file_is_refused_when_read(run_dir, tmp_path):
    """The check runs on every read, after the checksums (which a crafted file has right)."""
    bad = edited(ckpt_io.epoch_path(run_dir, 2), tmp_path / "bad.h5", _set(("epoch",), -2))
    with pytest.raises(CheckpointError, match=f"^{bad}: the training state's 'epoch' is -2, "):
        ckpt_io.read_checkpoint(bad)


def test_a_training_state_of_another_format_version_is_refused_naming_it(run_dir, tmp_path):
    other = edited(ckpt_io.epoch_path(run_dir, 2), tmp_path / "v2.h5", _set(("version",), 2))
    with pytest.raises(CheckpointError, match=r"v2.h5 holds a training state of format version "
                                              r"2; this tapeflow reads version 1 only$"):
        ckpt_io.read_checkpoint(other)


def test_a_missing_best_weights_array_is_named(saved):
    arrays = dict(saved.arrays)
    arrays[f"{STOPPING}/best_weights/9"] = arrays.pop(f"{STOPPING}/best_weights/1")
    with pytest.raises(CheckpointError, match=re.escape(f"'callbacks.{STOPPING}.best_weights[1]'")):
        checkpoint_state.check(saved.training, arrays, "ckpt.h5")


def test_non_finite_history_values_are_written_and_read_back(saved, tmp_path):
    """A NaN validation loss (and an infinite best) no longer stop the epoch's checkpoint."""
    ckpt = saved
    # the epoch checkpoint holds the best as of its epoch (a resume goes on from it)
    assert ckpt.training["callbacks"][BEST]["best_epoch"] == int(np.argmin(
        ckpt.training["history"]["val_loss"]))
    training = {k: v for k, v in ckpt.training.items() if k not in ("version", "random",
                                                                     "arrays")}
    training["history"] = dict(training["history"], val_loss=[math.nan, math.inf],
                               loss=[-math.inf, 1.5])
    training["callbacks"] = dict(training["callbacks"], **{BEST: {"best": math.inf,
                                                                  "best_epoch": 0}})
    net = load_checkpoint_model(ckpt)
    path = tmp_path / "epoch-0002.h5"
    ckpt_io.write_checkpoint(path, net, training, ckpt.arrays)
    back = ckpt_io.read_checkpoint(path).training
    assert math.isnan(back["history"]["val_loss"][0])
    assert back["history"]["val_loss"][1] == math.inf
    assert back["history"]["loss"] == [-math.inf, 1.5]
    assert back["callbacks"][BEST]["best"] == math.inf


# Keras: callbacks/backup_and_restore_test.py::test_backup_corrupted (the newest backup's
# weights overwritten with "0"; fit(epochs=5) goes on from the previous one: the history's
# last epoch is 4, that is 5 epochs in all)
def test_resume_falls_back_past_a_corrupted_and_an_invalid_checkpoint(run_dir, tiny_csv,
                                                                     tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "model.h5").unlink()
    newest = ckpt_io.epoch_path(run, 2)
    with open(newest, "w") as f:
        f.write("0")
    # and one newer still, valid to its checksums but with a wrong training state
    edited(ckpt_io.epoch_path(run_dir, 2), ckpt_io.step_path(run, 2, 3),
           _set(("step",), -1))
    said = io.StringIO()
    resumed = train(_config(tiny_csv, 5), output=run, resume=True, stream=said)
    assert len(resumed.history["loss"]) == 5
    line, = [x for x in said.getvalue().splitlines() if x.startswith("--resume:")]
    assert f"going on from {ckpt_io.epoch_path(run, 1)} (after epoch 1)" in line
    assert f"skipped {newest} is not a usable checkpoint" in line
    assert f"skipped {ckpt_io.step_path(run, 2, 3)}: the training state's 'step'" in line


@pytest.mark.parametrize("command", [["inspect"], ["evaluate"],
                                     ["predict", "--input", "x.csv", "--output", "y.csv"]])
def test_inspect_predict_evaluate_say_one_line_and_exit_2(run_dir, tmp_path, capsys,
                                                          monkeypatch, command):
    bad = edited(ckpt_io.epoch_path(run_dir, 2), tmp_path / "bad.h5",
                 _set(("history", "loss"), {"a": 1}))
    monkeypatch.chdir(tmp_path)
    status = cli.main([command[0], str(bad), *command[1:]])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err == f"tapeflow {command[0]}: error: {bad}: the training state's 'history.loss' " \
                  f"is {{'a': 1}}, not a list of numbers; the file is damaged or not a " \
                  f"checkpoint of this tapeflow\n"
    assert not (tmp_path / "y.csv").exists()


def test_a_run_directory_of_invalid_checkpoints_is_one_line(run_dir, tmp_path, capsys):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    bad = edited(ckpt_io.epoch_path(run_dir, 2), ckpt_io.epoch_path(run, 2),
                 _set(("finished",), "yes"))
    assert cli.main(["inspect", str(run)]) == 2
    assert capsys.readouterr().err == (
        f"tapeflow inspect: error: {run}: no usable checkpoint in this directory ({bad}: the "
        f"training state's 'finished' is 'yes', not a bool; the file is damaged or not a "
        f"checkpoint of this tapeflow)\n")
