"""LayerNormalization, Reshape, Permute, RepeatVector: values against numpy, gradients against
central differences (LayerNormalization to second order), configs, traced = eager, saving."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.layers.normalization import LayerNormalization
from tapeflow.layers.reshaping import Permute, RepeatVector, Reshape

from tests.training_methods.differences import assert_gradients_match_differences

X = np.random.default_rng(0).normal(size=(4, 3, 5))


def test_layer_normalization_matches_numpy_over_one_or_two_axes():
    ln = LayerNormalization(dtype="float64", epsilon=1e-3)
    ref = (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(ln(X).numpy(), ref, rtol=1e-12, atol=1e-12)
    both = LayerNormalization(axis=[1, 2], dtype="float64")
    m, v = X.mean((1, 2), keepdims=True), X.var((1, 2), keepdims=True)
    np.testing.assert_allclose(both(X).numpy(), (X - m) / np.sqrt(v + 1e-3), atol=1e-12)
    assert both.gamma.shape == (3, 5)


def test_layer_normalization_gradients_to_second_order():
    ln = LayerNormalization(dtype="float64")
    ln.build(X.shape)
    ln.gamma.assign(np.linspace(0.5, 1.5, 5))
    ln.beta.assign(np.linspace(-1, 1, 5))
    x = tf.Variable(X[:2])
    w = tf.constant(np.random.default_rng(1).normal(size=(2, 3, 5)))
    assert_gradients_match_differences(lambda: tf.reduce_sum(ln(x) ** 3 * w),
                                       [x, ln.gamma, ln.beta], rtol=1e-6, atol=1e-8)

    def first_derivative():   # d/dx of the sum, as a scalar: its gradient is a second derivative
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(ln(x) ** 3 * w)
        return tf.reduce_sum(tape.gradient(loss, x) * w)
    assert_gradients_match_differences(first_derivative, [x, ln.gamma], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("layer, expected", [
    (Reshape((-1,), dtype="float64"), X.reshape(4, 15)),
    (Reshape((5, -1), dtype="float64"), X.reshape(4, 5, 3)),
    (Permute((2, 1), dtype="float64"), X.transpose(0, 2, 1)),
    (RepeatVector(2, dtype="float64"), np.repeat(X[:, 0][:, None], 2, axis=1)),
])
def test_shape_layers_match_numpy_and_their_output_shape(layer, expected):
    x = X[:, 0] if isinstance(layer, RepeatVector) else X
    out = layer(tf.constant(x, dtype=tf.float64)).numpy()
    np.testing.assert_array_equal(out, expected)
    assert tuple(layer.compute_output_shape((None,) + x.shape[1:]))[1:] == expected.shape[1:]
    again = type(layer).from_config(layer.get_config())
    np.testing.assert_array_equal(again(tf.constant(x, dtype=tf.float64)).numpy(), expected)


def test_bad_arguments():
    with pytest.raises(ValueError, match="one -1"):
        Reshape((-1, -1))
    with pytest.raises(ValueError, match="cannot take the shape"):
        Reshape((7,))(tf.constant(X))
    with pytest.raises(ValueError, match="permutation"):
        Permute((1, 3))


def test_a_model_of_them_trains_traced_as_eagerly_and_reloads(tmp_path):
    def build():
        tf.random.set_seed(0)
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(3, 5)), Permute((2, 1)), Reshape((-1,)), RepeatVector(2),
            LayerNormalization(), Reshape((30,)), tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model
    x = X.astype(np.float32)
    y = np.ones((4, 1), np.float32)
    traced, eager = build(), build()
    eager.compile(optimizer="adam", loss="mse", run_eagerly=True)
    traced.fit(x, y, epochs=2, batch_size=2, shuffle=False, verbose=0)
    eager.fit(x, y, epochs=2, batch_size=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(traced.predict(x), eager.predict(x), rtol=1e-6, atol=1e-7)
    traced.save(tmp_path / "m.keras")
    loaded = tf.keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.predict(x), traced.predict(x))


def test_layer_normalization_correctness_on_offset_data():
    """Keras: LayerNormalizationTest::test_correctness (its values: data of mean 5 and scale
    10 come out with mean 0 and std 1, to 1e-1)."""
    layer = LayerNormalization(dtype="float32")
    layer.build((2, 2, 2))
    inputs = np.random.default_rng(2).normal(loc=5.0, scale=10.0,
                                             size=(1000, 2, 2, 2)).astype("float32")
    out = (layer(inputs) - layer.beta) / layer.gamma
    np.testing.assert_allclose(tf.reduce_mean(out).numpy(), 0.0, atol=1e-1)
    np.testing.assert_allclose(tf.math.reduce_std(out).numpy(), 1.0, atol=1e-1)


def test_layer_normalization_unsorted_axes_and_no_rows():
    """Keras: LayerNormalizationTest::test_unsorted_axis, and test_ln_basics's input of shape
    (1, 0, 10): no rows to normalize."""
    x = np.random.default_rng(3).normal(size=(2, 3, 4)).astype("float32")
    out_sorted = LayerNormalization(axis=[-2, -1])(x)
    out_unsorted = LayerNormalization(axis=[-1, -2])(x)
    assert tuple(out_unsorted.shape) == (2, 3, 4)
    np.testing.assert_allclose(out_sorted.numpy(), out_unsorted.numpy(), atol=1e-6)
    empty = LayerNormalization()(np.zeros((1, 0, 10), np.float32))
    assert tuple(empty.shape) == (1, 0, 10)
