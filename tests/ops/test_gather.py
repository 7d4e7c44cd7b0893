"""tf.gather / GatherV2: the indices are an input of the op (a traced graph takes new ones), any
axis and index rank, clear errors; its gradient ScatterAdd adds repeated indices up."""
import numpy as np
import pytest

import tapeflow as tf


def test_any_axis_and_index_rank_as_numpy_take():
    x = np.arange(24.0).reshape(2, 3, 4)
    for axis in (0, 1, 2, -1):
        for idx in ([1, 0, 1], [[0], [1]], 1):
            n = x.shape[axis]
            idx = np.asarray(idx) % n
            got = tf.gather(tf.constant(x), tf.constant(idx), axis=axis).numpy()
            np.testing.assert_array_equal(got, np.take(x, idx, axis=axis))


def test_the_indices_are_an_input_of_the_traced_graph():
    params = tf.constant(np.arange(10.0).reshape(5, 2))
    f = tf.function(lambda i: tf.gather(params, i))
    for ids in ([0, 4], [3, 1], [2, 2]):  # one trace: the ids are not baked in
        np.testing.assert_array_equal(f(tf.constant(ids)).numpy(), params.numpy()[ids])
    graph = f.get_concrete_function(tf.constant([0, 1])).graph
    assert any(e.op.name == "GatherV2" for e in graph.eqns)


def test_gradient_adds_repeated_indices():
    params = tf.constant(np.ones((3, 2)))
    idx = tf.constant([2, 0, 2, 2])
    weights = tf.constant(np.array([[1.0], [2.0], [3.0], [4.0]]))
    with tf.GradientTape() as tape:
        tape.watch(params)
        y = tf.reduce_sum(tf.gather(params, idx) * weights)
    np.testing.assert_array_equal(tape.gradient(y, params).numpy(), [[2, 2], [0, 0], [8, 8]])


def test_errors_say_what_is_wrong():
    params = tf.constant(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        tf.gather(params, [0, 3])
    with pytest.raises(ValueError, match=r"indices\[0\] = -1 is not in \[0, 3\)"):
        tf.gather(params, [-1])  # TensorFlow's CPU kernel refuses it too (numpy would wrap)
    with pytest.raises(TypeError, match="indices must be integers"):
        tf.gather(params, [0.0])
    with pytest.raises(ValueError, match="axis"):
        tf.gather(params, [0], axis=2)
    with pytest.raises(NotImplementedError, match="batch_dims"):
        tf.gather(params, [[0]], batch_dims=1)
    f = tf.function(lambda i: tf.gather(params, i))
    f(tf.constant([0]))
    with pytest.raises(ValueError, match=r"indices\[0\] = 5 is not in \[0, 3\)"):
        f(tf.constant([5]))  # checked when the graph runs
