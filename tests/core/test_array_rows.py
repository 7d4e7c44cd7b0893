"""Large float row sums and relu through ``core/array_rows.py``: a bias's cotangent summed over
the batch as a product with ones (SumToShape from ``TILE_FROM`` elements), relu against a row
of zeros through wide rows; eager and compiled give the same bits and the right values."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.array_rows import TILE_FROM

RNG = np.random.default_rng(3)


def _bias_gradient(x, b, w):
    with tf.GradientTape() as tape:
        tape.watch(b)
        y = tf.reduce_sum(w * (x + b))
    return tape.gradient(y, b)


def test_tf_bias_add_gradient_values():
    """TF: python/kernel_tests/nn_ops/bias_op_base.py::testGradientTensor2D's input and bias
    (3x2 and [1.3, 2.4]): the bias's gradient of sum(x + b) is the row count (numpy's sum)."""
    x = tf.constant(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32).reshape(3, 2))
    b = tf.constant(np.array([1.3, 2.4], np.float32))
    got = _bias_gradient(x, b, tf.constant(np.ones((3, 2), np.float32)))
    np.testing.assert_array_equal(got.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("shape,bias_shape,dtype", [
    ((512, 64), (64,), np.float32), ((512, 64), (1, 64), np.float32),
    ((8, 64, 65), (65,), np.float64),
])
def test_a_large_bias_gradient_is_the_batch_sum_eager_and_compiled(shape, bias_shape, dtype):
    assert np.prod(shape) >= TILE_FROM  # the product-with-ones path
    x = tf.constant(RNG.standard_normal(shape).astype(dtype))
    w = tf.constant(RNG.standard_normal(shape).astype(dtype))
    b = tf.constant(np.zeros(bias_shape, dtype))
    eager = _bias_gradient(x, b, w).numpy()
    compiled = tf.function(_bias_gradient)(x, b, w).numpy()
    np.testing.assert_array_equal(compiled, eager)
    want = w.numpy().astype(np.float64).reshape(-1, shape[-1]).sum(axis=0).reshape(bias_shape)
    np.testing.assert_allclose(eager, want, rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-3 if dtype == np.float32 else 1e-10)


def test_a_small_bias_gradient_keeps_numpys_sum():
    w = RNG.standard_normal((32, 30)).astype(np.float32)
    got = _bias_gradient(tf.constant(w), tf.constant(np.zeros(30, np.float32)), tf.constant(w))
    np.testing.assert_array_equal(got.numpy(), w.sum(axis=0))


def test_a_large_relu_compiled_gives_the_eager_bits(request):
    x = RNG.standard_normal((512, 64)).astype(np.float32)
    x.flat[:4] = [-0.0, 0.0, np.nan, -np.inf]
    x = tf.constant(x)
    relu = tf.function(tf.nn.relu)
    got, want = relu(x).numpy(), tf.nn.relu(x).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    if request.config.getoption("--device") == "strict":
        return  # specialized kernels are numpy's: a device graph runs the op's own forward
    kernels = relu.get_concrete_function(x)._run.__globals__
    assert [getattr(k, "__name__", None) for k in kernels.values()].count("relu_wide_rows") == 1
