"""fit / evaluate / predict run traced steps by default, and they are the eager steps.

A traced training step holds the forward pass, the gradient, the optimizer's update,
BatchNormalization's moving statistics, Dropout's draws and the metrics' state in one
graph; with the same seed it gives the history and weights ``run_eagerly=True`` gives.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend
from tapeflow.layers import BatchNormalization, Dense, Dropout

RTOL = 1e-5


def regression_data(n=100, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ rng.normal(size=(4, 1)) + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


def classification_data(n=90, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5)).astype("float32")
    y = np.argmax(x[:, :3] + 0.3 * rng.normal(size=(n, 3)), axis=1).astype("int32")
    return x, y


def regression_model():
    return tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(8, activation="relu"), Dense(1)])


def classification_model():
    return tf.keras.Sequential([tf.keras.Input(shape=(5,)), Dense(16, activation="relu"),
                                BatchNormalization(), Dropout(0.3, seed=7), Dense(16),
                                Dropout(0.2), Dense(3, activation="softmax")])


def train(make_model, compile_kwargs, fit_kwargs, run_eagerly, seed=0):
    tf.random.set_seed(seed)
    model = make_model()
    model.compile(**compile_kwargs, run_eagerly=run_eagerly)
    history = model.fit(**fit_kwargs)
    return model, history.history


def assert_same_training(eager, traced):
    (e_model, e_hist), (t_model, t_hist) = eager, traced
    assert e_hist.keys() == t_hist.keys()
    for key in e_hist:
        np.testing.assert_allclose(t_hist[key], e_hist[key], rtol=RTOL, err_msg=key)
    assert len(e_model.weights) == len(t_model.weights)
    for we, wt in zip(e_model.weights, t_model.weights):
        np.testing.assert_allclose(wt.numpy(), we.numpy(), rtol=RTOL, atol=1e-6, err_msg=we.path)
    e_state, t_state = e_model.optimizer.get_state(), t_model.optimizer.get_state()
    assert e_state.keys() == t_state.keys()
    for key in e_state:
        np.testing.assert_allclose(t_state[key], e_state[key], rtol=RTOL, atol=1e-6, err_msg=key)


# --- Dropout draws anew at every call of a traced function ---------------------------------------
def test_traced_dropout_draws_new_masks_in_the_eager_sequence():
    x = tf.ones((6, 10))
    layer = Dropout(0.5)
    tf.random.set_seed(3)
    eager = [layer(x, training=True).numpy() for _ in range(3)]
    fn = tf.function(lambda x: layer(x, training=True))
    tf.random.set_seed(3)
    traced = [fn(x).numpy() for _ in range(3)]
    assert fn.experimental_get_tracing_count() == 1
    assert not np.array_equal(traced[0], traced[1])  # not a mask baked at trace time
    for e, t in zip(eager, traced):
        np.testing.assert_array_equal(t, e)


@pytest.mark.parametrize("draw", [
    lambda x: tf.random.normal([3, 2]) + x,
    lambda x: tf.random.uniform([3, 2], minval=-1.0, maxval=2.0, seed=4) + x,
    lambda x: tf.random.truncated_normal([3, 2], stddev=0.5) + x,
    lambda x: tf.cast(tf.random.uniform([3, 2], maxval=10, dtype=tf.int32), tf.float32) + x,
    lambda x: tf.random.shuffle(x + tf.constant([[0.0], [1.0], [2.0]])),
], ids=["normal", "uniform_op_seed", "truncated_normal", "uniform_int", "shuffle"])
def test_traced_random_ops_draw_anew_in_the_eager_sequence(draw):
    x = tf.zeros((3, 2))
    tf.random.set_seed(9)
    eager = [draw(x).numpy() for _ in range(3)]
    fn = tf.function(draw)
    tf.random.set_seed(9)
    traced = [fn(x).numpy() for _ in range(3)]
    assert not np.array_equal(traced[0], traced[1]) or not np.array_equal(traced[1], traced[2])
    for e, t in zip(eager, traced):
        np.testing.assert_array_equal(t, e)


def test_a_traced_dropout_fits_every_batch_size_and_draws_nothing_while_tracing():
    layer = Dropout(0.5, seed=11)
    fn = tf.function(lambda x: layer(x, training=True))
    tf.random.set_seed(4)
    got = [fn(tf.ones((n, 3))).numpy() for n in (4, 2, 4)]
    tf.random.set_seed(4)
    want = [layer(tf.ones((n, 3)), training=True).numpy() for n in (4, 2, 4)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# --- fit: traced by default, the same numbers as run_eagerly=True ------------------------------
REGRESSION = dict(optimizer="placeholder", loss="mse", metrics=["mae", "mse"])


@pytest.mark.parametrize("make_optimizer", [
    lambda: tf.optimizers.Adam(0.01, amsgrad=True),
    lambda: tf.optimizers.SGD(0.05, momentum=0.9, nesterov=True, clipnorm=1.0),
    lambda: tf.optimizers.Nadam(tf.optimizers.schedules.ExponentialDecay(0.01, 3, 0.8),
                                weight_decay=0.01),
    lambda: tf.optimizers.RMSprop(0.005, global_clipnorm=1.0),
], ids=["adam_amsgrad", "sgd_nesterov_clipnorm", "nadam_schedule_decay", "rmsprop_global_clip"])
def test_fit_regression_traced_equals_eager(make_optimizer):
    x, y = regression_data()
    runs = []
    for run_eagerly in (True, False):
        compile_kwargs = dict(REGRESSION, optimizer=make_optimizer())
        runs.append(train(regression_model, compile_kwargs,
                          dict(x=x, y=y, batch_size=32, epochs=4, verbose=0,
                               validation_split=0.2), run_eagerly))
    assert_same_training(*runs)
    eager_model, traced_model = runs[0][0], runs[1][0]
    assert eager_model.train_function is None
    assert traced_model.train_function is not None


def test_fit_classification_with_batch_norm_and_dropout_traced_equals_eager():
    x, y = classification_data()
    w = np.linspace(0.5, 1.5, len(x)).astype("float32")
    runs = []
    for run_eagerly in (True, False):
        compile_kwargs = dict(optimizer=tf.optimizers.Adam(0.01),
                              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        runs.append(train(classification_model, compile_kwargs,
                          dict(x=x, y=y, sample_weight=w, batch_size=16, epochs=3, verbose=0,
                               validation_data=(x[:30], y[:30])), run_eagerly, seed=5))
    assert_same_training(*runs)
    eager_model, traced_model = runs[0][0], runs[1][0]
    bn = traced_model.layers[1]
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)  # the traced step moved them
    for m in (eager_model, traced_model):
        m.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                  run_eagerly=m is eager_model)
    np.testing.assert_allclose(traced_model.evaluate(x, y, batch_size=16, verbose=0),
                               eager_model.evaluate(x, y, batch_size=16, verbose=0), rtol=RTOL)
    np.testing.assert_allclose(traced_model.predict(x, batch_size=16, verbose=0),
                               eager_model.predict(x, batch_size=16, verbose=0), rtol=RTOL,
                               atol=1e-7)


def test_the_train_step_traces_once_for_full_batches_and_once_for_the_short_one():
    x, y = regression_data(100)  # batches of 32: three full ones and one of 4
    tf.random.set_seed(0)
    model = regression_model()
    model.compile(tf.optimizers.Adam(0.01), "mse", metrics=["mae"])
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, validation_data=(x[:50], y[:50]))
    assert model.train_function.experimental_get_tracing_count() == 2
    model.fit(x, y, batch_size=32, epochs=3, verbose=0, validation_data=(x[:50], y[:50]))
    assert model.train_function.experimental_get_tracing_count() == 2
    assert model.test_function.experimental_get_tracing_count() == 2  # 32 and 18
    assert int(model.optimizer.iterations) == 16


def test_an_overridden_train_step_is_traced():
    class Counting(tf.keras.Sequential):
        traces = 0

        def train_step(self, data):
            Counting.traces += 1  # Python runs while tracing only
            return super().train_step(data)

    x, y = regression_data(40)
    model = Counting([tf.keras.Input(shape=(4,)), Dense(1)])
    model.compile(tf.optimizers.SGD(0.1), "mse")
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert Counting.traces == 2  # 16 and 8
    assert int(model.optimizer.iterations) == 9
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_run_functions_eagerly_runs_the_python_steps():
    x, y = regression_data(40)
    model = regression_model()
    model.compile("adam", "mse")
    tf.config.run_functions_eagerly(True)
    try:
        model.fit(x, y, epochs=1, verbose=0)
        model.evaluate(x, y, verbose=0)
    finally:
        tf.config.run_functions_eagerly(False)
    assert model.train_function is None and model.test_function is None


def test_out_of_range_sparse_labels_still_raise_in_a_traced_step():
    x, y = classification_data(20)
    y[-1] = 3
    model = classification_model()
    model.compile("adam", "sparse_categorical_crossentropy")
    if backend.device_module() is np:
        with pytest.raises(ValueError, match="class indices must lie in"):
            model.fit(x, y, batch_size=10, epochs=1, verbose=0)
        return
    # on a device (--device strict) a traced step does not read its labels back at every
    # step: as TensorFlow's GPU kernel, the out-of-range label's loss is NaN (losses.py) ...
    history = model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    assert np.isnan(history.history["loss"][0])
    # ... and an eager step, which reads them, still raises
    model.compile("adam", "sparse_categorical_crossentropy", run_eagerly=True)
    with pytest.raises(ValueError, match="class indices must lie in"):
        model.fit(x, y, batch_size=10, epochs=1, verbose=0)


# --- what runs eagerly, and still works ------------------------------------------------------
def test_newton_fit_runs_its_steps_eagerly():
    x, y = regression_data(30)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(1)])
    model.compile(tf.optimizers.Newton(), "mse")
    history = model.fit(x, y, batch_size=30, epochs=3, verbose=0)
    assert model.train_function is None
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0]


def test_input_gradient_fit_traced_equals_the_eager_fit():
    """The penalty differentiates a gradient: a tape inside the traced step's tape."""
    x, y = regression_data(48)
    runs = []
    for run_eagerly in (True, False):
        compile_kwargs = dict(optimizer=tf.optimizers.Adam(0.01), loss="mse",
                              input_gradient=tf.regularizers.InputGradient(0.5))
        runs.append(train(lambda: tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                                       Dense(8, activation="tanh"), Dense(1)]),
                          compile_kwargs, dict(x=x, y=y, batch_size=16, epochs=2, verbose=0),
                          run_eagerly))
    assert_same_training(*runs)
    assert runs[1][0].train_function is not None


def test_a_learning_rate_set_by_a_callback_reaches_the_traced_step():
    """A float rate lives in a Variable the graph reads, so LearningRateScheduler works traced."""
    x, y = regression_data(64)
    runs = []
    for run_eagerly in (True, False):
        scheduler = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.05 / (1 + epoch))
        runs.append(train(regression_model, dict(optimizer=tf.optimizers.SGD(0.05), loss="mse"),
                          dict(x=x, y=y, batch_size=16, epochs=3, verbose=0,
                               callbacks=[scheduler]), run_eagerly))
    assert_same_training(*runs)
    assert runs[1][1]["learning_rate"] == pytest.approx([0.05, 0.025, 0.05 / 3])
