"""Callback state across a resume: ``state_key``, ``get_state()`` and ``set_state()``.

No Keras or TensorFlow test covers this (Keras saves no callback state); the analogue is
Lightning's ``tests/callbacks/test_early_stopping.py::test_resume_early_stopping_from_checkpoint``:
a fit split in two, its callback's state carried from the first half to a new callback in
the second (as JSON, arrays apart), ends as the uninterrupted fit does; a new callback
without the state (the negative control) ends otherwise.
"""
import csv
import json
import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.callbacks.recorders import NanWatch

from .helpers import Scripted, regression_data, small_model

cb = tf.keras.callbacks


def _as_saved(state):
    """``state`` through JSON, as a checkpoint keeps it (lists of arrays kept apart)."""
    arrays = {k: v for k, v in state.items()
              if isinstance(v, list) and v and all(isinstance(a, np.ndarray) for a in v)}
    doc = json.loads(json.dumps({k: v for k, v in state.items() if k not in arrays}))
    return dict(doc, **arrays)


def _fit(values, callback, model=None, initial_epoch=0, epochs=None):
    x, y = regression_data(16)
    model = model or small_model(optimizer=tf.keras.optimizers.SGD(0.5))
    history = model.fit(x, y, epochs=epochs or len(values), initial_epoch=initial_epoch,
                        verbose=0, callbacks=[Scripted("val_loss", values), callback])
    return model, history


def _split(values, make, at, carry=True):
    """Fit ``at`` epochs, then the rest with a new callback given the first one's state."""
    first = make()
    model, _ = _fit(values, first, epochs=at)
    second = make()
    if carry:
        second.set_state(_as_saved(first.get_state()))
    model, history = _fit(values, second, model=model, initial_epoch=at)
    return model, history, second


def test_reduce_lr_on_plateau_goes_on_counting_after_a_resume():
    values = [5, 4, 4, 4, 4, 4, 4]

    def make():
        return cb.ReduceLROnPlateau(factor=0.5, patience=2)
    whole, _ = _fit(values, make())
    # epochs 2 and 3 did not improve: the rate halved after epoch 3 and again after 5
    assert float(whole.optimizer.learning_rate) == 0.125
    resumed, _, _ = _split(values, make, at=3)   # one epoch into the patience
    assert float(resumed.optimizer.learning_rate) == 0.125
    fresh, _, _ = _split(values, make, at=3, carry=False)
    assert float(fresh.optimizer.learning_rate) == 0.25


def test_early_stopping_stops_and_restores_as_the_uninterrupted_fit():
    values = [5, 4, 4.5, 4.6, 4.7, 4.8, 3, 3, 3]

    def make():
        return cb.EarlyStopping(patience=3, restore_best_weights=True)
    whole_model, whole = _fit(values, make())
    assert len(whole.epoch) == 5  # best at epoch 1, three epochs without: stopped after epoch 4
    model, history, second = _split(values, make, at=3)
    assert history.epoch == [3, 4] and second.stopped_epoch == 4 and second.best_epoch == 1
    for a, b in zip(whole_model.get_weights(), model.get_weights()):  # epoch 1's weights
        np.testing.assert_array_equal(a, b)
    _, fresh, _ = _split(values, make, at=3, carry=False)
    assert fresh.epoch == [3, 4, 5, 6, 7, 8]


def test_model_checkpoint_keeps_its_best_score(tmp_path):
    values = [3, 2, 2.5, 1]

    def make():
        return cb.ModelCheckpoint(str(tmp_path / "m-{epoch}.keras"), save_best_only=True)
    _split(values, make, at=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-1.keras", "m-2.keras", "m-4.keras"]
    for p in tmp_path.iterdir():
        p.unlink()
    _split(values, make, at=2, carry=False)  # a new callback's first epoch always "improves"
    assert "m-3.keras" in {p.name for p in tmp_path.iterdir()}


def test_state_key_tells_callbacks_apart_and_stays_the_same():
    a = cb.EarlyStopping(monitor="val_loss", patience=2)
    assert a.state_key == "EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"
    assert a.state_key == cb.EarlyStopping(monitor="val_loss", patience=5).state_key
    assert a.state_key != cb.EarlyStopping(monitor="val_accuracy").state_key
    assert cb.History().state_key == "History"
    assert cb.History().get_state() == {"epoch": [], "history": {}}
    assert cb.CSVLogger("runs/a/log.csv").state_key == "CSVLogger{'filename': 'log.csv'}"
    assert cb.LearningRateScheduler(abs).state_key == "LearningRateScheduler"
    assert cb.BackupAndRestore("b").state_key == "BackupAndRestore"


def test_history_goes_on_from_the_epochs_restored():
    values = [3, 2, 1, 0.5]

    def make():
        return cb.History()
    whole = make()
    _fit(values, whole)
    _, _, second = _split(values, make, at=2)
    assert second.epoch == whole.epoch == [0, 1, 2, 3]
    assert second.history["val_loss"] == whole.history["val_loss"] == values
    _, _, fresh = _split(values, make, at=2, carry=False)
    assert fresh.epoch == [2, 3]


def _csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_logger_resumed_appends_each_epoch_once(tmp_path):
    """A checkpoint after epoch 2; the run wrote epochs 3 to 5's rows before it was killed:
    the resumed run (to epoch 4) drops those rows and writes its own after the first two."""
    path = tmp_path / "log.csv"
    values = [3, 2, 1, 0.5, 0.25]
    first = cb.CSVLogger(path)
    model, _ = _fit(values, first, epochs=2)
    state = first.get_state()
    assert (state["rows"], state["keys"]) == (2, ["loss", "val_loss"])
    first.set_state(state)   # the killed run's epochs, written after the checkpoint
    _fit(values, first, model=model, initial_epoch=2)
    assert [r[0] for r in _csv_rows(path)] == ["epoch", "0", "1", "2", "3", "4"]
    second = cb.CSVLogger(path)
    second.set_state(_as_saved(state))
    _fit(values, second, model=model, initial_epoch=2, epochs=4)
    rows = _csv_rows(path)
    assert [r[0] for r in rows] == ["epoch", "0", "1", "2", "3"]
    assert [float(r[2]) for r in rows[1:]] == values[:4]
    # the negative control: append=True without the state repeats epochs 2 and 3
    third = cb.CSVLogger(path, append=True)
    _fit(values, third, model=model, initial_epoch=2, epochs=4)
    assert [r[0] for r in _csv_rows(path)] == ["epoch", "0", "1", "2", "3", "2", "3"]


def test_csv_logger_refuses_a_file_shorter_than_its_position(tmp_path):
    path = tmp_path / "log.csv"
    first = cb.CSVLogger(path)
    model, _ = _fit([1, 2], first)
    path.write_text("epoch\n")
    second = cb.CSVLogger(path)
    second.set_state(first.get_state())
    with pytest.raises(ValueError, match=r"log.csv holds 6 bytes, fewer than the \d+ it held at "
                                         r"the checkpoint"):
        _fit([1, 2, 3], second, model=model, initial_epoch=2)
    with pytest.raises(ValueError, match="CSVLogger: the state .* is not rows and size"):
        second.set_state({"rows": -1, "size": 0, "keys": None})


# Keras: callbacks/csv_logger_test.py::test_CSVLogger (cases 2 and 3: append to an existing
# file, then the same CSVLogger reused: 5 lines of 4 separators, one header)
def test_csv_logger_appends_and_is_reused_as_in_keras(tmp_path):
    path = tmp_path / "log.tsv"
    x, y = regression_data(10)
    model = small_model(metrics=["mse"])

    def fit(logger, epochs):
        model.fit(x, y, batch_size=4, validation_data=(x, y), callbacks=[logger],
                  epochs=epochs, verbose=0)
    fit(cb.CSVLogger(path, separator="\t"), 1)
    logger = cb.CSVLogger(path, separator="\t", append=True)
    fit(logger, 1)
    fit(logger, 2)
    lines = path.read_text().splitlines()
    assert len(lines) == 5 and all(line.count("\t") == 4 for line in lines)
    assert " ".join(lines).count("epoch") == 1


def test_learning_rate_scheduler_hands_the_schedule_the_rate_it_left():
    def make():
        return cb.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr)

    def split(carry):
        x, y = regression_data(16)
        model = small_model(optimizer=tf.keras.optimizers.SGD(0.1))
        first = make()
        model.fit(x, y, epochs=2, verbose=0, callbacks=[first])
        model.optimizer.learning_rate = 0.1   # as a model rebuilt from its config starts
        second = make()
        if carry:
            second.set_state(json.loads(json.dumps(first.get_state())))
        return model.fit(x, y, epochs=4, initial_epoch=2, verbose=0, callbacks=[second])
    assert make().get_state() == {"epoch": None, "learning_rate": None}
    # the uninterrupted run's rates: 0.1, 0.05, 0.025, 0.0125
    assert split(carry=True).history["learning_rate"] == pytest.approx([0.025, 0.0125])
    assert split(carry=False).history["learning_rate"] == pytest.approx([0.05, 0.025])
    with pytest.raises(ValueError, match="LearningRateScheduler: the state"):
        make().set_state({"epoch": 1, "learning_rate": -1.0})


def test_terminate_on_nan_keeps_where_the_loss_turned():
    x, y = regression_data(40)
    x[17] = np.nan  # in epoch 0's third batch of 8
    watch = cb.TerminateOnNaN()
    assert watch.get_state() == {"nan_at": None}
    small_model().fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0, callbacks=[watch])
    state = json.loads(json.dumps(watch.get_state()))
    assert (state["nan_at"]["epoch"], state["nan_at"]["batch"]) == (0, 2)
    assert math.isnan(state["nan_at"]["loss"])
    again = cb.TerminateOnNaN()
    again.set_state(state)
    assert again.nan_at["batch"] == 2 and math.isnan(again.nan_at["loss"])


def test_backup_and_restore_counters_round_trip(tmp_path):
    backup = cb.BackupAndRestore(tmp_path, save_freq=3)
    backup._epoch, backup._batches_seen = 2, 7
    again = cb.BackupAndRestore(tmp_path, save_freq=3)
    again.set_state(json.loads(json.dumps(backup.get_state())))
    assert again.get_state() == {"epoch": 2, "batches_seen": 7}
    with pytest.raises(ValueError, match="BackupAndRestore: the state .* is not two counts"):
        again.set_state({"epoch": 1.5, "batches_seen": 0})


def test_nan_watch_reads_every_few_steps_quietly_and_at_the_epoch_end(capsys):
    """The trainer's NaN watch: TerminateOnNaN reading the loss once per ``every`` steps (a
    GPU waits at each read) and at the epoch's end, printing nothing."""
    x, y = regression_data(40)
    x[17] = np.nan  # in epoch 0's third batch of 8 (of 5)
    for every, batch, exact in ((1, 2, True), (2, 3, False), (7, 4, False)):
        watch = NanWatch(every)
        history = small_model().fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0,
                                    callbacks=[watch])
        assert history.epoch == [0]
        assert (watch.nan_at["epoch"], watch.nan_at["batch"], watch.exact) == (0, batch, exact)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="NanWatch: every must be a positive number of steps"):
        NanWatch(0)
