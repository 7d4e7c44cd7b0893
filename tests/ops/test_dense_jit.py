"""A Dense layer's passes through numba's kernels (``ops/_dense_numba.py``, the ``jit`` extra) on
large float32 arrays: ``BiasActivation`` with relu (numpy's values, NaN as numpy's, the eager op
and its compiled kernel giving the same bits) and the outer product of a one-unit layer's input
gradient.  Skipped without numba."""
import numpy as np
import pytest

pytest.importorskip("numba")

import tapeflow as tf  # noqa: E402 - after the skip
from tapeflow.ops import bias_activation as ba  # noqa: E402

ROWS, UNITS = 1024, 64  # 65,536 elements: past TILE_FROM, where the compiled kernels run


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(ROWS, UNITS)).astype(np.float32)
    bias = rng.normal(size=UNITS).astype(np.float32)
    g = rng.normal(size=(ROWS, UNITS)).astype(np.float32)
    return y, bias, g


def test_the_compiled_kernels_are_taken_only_where_they_apply():
    y, bias, _ = _arrays()
    assert ba._relu_kernels(y, bias) is not None
    assert ba._relu_kernels(y.astype(np.float64), bias.astype(np.float64)) is None
    assert ba._relu_kernels(y[:100], bias) is None  # small: numba's import would not pay
    assert ba._relu_kernels(np.asfortranarray(y), bias) is None


def test_values_and_gradients_are_numpys():
    y, bias, g = _arrays()
    out = ba._bias_activation_forward(y, bias, activation="relu")
    np.testing.assert_array_equal(out, np.maximum(y + bias, 0))
    d, d_bias = ba._bias_activation_grad_forward(g, out, activation="relu")
    np.testing.assert_array_equal(d, g * (out > 0))
    exact = (g.astype(np.float64) * (out > 0)).sum(axis=0)
    np.testing.assert_allclose(d_bias, exact, rtol=1e-5, atol=1e-4)


def test_nan_propagates_as_numpys():
    y, bias, g = _arrays()
    y[3, 5] = np.nan
    out = ba._bias_activation_forward(y, bias, activation="relu")
    assert np.isnan(out[3, 5]) and np.isnan(np.maximum(y + bias, 0)[3, 5])
    out[7, 1] = 0.0
    g[7, 1] = np.nan  # a NaN cotangent on relu's flat side: NaN * 0, as numpy's g * mask
    d, d_bias = ba._bias_activation_grad_forward(g, np.nan_to_num(out), activation="relu")
    assert np.isnan(d[7, 1]) and np.isnan(d_bias[1])


def test_dense_eager_and_traced_give_the_same_bits():
    y, _, _ = _arrays(1)
    layer = tf.keras.layers.Dense(UNITS, activation="relu")
    x = tf.constant(y)
    layer.build(x.shape)
    layer.bias.assign(np.linspace(-1, 1, UNITS, dtype=np.float32))

    def step(x):
        with tf.GradientTape() as tape:
            out = layer(x)
            loss = tf.reduce_sum(out * out)
        return [out] + tape.gradient(loss, [layer.kernel, layer.bias])

    for eager, traced in zip(step(x), tf.function(step)(x)):
        np.testing.assert_array_equal(eager.numpy(), traced.numpy())


@pytest.mark.parametrize("transpose_a, transpose_b", [(False, False), (True, True)])
def test_outer_products_are_numpys(transpose_a, transpose_b):
    """``(rows, 1) @ (1, units)``, as a Dense(1) layer's input gradient is: the product of
    broadcasting, bit for bit, eager and compiled, transposed operands too."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(ROWS, 1)).astype(np.float32)
    b = rng.normal(size=(1, UNITS)).astype(np.float32)
    want = a * b
    a_in, b_in = (a.T.copy() if transpose_a else a), (b.T.copy() if transpose_b else b)

    def product(a, b):
        return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)

    for got in (product(a_in, b_in), tf.function(product)(a_in, b_in)):
        np.testing.assert_array_equal(got.numpy(), want)
