"""The Newton optimizer: exact on quadratics, damped and safe elsewhere, in fit and alone."""
import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

import tapeflow as tf
from .housing import housing_split


def test_linear_model_reaches_least_squares_in_one_step():
    data = housing_split()
    reference = LinearRegression().fit(data["x_train"], data["y_train"])
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype="float64")], dtype="float64")
    model.compile(optimizer=tf.optimizers.Newton(), loss="mse")
    n = data["x_train"].shape[0]
    model.fit(data["x_train"], data["y_train"], batch_size=n, epochs=1, shuffle=False, verbose=0)
    kernel, bias = model.get_weights()
    assert kernel.dtype == np.float64
    assert model.optimizer.last_step_info["accepted"]
    np.testing.assert_allclose(kernel[:, 0], reference.coef_[0], rtol=1e-4)
    np.testing.assert_allclose(bias, reference.intercept_, rtol=1e-4)


def test_standalone_minimize_over_several_variables():
    w = tf.Variable([[1.0], [-1.0]], dtype=tf.float64)
    b = tf.Variable([0.5], dtype=tf.float64)
    x = tf.constant(np.random.default_rng(0).standard_normal((20, 2)))
    y = x @ tf.constant([[2.0], [3.0]], dtype=tf.float64) - 1.0
    opt = tf.optimizers.Newton()

    def loss():
        return tf.reduce_mean((x @ w + b - y) ** 2)
    opt.minimize(loss, [w, b])
    np.testing.assert_allclose(w.numpy()[:, 0], [2.0, 3.0], rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), [-1.0], rtol=1e-5)
    assert int(opt.iterations.numpy()) == 1


def test_non_convex_steps_never_raise_the_loss():
    w = tf.Variable([0.3, -0.2], dtype=tf.float64)

    def loss():  # indefinite Hessian near the start
        return tf.reduce_sum(tf.math.cos(3.0 * w)) + 0.1 * tf.reduce_sum(w ** 4)
    opt = tf.optimizers.Newton()
    values = [float(loss())]
    for _ in range(8):
        opt.minimize(loss, [w])
        values.append(float(loss()))
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] < values[0] - 1.0  # it found a descent direction despite H < 0


def test_rejected_step_restores_the_variables_and_raises_damping():
    w = tf.Variable([1.0], dtype=tf.float64)
    calls = {"n": 0}

    def loss():  # a minimum at w=1 exactly: no step can lower it
        calls["n"] += 1
        return tf.reduce_sum((w - 1.0) ** 2) + 1.0
    opt = tf.optimizers.Newton(max_tries=3)
    before = opt.damping
    opt.minimize(loss, [w])
    assert w.numpy()[0] == 1.0
    assert not opt.last_step_info["accepted"] and opt.damping > before


def test_nan_loss_restores_the_last_good_point():
    w = tf.Variable([2.0], dtype=tf.float64)
    poison = {"on": False}

    def loss():
        value = tf.reduce_sum((w - 3.0) ** 2)
        return value * float("nan") if poison["on"] else value
    opt = tf.optimizers.Newton()
    opt.minimize(loss, [w])
    good = w.numpy().copy()
    w.assign([100.0])  # something moved the weights to a bad place
    poison["on"] = True
    opt.minimize(loss, [w])
    np.testing.assert_array_equal(w.numpy(), [2.0])  # back to where the last good step started
    assert not math.isfinite(opt.last_step_info["loss"])
    assert good[0] == pytest.approx(3.0)


def test_matrix_free_mode_matches_the_dense_step():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((30, 6)))
    y = tf.constant(rng.standard_normal((30, 1)))
    start = rng.standard_normal((6, 1))

    def run(threshold):
        w = tf.Variable(start)
        opt = tf.optimizers.Newton(matrix_free_above=threshold)
        opt.minimize(lambda: tf.reduce_mean(tf.math.tanh(x @ w) ** 2 + (x @ w - y) ** 2), [w])
        return w.numpy()
    np.testing.assert_allclose(run(1000), run(1), rtol=1e-5, atol=1e-8)


def test_newton_needs_a_loss_function():
    opt = tf.optimizers.Newton()
    w = tf.Variable(1.0)
    with pytest.raises(TypeError, match="loss"):
        opt.apply_gradients([(tf.constant(1.0), w)])
    with tf.GradientTape() as tape:
        loss = w * w
    with pytest.raises(TypeError, match="function"):
        opt.minimize(loss, [w], tape=tape)


def test_newton_minibatch_fit_trains_a_small_mlp():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((256, 3)).astype(np.float32)
    y = (np.sin(x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype(np.float32)
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(3,)),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="newton", loss="mse")
    before = model.evaluate(x, y, verbose=0)
    history = model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    assert history.history["loss"][-1] < before * 0.5


def test_subsampled_hessian_in_fit_uses_the_whole_batch_gradient():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((512, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    tf.random.set_seed(5)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
    opt = tf.optimizers.Newton(hessian_batch_size=64)
    model.compile(optimizer=opt, loss="mse")
    calls = {"n": 0}
    original = opt.minimize

    def counting(objective):  # fit hands the step the batch's Objective
        curvature_loss = objective.curvature_loss

        def counted(size):
            found = curvature_loss(size)
            calls["n"] += found is not None
            return found
        objective.curvature_loss = counted
        return original(objective)
    opt.minimize = counting
    model.fit(x, y, batch_size=512, epochs=3, verbose=0)
    assert calls["n"] == 3
    # a linear model's Hessian does not depend on the weights, and a 64-row estimate of it is
    # close: three steps with the exact gradient land near the least-squares answer
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel[:, 0], [1.0, -2.0, 0.5], atol=0.05)
    np.testing.assert_allclose(bias, [0.3], atol=0.05)


def test_newton_in_fit_moves_batch_norm_statistics_once_per_step():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 3)).astype(np.float32) * 3 + 2
    y = x[:, :1] - x[:, 1:2]
    tf.random.set_seed(7)
    bn = tf.keras.layers.BatchNormalization(momentum=0.5)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, input_shape=(3,)), bn,
                                 tf.keras.layers.Dropout(0.2, seed=1), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.optimizers.Newton(), loss="mse")
    hidden = model.layers[0](x)  # the statistics the step's first forward pass sees
    model.fit(x, y, batch_size=128, epochs=1, shuffle=False, verbose=0)
    assert model.optimizer.last_step_info["tries"] >= 1
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * hidden.numpy().mean(0), rtol=1e-4,
                               atol=1e-5)
