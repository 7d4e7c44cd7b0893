"""Issue 20, item 1: a run's history files (history.csv, history.json, learning_curve.png) are
written by an ordinary callback, ``RunHistoryWriter``, which any ``fit`` can use."""
import csv
import json

import numpy as np

import tapeflow as tf
from tapeflow.callbacks.recorders import NanWatch
from tapeflow.training.run import train
from tapeflow.training.run_history import RunHistoryWriter

from .helpers import tiny_config


def _fit(callbacks, epochs=3):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 2)).astype("float32")
    y = (x @ np.float32([1, -2]))[:, None]
    model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse", metrics=["mae"])
    model.fit(x, y, epochs=epochs, batch_size=16, validation_data=(x, y), verbose=0,
              callbacks=callbacks)


def test_a_plain_fit_writes_the_history_files_as_it_ends(tmp_path):
    history = tf.keras.callbacks.History()
    # (the plot, learning_curve.png, is test_cli_train's: matplotlib takes seconds to import)
    _fit([history, RunHistoryWriter(tmp_path, history, plot=False)])
    saved = json.loads((tmp_path / "history.json").read_text())
    assert saved == history.history
    assert list(saved) == ["loss", "mae", "val_loss", "val_mae"] and len(saved["loss"]) == 3
    with open(tmp_path / "history.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "mae", "val_loss", "val_mae"]
    assert [r[0] for r in rows[1:]] == ["1", "2", "3"]
    assert float(rows[3][1]) == saved["loss"][2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv", "history.json"]


def test_no_files_on_other_ranks_or_after_a_nan_loss(tmp_path):
    history = tf.keras.callbacks.History()
    _fit([history, RunHistoryWriter(tmp_path, history, writes=False)], epochs=1)
    watch = NanWatch()
    watch.nan_at = {"epoch": 0, "batch": 1, "loss": float("nan")}  # as a NaN loss leaves it
    _fit([history, RunHistoryWriter(tmp_path, history, watch, plot=False)], epochs=1)
    assert not list(tmp_path.iterdir())


def test_a_run_killed_after_its_last_checkpoint_writes_them_on_resume(tmp_path, tiny_csv):
    """Nothing is left to train, so fit does not run: the trainer has the writer write."""
    config = tiny_config(tiny_csv, logging={"plot": False})
    run_dir = tmp_path / "run"
    first = train(config, output=run_dir, verbose=False)
    for name in ("history.csv", "history.json", "model.h5"):  # what the kill kept from it
        (run_dir / name).unlink()
    again = train(config, output=run_dir, resume=True, verbose=False)
    assert json.loads((run_dir / "history.json").read_text()) == first.history == again.history
    assert (run_dir / "history.csv").read_text().count("\n") == 3
