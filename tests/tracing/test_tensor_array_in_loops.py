"""A ``dynamic_size`` TensorArray grown in traced ``tf.while_loop`` and AutoGraph loops.

Ported from TensorFlow's ``python/kernel_tests/data_structures/tensor_array_ops_test.py``
where a test exists (named), with the values it asserts; the rest checks tapeflow's
sizing of such loops (``tracing/loop_sizing.py``) against eager runs and finite
differences, to second order.
"""
import numpy as np
import pytest

import tapeflow as tf
from tests.ops.gradcheck import check_grads
from tests.tracing.helpers import assert_same, derivatives, derivatives_inside
from tests.tracing.test_tensor_array import check_write_pack_gradients


def _eager(fn, *args):
    return fn(*args)


def _traced(fn, *args):
    return tf.function(fn)(*args)


MODES = pytest.mark.parametrize("run", [_eager, _traced], ids=["eager", "traced"])


def _dynamic_write_pack(v0, state0, var):
    ta = tf.TensorArray(dtype=tf.float32, tensor_array_name="foo", size=0, dynamic_size=True)
    time_0 = tf.identity(0)

    def body(time, ta_t, state):
        sliced = tf.gather(v0, time)  # TF: squeeze(slice(v0, [time, 0], [1, -1]))
        out = sliced + var + state
        state += sliced
        return time + 1, ta_t.write(time, out), state

    _, h_final, _ = tf.while_loop(lambda time, u1, u2: time < 3, body, (time_0, ta, state0),
                                  parallel_iterations=3)
    return h_final.stack()


@MODES
def test_while_loop_dynamic_write_pack_gradients(run):
    # TF: tensor_array_ops_test.py::testSkipEagerWhileLoopDynamicWritePackGradients
    # (_testWhileLoopWritePackGradients(dynamic_size=True); its shape_invariants, all
    # unknown or unchanged, left out: tapeflow's loop variables keep their shapes)
    check_write_pack_gradients(run, _dynamic_write_pack)


def _grow_while(x, n):
    ta = tf.TensorArray(tf.float64, size=0, dynamic_size=True)

    def body(i, state, ta):
        state = tf.sin(state) * x + 1.0
        return i + 1, state, ta.write(i, state * state)

    _, _, ta = tf.while_loop(lambda i, s, t: i < n, body, (tf.constant(0), x, ta))
    return ta.stack()


def _grow_for(x, n):
    ta = tf.TensorArray(tf.float64, size=0, dynamic_size=True)
    state = x
    for i in tf.range(n):  # AutoGraph: a tf.while_loop carrying the array
        state = tf.cos(state) * x
        ta = ta.write(i, state + x)
    return ta.stack()


X = tf.constant([0.3, -0.7], tf.float64)


@pytest.mark.parametrize("fn", [_grow_while, _grow_for], ids=["while_loop", "for_range"])
def test_grows_to_the_trip_count_of_an_argument(fn):
    traced = tf.function(fn)
    for n in (3, 5, 3):
        got = traced(X, tf.constant(n)).numpy()
        assert got.shape == (n, 2)
        np.testing.assert_allclose(got, fn(X, tf.constant(n)).numpy(), rtol=1e-12)
    # the graph holds the size: one trace per value of n, reused for a value seen before
    assert traced.experimental_get_tracing_count() == 2


@pytest.mark.parametrize("fn", [_grow_while, _grow_for], ids=["while_loop", "for_range"])
def test_derivatives_to_second_order(fn):
    traced = tf.function(fn)
    n = tf.constant(3)
    check_grads(lambda x: traced(x, n), [X.numpy()], order=2)
    eager = derivatives(fn, [X, n])
    assert_same(derivatives(traced, [X, n]), eager)
    if fn is _grow_while:  # (derivatives_inside's lambda is not converted by AutoGraph)
        assert_same(derivatives_inside(fn, [X, n]), eager)  # tapes inside the trace


def test_size_and_element_shape_in_the_trace():
    # the element shape comes from the first write; size() is the loop's count
    @tf.function
    def fill(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        _, ta = tf.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(i, tf.ones([2, 3]) * tf.cast(i, tf.float32))),
                              [0, ta])
        assert tuple(ta.element_shape) == (2, 3)
        return ta.size(), ta.stack()

    size, stacked = fill(tf.constant(4))
    assert int(size) == 4 and tuple(stacked.shape) == (4, 2, 3)
    np.testing.assert_array_equal(stacked.numpy()[:, 0, 0], [0.0, 1.0, 2.0, 3.0])


def test_a_loop_cut_by_maximum_iterations():
    # TF: tensor_array_ops_test.py::testWhileLoopDynamicSizeZeroXla's loop, bounded by an
    # argument and cut by maximum_iterations
    @tf.function
    def squares(limit):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        _, ta = tf.while_loop(lambda i, ta: i < limit,
                              lambda i, ta: (i + 1, ta.write(i, tf.square(i) + 1)),
                              [tf.constant(0), ta], maximum_iterations=4)
        return ta.stack()

    assert squares(tf.constant(10)).numpy().tolist() == [1, 2, 5, 10]
    assert squares(tf.constant(2)).numpy().tolist() == [1, 2]


def test_an_autograph_loop_carries_a_sized_array():
    @tf.function
    def doubled(x):
        n = tf.shape(x)[0]
        ta = tf.TensorArray(tf.float32, size=n)
        for i in tf.range(n):
            ta = ta.write(i, x[i] * 2.0)
        return ta.stack()

    assert doubled(tf.constant([1.0, 2.0, 3.0])).numpy().tolist() == [2.0, 4.0, 6.0]


def test_a_trip_count_that_depends_on_data_is_refused():
    @tf.function
    def until(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        i = tf.constant(0)
        while tf.reduce_sum(x) > tf.cast(i, tf.float32):
            ta = ta.write(i, tf.cast(i, tf.float32))
            i += 1
        return ta.stack()

    with pytest.raises(ValueError, match="number of writes depends on the function's data"):
        until(tf.constant([2.5]))


def test_a_concrete_function_is_for_the_value_it_was_traced_with():
    concrete = tf.function(_grow_while).get_concrete_function(X, tf.constant(3))
    assert tuple(concrete(X, tf.constant(3)).shape) == (3, 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="_grow_while was traced for input 1 == 3 .*called with 4"):
        concrete(X, tf.constant(4))


def test_an_input_signature_function_traces_once_per_bounding_value(capsys):
    # the sizing run at trace time leaves the loop's tf.print for the calls
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def count(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(n):
            tf.print("step", i)
            ta = ta.write(i, tf.cast(i, tf.float32))
        return ta.stack()

    assert count(tf.constant(3)).numpy().tolist() == [0.0, 1.0, 2.0]
    assert count(tf.constant(2)).numpy().tolist() == [0.0, 1.0]
    assert count(tf.constant(3)).numpy().tolist() == [0.0, 1.0, 2.0]
    assert count.experimental_get_tracing_count() == 2
    assert capsys.readouterr().err.count("step") == 8  # (tf.print writes to stderr)


def test_a_write_inside_a_branch_of_the_body_is_refused():
    @tf.function
    def evens(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=())
        for i in tf.range(n):
            if i % 2 == 0:
                ta = ta.write(i // 2, tf.cast(i, tf.float32))
        return ta.stack()

    with pytest.raises(ValueError, match="written inside a tf.cond or an inner loop"):
        evens(tf.constant(4))


def _gather_in_loop(x):
    ta = tf.TensorArray(tf.float64, size=3).unstack(x)
    s = tf.constant(0.0, tf.float64)
    for i in tf.range(3):  # a list holding the loop counter: converted as TensorFlow does
        s += tf.reduce_sum(ta.gather([i, 0])) * x[i]
    return s


def test_gather_and_scatter_at_lists_of_traced_indices():
    x = tf.constant([1.0, 2.0, 3.0], tf.float64)
    assert float(tf.function(_gather_in_loop)(x)) == float(_gather_in_loop(x)) == 20.0
    check_grads(tf.function(_gather_in_loop), [x.numpy()], order=2)

    @tf.function
    def interleave(x):
        ta = tf.TensorArray(tf.float32, size=6)
        for i in tf.range(3):
            ta = ta.scatter([2 * i, 2 * i + 1], tf.stack([x[i], -x[i]]))
        return ta.stack()

    assert interleave(tf.constant([1.0, 2.0, 3.0])).numpy().tolist() == [1, -1, 2, -2, 3, -3]


def test_a_data_dependent_loop_keeps_the_size_it_was_given():
    # dynamic_size with a size= that covers the writes: the loop is not sized, and a write
    # past the size raises when the graph runs
    @tf.function
    def until(x):
        ta = tf.TensorArray(tf.float32, size=4, dynamic_size=True)
        i = tf.constant(0)
        while tf.reduce_sum(x) > tf.cast(i, tf.float32):
            ta = ta.write(i, tf.cast(i, tf.float32))
            i += 1
        return ta.stack()

    assert until(tf.constant([2.5])).numpy().tolist() == [0.0, 1.0, 2.0, 0.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="Tried to write to index 4"):
        until(tf.constant([4.5]))


def test_a_saved_trace_checks_the_value_it_was_traced_for(tmp_path):
    class Counter(tf.Module):
        @tf.function
        def count(self, n):
            ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
            for i in tf.range(n):
                ta = ta.write(i, tf.cast(i, tf.float32))
            return ta.stack()

    module = Counter()
    assert module.count(tf.constant(3)).numpy().tolist() == [0.0, 1.0, 2.0]
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    assert loaded.count(tf.constant(3)).numpy().tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="traced for input 0 == 3"):
        loaded.count(tf.constant(4))  # not a silently zero-padded or cut result


def test_an_autograph_if_carries_an_array():
    # each branch's array stays in its own graph (compared by its static description)
    def pick(x, flag):
        ta = tf.TensorArray(tf.float32, size=2).write(0, x)
        if flag:
            ta = ta.write(1, x * 2.0)
        else:
            ta = ta.write(1, -x)
        return ta.stack()

    x = tf.constant([1.0, 2.0])
    for flag in (True, False):
        assert tf.function(pick)(x, tf.constant(flag)).numpy().tolist() == \
            pick(x, tf.constant(flag)).numpy().tolist()


def test_an_autograph_if_without_else_writes_an_array_in_a_loop():
    # the array the loop starts with holds nothing yet: the branch that skips the write
    # takes the element shape the other branch's write gives it
    def evens(n):
        ta = tf.TensorArray(tf.float32, size=4)
        for i in tf.range(n):
            if i % 2 == 0:
                ta = ta.write(i // 2, tf.cast(i, tf.float32) + 1.0)
        return ta.stack()

    assert tf.function(evens)(tf.constant(6)).numpy().tolist() == \
        evens(tf.constant(6)).numpy().tolist() == [1.0, 3.0, 5.0, 0.0]


def test_the_body_reads_what_it_grew():
    # written before the loop, then each step reads the previous element
    def doubling(n):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, clear_after_read=False)
        ta = ta.write(0, 1.0)
        for i in tf.range(1, n):
            ta = ta.write(i, ta.read(i - 1) * 2.0)
        return ta.stack()

    assert tf.function(doubling)(tf.constant(5)).numpy().tolist() == \
        doubling(tf.constant(5)).numpy().tolist() == [1.0, 2.0, 4.0, 8.0, 16.0]
