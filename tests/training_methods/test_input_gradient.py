"""Input-gradient regularization: exact gradients, really connected to the weights, and it works."""
import numpy as np
import pytest

import tapeflow as tf
from .differences import assert_gradients_match_differences
from .housing import float32, housing_split


def _model(dtype="float32", seed=0):
    tf.random.set_seed(seed)
    return tf.keras.Sequential([
        tf.keras.layers.Dense(6, activation="tanh", input_shape=(3,), dtype=dtype),
        tf.keras.layers.Dense(1, dtype=dtype)], dtype=dtype)


def test_penalty_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((5, 3)))
    y = tf.constant(rng.standard_normal((5, 1)))
    model = _model("float64")
    model.compile(loss=tf.keras.losses.MeanSquaredError(dtype="float64"), optimizer="sgd")
    reg = tf.regularizers.InputGradient(0.7)

    def total():
        loss, _ = reg.loss_and_penalty(model, x, y)
        return loss
    assert_gradients_match_differences(total, model.trainable_variables)


def test_penalty_value_is_the_per_example_input_gradient_norm():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((4, 3)))
    y = tf.constant(rng.standard_normal((4, 1)))
    model = _model("float64")
    model.compile(loss=tf.keras.losses.MeanSquaredError(dtype="float64"), optimizer="sgd")
    reg = tf.regularizers.InputGradient(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = model.compute_loss(x, y, model(x))
    g = tape.gradient(loss, x).numpy() * 4  # per example: batch size x d(mean loss)/dx_i
    expected = 2.0 * np.mean(np.linalg.norm(g, axis=1))
    total, _ = reg.loss_and_penalty(model, x, y)
    np.testing.assert_allclose(float(total) - float(loss), expected, rtol=1e-9)


def test_a_penalty_cut_off_from_the_weights_is_an_error():
    class Detached(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", (input_shape[-1],), "ones")

        def call(self, x):
            w = self.w

            @tf.custom_gradient
            def scale(x):
                def grad_fn(dy, variables):
                    # the input gradient loses its dependence on w
                    return tf.stop_gradient(dy * w), [tf.reduce_sum(dy * x, axis=0)]
                return x * w, grad_fn
            return scale(x)

    model = tf.keras.Sequential([Detached(input_shape=(3,))])
    model.compile(loss="mse", optimizer="sgd", input_gradient=tf.regularizers.InputGradient(1.0))
    with pytest.raises(ValueError, match="does not reach the model's weights"):
        model.fit(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32), verbose=0)


def test_custom_loop_usage_trains():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x[:, :1] * 2.0
    model = _model()
    model.compile(loss="mse", optimizer="sgd")
    reg = tf.regularizers.InputGradient(0.01)
    opt = tf.optimizers.Adam(0.05)
    losses = []
    for _ in range(30):
        with tf.GradientTape() as tape:
            loss, _ = reg.loss_and_penalty(model, x, y)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < losses[0] * 0.5


def _mean_input_gradient_norm(model, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x, training=False)
    return float(np.mean(np.linalg.norm(tape.gradient(y, x).numpy(), axis=1)))


def _train_housing(input_gradient):
    data = float32(housing_split())
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(30, activation="relu", input_shape=(8,)),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.optimizers.Adam(1e-3), loss="mse", input_gradient=input_gradient)
    model.fit(data["x_train"], data["y_train"], epochs=5, verbose=0)
    return (model.evaluate(data["x_test"], data["y_test"], verbose=0),
            _mean_input_gradient_norm(model, data["x_test"]))


def test_housing_input_gradient_penalty_flattens_the_model(capsys):
    plain_mse, plain_norm = _train_housing(None)
    reg_mse, reg_norm = _train_housing(tf.regularizers.InputGradient(0.2))
    with capsys.disabled():
        print(f"\nhousing, 5 epochs: mean |d pred/dx| {plain_norm:.3f} -> {reg_norm:.3f} "
              f"({1 - reg_norm / plain_norm:.0%} lower); test MSE {plain_mse:.4f} -> {reg_mse:.4f}")
    assert reg_norm <= 0.7 * plain_norm
    assert reg_mse < plain_mse + 0.1  # the price in accuracy stays modest
