"""Dense and channels-last Conv compute ``activation(y + bias)`` as one op (``BiasActivation``,
tapeflow/ops/bias_activation.py) where the activation is relu, sigmoid, tanh or linear: the same
values and gradients as the add and the activation apart, and nothing else changes (config)."""
import numpy as np
import pytest

import tapeflow as tf


def _op_names(fn, *args):
    return {e.op.name for e in tf.function(fn).get_concrete_function(*args).optimized_graph.eqns}


def test_dense_correctness():
    # Keras: keras/src/layers/core/dense_test.py::DenseTest::test_dense_correctness (bias + relu)
    layer = tf.keras.layers.Dense(units=2, activation="relu")
    layer.build((1, 2))
    layer.set_weights([np.array([[1.0, -2.0], [3.0, -4.0]]), np.array([5.0, -6.0])])
    inputs = np.array([[-1.0, 2.0]], np.float32)
    np.testing.assert_allclose(layer(inputs).numpy(), [[10.0, 0.0]])
    assert "BiasActivation" in _op_names(layer, tf.constant(inputs))


def _unfused(activation):
    return {"linear": lambda t: t, "relu": tf.nn.relu, "sigmoid": tf.math.sigmoid,
            "tanh": tf.math.tanh}[activation]


# (64, 8) x 64 units is 32,768 outputs: the tiled rows of the compiled kernel
@pytest.mark.parametrize("activation,shape", [("linear", (5, 3)), ("relu", (5, 3)),
                                              ("sigmoid", (5, 3)), ("tanh", (5, 3)),
                                              ("relu", (64, 8, 2))])
def test_dense_gives_the_unfused_values_and_gradients(activation, shape):
    rng = np.random.default_rng(0)
    units = 64 if len(shape) == 3 else 4
    layer = tf.keras.layers.Dense(units, activation=activation, dtype="float64")
    x = tf.constant(rng.normal(size=shape))
    layer.build(x.shape)
    layer.bias.assign(rng.normal(size=units))

    def fused(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, [x, layer.kernel, layer.bias])

    def apart(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _unfused(activation)(x @ layer.kernel + layer.bias)
            loss = tf.reduce_sum(y * y)
        return [y] + tape.gradient(loss, [x, layer.kernel, layer.bias])

    want = [t.numpy() for t in apart(x)]
    for got in (fused(x), tf.function(fused)(x)):  # eager, and compiled kernels
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)
    assert {"BiasActivation"} <= _op_names(fused, x)


def test_a_python_activation_keeps_the_add_and_its_own_ops():
    layer = tf.keras.layers.Dense(3, activation=lambda t: tf.nn.relu(t) * 2.0)
    x = tf.constant(np.ones((2, 4), np.float32))
    layer(x)
    names = _op_names(layer, x)
    assert "BiasActivation" not in names and {"AddV2", "Relu"} <= names


def test_gradient_override_map_still_sees_relu():
    @tf.RegisterGradient("DoubledReluGradForDenseTest")
    def _doubled(op, g):
        return 2.0 * g * tf.cast(op.outputs[0] > 0, g.dtype)

    layer = tf.keras.layers.Dense(2, activation="relu", bias_initializer="ones")
    x = tf.constant(np.ones((1, 3), np.float32))
    layer(x)
    with tf.GradientTape() as tape:
        plain = tf.reduce_sum(layer(x))
    with tf.gradient_override_map({"Relu": "DoubledReluGradForDenseTest"}):
        with tf.GradientTape() as overridden_tape:
            overridden = tf.reduce_sum(layer(x))
    np.testing.assert_allclose(overridden.numpy(), plain.numpy())
    g = tape.gradient(plain, layer.bias).numpy()
    np.testing.assert_allclose(overridden_tape.gradient(overridden, layer.bias).numpy(), 2 * g)


def test_conv_channels_last_fuses_and_config_is_unchanged():
    conv = tf.keras.layers.Conv2D(4, 3, activation="relu")
    x = tf.constant(np.random.default_rng(1).normal(size=(2, 6, 6, 3)).astype(np.float32))
    conv(x)
    assert "BiasActivation" in _op_names(conv, x)
    config = tf.keras.layers.Dense(3, activation="relu").get_config()
    assert config["activation"] == "relu" and config["use_bias"] is True
