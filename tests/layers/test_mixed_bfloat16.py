"""The ``mixed_bfloat16`` policy through ml_dtypes' bfloat16 (the ``[bfloat16]`` extra):
Keras 3's keras/src/dtype_policies/dtype_policy_test.py bfloat16 cases with their values,
bfloat16 tensors through the ops a mixed model uses, float32 gradients for float32 variables,
and a small fit: float32 variables, bfloat16 compute, no loss scaling, loss in float32."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import mixed_precision
from tapeflow.keras.mixed_precision import DTypePolicy

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs the [bfloat16] extra "
                                                    "(ml_dtypes), which is not installed")
layers = tf.keras.layers
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True)
def _global_policy_restored():
    # Keras: dtype_policy_test.py's setUp/tearDown
    previous = mixed_precision.global_policy()
    yield
    mixed_precision.set_global_policy(previous)


@pytest.mark.parametrize("name, compute, variable", [
    ("bfloat16", "bfloat16", "bfloat16"), ("mixed_bfloat16", "bfloat16", "float32")])
def test_initialization_from_global(name, compute, variable):
    # Keras: dtype_policy_test.py::test_initialization_from_global (the bfloat16 cases)
    mixed_precision.set_global_policy(name)
    policy = DTypePolicy(name=None)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute, variable)


def test_properties_mixed_bfloat16():
    # Keras: dtype_policy_test.py::test_properties_mixed_bfloat16
    policy = DTypePolicy("mixed_bfloat16")
    assert (policy.compute_dtype, policy.variable_dtype) == ("bfloat16", "float32")


def test_eq():
    # Keras: dtype_policy_test.py::test_eq
    policy = DTypePolicy("mixed_bfloat16")
    assert policy == DTypePolicy("mixed_bfloat16")
    assert policy != "mixed_float16"


def test_bfloat16_is_a_float_dtype():
    assert tf.bfloat16 == tf.as_dtype("bfloat16") == BF16 and tf.bfloat16.name == "bfloat16"
    assert tf.bfloat16.is_floating and not tf.bfloat16.is_integer and tf.bfloat16.size == 2
    assert float(tf.bfloat16.max) == float(ml_dtypes.finfo(BF16).max)
    assert tf.dtypes.is_float_dtype(BF16) and not tf.dtypes.is_float_dtype(np.int16)


def test_gradients_flow_through_bfloat16_tensors():
    x = tf.Variable(np.array([1.5, -2.0, 0.25], BF16))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.tanh(x) * x)
    grad = tape.gradient(y, x)
    assert grad.dtype == tf.bfloat16
    x32 = x.numpy().astype(np.float32)
    want = np.tanh(x32) + x32 * (1 - np.tanh(x32) ** 2)
    np.testing.assert_allclose(grad.numpy().astype(np.float32), want, rtol=2e-2)


def test_matmul_and_conv_are_float32_products_rounded_once():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (8, 32)).astype(BF16), rng.uniform(-1, 1, (32, 4)).astype(BF16)
    out = tf.matmul(tf.constant(a), tf.constant(b))
    assert out.dtype == tf.bfloat16
    np.testing.assert_array_equal(out.numpy(), (a.astype(np.float32) @ b.astype(np.float32))
                                  .astype(BF16))
    x, w = rng.normal(size=(2, 5, 5, 3)).astype(BF16), rng.normal(size=(3, 3, 3, 2)).astype(BF16)
    conv = tf.nn.conv2d(tf.constant(x), tf.constant(w), 1, "VALID")
    want = tf.nn.conv2d(tf.constant(x.astype(np.float32)), tf.constant(w.astype(np.float32)),
                        1, "VALID").numpy().astype(BF16)
    assert conv.dtype == tf.bfloat16
    np.testing.assert_array_equal(conv.numpy(), want)


@pytest.mark.parametrize("make", [
    lambda: layers.Dense(3, activation="relu", dtype="mixed_bfloat16"),
    lambda: layers.Conv1D(3, 2, dtype="mixed_bfloat16"),
    lambda: layers.LayerNormalization(dtype="mixed_bfloat16"),
    lambda: layers.BatchNormalization(dtype="mixed_bfloat16"),  # float32 statistics
    lambda: layers.Softmax(dtype="mixed_bfloat16"),
], ids=["Dense", "Conv1D", "LayerNormalization", "BatchNormalization", "Softmax"])
def test_layers_compute_in_bfloat16_with_float32_variables_and_gradients(make):
    layer, plain = make(), make()
    plain_config = {**layer.get_config(), "dtype": "float32"}
    plain = type(layer).from_config(plain_config)
    x = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(2, 5, 4)
    layer.build(x.shape)
    plain.build(x.shape)
    plain.set_weights(layer.get_weights())
    for training in (True, False):
        with tf.GradientTape() as tape:
            y = layer(x, training=training)
            loss = tf.reduce_sum(tf.cast(y, tf.float32) ** 2)
        grads = tape.gradient(loss, layer.trainable_variables)
        assert y.dtype == tf.bfloat16
        assert all(v.dtype == tf.float32 and isinstance(v, tf.Variable) for v in layer.variables)
        assert all(g is not None and g.dtype == tf.float32 for g in grads)
        # bfloat16 keeps 8 bits of mantissa: within 2**-6 of the float32 layer
        want = plain(x, training=training).numpy()
        np.testing.assert_allclose(y.numpy().astype(np.float32), want, rtol=2e-2, atol=2e-2)


def test_mixed_bfloat16_fit_learns_without_loss_scaling():
    # Keras: mixed-precision guide: float32 variables, bfloat16 compute, the last activation
    # in float32; Model.compile wraps an optimizer in a LossScaleOptimizer for mixed_float16 only
    mixed_precision.set_global_policy("mixed_bfloat16")
    tf.keras.utils.set_random_seed(0)
    hidden = layers.Dense(16, activation="tanh")
    model = tf.keras.Sequential([layers.Input((3,)), hidden, layers.Dense(1),
                                 layers.Activation("linear", dtype="float32")])
    x = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.03), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0], history.history
    assert not isinstance(model.optimizer, mixed_precision.LossScaleOptimizer)
    assert all(w.dtype == tf.float32 for w in model.weights)
    assert hidden(x[:2]).dtype == tf.bfloat16 and model(x[:2]).dtype == tf.float32
    loss = model.compute_loss(x[:4], y[:4], hidden(x[:4]))
    assert loss.dtype == tf.float32  # losses compute in floatx, as Keras's
