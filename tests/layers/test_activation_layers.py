"""Activation layers (ReLU, LeakyReLU, PReLU, ELU, Softmax, Identity) and Rescaling /
UnitNormalization against numpy written from Keras's formulas; their options, errors and
names. (Shapes, configs, checkpoints, tracing and gradients: the layer battery's cases.)"""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

X = np.array([[-3.0, -1.0, -0.2, 0.0, 0.2, 0.5, 1.0, 4.0]], dtype=np.float32)


def _run(layer, x=X, **kwargs):
    return np.asarray(layer(tf.constant(x), **kwargs).numpy())


def keras_relu(x, max_value=None, negative_slope=0.0, threshold=0.0):
    """Keras 3's activations.relu, step by step as it is written there."""
    negative = np.maximum(threshold - x, 0.0) if negative_slope else 0.0
    y = x * (x > threshold) if threshold else np.maximum(x, 0.0)
    if max_value is not None:
        y = np.clip(y, 0.0, max_value)
    return y - negative_slope * negative


@pytest.mark.parametrize("kwargs", [{}, dict(max_value=0.8), dict(negative_slope=0.1),
                                    dict(threshold=0.5), dict(max_value=2.0, negative_slope=0.25,
                                                              threshold=0.2)])
def test_relu_matches_keras_formula(kwargs):
    np.testing.assert_allclose(_run(layers.ReLU(**kwargs)), keras_relu(X, **kwargs), rtol=1e-6)


def test_relu_is_zero_at_its_threshold_as_keras():
    out = _run(layers.ReLU(threshold=0.5, negative_slope=0.1), np.array([[0.5]]))
    assert out[0, 0] == 0.0


@pytest.mark.parametrize("kwargs", [dict(max_value=-1.0), dict(negative_slope=-0.1),
                                    dict(threshold=-0.5), dict(negative_slope=None),
                                    dict(threshold="a")])
def test_relu_rejects_negative_or_missing_options(kwargs):
    with pytest.raises(ValueError, match="ReLU: .* must be a number >= 0"):
        layers.ReLU(**kwargs)


def test_leaky_relu_default_and_keras2_alias():
    np.testing.assert_allclose(_run(layers.LeakyReLU()), np.where(X > 0, X, 0.3 * X), rtol=1e-6)
    with pytest.warns(DeprecationWarning, match="negative_slope"):
        layer = layers.LeakyReLU(alpha=0.1)
    np.testing.assert_allclose(_run(layer), np.where(X > 0, X, 0.1 * X), rtol=1e-6)
    assert layer.get_config()["negative_slope"] == 0.1


def test_elu_alpha():
    for alpha in (1.0, 0.5):
        np.testing.assert_allclose(_run(layers.ELU(alpha=alpha)),
                                   np.where(X > 0, X, alpha * np.expm1(X)), rtol=1e-6)


def test_prelu_weights_shared_axes_and_regularizer():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    layer = layers.PReLU(alpha_initializer="random_normal", shared_axes=[1, 2],
                         alpha_regularizer="l2")
    out = _run(layer, x)
    alpha = layer.alpha.numpy()
    assert alpha.shape == (1, 1, 5) and layer.trainable_variables == [layer.alpha]
    np.testing.assert_allclose(out, np.maximum(x, 0) + alpha * np.minimum(x, 0), rtol=1e-6)
    assert np.isclose(float(layer.losses[0].numpy()), 0.01 * np.sum(alpha ** 2), rtol=1e-5)
    assert np.array_equal(_run(layers.PReLU(), X), np.maximum(X, 0))  # alpha zeros: relu


def test_prelu_rejects_shared_axis_out_of_range():
    with pytest.raises(ValueError, match="shared_axes"):
        layers.PReLU(shared_axes=[3])(tf.constant(np.ones((2, 3))))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_axis_and_mask():
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    np.testing.assert_allclose(_run(layers.Softmax(), x), softmax(x, -1), rtol=1e-6)
    np.testing.assert_allclose(_run(layers.Softmax(axis=1), x), softmax(x, 1), rtol=1e-6)
    np.testing.assert_allclose(_run(layers.Softmax(axis=[1, 2]), x), softmax(x, (1, 2)),
                               rtol=1e-6)
    mask = np.array([[True, True, False, True]] * 3)[None].repeat(2, 0)
    out = _run(layers.Softmax(), x, mask=tf.constant(mask))
    want = softmax(np.where(mask, x, -np.inf), -1)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-12)


def test_identity_returns_its_input():
    assert np.array_equal(_run(layers.Identity()), X)


def test_rescaling_casts_integers_and_scales_channels():
    pixels = np.array([[[0, 128, 255]]], dtype=np.uint8)
    out = layers.Rescaling(1 / 255.0)(pixels)
    assert out.dtype == "float32"
    np.testing.assert_allclose(out.numpy(), pixels / 255.0, rtol=1e-6)
    out = _run(layers.Rescaling([1.0, 2.0, 3.0], offset=[0.0, -1.0, 1.0]),
               np.ones((2, 3)))
    assert out.tolist() == [[1.0, 1.0, 4.0]] * 2
    config = layers.Rescaling(0.5, offset=1).get_config()
    assert json.loads(json.dumps(config))["scale"] == 0.5 and config["offset"] == 1.0
    with pytest.raises(ValueError, match="scale must be a number or a list"):
        layers.Rescaling("big")


def test_unit_normalization():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(_run(layers.UnitNormalization(), x), [[0.6, 0.8], [0.0, 0.0]])
    x = np.random.default_rng(2).standard_normal((2, 3, 4))
    out = _run(layers.UnitNormalization(axis=[1, 2]), x)
    np.testing.assert_allclose(np.sqrt((out ** 2).sum(axis=(1, 2))), [1.0, 1.0], rtol=1e-6)


def test_keras_default_names():
    tf.keras.backend.clear_session()
    names = [cls().name for cls in (layers.ReLU, layers.LeakyReLU, layers.PReLU, layers.ELU,
                                    layers.Softmax, layers.Identity, layers.UnitNormalization)]
    names.append(layers.Rescaling(2.0).name)
    assert names == ["re_lu", "leaky_re_lu", "p_re_lu", "elu", "softmax", "identity",
                     "unit_normalization", "rescaling"]


def test_activation_layers_in_a_sequential_fit():
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(4,)), layers.Rescaling(0.5), layers.Dense(8), layers.PReLU(),
        layers.Dense(8), layers.LeakyReLU(0.1), layers.Dense(8), layers.ReLU(max_value=6.0),
        layers.Dense(2), layers.Softmax()])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05),
                  loss="sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=15, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
