"""Values computed from ``tf.shape`` and tensor indices inside ``tf.function`` (issue 18, item 7).

A trace is made per shape, so integer work on known sizes folds while tracing (``tf.range(
tf.shape(x)[-1])``), and indices that are traced tensors (an argument, a loop counter) become
ops of the graph: ``x[i]`` a gather, ``x[i:j]`` a slice whose bounds are operands.
"""
import numpy as np
import pytest

import tapeflow as tf


def _fd(f, x, eps=1e-3):
    """Central differences of scalar ``f`` at float64 array ``x``."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[k] = eps
        g[k] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


RAW = np.arange(2 * 3 * 4 * 5 * 6, dtype=np.float64).reshape(2, 3, 4, 5, 6)


# --- shapes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, fn, expected", [
    ("range of the last dimension", lambda x: tf.range(tf.shape(x)[-1]), np.arange(3)),
    ("reshape by a traced size", lambda x: tf.reshape(x, [tf.shape(x)[0], -1]), np.ones((2, 3))),
    ("fill", lambda x: tf.fill([tf.shape(x)[0], 2], 1.0), np.ones((2, 2))),
    ("ones", lambda x: tf.ones((tf.shape(x)[0], 4)), np.ones((2, 4))),
    ("slice to a size", lambda x: x[:, :tf.shape(x)[1] - 1], np.ones((2, 2))),
    ("tile", lambda x: tf.tile(x, [tf.shape(x)[0], 1]), np.ones((4, 3))),
    ("one_hot depth", lambda x: tf.one_hot(tf.range(2), tf.shape(x)[1]), np.eye(2, 3)),
    ("cast of a size", lambda x: tf.cast(tf.shape(x)[0], tf.float32) * x, 2 * np.ones((2, 3))),
])
def test_values_from_tf_shape_trace(name, fn, expected):
    """TF: polymorphic_function_test.py::testShapeOfInputTensor-style uses of tf.shape, which
    tapeflow refused with a TraceError ('range_' needs the value)."""
    f = tf.function(fn)
    out = f(tf.ones([2, 3]))
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(fn(tf.ones([2, 3])).numpy(), expected)  # as eagerly


def test_a_new_shape_retraces_and_folds_again():
    f = tf.function(lambda x: tf.range(tf.shape(x)[-1]))
    np.testing.assert_array_equal(f(tf.ones([2, 3])).numpy(), [0, 1, 2])
    np.testing.assert_array_equal(f(tf.ones([2, 5])).numpy(), [0, 1, 2, 3, 4])
    assert f.experimental_get_tracing_count() == 2


def test_a_none_dimension_signature_keeps_sizes_right():
    f = tf.function(lambda x: tf.reduce_sum(x) / tf.cast(tf.shape(x)[0], tf.float32),
                    input_signature=[tf.TensorSpec([None], tf.float32)])
    assert float(f(tf.constant([1.0, 2.0]))) == 1.5
    assert float(f(tf.constant([1.0, 2.0, 6.0]))) == 3.0


def test_shape_folding_leaves_float_work_differentiable():
    """Folding is for integers only: a float constant made inside the function and watched
    by a tape there still gets its gradient (issue 18's bug 2 must not come back)."""
    @tf.function
    def f(x):
        c = tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch(c)
            y = c * c * tf.cast(tf.shape(x)[0], tf.float32)
        return tape.gradient(y, c)

    assert float(f(tf.ones([2]))) == 12.0


# --- indices --------------------------------------------------------------------------------------
def test_tensor_indexing_with_traced_indices():
    """TF: array_ops_test.py::StridedSliceTest::testTensorIndexing, with the tensor indices
    as arguments of a tf.function (traced), checked against numpy."""
    @tf.function
    def f(x, bar, bar2):
        return x[..., bar:bar2], x[..., bar], x[..., 3], x[bar2 - 2, :, bar]

    x = tf.constant(RAW)
    a, b, c, d = f(x, tf.constant(2), tf.constant(3))
    np.testing.assert_array_equal(a.numpy(), RAW[..., 2:3])
    np.testing.assert_array_equal(b.numpy(), RAW[..., 2])
    np.testing.assert_array_equal(c.numpy(), RAW[..., 3])
    np.testing.assert_array_equal(d.numpy(), RAW[1, :, 2])
    a, b, _, d = f(x, tf.constant(1), tf.constant(2))  # the same graph, other indices
    np.testing.assert_array_equal(a.numpy(), RAW[..., 1:2])
    np.testing.assert_array_equal(b.numpy(), RAW[..., 1])
    np.testing.assert_array_equal(d.numpy(), RAW[0, :, 1])
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("index, expected", [
    (lambda x, i: x[i], lambda a, i: a[i]),
    (lambda x, i: x[:, i], lambda a, i: a[:, i]),
    (lambda x, i: x[i, 1:], lambda a, i: a[i, 1:]),
    (lambda x, i: x[tf.newaxis, i], lambda a, i: a[None, i]),
    (lambda x, i: x[i:i + 2], lambda a, i: a[i:i + 2]),
    (lambda x, i: x[:, -i - 1], lambda a, i: a[:, -i - 1]),
])
def test_traced_index_forms(index, expected):
    a = np.arange(20.0).reshape(4, 5)
    f = tf.function(index)
    for i in (0, 1, 2):
        np.testing.assert_array_equal(f(tf.constant(a), tf.constant(i)).numpy(), expected(a, i))


def test_negative_traced_index_counts_from_the_end():
    f = tf.function(lambda x, i: x[i])
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0, 3.0]), tf.constant(-1)).numpy(), 3.0)


def test_out_of_range_traced_index_raises_when_the_graph_runs():
    f = tf.function(lambda x, i: x[i])
    f(tf.constant([1.0, 2.0, 3.0]), tf.constant(0))
    with pytest.raises(ValueError, match="not in \\[0, 3\\)"):
        f(tf.constant([1.0, 2.0, 3.0]), tf.constant(5))


def test_a_slice_whose_length_changes_is_refused_naming_both():
    f = tf.function(lambda x, i, j: x[i:j])
    x = tf.constant(np.arange(6.0))
    np.testing.assert_array_equal(f(x, tf.constant(1), tf.constant(3)).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(f(x, tf.constant(3), tf.constant(5)).numpy(), [3.0, 4.0])
    with pytest.raises(ValueError, match="gives 3 elements .* traced where it gave 2"):
        f(x, tf.constant(0), tf.constant(3))


def test_non_scalar_tensor_index_is_refused_as_tensorflow_does():
    f = tf.function(lambda x, i: x[i])
    with pytest.raises(TypeError, match="scalar int32/int64 tensors are valid indices"):
        f(tf.ones([3]), tf.constant([0, 1]))


def test_traced_indices_differentiate_to_second_order():
    a = np.random.default_rng(0).normal(size=(4, 5))

    @tf.function
    def loss(x, i):
        row = x[i]
        window = x[:, i:i + 2]
        return tf.reduce_sum(row ** 3) + tf.reduce_sum(window ** 2 * x[i, i])

    def numpy_loss(v, i=1):
        return np.sum(v[i] ** 3) + np.sum(v[:, i:i + 2] ** 2 * v[i, i])

    x = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = loss(x, tf.constant(1))
        g = inner.gradient(y, x)
        gsum = tf.reduce_sum(g * g)
    np.testing.assert_allclose(g.numpy(), _fd(numpy_loss, a), rtol=1e-6, atol=1e-6)

    def numpy_gsum(v):
        gv = _fd(numpy_loss, v, eps=1e-4)
        return np.sum(gv * gv)
    h = outer.gradient(gsum, x)
    np.testing.assert_allclose(h.numpy(), _fd(numpy_gsum, a, eps=1e-3), rtol=1e-4, atol=1e-3)


def test_loop_counter_indexes_inside_while_loop():
    """A traced while_loop reading x[i] and x[i:i + 1] with its counter."""
    @tf.function
    def running(x):
        n = tf.shape(x)[0]

        def body(i, acc):
            return i + 1, acc + x[i] * tf.reduce_sum(x[i:i + 1])
        return tf.while_loop(lambda i, acc: i < n, body, (tf.constant(0), tf.constant(0.0)))[1]

    v = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = running(v)
    assert float(y) == 14.0
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [2.0, 4.0, 6.0])


# --- the other gaps of item 7 ----------------------------------------------------------------
def test_nextafter():
    """TF: math_ops_test.py::NextAfterTest::test_basic (float32 and float64)."""
    for dtype in (np.float32, np.float64):
        one, two = tf.constant(1.0, dtype), tf.constant(2.0, dtype)
        assert tf.math.nextafter(one, two).numpy() == np.nextafter(dtype(1), dtype(2))
        assert tf.math.nextafter(one, tf.constant(0.0, dtype)).numpy() == \
            np.nextafter(dtype(1), dtype(0))
        assert tf.math.nextafter(one, one).numpy() == dtype(1)
    traced = tf.function(lambda a, b: tf.math.nextafter(a, b))
    assert traced(tf.constant(0.0), tf.constant(1.0)).numpy() == np.nextafter(np.float32(0), 1)
    with pytest.raises(TypeError, match="floating-point"):
        tf.math.nextafter(tf.constant(1), tf.constant(2))


def test_batch_jacobian_of_an_unconnected_target_is_zeros():
    """TF: backprop.py GradientTape.batch_jacobian returns zeros of the target's dtype for a
    target that does not depend on the source ('to maintain compatibility with the previous
    behavior, which ignored unconnected_gradients')."""
    x = tf.constant(np.ones((2, 3), np.float32))
    with tf.GradientTape() as g:
        g.watch(x)
        y = tf.constant(np.ones((2, 4), np.float32))
    out = g.batch_jacobian(y, x)
    assert out.shape == (2, 4, 3) and out.dtype == tf.float32
    assert not np.any(out.numpy())


def test_recompute_grad_of_a_function_of_lists():
    """TF: gradients_test.py::RecomputeGradTest (functions taking nested tensors)."""
    @tf.recompute_grad
    def f(pair, scale):
        return pair[0] * pair[1] * scale["s"]

    a, b = tf.Variable(2.0), tf.Variable(3.0)
    s = tf.constant(4.0)
    with tf.GradientTape() as tape:
        y = f([a, b], {"s": s})
    ga, gb = tape.gradient(y, [a, b])
    assert (float(y), float(ga), float(gb)) == (24.0, 12.0, 8.0)
