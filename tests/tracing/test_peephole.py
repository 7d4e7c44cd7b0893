"""optimize folds ``Neg(Mul(c, x))``, ``c`` a constant, into ``Mul(-c, x)`` (tracing/peephole.py):
a compiled graph then gives the eager bits with one pass over the array less."""
import numpy as np
import pytest

import tapeflow as tf


def _compiled(fn, *args):
    traced = tf.function(fn)
    got = traced(*args)
    concrete = traced.get_concrete_function(*args)
    return got, [e.op.name for e in concrete.optimized_graph.eqns]


@pytest.mark.parametrize("dtype,values,factor", [
    (np.float32, [1.5, -0.0, 0.0, np.inf, -3.25e38, np.nan], 2.5),
    (np.float64, [1e-300, -0.0, 7.0, -np.inf], -0.125),
    (np.int32, [2 ** 30, -(2 ** 31), 3, -7], 3),   # wraps modulo 2**32 either way
    (np.uint8, [0, 1, 200, 255], 7),               # so does an unsigned negation
    (np.complex64, [1 + 2j, -0.0 - 3j, 4.5j], 1.5 - 0.5j),
])
@pytest.mark.parametrize("constant_first", [True, False])
def test_a_negated_product_with_a_constant_gives_the_eager_bits(dtype, values, factor,
                                                                constant_first):
    x = tf.constant(np.array(values, dtype))
    c = tf.constant(np.array(factor, dtype))

    def f(x):
        return -(c * x) if constant_first else -(x * c)

    with np.errstate(all="ignore"):
        want = f(x).numpy()
        got, ops = _compiled(f, x)
    assert ops == ["Mul"]  # no Neg left
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.dtype == want.dtype
    if want.dtype.kind == "f":  # zeros and infinities keep their signs (a NaN's is no value)
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got.numpy())[numbers], np.signbit(want)[numbers])


def test_a_negated_product_of_two_values_keeps_its_negation():
    x = tf.constant(np.array([1.0, -2.0], np.float32))

    got, ops = _compiled(lambda x: -(x * x), x)
    assert ops == ["Mul", "Neg"]
    np.testing.assert_array_equal(got.numpy(), [-1.0, -4.0])


def test_a_product_read_elsewhere_stays_and_both_values_are_right():
    x = tf.constant(np.array([1.0, -2.0], np.float32))

    (p, n), ops = _compiled(lambda x: (3.0 * x, -(3.0 * x)), x)
    assert ops == ["Mul", "Mul"]
    np.testing.assert_array_equal(p.numpy(), [3.0, -6.0])
    np.testing.assert_array_equal(n.numpy(), [-3.0, 6.0])


def test_the_mse_gradient_through_a_difference_has_no_negation():
    """d/dp mean((y - p)**2): the Sub's rule negates ``2/n * (y - p)``, which the peephole folds."""
    y = tf.constant(np.array([[1.0], [2.0], [-0.5]], np.float32))
    p = tf.constant(np.array([[0.5], [2.5], [0.0]], np.float32))

    def grad(y, p):
        with tf.GradientTape() as tape:
            tape.watch(p)
            loss = tf.reduce_mean((y - p) ** 2)
        return tape.gradient(loss, p)

    want = grad(y, p).numpy()
    got, ops = _compiled(grad, y, p)
    assert "Neg" not in ops
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_allclose(want, -2.0 / 3.0 * (y.numpy() - p.numpy()), rtol=1e-6)
