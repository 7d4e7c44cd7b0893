"""Small synthetic data, models and callbacks shared by the model-API tests."""
import numpy as np

import tapeflow as tf

TRUE_W = np.array([1.0, -2.0, 3.0, 0.5], np.float32)


def regression_data(n=64, seed=0):
    """``y = x @ TRUE_W + noise``: four features, one target column."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = (x @ TRUE_W + 0.1 * rng.normal(size=n)).astype(np.float32)[:, None]
    return x, y


def small_model(name=None, seed=1, hidden=8, optimizer=None, loss="mse", metrics=None,
                compile=True):
    """Input(4) -> Dense(hidden, tanh) -> Dense(1), built at once, seeded."""
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 tf.keras.layers.Dense(hidden, activation="tanh"),
                                 tf.keras.layers.Dense(1)], name=name)
    if compile:
        model.compile(optimizer=optimizer or tf.keras.optimizers.SGD(0.05), loss=loss,
                      metrics=metrics)
    return model


def noisy_model(steps_per_execution=1):
    """Dropout, BatchNormalization and Adam with metrics: every kind of state a step changes."""
    tf.random.set_seed(3)
    model = tf.keras.Sequential([
        tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
        tf.keras.layers.BatchNormalization(), tf.keras.layers.Dropout(0.3),
        tf.keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer="adam", metrics=["mae"],
                  steps_per_execution=steps_per_execution)
    return model


def assert_same_weights(a, b):
    wa, wb = a if isinstance(a, list) else a.get_weights(), b if isinstance(b, list) else b.get_weights()
    assert len(wa) == len(wb)
    for u, v in zip(wa, wb):
        np.testing.assert_array_equal(u, v)


def assert_same_training(a, b):
    """Two fitted models ended with the same weights and the same optimizer state, bit for bit."""
    assert_same_weights(a, b)
    assert_same_weights([v.numpy() for v in a.optimizer.variables],
                        [v.numpy() for v in b.optimizer.variables])


def weights_differ(a, b):
    return any(not np.array_equal(u, v) for u, v in zip(a, b))


def single_error(excinfo):
    """The error stands alone: no "During handling of the above exception" chain."""
    err = excinfo.value
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__), err
    return str(err)


class Scripted(tf.keras.callbacks.Callback):
    """Writes ``values[epoch]`` into the epoch logs under ``key`` (before later callbacks read it)."""

    def __init__(self, key, values):
        super().__init__()
        self.key, self.values = key, list(values)

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = float(self.values[epoch])


class Recorder(tf.keras.callbacks.Callback):
    """Records what fit does: epochs begun, batches per epoch, weights at each epoch's end."""

    def __init__(self):
        super().__init__()
        self.epochs, self.batches, self.weights, self.batch_logs = [], [], [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)
        self.batches.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.batches[-1] += 1
        self.batch_logs.append(dict(logs))

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())


class StopAt(tf.keras.callbacks.Callback):
    """Sets ``model.stop_training`` at the end of epoch ``epoch``."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            self.model.stop_training = True
