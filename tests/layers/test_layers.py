"""Dense, BatchNormalization, Normalization and the Layer base against numpy references."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import layers
from tests.ops.gradcheck import check_grads


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_dense_builds_on_first_call_with_hierarchical_names():
    d = layers.Dense(3, activation="relu", name="dense_t1")
    assert not d.built and d.variables == []
    y = d(np.ones((2, 4), np.float32))
    assert d.built and y.shape == (2, 3)
    assert [v.path for v in d.trainable_variables] == ["dense_t1/kernel", "dense_t1/bias"]
    assert d.kernel.name == "kernel"  # Keras 3's name; Keras 2's was 'dense_t1/kernel:0'


def test_dense_matches_numpy_with_set_weights():
    d = layers.Dense(2, activation="tanh")
    d.build((None, 3))
    w = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], np.float32)
    b = np.array([0.05, -0.05], np.float32)
    d.set_weights([w, b])
    x = _rng().standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(d(x).numpy(), np.tanh(x @ w + b), rtol=1e-6)
    with pytest.raises(ValueError, match="expected 2 arrays"):
        d.set_weights([w])
    with pytest.raises(ValueError, match="shape"):
        d.set_weights([w.T, b])


def test_dense_gradients_to_second_order():
    d = layers.Dense(3, activation="tanh", dtype="float64")
    x = _rng(1).standard_normal((5, 4))
    d(x)

    def f(x, k, b):
        return tf.math.tanh(x @ k + b)
    check_grads(f, [x, d.kernel.numpy(), d.bias.numpy()], order=2)


def test_dense_rejects_wrong_input_width():
    d = layers.Dense(2)
    d(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="last dimension 3"):
        d(np.ones((1, 4), np.float32))


def test_dense_config_round_trip():
    d = layers.Dense(4, activation="relu", use_bias=False, kernel_regularizer="l2", name="dd")
    clone = layers.Dense.from_config(d.get_config())
    assert clone.get_config() == d.get_config()


def _bn_reference(x, gamma, beta, mean, var, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def test_batch_normalization_training_and_inference_match_keras_formulas():
    x = _rng(2).standard_normal((8, 3)).astype(np.float32) * 2 + 1
    bn = layers.BatchNormalization(momentum=0.9, epsilon=1e-3)
    y = bn(x, training=True).numpy()
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(y, _bn_reference(x, 1, 0, mean, var, 1e-3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.9 + 0.1 * var, rtol=1e-5)
    y_inf = bn(x, training=False).numpy()
    np.testing.assert_allclose(
        y_inf, _bn_reference(x, 1, 0, bn.moving_mean.numpy(), bn.moving_variance.numpy(), 1e-3),
        rtol=1e-5, atol=1e-6)
    assert [v.path for v in bn.non_trainable_variables][0].endswith("moving_mean")


def test_frozen_batch_normalization_runs_in_inference_mode():
    x = _rng(3).standard_normal((6, 2)).astype(np.float32)
    bn = layers.BatchNormalization()
    bn(x, training=True)
    before = bn.moving_mean.numpy().copy()
    bn.trainable = False
    assert bn.trainable_variables == []
    y = bn(x, training=True).numpy()
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)
    np.testing.assert_allclose(
        y, _bn_reference(x, 1, 0, before, bn.moving_variance.numpy(), 1e-3), rtol=1e-5)


def test_batch_normalization_second_derivatives():
    x = _rng(4).standard_normal((5, 3))

    def f(x, gamma, beta):
        mean, var = tf.nn.moments(x, axes=[0])
        return (x - mean) * tf.math.rsqrt(var + 1e-3) * gamma + beta
    check_grads(f, [x, np.ones(3) * 1.5, np.zeros(3) + 0.2], order=2)


def test_batch_normalization_layer_gradient_matches_the_reference():
    x = tf.constant(_rng(5).standard_normal((6, 2)))
    bn = layers.BatchNormalization(dtype="float64")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(bn(x, training=True) ** 3)
    g = tape.gradient(y, x).numpy()
    eps, xv = 1e-6, x.numpy()

    def ref(xv):
        return np.sum(_bn_reference(xv, 1, 0, xv.mean(0), xv.var(0), 1e-3) ** 3)
    num = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        d = np.zeros_like(xv)
        d[idx] = eps
        num[idx] = (ref(xv + d) - ref(xv - d)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


def test_normalization_adapt_and_call():
    data = _rng(6).standard_normal((100, 3)) * [1, 10, 100] + [0, 5, -5]
    norm = layers.Normalization()
    norm.adapt(data)
    out = norm(data.astype(np.float32)).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(out.std(0), 1, rtol=1e-4)
    assert norm.trainable_variables == [] and len(norm.non_trainable_variables) == 2


def test_normalization_statistics_given_as_device_data_or_tensors():
    # data on the current device (a GPU's under --device strict), as a user's CuPy arrays
    mean, variance = tf.constant([1.0, 2.0]), tf.constant([1.0, 4.0])
    for norm in (layers.Normalization(mean=mean, variance=variance),
                 layers.Normalization(mean=mean._value, variance=variance._value)):
        np.testing.assert_allclose(norm(tf.constant([[1.0, 4.0]])).numpy(), [[0.0, 1.0]],
                                   atol=1e-6)


def test_dropout_is_seeded_and_only_active_in_training():
    x = np.ones((4, 100), np.float32)
    tf.random.set_seed(1)
    a = layers.Dropout(0.5, seed=3)(x, training=True).numpy()
    tf.random.set_seed(1)
    b = layers.Dropout(0.5, seed=3)(x, training=True).numpy()
    np.testing.assert_array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 2.0} and 0.3 < (a == 0).mean() < 0.7
    np.testing.assert_array_equal(layers.Dropout(0.5)(x, training=False).numpy(), x)


def test_flatten_and_activation():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert layers.Flatten()(x).shape == (2, 12)
    np.testing.assert_array_equal(layers.Activation("relu")(x - 10).numpy(), np.maximum(x - 10, 0))


class Block(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.inner = [layers.Dense(2, name="first"), layers.Dense(1, name="second")]
        self.extra = {"bn": layers.BatchNormalization(name="norm")}

    def call(self, x, training=None):
        return self.inner[1](self.extra["bn"](self.inner[0](x), training=training))


def test_tracking_through_lists_and_dicts_and_training_passed_down():
    block = Block(name="block")
    block(np.ones((3, 4), np.float32), training=True)
    assert [v.path for v in block.trainable_variables] == [
        "block/first/kernel", "block/first/bias", "block/second/kernel", "block/second/bias",
        "block/norm/gamma", "block/norm/beta"]
    assert [v.path for v in block.non_trainable_variables] == [
        "block/norm/moving_mean", "block/norm/moving_variance"]
    assert not np.allclose(block.extra["bn"].moving_mean.numpy(), 0)  # training=True reached it
    block.trainable = False
    assert block.trainable_variables == [] and len(block.non_trainable_variables) == 8


def test_kernel_regularizer_adds_a_loss():
    d = layers.Dense(2, kernel_regularizer=tf.regularizers.L2(0.5))
    d(np.ones((1, 3), np.float32))
    (penalty,) = d.losses
    np.testing.assert_allclose(penalty.numpy(), 0.5 * np.sum(d.kernel.numpy() ** 2), rtol=1e-6)
