"""``compile(steps_per_execution=N)``: N batches per compiled call, the same training as N=1.

Ported from keras-team/keras ``keras/src/trainers/trainer_test.py`` (named on each test):
its ``ExampleModel`` is a bias-free ``Dense(units)`` with a kernel of ones, here a Sequential.
"""
import io

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.models import executions

from .helpers import assert_same_training, assert_same_weights, noisy_model


def example_model(units=1, steps_per_execution=1, run_eagerly=False, optimizer="sgd",
                  metrics=None):
    """Keras's trainer_test ``ExampleModel``: Dense(units, use_bias=False, kernel ones)."""
    model = tf.keras.Sequential([
        tf.keras.Input((4,)),
        tf.keras.layers.Dense(units, use_bias=False, kernel_initializer="ones")])
    model.compile(loss="mse", optimizer=optimizer, metrics=metrics,
                  steps_per_execution=steps_per_execution, run_eagerly=run_eagerly)
    return model


class StepCount(tf.keras.callbacks.Callback):
    """Keras's trainer_test ``StepCount``: each epoch's executions, and that each batch index is
    the execution's first batch (begin) and first + N - 1 (end)."""

    def __init__(self, steps_per_execution=1):
        super().__init__()
        self.begin_count = self.end_count = 0
        self.epoch_begin_count = self.epoch_end_count = 0
        self.steps_per_execution = steps_per_execution

    def on_epoch_begin(self, epoch, logs=None):
        self.begin_count = self.end_count = 0
        self.epoch_begin_count += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_end_count += 1

    def on_batch_begin(self, batch, logs=None):
        if batch != self.begin_count * self.steps_per_execution:
            raise ValueError("Batch index is not correct")
        self.begin_count += 1

    def on_batch_end(self, batch, logs=None):
        self.end_count += 1
        if batch != self.end_count * self.steps_per_execution - 1:
            raise ValueError("Batch index is not correct")


@pytest.mark.parametrize("mode", ["eager", "non_jit"])
@pytest.mark.parametrize("steps_per_execution", [3, 101])
def test_steps_per_execution_steps_count(steps_per_execution, mode):
    """Keras: trainer_test.py::test_steps_per_execution_steps_count (its values), and the
    weights equal bit for bit, as the N steps do N=1's arithmetic in its order."""
    data_size, batch_size, epochs = 100, 16, 2
    x = np.ones((data_size, 4), np.float32)
    y = np.ones((data_size, 1), np.float32)
    model = example_model(steps_per_execution=steps_per_execution,
                          run_eagerly=mode == "eager")
    step_count = StepCount(steps_per_execution)
    history = model.fit(x=x, y=y, batch_size=batch_size, epochs=epochs,
                        callbacks=[step_count], verbose=0)
    assert step_count.begin_count == 1 + (data_size - 1) // (steps_per_execution * batch_size)
    assert step_count.end_count == step_count.begin_count
    assert step_count.epoch_begin_count == epochs
    assert step_count.epoch_end_count == step_count.epoch_begin_count

    model_2 = example_model(steps_per_execution=1, run_eagerly=mode == "eager")
    history_2 = model_2.fit(x=x, y=y, batch_size=batch_size, epochs=epochs, verbose=0)
    np.testing.assert_allclose(history.history["loss"], history_2.history["loss"])
    assert_same_weights(model, model_2)
    np.testing.assert_array_equal(model.predict(x, batch_size=batch_size, verbose=0),
                                  model_2.predict(x, batch_size=batch_size, verbose=0))
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), model_2.evaluate(x, y, verbose=0))


def test_retracing():
    """Keras: trainer_test.py::test_retracing: 100 batches of one sample, 20 per execution, and
    ``train_step`` traced at most twice (the N-step graph inlines the step's one trace)."""
    tracing_count = [0]

    class TracingCounterModel(tf.keras.Sequential):
        def train_step(self, *args):
            tracing_count[0] += 1
            return super().train_step(*args)

    model = TracingCounterModel([tf.keras.Input((4,)), tf.keras.layers.Dense(1, activation="relu")])
    model.compile(loss="mse", optimizer="adam", steps_per_execution=20)
    model.fit(x=np.ones((100, 4)), y=np.ones((100, 1)), batch_size=1, epochs=1, verbose=0)
    assert tracing_count[0] <= 2


@pytest.mark.parametrize("steps_per_execution", [1, 50])
def test_predict_generator(steps_per_execution):
    """Keras: trainer_test.py::test_predict_generator: a generator's batches predicted in
    order (an identity model on 10 samples, 2 a batch)."""
    def generate_batches():
        values = iter(range(10))
        while True:
            batch = np.array([v for _, v in zip(range(2), values)], np.float32)
            if not batch.size:
                return
            yield (batch[:, None],)

    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Identity()])
    model.compile(loss="mse", optimizer="sgd", steps_per_execution=steps_per_execution)
    preds = model.predict(x=generate_batches(), verbose=0)
    np.testing.assert_array_equal(preds, np.concatenate([b[0] for b in generate_batches()]))


@pytest.mark.parametrize("steps_per_execution", [3, 32])
def test_same_training_as_one_step_per_call(steps_per_execution):
    """Shuffled batches, a short last one, random draws: the weights, the optimizer's and
    the metrics' state and the history are N=1's exactly."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(70, 4)).astype(np.float32)
    y = rng.normal(size=(70, 1)).astype(np.float32)
    runs = []
    for n in (1, steps_per_execution):
        model = noisy_model(n)
        tf.random.set_seed(5)
        history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        runs.append((model, history.history))
    (one, h1), (many, hn) = runs
    assert hn == h1
    assert_same_training(many, one)
    np.testing.assert_array_equal(many.predict(x, batch_size=8, verbose=0),
                                  one.predict(x, batch_size=8, verbose=0))
    assert many.evaluate(x, y, batch_size=8, verbose=0) == \
        one.evaluate(x, y, batch_size=8, verbose=0)


def test_logs_read_once_per_execution():
    """Keras's rule: batch callbacks once per execution, with its last batch's index (first +
    N - 1, also for the last, shorter group) and the logs after that batch."""
    x = np.arange(28, dtype=np.float32).reshape(7, 4) / 28
    y = np.ones((7, 1), np.float32)
    seen = {}
    for n in (1, 3):
        calls = []
        callback = tf.keras.callbacks.LambdaCallback(
            on_train_batch_begin=lambda batch, logs: calls.append(("begin", batch)),
            on_train_batch_end=lambda batch, logs: calls.append(("end", batch, logs["loss"])))
        example_model(steps_per_execution=n).fit(x, y, batch_size=1, verbose=0,
                                                 callbacks=[callback], shuffle=False)
        seen[n] = calls
    assert [c[:2] for c in seen[3]] == [("begin", 0), ("end", 2), ("begin", 3), ("end", 5),
                                        ("begin", 6), ("end", 8)]
    one_step_losses = [c[2] for c in seen[1] if c[0] == "end"]
    assert [c[2] for c in seen[3] if c[0] == "end"] == [one_step_losses[i] for i in (2, 5, 6)]


def test_stop_training_after_an_execution():
    """A callback that stops training stops it at the end of the execution it sees."""
    class Stop(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    model = example_model(steps_per_execution=4)
    before = model.optimizer.iterations.numpy()
    model.fit(np.ones((32, 4)), np.ones((32, 1)), batch_size=2, epochs=3, verbose=0,
              callbacks=[Stop()])
    assert model.optimizer.iterations.numpy() - before == 4


def test_progress_bar_moves_by_the_execution():
    """The bar advances N steps an execution and ends at the epoch's size."""
    class FakeTTY(io.StringIO):
        def isatty(self):
            return True

    stream = FakeTTY()
    model = example_model(steps_per_execution=3)
    model.fit(np.ones((7, 4)), np.ones((7, 1)), batch_size=1, verbose=1,
              callbacks=[tf.keras.callbacks.ProgbarLogger(stream=stream)])
    text = stream.getvalue()
    assert "7/7" in text and "8/7" not in text and "9/7" not in text


def test_auto_leaves_the_progress_bar_moving():
    assert executions.per_execution("auto", 363) == executions.AUTO_MAX
    assert executions.per_execution("auto", 50) == 5
    assert executions.per_execution("auto", 9) == 1
    assert executions.per_execution("auto", None) == 1
    assert executions.per_execution(7, None) == 7
    model = example_model(steps_per_execution="auto")
    assert model.steps_per_execution == "auto"


@pytest.mark.parametrize("value", [0, -2, 2.5, True, "fast", None])
def test_bad_steps_per_execution(value):
    with pytest.raises(ValueError, match=r"steps_per_execution must be a positive integer or "
                                         r"'auto', got"):
        example_model(steps_per_execution=value)


def test_one_trace_of_the_step_and_one_graph_per_group_shape():
    """Four full batches and a short one, three an execution: the step traced for the two
    batch shapes, the N-step function for its two groups; later epochs trace nothing."""
    model = example_model(steps_per_execution=3)
    x = np.ones((9, 4), np.float32)
    model.fit(x, np.ones((9, 1), np.float32), batch_size=2, epochs=3, verbose=0)
    assert model.train_function.experimental_get_tracing_count() == 2
    assert model._executions["train"][1].traced.experimental_get_tracing_count() == 2
