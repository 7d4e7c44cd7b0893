"""Dtype policies (Keras 3's keras/src/dtype_policies/dtype_policy_test.py, FloatDTypePolicy
cases, ported with their values) and layers under them: float16 compute, float32 variables
(Keras: layers/layer_test.py::test_mixed_precision), gradients back in float32, a
mixed_float16 fit with loss scaling."""
import copy
import pickle
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import mixed_precision
from tapeflow.keras.mixed_precision import DTypePolicy

layers = tf.keras.layers


@pytest.fixture(autouse=True)
def _global_policy_restored():
    # Keras: dtype_policy_test.py's setUp/tearDown
    previous = mixed_precision.global_policy()
    yield
    mixed_precision.set_global_policy(previous)


def test_initialization_valid_name():
    # Keras: dtype_policy_test.py::test_initialization_valid_name
    policy = DTypePolicy("mixed_float16")
    assert policy.compute_dtype == "float16"
    assert policy.variable_dtype == "float32"


@pytest.mark.parametrize("name, compute, variable", [
    ("float32", "float32", "float32"), ("float16", "float16", "float16"),
    ("mixed_float16", "float16", "float32")])
def test_initialization_from_global(name, compute, variable):
    # Keras: dtype_policy_test.py::test_initialization_from_global (the bfloat16 cases:
    # test_mixed_bfloat16.py)
    mixed_precision.set_global_policy(name)
    policy = DTypePolicy(name=None)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == (name, compute, variable)


def test_initialization_invalid_name():
    # Keras: dtype_policy_test.py::test_initialization_invalid_name
    with pytest.raises(ValueError, match="Cannot convert"):
        DTypePolicy("invalid_name")


def test_initialization_non_string_name():
    # Keras: dtype_policy_test.py::test_initialization_non_string_name
    with pytest.raises(TypeError, match="'name' must be a string"):
        DTypePolicy(123)


def test_properties():
    # Keras: dtype_policy_test.py::test_properties and test_properties_uint8
    policy = DTypePolicy("mixed_float16")
    assert (policy.variable_dtype, policy.compute_dtype, policy.name) == (
        "float32", "float16", "mixed_float16")
    assert not policy.is_quantized
    policy = DTypePolicy("uint8")
    assert (policy.compute_dtype, policy.variable_dtype, policy.name) == ("uint8",) * 3


def test_repr_config_and_python_serialization():
    # Keras: dtype_policy_test.py::test_repr, test_get_config_from_config,
    # test_python_serialization (Keras 3.5's repr names the class, DTypePolicy here)
    policy = DTypePolicy("mixed_float16")
    assert repr(policy) == '<DTypePolicy "mixed_float16">'
    assert policy.get_config() == {"name": "mixed_float16"}
    assert DTypePolicy.from_config(policy.get_config()).name == "mixed_float16"
    for copied in (copy.deepcopy(policy), copy.copy(policy), pickle.loads(pickle.dumps(policy))):
        assert repr(copied) == '<DTypePolicy "mixed_float16">'
    assert mixed_precision.get({"class_name": "DTypePolicy", "config": {"name": "float64"}}) \
        == DTypePolicy("float64")


def test_eq():
    # Keras: dtype_policy_test.py::test_eq (with mixed_float16; mixed_bfloat16 in
    # test_mixed_bfloat16.py)
    policy = DTypePolicy("mixed_float16")
    assert policy == DTypePolicy("mixed_float16")
    assert policy != "mixed_float16"
    assert policy != DTypePolicy("float16")


@pytest.mark.parametrize("name", ["mixed_bfloat16", "bfloat16"])
def test_bfloat16_policies_without_ml_dtypes_are_refused_naming_the_extra(name, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # what an install without it sees
    refusal = r"bfloat16.*ml_dtypes.*tapeflow\[bfloat16\].*mixed_float16"
    with pytest.raises(ValueError, match=refusal):
        DTypePolicy(name)
    with pytest.raises(ValueError, match="ml_dtypes"):
        mixed_precision.set_global_policy(name)
    with pytest.raises(AttributeError, match=r"tapeflow\[bfloat16\]"):
        tf.bfloat16  # noqa: B018


def test_mixed_layer_computes_in_float16_with_float32_variables():
    # Keras: layers/layer_test.py::test_mixed_precision
    x = np.ones((4, 4), np.float32)
    layer = layers.Dense(2, dtype="mixed_float16")
    y = layer(x)
    assert (layer.compute_dtype, layer.variable_dtype) == ("float16", "float32")
    assert y.dtype == tf.float16 and layer.kernel.dtype == tf.float32
    assert layer.dtype_policy == DTypePolicy("mixed_float16")
    assert layers.Dense.from_config(layer.get_config()).compute_dtype == "float16"


def test_global_policy_sets_new_layers_and_a_float32_last_layer_gives_float32():
    mixed_precision.set_global_policy("mixed_float16")
    dense = layers.Dense(3)
    head = layers.Activation("softmax", dtype="float32")
    out = head(dense(np.ones((2, 5), np.float32)))
    assert dense.compute_dtype == "float16" and out.dtype == tf.float32
    assert dense.kernel.dtype == tf.float32 and isinstance(dense.kernel, tf.Variable)


def test_mixed_gradients_are_float32_and_match_the_float32_layer():
    """The cast of each variable is an op on it: the tape gives float32 gradients, equal to
    the float32 layer's within float16's precision."""
    x = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    mixed, plain = layers.Dense(2, dtype="mixed_float16"), layers.Dense(2)
    mixed.build((None, 4))
    plain.build((None, 4))
    plain.set_weights(mixed.get_weights())
    grads = []
    for layer in (mixed, plain):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(layer(x), tf.float32) ** 2)
        grads.append(tape.gradient(loss, layer.trainable_variables))
    assert [g.dtype for g in grads[0]] == [tf.float32, tf.float32]
    for g16, g32 in zip(*grads):
        np.testing.assert_allclose(g16.numpy(), g32.numpy(), rtol=2e-2, atol=2e-2)
    assert mixed.kernel.dtype == tf.float32  # the variable is back after the call


def test_float16_matmul_is_float32_products_rounded_once():
    a = np.random.default_rng(0).uniform(-1, 1, (16, 64)).astype(np.float16)
    b = np.random.default_rng(1).uniform(-1, 1, (64, 8)).astype(np.float16)
    out = tf.matmul(tf.constant(a), tf.constant(b))
    assert out.dtype == tf.float16
    np.testing.assert_array_equal(
        out.numpy(), (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))


def test_mixed_float16_fit_learns_with_loss_scaling():
    mixed_precision.set_global_policy("mixed_float16")
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([layers.Dense(16, activation="tanh"), layers.Dense(1),
                                 layers.Activation("linear", dtype="float32")])
    mixed_precision.set_global_policy("float32")
    x = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.03), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0], history.history
    assert isinstance(model.optimizer, mixed_precision.LossScaleOptimizer)
    assert model.layers[0].kernel.dtype == tf.float32
    assert float(model.optimizer.dynamic_scale.numpy()) == 2.0 ** 15  # no overflow here


def test_fit_differentiates_the_scaled_loss_and_halves_a_scale_that_overflows_float16():
    """2**30 times the loss overflows float16 in the backward pass: fit's steps are skipped
    and the scale halved until the gradients are finite, and the weights stay finite."""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([layers.Dense(8, dtype="mixed_float16"),
                                 layers.Dense(1, dtype="float32")])
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    optimizer = mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.01),
                                                   initial_scale=2.0 ** 30)
    model.compile(optimizer=optimizer, loss="mse")
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow this test makes
        model.fit(x, x[:, :1], batch_size=8, epochs=1, verbose=0)
    assert float(optimizer.dynamic_scale.numpy()) < 2.0 ** 30
    assert int(optimizer.iterations.numpy()) < 4  # some of the 4 steps were skipped
    assert all(np.isfinite(w).all() for w in model.get_weights())


@pytest.mark.parametrize("make", [
    lambda: layers.LSTM(3, dtype="mixed_float16"),  # the RNN runs its cell's call itself
    lambda: layers.MultiHeadAttention(2, 4, dtype="mixed_float16"),  # its projections too
    lambda: layers.BatchNormalization(dtype="mixed_float16"),  # assigns its moving statistics
], ids=["LSTM", "MultiHeadAttention", "BatchNormalization"])
def test_layers_with_sub_layers_or_state_compute_in_float16(make):
    layer = make()
    x = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(2, 5, 4)
    with tf.GradientTape() as tape:
        y = layer(x, x) if isinstance(layer, layers.MultiHeadAttention) else \
            layer(x, training=True)
        loss = tf.reduce_sum(tf.cast(y, tf.float32))
    grads = tape.gradient(loss, layer.trainable_variables)
    assert y.dtype == tf.float16
    assert all(v.dtype == tf.float32 and isinstance(v, tf.Variable) for v in layer.variables)
    assert grads and all(g is not None and g.dtype == tf.float32 for g in grads)


def test_batch_normalization_infers_in_float16_from_float32_moving_statistics():
    # Keras 3's BatchNormalization computes in float32 for float16 inputs and returns float16;
    # inference read the float32 moving statistics against float16 gamma (a dtype error before)
    layer = layers.BatchNormalization(dtype="mixed_float16")
    x = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(10, 4)
    plain = layers.BatchNormalization()
    for training in (True, False):
        y, want = layer(x, training=training), plain(x, training=training)
        assert y.dtype == tf.float16 and layer.moving_mean.dtype == tf.float32
        np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-3, atol=1e-3)
