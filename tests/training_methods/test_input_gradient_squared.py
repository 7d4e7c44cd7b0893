"""InputGradient's two sizes: mean per-example norm, or (``squared=True``) mean squared norm.

``penalty = weight * mean_i s_i`` with ``g_i = batch_size * dL/dx_i`` (the loss is a batch mean)
and ``s_i = ||g_i||`` or ``||g_i||^2`` summed over every axis but the batch's.  The expected
values here come from numpy alone: the input gradients of small models written out by hand.
"""
import numpy as np
import pytest

import tapeflow as tf
from .differences import assert_gradients_match_differences


def _numpy_penalty(grad, weight, squared):
    """The penalty from the gradient of the batch-mean loss, in numpy."""
    grad = np.asarray(grad, np.float64)
    per_example = grad * grad.shape[0]
    sq = (per_example ** 2).reshape(grad.shape[0], -1).sum(axis=1)
    return weight * np.mean(sq if squared else np.sqrt(sq))


@pytest.mark.parametrize("shape", [(4, 3), (5, 2, 3), (6,), (1, 4)])
def test_penalty_of_a_given_gradient(shape):
    rng = np.random.default_rng(sum(shape))
    grad = rng.standard_normal(shape) * 0.3
    plain = tf.regularizers.InputGradient(0.7)(tf.constant(grad))
    squared = tf.regularizers.InputGradient(0.7, squared=True)(tf.constant(grad))
    np.testing.assert_allclose(float(plain), _numpy_penalty(grad, 0.7, False), rtol=1e-12)
    np.testing.assert_allclose(float(squared), _numpy_penalty(grad, 0.7, True), rtol=1e-12)
    assert not np.isclose(float(plain), float(squared))


def test_penalty_values_written_out():
    # batch of 2: per-example gradients 2 * [3, 4] = [6, 8] (norm 10) and 2 * [0, 1] = [0, 2]
    grad = tf.constant([[3.0, 4.0], [0.0, 1.0]], dtype=tf.float64)
    assert float(tf.regularizers.InputGradient(1.0)(grad)) == pytest.approx((10 + 2) / 2)
    assert float(tf.regularizers.InputGradient(1.0, squared=True)(grad)) == \
        pytest.approx((100 + 4) / 2)
    assert float(tf.regularizers.InputGradient(0.5, squared=True)(grad)) == pytest.approx(26.0)
    # 1-D: one feature per example, |g_i| or g_i^2
    grad = tf.constant([1.0, -2.0, 0.5], dtype=tf.float64)
    assert float(tf.regularizers.InputGradient(1.0)(grad)) == pytest.approx(3 * 3.5 / 3)
    assert float(tf.regularizers.InputGradient(1.0, squared=True)(grad)) == \
        pytest.approx(9 * 5.25 / 3)


def _tanh_model(seed):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(5, activation="tanh", input_shape=(3,), dtype="float64"),
        tf.keras.layers.Dense(1, dtype="float64")], dtype="float64")
    # a float64 loss (Keras's dtype argument): "mse" computes in floatx, float32
    model.compile(loss=tf.keras.losses.MeanSquaredError(dtype="float64"), optimizer="sgd")
    return model


def _numpy_mse_input_gradient(model, x, y):
    """d mean_i (pred_i - y_i)^2 / dx for Dense(tanh) -> Dense(1), by hand."""
    w1, b1, w2, b2 = model.get_weights()
    h = np.tanh(x @ w1 + b1)
    r = (h @ w2 + b2 - y)[:, 0]
    dpred_dx = ((1 - h ** 2) * w2[:, 0]) @ w1.T  # (batch, features)
    return 2.0 / len(x) * r[:, None] * dpred_dx


@pytest.mark.parametrize("squared", [False, True])
def test_loss_and_penalty_against_numpy(squared):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3))
    y = rng.standard_normal((6, 1))
    model = _tanh_model(1)
    reg = tf.regularizers.InputGradient(0.4, squared=squared)
    total, y_pred = reg.loss_and_penalty(model, tf.constant(x), tf.constant(y))
    mse = float(np.mean((y_pred.numpy() - y) ** 2))
    expected = _numpy_penalty(_numpy_mse_input_gradient(model, x, y), 0.4, squared)
    np.testing.assert_allclose(float(total) - mse, expected, rtol=1e-10)


@pytest.mark.parametrize("squared", [False, True])
def test_fit_logs_the_loss_with_the_penalty(squared):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 3))
    y = rng.standard_normal((8, 1)) * 3
    model = _tanh_model(2)
    model.compile(loss=tf.keras.losses.MeanSquaredError(dtype="float64"),
                  optimizer=tf.optimizers.SGD(0.01),
                  input_gradient=tf.regularizers.InputGradient(0.25, squared=squared))
    w1, b1, w2, b2 = model.get_weights()
    pred = np.tanh(x @ w1 + b1) @ w2 + b2
    expected = np.mean((pred - y) ** 2) + _numpy_penalty(_numpy_mse_input_gradient(model, x, y),
                                                         0.25, squared)
    history = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    # the logged loss went through the float32 loss tracker
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-6)


@pytest.mark.parametrize("squared", [False, True])
def test_penalty_gradient_matches_finite_differences(squared):
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((5, 3)))
    y = tf.constant(rng.standard_normal((5, 1)))
    model = _tanh_model(3)
    reg = tf.regularizers.InputGradient(0.9, squared=squared)

    def penalty():
        total, y_pred = reg.loss_and_penalty(model, x, y)
        return total - tf.reduce_mean((y_pred - y) ** 2)
    assert_gradients_match_differences(penalty, model.trainable_variables)


def test_squared_survives_the_config():
    reg = tf.regularizers.InputGradient(0.3, squared=True)
    assert reg.get_config() == {"weight": 0.3, "squared": True}
    again = tf.regularizers.InputGradient.from_config(reg.get_config())
    grad = tf.constant([[1.0, 2.0], [2.0, 0.0]], dtype=tf.float64)
    assert float(again(grad)) == pytest.approx(0.3 * (4 * 5 + 4 * 4) / 2)
    assert tf.regularizers.InputGradient(0.3).get_config() == {"weight": 0.3, "squared": False}
