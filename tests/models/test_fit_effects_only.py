"""Steps whose logs no callback reads run for their effects only; an epoch's logs are then read
from the metrics, as Keras 3's ``_get_metrics_result_or_logs`` reads them.

``EFFECTS_AFTER`` is lowered to 1 here, so that a small fit reaches the effects-only code (a long
one does after 128 steps of a batch shape).
"""
import importlib
import io

import numpy as np
import pytest

import tapeflow as tf

from .helpers import assert_same_training, noisy_model
from .test_verbose import FakeTTY

# the module (tapeflow.tracing's ``function`` attribute is the decorator of that name)
function_module = importlib.import_module("tapeflow.tracing.function")


@pytest.fixture(autouse=True)
def effects_after_one(monkeypatch):
    monkeypatch.setattr(function_module, "EFFECTS_AFTER", 1)


def _data(n=70, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 4)).astype(np.float32),
            rng.normal(size=(n, 1)).astype(np.float32))


class ReadsEveryBatch(tf.keras.callbacks.Callback):
    """Reads each step's logs: fit computes them for every step."""

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(logs["loss"])


def test_unread_steps_train_as_read_ones():
    """Without a batch callback the steps skip their logs: the weights, the optimizer's state,
    the random draws and the history are those of a fit whose callback reads every step's."""
    x, y = _data()
    runs = []
    for callbacks in ([], [ReadsEveryBatch()]):
        model = noisy_model()
        tf.random.set_seed(5)
        history = model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=callbacks)
        runs.append((model, history.history))
    (quiet, hq), (read, hr) = runs
    assert hq == hr
    assert_same_training(quiet, read)
    def effects_compiled(model):  # per signature: whether it compiled effects-only code
        return [c._effects_run is not None for c in model.train_function._exact.values()]
    assert effects_compiled(quiet)[0]  # the full batches' signature
    assert not any(effects_compiled(read))


def test_epoch_logs_are_the_metrics_results():
    """Keras 3's fit: ``epoch_logs = _get_metrics_result_or_logs(logs)``: each metric's result
    over the epoch (the same as the last step's logs)."""
    x, y = _data()
    model = noisy_model()
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    results = {name: float(m.result()) for name, m in zip(model.metrics_names, model.metrics)}
    assert history.history == {k: [v] for k, v in results.items()}
    assert set(results) == {"loss", "mae"}


def test_run_for_effects_computes_no_results():
    """``Function.run_for_effects``: the Variable is assigned on every call, the result's
    computation (a Python function the graph calls) is left out once the signature has run
    ``EFFECTS_AFTER`` times."""
    from tapeflow import metrics as metrics_module
    calls = []

    def watched(a):
        calls.append(1)
        return a * 2

    v = tf.Variable(0.0)

    @tf.function
    def step(x):
        v.assign_add(tf.reduce_sum(x))
        return metrics_module.base.array_function(watched, x)

    x = tf.constant([1.0, 2.0])
    step(x)                      # traces (the Python function runs once at the trace's check)
    traced_calls = len(calls)
    assert step.run_for_effects(x) is None  # its first call for effects: the whole function
    assert len(calls) == traced_calls + 1
    for _ in range(3):
        step.run_for_effects(x)
    assert len(calls) == traced_calls + 1
    assert float(v.numpy()) == 15.0
    np.testing.assert_array_equal(step(x).numpy(), [2.0, 4.0])  # a plain call: its result
    assert float(v.numpy()) == 18.0


def test_custom_fit():
    """Keras: integration_tests/tf_custom_fit_test.py::test_custom_fit: a train_step of its
    own that returns its metrics' results (``metrics`` overridden): "loss" and "mae" are in
    the history, here with each the metric's result over the epoch."""
    class CustomModel(tf.keras.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = tf.keras.metrics.Mean(name="loss")
            self.mae_metric = tf.keras.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = tf.keras.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.loss_fn(y, y_pred)
            trainable_vars = self.trainable_variables
            gradients = tape.gradient(loss, trainable_vars)
            self.optimizer.apply(gradients, trainable_vars)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

    inputs = tf.keras.Input(shape=(32,))
    outputs = tf.keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam")
    rng = np.random.default_rng(0)
    x = rng.random((64, 32))
    y = rng.random((64, 1))
    history = model.fit(x, y, epochs=1, verbose=0)
    assert "loss" in history.history
    assert "mae" in history.history
    assert history.history["mae"] == [float(model.mae_metric.result())]


def test_logs_that_are_not_the_metrics_are_the_last_steps():
    """A train_step whose logs are not the metrics' results: every step computes its logs and
    the epoch's are the last step's (Keras: ``_get_metrics_result_or_logs`` is a no-op)."""
    class StepCounting(tf.keras.Sequential):
        def train_step(self, data):
            logs = super().train_step(data)
            return {"loss": logs["loss"], "steps": tf.cast(self.optimizer.iterations, "float32")}

    x, y = _data(n=40)
    model = StepCounting([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer="sgd")
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert history.history["steps"] == [5.0, 10.0]


def test_evaluate_reads_the_metrics():
    """evaluate: the steps after the first run for their effects; the result is the metrics'
    (Keras 3's evaluate reads ``_get_metrics_result_or_logs`` too), as a fully computed run's."""
    x, y = _data()
    model = noisy_model()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    first = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    again = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    assert first == again
    assert any(c._effects_run is not None for c in model.test_function._exact.values())
    model.reset_metrics()
    for i in range(0, 70, 8):
        logs = model.test_on_batch(x[i:i + 8], y[i:i + 8], return_dict=True)
    assert logs == pytest.approx(first, rel=1e-6)


@pytest.mark.parametrize("stream, reads", [(io.StringIO(), False), (FakeTTY(), True)])
def test_a_line_per_epoch_reads_no_batch(stream, reads):
    """The progress logger writing one line per epoch (not a terminal) reads no step's logs, so
    the steps run for their effects; a bar on a terminal reads them."""
    x, y = _data(n=40)
    model = noisy_model()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=1,
                        callbacks=[tf.keras.callbacks.ProgbarLogger(stream=stream)])
    assert any(c._effects_run is not None for c in model.train_function._exact.values()) \
        is not reads
    assert f"loss: {history.history['loss'][-1]:.4f}" in stream.getvalue() or reads


def test_a_value_of_its_own_under_a_metrics_name_is_kept():
    """A train_step that logs its batch's loss as "loss" and never updates the loss tracker:
    its logs are not the metrics' (the tracker reads 0), so the epoch's are the last step's."""
    class OwnLoss(tf.keras.Sequential):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((self(x) - y) ** 2)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": loss}

    x, y = _data(n=16)
    model = OwnLoss([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert all(loss > 0 for loss in history.history["loss"])
    assert float(model.metrics[0].result()) == 0.0
