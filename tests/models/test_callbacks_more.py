"""LambdaCallback, Keras 2's batch hooks, and BackupAndRestore: a fit
interrupted (by an exception, or a process killed with SIGKILL) and run again goes on from its
last backup and ends where the uninterrupted fit ends, bit for bit."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.callbacks import backup as backup_module
from tapeflow.saving import training_checkpoint as one_checkpoint

from .helpers import assert_same_weights, regression_data, small_model, weights_differ

cbs = tf.keras.callbacks
X, Y = regression_data(64)


# --- LambdaCallback and the hooks --------------------------------------------------------------------
def test_lambda_callback_calls_each_function_with_keras_arguments():
    calls = []
    cb = cbs.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda epoch, logs: calls.append(f"epoch_begin {epoch}"),
        on_batch_begin=lambda batch, logs: calls.append(f"batch_begin {batch}"),
        on_train_batch_end=lambda batch, logs: calls.append(f"batch_end {batch} {sorted(logs)}"),
        on_epoch_end=lambda epoch, logs: calls.append(f"epoch_end {epoch} {sorted(logs)}"),
        on_train_end=lambda logs: calls.append("train_end"))
    small_model().fit(X, Y, epochs=2, batch_size=64, verbose=0, callbacks=[cb],
                      validation_data=(X, Y))
    assert calls == ["train_begin",
                     "epoch_begin 0", "batch_begin 0", "batch_end 0 ['loss']",
                     "epoch_end 0 ['loss', 'val_loss']",
                     "epoch_begin 1", "batch_begin 0", "batch_end 0 ['loss']",
                     "epoch_end 1 ['loss', 'val_loss']", "train_end"]


def test_keras_2_batch_hooks_of_a_subclass_are_called():
    class Counter(cbs.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_batch_end(self, batch, logs=None):
            self.ends.append((batch, sorted(logs)))
    counter = Counter()
    small_model().fit(X, Y, epochs=1, batch_size=32, verbose=0, callbacks=[counter])
    assert counter.ends == [(0, ["loss"]), (1, ["loss"])]


def test_lambda_callback_refuses_what_is_not_a_hook_or_a_function():
    with pytest.raises(TypeError, match=r"\['on_epoch_ending'\], which are not callback hooks"):
        cbs.LambdaCallback(on_epoch_ending=print)
    with pytest.raises(TypeError, match="on_epoch_end must be a function"):
        cbs.LambdaCallback(on_epoch_end="print")


# --- BackupAndRestore in one process -------------------------------------------------------------------
def dropout_model(seed=4, subclassed=False):
    """Dense-Dropout-Dense with Adam: the resumed run needs the weights, Adam's moments and
    step count, and the random state (dropout masks, the shuffle) to match."""
    tf.keras.utils.set_random_seed(seed)
    layers = [tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dropout(0.3),
              tf.keras.layers.Dense(1)]
    if subclassed:
        class Net(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.stack = layers

            def call(self, inputs, training=None):
                for layer in self.stack:
                    inputs = layer(inputs, training=training)
                return inputs
        model = Net()
    else:
        model = tf.keras.Sequential([tf.keras.Input(shape=(4,))] + layers)
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    return model


class Interrupt(cbs.Callback):
    """Raise at the end of ``epoch`` (and ``batch``, when given), as a crash would."""

    def __init__(self, epoch, batch=None):
        super().__init__()
        self.epoch, self.batch, self._current = epoch, batch, None

    def on_epoch_begin(self, epoch, logs=None):
        self._current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.batch is not None and (self._current, batch) == (self.epoch, self.batch):
            raise RuntimeError("interrupted")

    def on_epoch_end(self, epoch, logs=None):
        if self.batch is None and epoch == self.epoch:
            raise RuntimeError("interrupted")


def _interrupted_then_resumed(tmp_path, subclassed=False, epochs=6, **backup_args):
    directory = tmp_path / "backup"
    first = dropout_model(subclassed=subclassed)
    with pytest.raises(RuntimeError, match="interrupted"):
        first.fit(X, Y, epochs=epochs, batch_size=16, verbose=0,
                  callbacks=[cbs.BackupAndRestore(directory, **backup_args), Interrupt(2)])
    assert os.path.exists(directory / "checkpoint.h5")
    again = dropout_model(subclassed=subclassed)   # as a new process would make it
    history = again.fit(X, Y, epochs=epochs, batch_size=16, verbose=0,
                        callbacks=[cbs.BackupAndRestore(directory, **backup_args)])
    return again, history


@pytest.mark.parametrize("subclassed", [False, True])
def test_a_fit_interrupted_and_run_again_equals_the_uninterrupted_fit(tmp_path, subclassed):
    whole = dropout_model(subclassed=subclassed)
    whole.fit(X, Y, epochs=6, batch_size=16, verbose=0)
    resumed, history = _interrupted_then_resumed(tmp_path, subclassed)
    assert history.epoch == [3, 4, 5]   # epochs 0-2 were backed up
    assert_same_weights(whole, resumed)
    assert int(resumed.optimizer.iterations) == int(whole.optimizer.iterations) == 24
    assert not os.path.exists(tmp_path / "backup")  # delete_checkpoint=True, after a whole fit


def test_negative_control_without_the_random_state_the_resumed_fit_differs(tmp_path, monkeypatch):
    whole = dropout_model()
    whole.fit(X, Y, epochs=6, batch_size=16, verbose=0)
    monkeypatch.setattr(backup_module.one_checkpoint, "restore_random_state", lambda ckpt: None)
    resumed, _ = _interrupted_then_resumed(tmp_path)
    assert weights_differ(whole.get_weights(), resumed.get_weights())


def test_save_freq_in_batches_goes_on_at_the_next_batch(tmp_path):
    """Keras reruns the epoch in progress; the backup here keeps the position (the steps done,
    the epoch's shuffle order, its metrics' running state): nothing runs twice, and the run
    ends as the uninterrupted one, bit for bit."""
    directory = tmp_path / "backup"
    whole = dropout_model()
    whole_history = whole.fit(X, Y, epochs=4, batch_size=16, verbose=0)
    model = dropout_model()
    with pytest.raises(RuntimeError):
        model.fit(X, Y, epochs=4, batch_size=16, verbose=0,
                  callbacks=[cbs.BackupAndRestore(directory, save_freq=2), Interrupt(1, batch=2)])
    ckpt = one_checkpoint.read(directory / "checkpoint.h5")
    assert tuple(ckpt.position)[:2] == (1, 2)  # after the 6th batch: epoch 1's second
    assert ckpt.callback_state("BackupAndRestore") == {"epoch": 1, "batches_seen": 6}
    resumed = dropout_model()
    history = resumed.fit(X, Y, epochs=4, batch_size=16, verbose=0, callbacks=[
        cbs.BackupAndRestore(directory, save_freq=2, delete_checkpoint=False)])
    assert history.epoch == [1, 2, 3]
    assert history.history["loss"] == whole_history.history["loss"][1:]  # epoch 1's too
    assert_same_weights(whole, resumed)
    assert sorted(os.listdir(directory)) == ["checkpoint.h5"]
    # the backup due at an epoch's last batch was written at its end: epochs done, no steps
    assert tuple(one_checkpoint.read(directory / "checkpoint.h5").position)[:2] == (4, 0)


def test_backup_keeps_one_whole_backup_and_removes_what_a_kill_left(tmp_path):
    directory = tmp_path / "backup"
    directory.mkdir()
    (directory / ".tmp-x1y2.part").write_bytes(b"half a file")
    small_model().fit(X, Y, epochs=2, verbose=0,
                      callbacks=[cbs.BackupAndRestore(directory, delete_checkpoint=False)])
    assert sorted(os.listdir(directory)) == ["checkpoint.h5"]
    # the trainer's checkpoint format: load_model reads it
    assert tf.keras.models.load_model(directory / "checkpoint.h5").count_params() > 0
    # a finished backup: a fit with it again has nothing left to do
    history = small_model().fit(X, Y, epochs=2, verbose=0,
                                callbacks=[cbs.BackupAndRestore(directory)])
    assert history.epoch == []


def test_backup_errors(tmp_path):
    with pytest.raises(ValueError, match="backup_dir is required"):
        cbs.BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq must be 'epoch', a positive number"):
        cbs.BackupAndRestore(tmp_path, save_freq=0)
    (tmp_path / "checkpoint.h5").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="checkpoint.h5 is not a usable checkpoint .*; delete"):
        small_model().fit(X, Y, verbose=0, callbacks=[cbs.BackupAndRestore(tmp_path)])
    old = tmp_path / "old"
    old.mkdir()
    (old / "state.json").write_text('{"version": 1}')
    with pytest.raises(ValueError, match="state.json is a backup of format version 1 .*delete"):
        small_model().fit(X, Y, verbose=0, callbacks=[cbs.BackupAndRestore(old)])


# --- BackupAndRestore across processes, with SIGKILL ----------------------------------------------------
SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import tapeflow as tf

    backup, out, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
    tf.keras.utils.set_random_seed(5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x @ np.float32([1, -2, 3, 0.5]))[:, None]
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dropout(0.3), tf.keras.layers.Dense(1)])
    model.compile(tf.keras.optimizers.Adam(0.01), "mse")
    say = tf.keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: print("begin", epoch, flush=True),
        on_train_batch_end=lambda batch, logs: time.sleep(pause))  # room for a kill mid-epoch
    model.fit(x, y, epochs=6, batch_size=16, verbose=0,
              callbacks=[tf.keras.callbacks.BackupAndRestore(backup), say])
    np.save(out, np.concatenate([w.ravel() for w in model.get_weights()]))
""")


@pytest.mark.child_process
def test_a_fit_killed_with_sigkill_mid_epoch_resumes_in_a_new_process(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)

    def run(backup, out, pause="0"):
        return subprocess.Popen([sys.executable, str(script), str(tmp_path / backup),
                                 str(tmp_path / out), pause],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    whole = run("whole_backup", "whole.npy")
    killed = run("backup", "killed.npy", pause="0.05")
    for line in killed.stdout:
        if line.split() == ["begin", "3"]:   # epochs 0-2 done and backed up; 3 under way
            killed.send_signal(signal.SIGKILL)
            break
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.read()
    assert one_checkpoint.read(tmp_path / "backup" / "checkpoint.h5").position == (3, 0, None)
    resumed = run("backup", "resumed.npy")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert out.split("\n")[0] == "begin 3"
    assert whole.wait(timeout=120) == 0, whole.stderr.read()
    np.testing.assert_array_equal(np.load(tmp_path / "whole.npy"),
                                  np.load(tmp_path / "resumed.npy"))
    assert not (tmp_path / "backup").exists()
