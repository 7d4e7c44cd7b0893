"""tf.TensorArray: eagerly, in straight-line traced code, and as a loop variable of traced
tf.while_loop / a result of tf.cond, with gradients to second order.

Ported from TensorFlow's ``python/kernel_tests/data_structures/tensor_array_ops_test.py``
(named per test), with the values it asserts.  TensorFlow runs most of them in graph and
eager modes; here the ``run`` parameter does the same: eagerly, and inside a tf.function.
"""
import numpy as np
import pytest

import tapeflow as tf
from tests.ops.gradcheck import check_grads
from tests.tracing.helpers import assert_same, derivatives, derivatives_inside


def _eager(fn, *args):
    return fn(*args)


def _traced(fn, *args):
    return tf.function(fn)(*args)


MODES = pytest.mark.parametrize("run", [_eager, _traced], ids=["eager", "traced"])


def _np(t):
    return np.asarray(t.numpy())


# --- writing, reading, stacking --------------------------------------------------------------
@MODES
def test_write_read(run):
    # TF: tensor_array_ops_test.py::testTensorArrayWriteRead
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=3, infer_shape=False)
        w2 = ta.write(0, [[4.0, 5.0]]).write(1, [[1.0]]).write(2, -3.0)
        return w2.read(0), w2.read(1), w2.read(2)

    d0, d1, d2 = run(fn)
    np.testing.assert_array_equal(_np(d0), [[4.0, 5.0]])
    np.testing.assert_array_equal(_np(d1), [[1.0]])
    assert float(d2) == -3.0


@MODES
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.int32, tf.int64, tf.complex64])
def test_write_pack(run, dtype):
    # TF: tensor_array_ops_test.py::testTensorArrayWritePack
    def convert(x):
        x = np.asarray(x).astype(dtype.as_numpy_dtype)
        return x - 1j * x if np.iscomplexobj(x) else x

    def fn():
        ta = tf.TensorArray(dtype=dtype, tensor_array_name="foo", size=3)
        w = ta.write(0, convert([[4.0, 5.0]])).write(1, convert([[6.0, 7.0]]))
        return w.write(2, convert([[8.0, 9.0]])).stack()

    np.testing.assert_array_equal(_np(run(fn)),
                                  convert([[[4.0, 5.0]], [[6.0, 7.0]], [[8.0, 9.0]]]))


@MODES
def test_empty_tensor_array_pack(run):
    # TF: tensor_array_ops_test.py::testEmptyTensorArrayPack
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=3)
        empty = np.zeros((0, 1), dtype=np.float32)
        return ta.write(0, empty).write(1, empty).write(2, empty).stack()

    assert tuple(run(fn).shape) == (3, 0, 1)


@MODES
def test_write_concat(run):
    # TF: tensor_array_ops_test.py::testTensorArrayWriteConcat
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=3, infer_shape=False)
        w = ta.write(0, [[4.0, 5.0], [104.0, 105.0], [204.0, 205.0]])
        w = w.write(1, [[6.0, 7.0], [106.0, 107.0]]).write(2, [[8.0, 9.0]])
        return w.concat()

    np.testing.assert_array_equal(_np(run(fn)), [[4.0, 5.0], [104.0, 105.0], [204.0, 205.0],
                                                 [6.0, 7.0], [106.0, 107.0], [8.0, 9.0]])


def test_read_or_pack_not_all_values_available_fills_zeros():
    # TF: tensor_array_ops_test.py::testTensorArrayReadOrPackNotAllValuesAvailableFillsZeros
    # and ...InferShapeFillsZeros
    ta = tf.TensorArray(dtype=tf.float32, size=3, element_shape=tf.TensorShape([1, 2]))
    np.testing.assert_array_equal(_np(ta.read(0)), [[0.0, 0.0]])
    np.testing.assert_array_equal(_np(ta.write(1, [[4.0, 5.0]]).stack()),
                                  [[[0.0, 0.0]], [[4.0, 5.0]], [[0.0, 0.0]]])
    ta = tf.TensorArray(dtype=tf.float32, size=3)
    np.testing.assert_array_equal(_np(ta.write(1, [[4.0, 5.0]]).read(0)), [[0.0, 0.0]])
    np.testing.assert_array_equal(_np(ta.write(1, [[4.0, 5.0]]).concat()),
                                  [[0.0, 0.0], [4.0, 5.0], [0.0, 0.0]])


@MODES
def test_unpack_read(run):
    # TF: tensor_array_ops_test.py::testTensorArrayUnpackRead
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, size=3, infer_shape=False)
        w0 = ta.unstack([1.0, 2.0, 3.0])
        w1 = ta.unstack([[1.0, 1.1], [2.0, 2.1], [3.0, 3.1]])
        w2 = ta.unstack(np.zeros((3, 0), np.float32))
        return [w.read(k) for w in (w0, w1, w2) for k in range(3)]

    out = [_np(t) for t in run(fn)]
    assert [float(v) for v in out[:3]] == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(out[3:6], [[1.0, 1.1], [2.0, 2.1], [3.0, 3.1]], rtol=1e-6)
    assert all(v.shape == (0,) for v in out[6:])


def test_split_read():
    # TF: tensor_array_ops_test.py::testTensorArraySplitRead
    ta = tf.TensorArray(dtype=tf.float32, size=3, infer_shape=False)
    w = ta.split([1.0, 2.0, 3.0], lengths=tf.constant([2, 0, 1]))
    assert [_np(w.read(k)).tolist() for k in range(3)] == [[1.0, 2.0], [], [3.0]]
    w = ta.split([[1.0, 101.0], [2.0, 201.0], [3.0, 301.0]], lengths=[2, 0, 1])
    np.testing.assert_array_equal(_np(w.read(0)), [[1.0, 101.0], [2.0, 201.0]])
    assert _np(w.read(1)).shape == (0, 2)
    np.testing.assert_array_equal(_np(w.read(2)), [[3.0, 301.0]])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"sum of lengths is 1 and value's shape is: \[3\]"):
        tf.TensorArray(tf.float32, size=3).split([1.0, 2.0, 3.0], [1])


def test_write_wrong_index_or_data_type_fails():
    # TF: tensor_array_ops_test.py::testTensorArrayWriteWrongIndexOrDataTypeFails
    ta = tf.TensorArray(tf.float32, size=3, infer_shape=False)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError), match="float32"):
        ta.write(0, "wrong_type_scalar")
    with pytest.raises(tf.errors.InvalidArgumentError, match="index -1"):
        ta.write(-1, 3.0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Tried to write to index 3 but array is not resizeable and size is: 3"):
        ta.write(3, 3.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype is float32 but Op is trying "
                                                            "to write dtype int32"):
        ta.write(0, tf.constant(1))


def test_read_wrong_index_fails():
    # TF: tensor_array_ops_test.py::testTensorArrayReadWrongIndexOrDataTypeFails
    w0 = tf.TensorArray(tf.float32, size=3).write(0, [[4.0, 5.0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="index -1"):
        w0.read(-1)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Tried to read from index 3 but array size is: 3"):
        w0.read(3)


def test_read_twice_clear_after_read():
    # TF: tensor_array_ops_test.py::testTensorArrayReadTwice (eager: TF2 ignores
    # clear_after_read in graphs, so does tapeflow)
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])
    w_readonce = tf.TensorArray(tf.float32, size=2).unstack(value)
    w_readonce.read(0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Could not read index 0 twice because it was cleared after a "
                             r"previous read \(perhaps try setting clear_after_read = false\?\)"):
        w_readonce.read(0)
    w_readtwice = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack(value)
    w_readtwice.read(0)
    np.testing.assert_array_equal(_np(w_readtwice.read(0)), [1.0, -1.0])
    traced = tf.function(lambda v: (lambda w: w.read(0) + w.read(0))(
        tf.TensorArray(tf.float32, size=2).unstack(v)))
    np.testing.assert_array_equal(_np(traced(value)), [2.0, -2.0])


def test_size_close_and_multi():
    # TF: tensor_array_ops_test.py::testSizeTensorArray, testCloseTensorArray,
    # testWriteCloseTensorArray, testMultiTensorArray
    ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=3)
    assert int(ta.size()) == 3 and ta.close() is None
    w1 = ta.write(0, [[4.0, 5.0]])
    assert w1.close() is None
    r = tf.TensorArray(size=1, dtype=tf.float32).write(0, 4.0).read(0) + \
        tf.TensorArray(size=1, dtype=tf.float32).write(0, 5.0).read(0)
    assert float(r) == 9.0


def test_unpack_shape_and_write_shape():
    # TF: tensor_array_ops_test.py::testUnpackShape, testSkipEagerWriteShape
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=True)
    w0 = ta.unstack(tf.constant([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]]))
    assert tuple(w0.read(0).shape) == (2,)
    w1 = w0.write(3, tf.constant([4.0, 5.0]))
    assert tuple(w1.read(1).shape) == (2,) and int(w1.size()) == 4
    with pytest.raises(ValueError, match="incompatible"):
        w1.write(4, tf.constant([4.0, 5.0, 6.0]))


@MODES
def test_stack_read_and_gather_shapes(run):
    # TF: tensor_array_ops_test.py::testStackShape, testReadShape, testGatherShape
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, size=3).write(0, tf.constant([1.0, 2.0, 3.0]))
        return ta.stack(), ta.read(0), ta.gather([0])

    stacked, read, gathered = run(fn)
    assert tuple(stacked.shape) == (3, 3) and tuple(read.shape) == (3,)
    assert tuple(gathered.shape) == (1, 3)


def test_eval_empty():
    # TF: tensor_array_ops_test.py::testTensorArrayEvalEmpty, ...EvalEmptyWithDefault
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=False, infer_shape=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tried to stack elements of an "
                                                            "empty list with non-fully-defined"):
        ta.stack()
    ta = tf.TensorArray(tf.float32, size=0, infer_shape=True).unstack(tf.zeros([0, 3, 5]))
    assert int(ta.size()) == 0 and tuple(ta.stack().shape) == (0, 3, 5)
    assert tuple(ta.concat().shape) == (0, 5)


@MODES
def test_scatter_into_existing_list(run):
    # TF: tensor_array_ops_test.py::testScatterIntoExistingList
    def fn():
        ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=5)
        ta = ta.scatter(indices=[3, 4], value=tf.ones([2]))
        s1 = ta.stack()
        ta = ta.scatter(indices=[1], value=tf.ones([1]))
        s2 = ta.stack()
        return s1, s2, ta.scatter(indices=[0, 2], value=[5.0, 6.0]).stack()

    s1, s2, s3 = run(fn)
    assert _np(s1).tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    assert _np(s2).tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]
    assert _np(s3).tolist() == [5.0, 1.0, 6.0, 1.0, 1.0]


def test_concat_incompatible_shapes_fails():
    # TF: tensor_array_ops_test.py::testTensorArrayConcatIncompatibleShapesFails
    ta = tf.TensorArray(tf.float32, size=3, infer_shape=False)
    w3 = ta.write(0, 3.0).write(1, 4.0).write(2, [3.0])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Concat saw a scalar shape at index 0 but requires at least vectors"):
        w3.concat()


# --- gradients ----------------------------------------------------------------------------
def _gradients(targets, sources, output_gradients):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(sources)
        outs = targets()
    return [g.numpy() for g in tape.gradient(outs, sources, output_gradients=output_gradients)]


def test_gradient_write_read():
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayGradientWriteRead
    value_0, value_1 = tf.constant([[4.0, 5.0]]), tf.constant(3.0)

    def reads():
        w1 = tf.TensorArray(tf.float32, size=3, infer_shape=False,
                            clear_after_read=False).write(0, value_0).write(1, value_1)
        return [w1.read(0), w1.read(0), w1.read(1)]

    g = _gradients(reads, [value_0, value_1],
                   [tf.constant([[2.0, 3.0]]), tf.constant([[1.0, -1.0]]), tf.constant(-2.0)])
    np.testing.assert_array_equal(g[0], [[3.0, 2.0]])
    assert float(g[1]) == -2.0


def test_gradient_write_pack_concat_and_read():
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayGradientWritePackConcatAndRead
    value_0, value_1 = tf.constant([-1.0, 1.0]), tf.constant([-10.0, 10.0])

    def outs():
        w1 = tf.TensorArray(tf.float32, size=2, clear_after_read=False)
        w1 = w1.write(0, value_0).write(1, value_1)
        return [w1.stack(), w1.read(0), w1.concat()]

    g = _gradients(outs, [value_0, value_1],
                   [tf.constant([[2.0, 3.0], [4.0, 5.0]]), tf.constant([-0.5, 1.5]),
                    tf.constant([20.0, 30.0, 40.0, 50.0])])
    np.testing.assert_allclose(g[0], [2.0 - 0.5 + 20.0, 3.0 + 1.5 + 30.0])
    np.testing.assert_array_equal(g[1], [4.0 + 40.0, 5.0 + 50.0])


@MODES
def test_gradient_unpack_read_and_dynamic_unpack_read(run):
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayGradientUnpackRead and
    # testSkipEagerTensorArrayGradientDynamicUnpackRead
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])

    def reads(v):
        w = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack(v)
        dynamic = tf.TensorArray(tf.float32, size=0, dynamic_size=True).unstack(v)
        return w.read(0), w.read(0), w.read(1), dynamic.read(0), dynamic.read(1)

    g = _gradients(lambda: list(run(reads, value)), [value],
                   [tf.constant([2.0, 3.0]), tf.constant([-1.5, 1.5]), tf.constant([4.0, 5.0]),
                    tf.constant([2.0, 3.0]), tf.constant([4.0, 5.0])])
    np.testing.assert_array_equal(g[0], [[2.0 - 1.5 + 2.0, 3.0 + 1.5 + 3.0], [8.0, 10.0]])


def test_sum_of_two_read_variables_without_repeat_grad():
    # TF: tensor_array_ops_test.py::testSkipEagerSumOfTwoReadVariablesWithoutRepeatGrad
    a = tf.constant(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1)
    b = tf.constant(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1 + 3 * 5)
    g0 = -(np.arange(3 * 5, dtype=np.float32).reshape(3, 5) + 1)

    def total():
        ta = tf.TensorArray(dtype=tf.float32, size=2).write(0, a).write(1, b)
        return ta.read(0) + ta.read(1)

    grad_a, grad_b = _gradients(total, [a, b], tf.constant(g0))
    np.testing.assert_array_equal(grad_a, g0)
    np.testing.assert_array_equal(grad_b, g0)


def test_gradient_when_not_all_components_read():
    # TF: tensor_array_ops_test.py::testSkipEagerGradientWhenNotAllComponentsRead and
    # testSkipEagerWriteButNotAllComponentsReadGrad
    x = tf.constant([2.0, 3.0])
    g = _gradients(lambda: tf.TensorArray(tf.float32, size=2).unstack(x).read(0), [x],
                   tf.constant(1.0))
    assert g[0].tolist() == [1.0, 0.0]
    x0, x1 = tf.constant(5.0), tf.constant(10.0)
    with tf.GradientTape() as tape:
        tape.watch([x0, x1])
        r0 = tf.TensorArray(tf.float32, size=2).write(0, x0).write(1, x1).read(0)
    grads = tape.gradient(r0, [x0, x1], unconnected_gradients="zero")
    assert [float(v) for v in grads] == [1.0, 0.0]


@MODES
def test_unpack_dynamic_and_split_dynamic(run):
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayUnpackDynamic,
    # testSkipEagerTensorArraySplitDynamic (dynamic_size grows at a known index)
    x = tf.constant([1.0, 2.0, 3.0])

    def fn(v):
        ta = tf.TensorArray(dtype=tf.float32, size=3, dynamic_size=True)
        stacked = ta.unstack(v).write(3, 4.0).stack()
        concatenated = ta.split(v, [1, 1, 1]).write(3, [4.0]).concat()
        return stacked, concatenated

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        r, c = run(fn, x)
    assert _np(r).tolist() == [1.0, 2.0, 3.0, 4.0] and _np(c).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert tape.gradient(r, x).numpy().tolist() == [1.0, 1.0, 1.0]
    assert tape.gradient(c, x).numpy().tolist() == [1.0, 1.0, 1.0]


@MODES
def test_scatter_read_and_gradients(run):
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayScatterReadAndGradients and
    # ...ScatterPartialReadAndGradients
    value = tf.constant([[1.0, -1.0], [10.0, -10.0]])

    def fn(v):
        w = tf.TensorArray(tf.float32, size=0, dynamic_size=True).scatter(tf.constant([1, 8]), v)
        return w.read(1), w.read(8)

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(value)
        r0, r1 = run(fn, value)
    assert _np(r0).tolist() == [1.0, -1.0] and _np(r1).tolist() == [10.0, -10.0]
    g = tape.gradient([r0, r1], value, output_gradients=[tf.constant([2.0, 3.0]),
                                                         tf.constant([4.0, 5.0])])
    assert g.numpy().tolist() == [[2.0, 3.0], [4.0, 5.0]]
    g = tape.gradient(r0, value, output_gradients=tf.constant([2.0, 3.0]))
    assert g.numpy().tolist() == [[2.0, 3.0], [0.0, 0.0]]


@MODES
def test_write_gather_and_gradients(run):
    # TF: tensor_array_ops_test.py::testTensorArrayWriteGatherAndGradients
    values = tf.constant([[1.0 * x, -1.0 * x] for x in range(10)])

    def fn(v):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        return ta.unstack(v).gather(tf.constant([1, 8]))

    with tf.GradientTape() as tape:
        tape.watch(values)
        g = run(fn, values)
    grad = tape.gradient(g, values, output_gradients=tf.constant([[2.0, 3.0], [4.0, 5.0]]))
    expected = np.zeros((10, 2))
    expected[1], expected[8] = [2.0, 3.0], [4.0, 5.0]
    assert _np(g).tolist() == [[1.0, -1.0], [8.0, -8.0]]
    np.testing.assert_array_equal(grad.numpy(), expected)


def test_grad_grad():
    # TF: tensor_array_ops_test.py::testSkipEagerTensorArrayGradGrad
    x = tf.constant(4.0)
    for fn in (lambda v: tf.TensorArray(tf.float32, size=1, infer_shape=False).write(0, v).read(0),
               tf.function(lambda v: tf.TensorArray(tf.float32, size=1).write(0, v).read(0))):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                r0 = fn(x)
                y = r0 * r0
            g1 = inner.gradient(y, x)
        assert float(g1) == 8.0 and float(outer.gradient(g1, x)) == 2.0


# --- inside tf.while_loop ---------------------------------------------------------------------
def _write_pack_loop(v0, state0, var):
    ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=3)

    def body(time, ta_t, state):
        sliced = tf.gather(v0, time)
        out = sliced + var + state
        state += sliced
        return time + 1, ta_t.write(time, out), state

    _, h_final, _ = tf.while_loop(lambda time, u1, u2: time < 3, body,
                                  (tf.constant(0), ta, state0), parallel_iterations=3)
    return h_final.stack()


@MODES
def test_while_loop_write_pack_gradients(run):
    # TF: tensor_array_ops_test.py::testWhileLoopWritePackGradients
    check_write_pack_gradients(run, _write_pack_loop)


def check_write_pack_gradients(run, loop):
    """TF's ``_testWhileLoopWritePackGradients``: ``loop(v0, state0, var)`` writes
    ``v0[t] + var + state_t`` at each of 3 steps; the values and gradients it asserts."""
    v0 = tf.constant(np.arange(3 * 5, dtype=np.float32).reshape(3, 5))
    state0 = tf.constant(np.array([1] * 5, dtype=np.float32))
    var = tf.Variable(np.arange(100, 105, dtype=np.float32))
    grad_val = -np.arange(3 * 5, dtype=np.float32).reshape(3, 5)
    with tf.GradientTape() as tape:
        tape.watch([v0, state0])
        vout = run(loop, v0, state0, var)
    v0_grad, state0_grad, var_grad = tape.gradient(vout, [v0, state0, var],
                                                   output_gradients=tf.constant(grad_val))
    v, s = v0.numpy(), state0.numpy()
    state_per_time = np.array([s, s + v[0], s + v[0] + v[1]])
    np.testing.assert_allclose(vout.numpy(), v + var.numpy() + state_per_time)
    expected_v0 = np.array([grad_val[0] + grad_val[1] + grad_val[2],
                            grad_val[1] + grad_val[2], grad_val[2]])
    np.testing.assert_array_equal(v0_grad.numpy(), expected_v0)
    np.testing.assert_allclose(var_grad.numpy(), grad_val.sum(axis=0))
    np.testing.assert_allclose(state0_grad.numpy(), grad_val.sum(axis=0))


def _square_plus_one_loop(size):
    ta = tf.TensorArray(tf.int32, size=size, dynamic_size=True)
    _, ta = tf.while_loop(lambda i, ta: i < 5, lambda i, ta: (i + 1, ta.write(i, tf.square(i) + 1)),
                          [tf.constant(0), ta])
    return ta.stack()


def test_while_loop_dynamic_size():
    # TF: tensor_array_ops_test.py::testWhileLoopDynamicSizeZeroXla.  Eagerly the array grows;
    # a traced loop bounded by a constant is sized before it is traced (loop_sizing)
    assert _square_plus_one_loop(0).numpy().tolist() == [1, 2, 5, 10, 17]
    assert tf.function(_square_plus_one_loop)(5).numpy().tolist() == [1, 2, 5, 10, 17]
    assert tf.function(_square_plus_one_loop)(0).numpy().tolist() == [1, 2, 5, 10, 17]


def test_traced_write_past_the_size_raises_when_the_graph_runs():
    @tf.function
    def fill(n):
        ta = tf.TensorArray(tf.float32, size=3)
        _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, 1.0)),
                              [tf.constant(0), ta])
        return ta.stack()

    assert fill(tf.constant(2)).numpy().tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tried to write to index 3 but "
                                                            "array is not resizeable"):
        fill(tf.constant(4))
    assert fill(tf.constant(3)).numpy().tolist() == [1.0, 1.0, 1.0]


@MODES
def test_grad_serial_two_loops(run):
    # TF: tensor_array_ops_test.py::testGradSerialTwoLoops (num_steps 100 -> 8: the second
    # loop only writes zeros; the traced While gradient recomputes, O(n^2))
    def loop(x):
        num_steps = 8
        acc = tf.TensorArray(dtype=tf.float32, size=num_steps, clear_after_read=False,
                             element_shape=tf.TensorShape([]))

        def b(i, acc):
            x1 = tf.cond(tf.equal(i, 0), lambda: x, lambda: tf.multiply(acc.read(i - 1), 2.0))
            return i + 1, acc.write(i, x1)

        i1, acc1 = tf.while_loop(lambda i, acc: i < 5, b, [tf.constant(0), acc])
        z = tf.constant(0.0)
        _, acc2 = tf.while_loop(lambda i, acc: i < num_steps, lambda i, acc: (i + 1, acc.write(i, z)),
                                [i1, acc1])
        return acc2.stack()

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        r = run(loop, x)
    assert float(tape.gradient(r, x)) == 31.0


def test_shape_after_while_loop():
    # TF: tensor_array_ops_test.py::testShapeAfterWhileLoop (and the element shape a traced
    # loop learns from its body)
    size = 10
    ta = tf.TensorArray(dtype=tf.float32, size=size)
    _, ta = tf.while_loop(lambda i, _: i < size, lambda i, ta: (i + 1, ta.write(i, [[0.]])),
                          [0, ta], parallel_iterations=1)
    assert ta.element_shape is not None and tuple(ta.element_shape) == (1, 1)

    @tf.function
    def traced():
        ta = tf.TensorArray(dtype=tf.float32, size=size)
        _, ta = tf.while_loop(lambda i, _: i < size, lambda i, ta: (i + 1, ta.write(i, [[0.]])),
                              [0, ta])
        assert tuple(ta.element_shape) == (1, 1)
        return ta.stack()

    assert tuple(traced().shape) == (10, 1, 1)


def test_write_concat_in_parallel():
    # TF: tensor_array_ops_test.py::testTensorArrayWriteConcatInParallel (eagerly: elements of
    # different lengths cannot be one buffer, as a traced loop variable must be)
    def concat_1():
        w = tf.TensorArray(dtype=tf.int32, size=2, infer_shape=False).write(0, tf.constant([1]))
        return w.write(1, tf.constant([], shape=(0,), dtype=tf.int32)).concat()

    def concat_2():
        w = tf.TensorArray(dtype=tf.int32, size=3, infer_shape=False).write(0, tf.constant([8]))
        w = w.write(1, tf.constant([], shape=(0,), dtype=tf.int32)).write(2, tf.constant([9]))
        return w.concat()

    def write(index, output):
        return index + 1, output.write(index, tf.cond(tf.less(index, 3), concat_1, concat_2))

    init = (0, tf.TensorArray(dtype=tf.int32, size=6, infer_shape=False))
    _, final = tf.while_loop(lambda i, _: i < 6, write, init)
    assert final.concat().numpy().tolist() == [1, 1, 1, 8, 9, 8, 9, 8, 9]


# --- finite differences, second order -----------------------------------------------------
def _write_read_stack(x, y):
    ta = tf.TensorArray(tf.float64, size=3, clear_after_read=False)
    ta = ta.write(0, tf.sin(x)).write(2, x * y).write(1, y * y)
    return ta.stack() * ta.read(2) + tf.exp(ta.read(0))


def _loop_product(x, y):
    ta = tf.TensorArray(tf.float64, size=3)

    def body(i, state, ta):
        state = tf.sin(state) * y + x
        return i + 1, state, ta.write(i, state * state)

    _, _, ta = tf.while_loop(lambda i, s, t: i < 3, body, (tf.constant(0), x, ta))
    return ta.stack() + ta.gather(tf.constant([2, 0]))[0]


@pytest.mark.parametrize("fn", [_write_read_stack, _loop_product], ids=["straight", "loop"])
def test_second_order_finite_differences(fn):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1, 1, size=(2,)), rng.uniform(-1, 1, size=(2,))
    check_grads(fn, [x, y], order=2)
    check_grads(tf.function(fn), [x, y], order=2)


def test_traced_and_eager_derivatives_agree():
    args = [tf.constant([0.3, -0.7], tf.float64), tf.constant([0.9, 0.2], tf.float64)]
    eager = derivatives(_loop_product, args)
    assert_same(derivatives(tf.function(_loop_product), args), eager)
    assert_same(derivatives_inside(_loop_product, args), eager)  # tapes inside the trace


# --- as a value: tf.cond, tf.function results -------------------------------------------------
def test_cond_and_function_return_a_tensor_array():
    @tf.function
    def pick(flag, x):
        ta = tf.TensorArray(tf.float32, size=2).write(0, x)
        ta = tf.cond(flag, lambda: ta.write(1, x * 2.0), lambda: ta.write(1, -x))
        return ta

    out = pick(tf.constant(True), tf.constant([1.0, 2.0]))
    assert isinstance(out, tf.TensorArray)
    assert out.stack().numpy().tolist() == [[1.0, 2.0], [2.0, 4.0]]
    assert pick(tf.constant(False), tf.constant([1.0, 2.0])).read(1).numpy().tolist() == [-1.0, -2.0]


def test_size_from_a_traced_shape_and_refusals():
    @tf.function
    def reverse_rows(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n)
        _, ta = tf.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(n - 1 - i, tf.gather(x, i))),
                              [tf.constant(0), ta])
        return ta.stack()

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(reverse_rows(tf.constant(x)).numpy(), x[::-1])
    with pytest.raises(ValueError, match="size must be known when tracing"):
        tf.function(lambda x: tf.TensorArray(tf.float32, size=tf.reduce_sum(x)))(tf.constant(2))
    with pytest.raises(NotImplementedError, match="TensorFlow 1"):
        tf.TensorArray(tf.float32, size=1).grad("grad")


def test_a_tensor_array_argument_of_a_function_is_refused():
    # its elements would become constants of the graph, silently reused for the next array
    f = tf.function(lambda ta: ta.stack())
    with pytest.raises(TypeError, match="TensorArray cannot be an argument of a tf.function"):
        f(tf.TensorArray(tf.float32, size=1).write(0, 1.0))


def test_an_eager_array_as_a_traced_loop_variable_stays_eager():
    ta = tf.TensorArray(tf.float32, size=3).write(0, tf.constant([1.0, 2.0]))

    @tf.function
    def fill():
        _, out = tf.while_loop(lambda i, t: i < 3,
                               lambda i, t: (i + 1, t.write(i, tf.ones([2]) * tf.cast(i, tf.float32))),
                               [tf.constant(1), ta])
        return out.stack()

    assert fill().numpy().tolist() == [[1.0, 2.0], [1.0, 1.0], [2.0, 2.0]]
    assert ta.read(0).numpy().tolist() == [1.0, 2.0]


def test_a_branch_returning_the_enclosing_array_leaves_it_usable():
    # the branch stacks the enclosing function's array in its own graph, not in the array
    @tf.function
    def f(p, x):
        ta = tf.TensorArray(tf.float32, size=2).write(0, x)
        out = tf.cond(p, lambda: ta.write(1, x * 2.0), lambda: ta)
        return out.stack() + ta.stack()

    x = tf.constant([1.0, 2.0])
    assert f(tf.constant(True), x).numpy().tolist() == [[2.0, 4.0], [2.0, 4.0]]
    assert f(tf.constant(False), x).numpy().tolist() == [[2.0, 4.0], [0.0, 0.0]]


def _rnn(x, w):
    """TensorFlow's dynamic_rnn pattern: the inputs unstacked into one array read at the loop
    counter (a captured array), the outputs written into another (a loop variable)."""
    steps = x.shape[0]
    inputs = tf.TensorArray(tf.float64, size=steps).unstack(x)

    def body(t, h, out):
        h = tf.tanh(inputs.read(t) * w + h)
        return t + 1, h, out.write(t, h)

    _, _, out = tf.while_loop(lambda t, h, o: t < steps, body,
                              (tf.constant(0), tf.zeros([2], tf.float64),
                               tf.TensorArray(tf.float64, size=steps)))
    return out.stack()


def test_rnn_pattern_second_order():
    x = np.random.default_rng(1).normal(size=(3, 2))
    w = np.array([0.5, -0.3])
    check_grads(_rnn, [x, w], order=2)
    check_grads(tf.function(_rnn), [x, w], order=2)


@MODES
def test_tf_nest_keeps_a_tensor_array_whole(run):
    # as TensorFlow's tf.nest (expand_composites=False): a TensorArray is one leaf
    def fn(x):
        tas = {"a": tf.TensorArray(tf.float32, size=1).write(0, x), "b": x}
        leaves = tf.nest.flatten(tas)
        assert isinstance(leaves[0], tf.TensorArray) and leaves[1] is x
        return tf.nest.map_structure(lambda t: t.stack() if isinstance(t, tf.TensorArray) else t,
                                     tas)

    out = run(fn, tf.constant([1.0, 2.0]))
    assert out["a"].numpy().tolist() == [[1.0, 2.0]] and out["b"].numpy().tolist() == [1.0, 2.0]
