"""Callbacks in fit: History, EarlyStopping, ModelCheckpoint, TerminateOnNaN, CSVLogger,
LearningRateScheduler, and the hooks a user's own callback gets."""
import csv
import os

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend as tapeflow_backend

from .helpers import (Recorder, Scripted, StopAt, assert_same_weights, regression_data,
                      small_model, weights_differ)

cbs = tf.keras.callbacks


# --- the hooks ----------------------------------------------------------------------------------
class Log(cbs.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(f"epoch_begin {epoch}")

    def on_train_batch_begin(self, batch, logs=None):
        self.calls.append(f"batch_begin {batch}")

    def on_train_batch_end(self, batch, logs=None):
        assert all(isinstance(v, float) for v in logs.values())
        self.calls.append(f"batch_end {batch}")

    def on_epoch_end(self, epoch, logs=None):
        assert all(isinstance(v, float) for v in logs.values())
        self.calls.append(f"epoch_end {epoch} {sorted(logs)}")

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


def test_hook_order_params_and_model():
    x, y = regression_data(20)
    model = small_model(metrics=["mae"])
    log = Log()
    model.fit(x, y, epochs=2, batch_size=10, validation_split=0.5, verbose=0, callbacks=[log])
    keys = "['loss', 'mae', 'val_loss', 'val_mae']"
    assert log.calls == ["train_begin",
                         "epoch_begin 0", "batch_begin 0", "batch_end 0", f"epoch_end 0 {keys}",
                         "epoch_begin 1", "batch_begin 0", "batch_end 0", f"epoch_end 1 {keys}",
                         "train_end"]
    assert log.model is model
    assert log.params["epochs"] == 2 and log.params["steps"] == 1


def test_batch_logs_are_running_means_of_the_epoch():
    x, y = regression_data(32)
    model = small_model()
    rec = Recorder()
    history = model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[rec])
    assert len(rec.batch_logs) == 4
    assert rec.batch_logs[-1]["loss"] == pytest.approx(history.history["loss"][0])


def test_history_callback():
    x, y = regression_data(16)
    model = small_model()
    history = model.fit(x, y, epochs=3, verbose=0)
    assert history.model is model
    assert history.epoch == [0, 1, 2]
    assert list(history.history) == ["loss"] and len(history.history["loss"]) == 3
    again = model.fit(x, y, epochs=2, verbose=0)
    assert again is not history and len(again.history["loss"]) == 2 and model.history is again


# --- EarlyStopping, driven epoch by epoch ---------------------------------------------------------
def _drive(callback, values, key="val_loss"):
    """Feed ``values`` to ``callback`` as the monitored quantity; return the epochs run."""
    model = small_model(compile=False)
    model.stop_training = False
    callback.set_model(model)
    callback.set_params({"epochs": len(values), "do_validation": True})
    callback.on_train_begin()
    ran = 0
    for epoch, value in enumerate(values):
        ran += 1
        callback.on_epoch_end(epoch, {key: value})
        if model.stop_training:
            break
    callback.on_train_end()
    return ran


def test_early_stopping_patience():
    assert _drive(cbs.EarlyStopping(patience=0), [5, 4, 4.5, 3]) == 3
    assert _drive(cbs.EarlyStopping(patience=2), [5, 4, 4.5, 4.2, 3, 2]) == 4
    assert _drive(cbs.EarlyStopping(patience=2), [5, 4, 4.5, 3.9, 4.0, 4.1, 1]) == 6
    assert _drive(cbs.EarlyStopping(patience=10), [5, 6, 7]) == 3


def test_early_stopping_min_delta():
    # 4.8 and 4.6 improve on 5 by less than 0.5: no improvement
    assert _drive(cbs.EarlyStopping(min_delta=0.5, patience=1), [5, 4.8, 4.6, 1]) == 2
    assert _drive(cbs.EarlyStopping(min_delta=0.5, patience=1), [5, 4.4, 3.8, 3.2]) == 4
    assert _drive(cbs.EarlyStopping(min_delta=-0.5, patience=1), [5, 4.8, 4.6, 1]) == 2


def test_early_stopping_mode():
    rising = [0.5, 0.6, 0.7, 0.65]
    assert _drive(cbs.EarlyStopping(monitor="val_accuracy", patience=0), rising,
                  key="val_accuracy") == 4  # "auto": accuracy goes up
    assert _drive(cbs.EarlyStopping(monitor="val_accuracy", mode="min", patience=0), rising,
                  key="val_accuracy") == 2
    assert _drive(cbs.EarlyStopping(mode="max", patience=0), rising) == 4
    with pytest.raises(ValueError, match="mode"):
        cbs.EarlyStopping(mode="up")


def test_early_stopping_baseline():
    # never better than the baseline: `patience` epochs, the first one included, then stop
    assert _drive(cbs.EarlyStopping(baseline=1.0, patience=2), [3, 3, 3, 3]) == 2
    assert _drive(cbs.EarlyStopping(baseline=None, patience=2), [3, 3, 3, 3]) == 3
    # beating the baseline restarts the count as usual
    assert _drive(cbs.EarlyStopping(baseline=1.0, patience=2), [3, 0.9, 0.95, 0.97, 0.5]) == 4
    es = cbs.EarlyStopping(baseline=1.0, patience=1)
    _drive(es, [2, 2.5, 1])
    assert es.stopped_epoch == 1


def test_early_stopping_start_from_epoch_and_nan():
    assert _drive(cbs.EarlyStopping(patience=0, start_from_epoch=2), [1, 2, 3, 4]) == 4
    assert _drive(cbs.EarlyStopping(patience=1), [1.0, float("nan"), float("nan")]) == 2


def test_early_stopping_missing_monitor_is_a_clear_error():
    x, y = regression_data(16)
    model = small_model()
    with pytest.raises(ValueError, match="monitors 'val_loss'.*validation"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[cbs.EarlyStopping()])


def test_early_stopping_with_validation_freq():
    x, y = regression_data(32)
    model = small_model()
    history = model.fit(x, y, epochs=4, validation_split=0.25, validation_freq=2, verbose=0,
                        callbacks=[cbs.EarlyStopping(patience=5)])
    assert len(history.history["loss"]) == 4


def test_early_stopping_in_fit_stops_training():
    x, y = regression_data(32)
    model = small_model()
    script = Scripted("val_score", [5, 4, 4.5, 4.6, 1, 1])
    es = cbs.EarlyStopping(monitor="val_score", patience=2)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[script, es])
    assert history.epoch == [0, 1, 2, 3]
    assert es.stopped_epoch == 3 and es.best_epoch == 1


# --- EarlyStopping(restore_best_weights=True), however training ends -----------------------------
def _fit_restoring(values, epochs, extra=()):
    x, y = regression_data(32)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.05))
    rec = Recorder()
    es = cbs.EarlyStopping(monitor="val_score", patience=2, restore_best_weights=True)
    history = model.fit(x, y, epochs=epochs, verbose=0,
                        callbacks=[Scripted("val_score", values), rec, *extra, es])
    return model, rec, history


def test_restore_best_weights_when_patience_runs_out():
    model, rec, history = _fit_restoring([5, 2, 3, 4, 5, 6], epochs=6)
    assert history.epoch == [0, 1, 2, 3]
    assert weights_differ(rec.weights[1], rec.weights[3])
    assert_same_weights(model.get_weights(), rec.weights[1])


def test_restore_best_weights_when_epochs_run_out():
    model, rec, history = _fit_restoring([5, 2, 3], epochs=3)
    assert history.epoch == [0, 1, 2]
    assert_same_weights(model.get_weights(), rec.weights[1])


def test_restore_best_weights_when_another_callback_stops():
    model, rec, history = _fit_restoring([5, 2, 3, 1, 1], epochs=5, extra=[StopAt(2)])
    assert history.epoch == [0, 1, 2]
    assert_same_weights(model.get_weights(), rec.weights[1])


def test_restore_best_weights_when_the_last_epoch_is_best():
    model, rec, _ = _fit_restoring([5, 4, 3], epochs=3)
    assert_same_weights(model.get_weights(), rec.weights[2])


def test_restore_best_weights_never_picks_a_nan_epoch():
    nan = float("nan")
    model, rec, history = _fit_restoring([5, 2, nan, nan, 1], epochs=5)
    assert history.epoch == [0, 1, 2, 3]
    assert_same_weights(model.get_weights(), rec.weights[1])


# --- ModelCheckpoint ---------------------------------------------------------------------------
def test_checkpoint_every_epoch_with_epoch_in_the_name(tmp_path):
    x, y = regression_data(32)
    model = small_model()
    rec = Recorder()
    pattern = str(tmp_path / "ckpt" / "weights.{epoch:02d}.h5")
    model.fit(x, y, epochs=3, verbose=0, callbacks=[rec, cbs.ModelCheckpoint(pattern,
                                                                            monitor="loss")])
    names = sorted(os.listdir(tmp_path / "ckpt"))
    assert names == ["weights.01.h5", "weights.02.h5", "weights.03.h5"]
    for epoch, name in enumerate(names):
        path = tmp_path / "ckpt" / name
        assert h5py.is_hdf5(path)
        fresh = small_model(seed=99)
        fresh.load_weights(path)
        assert_same_weights(fresh.get_weights(), rec.weights[epoch])


def test_checkpoint_save_best_only_on_val_loss(tmp_path):
    x, y = regression_data(32)
    model = small_model()
    rec = Recorder()
    best = str(tmp_path / "best.h5")
    per_epoch = str(tmp_path / "e{epoch:02d}-{val_loss:.1f}.h5")
    script = Scripted("val_loss", [3.0, 2.0, 2.5, 1.0, 1.5])
    model.fit(x, y, epochs=5, verbose=0, callbacks=[
        script, rec, cbs.ModelCheckpoint(best, save_best_only=True),
        cbs.ModelCheckpoint(per_epoch, save_best_only=True)])
    assert sorted(os.listdir(tmp_path)) == ["best.h5", "e01-3.0.h5", "e02-2.0.h5", "e04-1.0.h5"]
    fresh = small_model(seed=99)
    fresh.load_weights(best)
    assert_same_weights(fresh.get_weights(), rec.weights[3])


def test_checkpoint_max_mode_and_nan_never_best(tmp_path):
    x, y = regression_data(16)
    model = small_model()
    path = str(tmp_path / "{epoch}.h5")
    script = Scripted("val_acc", [float("nan"), 0.5, 0.4, 0.7])
    model.fit(x, y, epochs=4, verbose=0, callbacks=[
        script, cbs.ModelCheckpoint(path, monitor="val_acc", save_best_only=True)])
    assert sorted(os.listdir(tmp_path)) == ["2.h5", "4.h5"]


def test_checkpoint_real_validation_loss(tmp_path):
    x, y = regression_data(48)
    model = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    path = tmp_path / "best.h5"
    history = model.fit(x, y, epochs=4, validation_split=0.25, verbose=0,
                        callbacks=[cbs.ModelCheckpoint(str(path), save_best_only=True)])
    best_epoch = int(np.argmin(history.history["val_loss"]))
    fresh = small_model(seed=99)
    fresh.load_weights(path)
    fresh.compile("sgd", "mse")
    assert fresh.evaluate(x[36:], y[36:], verbose=0) == pytest.approx(
        history.history["val_loss"][best_epoch], rel=1e-5)


def test_checkpoint_bad_filepath_format(tmp_path):
    x, y = regression_data(16)
    with pytest.raises(ValueError, match="cannot format the filepath"):
        small_model().fit(x, y, verbose=0,
                          callbacks=[cbs.ModelCheckpoint(str(tmp_path / "{val_los}.h5"))])


def test_failed_save_keeps_the_good_file(tmp_path, monkeypatch):
    x, y = regression_data(32)
    model = small_model()
    path = tmp_path / "best.h5"
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cbs.ModelCheckpoint(str(path),
                                                                        monitor="loss")])
    good = path.read_bytes()
    good_weights = model.get_weights()

    calls = {"n": 0}
    real_to_host = tapeflow_backend.to_host

    def failing_to_host(value):
        calls["n"] += 1
        if calls["n"] == 3:  # after two variables were written
            raise OSError("disk full")
        return real_to_host(value)

    monkeypatch.setattr(tapeflow_backend, "to_host", failing_to_host)
    with pytest.raises(OSError, match="disk full"):
        model.fit(x, y, epochs=1, verbose=0,
                  callbacks=[cbs.ModelCheckpoint(str(path), monitor="loss")])
    monkeypatch.undo()
    assert calls["n"] == 3
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["best.h5"]  # no temporary file left behind
    fresh = small_model(seed=99)
    fresh.load_weights(path)
    assert_same_weights(fresh.get_weights(), good_weights)


# --- TerminateOnNaN -----------------------------------------------------------------------------
def test_terminate_on_nan_data_stops_after_that_batch(capsys):
    x, y = regression_data(40)
    x[17] = np.nan  # in the third batch of 8
    model = small_model()
    rec = Recorder()
    history = model.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0,
                        callbacks=[cbs.TerminateOnNaN(), rec])
    assert rec.batches == [3]
    assert np.isnan(rec.batch_logs[-1]["loss"])
    assert history.epoch == [0] and np.isnan(history.history["loss"][0])
    assert "Batch 2: invalid loss nan" in capsys.readouterr().out


def test_terminate_on_nan_from_a_huge_learning_rate():
    x, y = regression_data(64)
    model = small_model(optimizer=tf.keras.optimizers.SGD(1e12))
    rec = Recorder()
    with np.errstate(all="ignore"):
        model.fit(x, y, epochs=5, batch_size=4, verbose=0, callbacks=[cbs.TerminateOnNaN(), rec])
    assert sum(rec.batches) < 5 * 16
    assert not np.isfinite(rec.batch_logs[-1]["loss"])
    assert all(np.isfinite(logs["loss"]) for logs in rec.batch_logs[:-1])


def test_terminate_on_nan_leaves_finite_training_alone():
    x, y = regression_data(32)
    rec = Recorder()
    small_model().fit(x, y, epochs=2, batch_size=8, verbose=0,
                      callbacks=[cbs.TerminateOnNaN(), rec])
    assert rec.batches == [4, 4]


# --- CSVLogger -----------------------------------------------------------------------------------
def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_csv_logger_rows_and_header(tmp_path):
    x, y = regression_data(32)
    model = small_model(metrics=["mae"])
    path = tmp_path / "log.csv"
    history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[cbs.CSVLogger(str(path))])
    rows = _rows(path)
    assert rows[0] == ["epoch", "loss", "mae", "val_loss", "val_mae"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2"]
    for epoch, row in enumerate(rows[1:]):
        assert float(row[1]) == pytest.approx(history.history["loss"][epoch])
        assert float(row[4]) == pytest.approx(history.history["val_mae"][epoch])


def test_csv_logger_overwrites_or_appends(tmp_path):
    x, y = regression_data(16)
    model = small_model()
    path = tmp_path / "log.csv"
    model.fit(x, y, epochs=2, verbose=0, callbacks=[cbs.CSVLogger(str(path))])
    model.fit(x, y, epochs=2, verbose=0, callbacks=[cbs.CSVLogger(str(path))])
    assert len(_rows(path)) == 3  # overwritten
    model.fit(x, y, epochs=3, verbose=0, callbacks=[cbs.CSVLogger(str(path), append=True)])
    rows = _rows(path)
    assert [r[0] for r in rows] == ["epoch", "0", "1", "0", "1", "2"]  # one header
    fresh = tmp_path / "fresh.csv"
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cbs.CSVLogger(str(fresh), append=True)])
    assert _rows(fresh)[0] == ["epoch", "loss"]


def test_csv_logger_separator(tmp_path):
    x, y = regression_data(16)
    path = tmp_path / "log.tsv"
    small_model().fit(x, y, epochs=1, verbose=0,
                      callbacks=[cbs.CSVLogger(str(path), separator="\t")])
    assert path.read_text().splitlines()[0] == "epoch\tloss"


# --- LearningRateScheduler ---------------------------------------------------------------------
class LearningRates(cbs.Callback):
    def __init__(self):
        super().__init__()
        self.rates = []

    def on_epoch_begin(self, epoch, logs=None):
        self.rates.append(float(self.model.optimizer.learning_rate))


def test_learning_rate_scheduler_sets_and_logs_the_rate():
    x, y = regression_data(16)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.1))
    seen = LearningRates()
    scheduler = cbs.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr)
    history = model.fit(x, y, epochs=4, verbose=0, callbacks=[scheduler, seen])
    assert seen.rates == pytest.approx([0.1, 0.05, 0.025, 0.0125])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.025, 0.0125])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.0125)


def test_learning_rate_scheduler_rate_is_used_by_the_steps():
    x, y = regression_data(16)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.1))
    rec = Recorder()
    scheduler = cbs.LearningRateScheduler(lambda epoch: 0.1 if epoch == 0 else 0.0)  # Keras 2 form
    model.fit(x, y, epochs=3, verbose=0, callbacks=[scheduler, rec])
    assert weights_differ(rec.weights[0], small_model().get_weights())
    assert_same_weights(rec.weights[0], rec.weights[2])


def test_learning_rate_scheduler_in_csv_log(tmp_path):
    x, y = regression_data(16)
    path = tmp_path / "log.csv"
    small_model().fit(x, y, epochs=2, verbose=0, callbacks=[
        cbs.LearningRateScheduler(lambda epoch, lr: 0.01 * (epoch + 1)), cbs.CSVLogger(str(path))])
    rows = _rows(path)
    assert rows[0] == ["epoch", "learning_rate", "loss"]
    assert [float(r[1]) for r in rows[1:]] == pytest.approx([0.01, 0.02])


def test_learning_rate_scheduler_rejects_non_numbers():
    x, y = regression_data(8)
    with pytest.raises(ValueError, match="schedule returned 'fast'"):
        small_model().fit(x, y, verbose=0,
                          callbacks=[cbs.LearningRateScheduler(lambda epoch, lr: "fast")])
