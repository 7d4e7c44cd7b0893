"""tf.math.top_k, in_top_k, confusion_matrix and tf.random.categorical against numpy / sklearn;
traced graphs take their indices and draws when they run.  (Gradients to second order, jacobians
and saved-graph round trips: the op battery, tests/ops/op_cases.py.)"""
import numpy as np
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion_matrix

import tapeflow as tf


def _numpy_top_k(x, k):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]  # ties: the lower index first
    return np.take_along_axis(x, order, axis=-1), order


@pytest.mark.parametrize("shape, k", [((5,), 3), ((4, 6), 2), ((2, 3, 4), 4), ((3, 4), 0)])
def test_top_k_matches_numpy_with_ties_in_index_order(shape, k):
    x = np.random.default_rng(0).integers(0, 3, shape).astype(np.float32)  # many ties
    values, indices = tf.math.top_k(x, k)
    want_values, want_indices = _numpy_top_k(x, k)
    assert values.dtype == tf.float32 and indices.dtype == tf.int32
    np.testing.assert_array_equal(values.numpy(), want_values)
    np.testing.assert_array_equal(indices.numpy(), want_indices)


def test_top_k_gradient_goes_to_the_chosen_positions():
    x = tf.constant([[1.0, 5.0, 3.0, 4.0], [9.0, 0.0, 2.0, 1.0]], dtype=tf.float64)
    w = tf.constant([[10.0, 1.0], [2.0, 3.0]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        values, _ = tf.math.top_k(x, 2)
        y = tf.reduce_sum(values * w)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(),
                                  [[0, 10, 0, 1], [2, 0, 3, 0]])


def test_traced_top_k_chooses_the_positions_of_each_call():
    @tf.function
    def value_and_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.math.top_k(x, 1)[0])
        return tf.math.top_k(x, 1)[1], tape.gradient(y, x)
    a = np.array([[3.0, 1.0, 2.0]])
    b = np.array([[0.0, 1.0, 2.0]])
    for x in (a, b):
        indices, grad = value_and_grad(tf.constant(x))
        assert indices.numpy()[0, 0] == x.argmax()
        np.testing.assert_array_equal(grad.numpy(), np.eye(3)[[x.argmax()]])


@pytest.mark.parametrize("axis, direction", [(-1, "ASCENDING"), (0, "DESCENDING"), (1, "ASCENDING")])
def test_traced_sort_sorts_each_calls_data(axis, direction):
    f = tf.function(lambda x: tf.sort(x, axis=axis, direction=direction))
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.standard_normal((3, 4, 2))
        want = np.sort(x, axis=axis)
        want = np.flip(want, axis) if direction == "DESCENDING" else want
        np.testing.assert_array_equal(f(tf.constant(x)).numpy(), want)


def test_traced_searchsorted_searches_each_calls_data():
    f = tf.function(lambda a, v: tf.searchsorted(a, v, side="right"))
    seq = np.array([[0.0, 1.0, 1.0, 3.0], [-1.0, 0.0, 2.0, 5.0]])
    for values in (np.array([[1.0, 4.0], [0.0, 9.0]]), np.array([[-2.0, 0.5], [2.0, 3.0]])):
        want = np.stack([np.searchsorted(s, v, side="right") for s, v in zip(seq, values)])
        got = f(tf.constant(seq), tf.constant(values))
        assert got.dtype == tf.int32
        np.testing.assert_array_equal(got.numpy(), want)


def test_top_k_errors():
    with pytest.raises(ValueError, match="k must be in"):
        tf.math.top_k(np.zeros((2, 3)), 4)
    with pytest.raises(ValueError, match="rank >= 1"):
        tf.math.top_k(np.float32(1.0), 1)
    with pytest.raises(TypeError, match="k must be an integer"):
        tf.math.top_k(np.zeros(3), 1.5)


def test_in_top_k_counts_ties_at_the_boundary_and_refuses_bad_rows():
    predictions = np.array([[0.1, 0.5, 0.5, 0.2],    # target 2 ties the top: in the top 1
                            [0.4, 0.3, 0.2, 0.1],    # target 3 is 4th: not in the top 2
                            [0.4, 0.3, 0.2, 0.1],    # target 1 is 2nd: in the top 2
                            [0.4, np.nan, 0.2, 0.1],  # a non-finite row: never
                            [0.4, 0.3, 0.2, 0.1]], np.float32)  # target 7 is out of range
    targets = np.array([2, 3, 1, 0, 7])
    got = tf.math.in_top_k(targets, predictions, 2).numpy()
    np.testing.assert_array_equal(got, [True, False, True, False, False])
    assert tf.math.in_top_k(targets[:1], predictions[:1], 1).numpy()[0]


def test_in_top_k_matches_numpy_on_random_data():
    rng = np.random.default_rng(1)
    p = rng.random((50, 7))
    t = rng.integers(0, 7, 50)
    for k in (1, 3, 7):
        want = np.array([np.sum(row > row[c]) < k for row, c in zip(p, t)])
        np.testing.assert_array_equal(tf.math.in_top_k(t, p, k).numpy(), want)


def test_in_top_k_errors():
    with pytest.raises(ValueError, match=r"\[batch, classes\]"):
        tf.math.in_top_k([0, 1], np.zeros((3, 2)), 1)
    with pytest.raises(TypeError, match="integers"):
        tf.math.in_top_k(np.array([0.0]), np.zeros((1, 2)), 1)


def test_confusion_matrix_matches_sklearn_with_and_without_weights():
    rng = np.random.default_rng(2)
    labels, predictions = rng.integers(0, 4, 40), rng.integers(0, 4, 40)
    weights = rng.uniform(0.5, 2.0, 40)
    got = tf.math.confusion_matrix(labels, predictions)
    assert got.dtype == tf.int32
    np.testing.assert_array_equal(got.numpy(), sk_confusion_matrix(labels, predictions))
    got = tf.math.confusion_matrix(labels, predictions, num_classes=6, weights=weights,
                                   dtype=tf.float64)
    want = sk_confusion_matrix(labels, predictions, labels=range(6), sample_weight=weights)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_confusion_matrix_traced_counts_each_calls_data():
    f = tf.function(lambda a, b: tf.math.confusion_matrix(a, b, num_classes=3))
    for a, b in (([0, 1, 2], [0, 2, 2]), ([1, 1, 0], [2, 1, 0])):
        np.testing.assert_array_equal(f(tf.constant(a), tf.constant(b)).numpy(),
                                      sk_confusion_matrix(a, b, labels=range(3)))


def test_confusion_matrix_errors():
    with pytest.raises(ValueError, match=">= 0"):
        tf.math.confusion_matrix([0, -1], [0, 1])
    with pytest.raises(ValueError, match="num_classes=2"):
        tf.math.confusion_matrix([0, 2], [0, 1], num_classes=2)
    with pytest.raises(ValueError, match="same shape"):
        tf.math.confusion_matrix([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="whole numbers"):
        tf.math.confusion_matrix(np.array([0.5, 1.0]), [0, 1])


def test_categorical_frequencies_follow_the_softmax():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 1.0]]))
    logits[1, 2] = -np.inf  # never drawn
    tf.random.set_seed(0)
    draws = tf.random.categorical(logits, 20000)
    assert draws.dtype == tf.int64 and tuple(draws.shape) == (2, 20000)
    counts = np.stack([np.bincount(row, minlength=3) for row in draws.numpy()]) / 20000
    np.testing.assert_allclose(counts, [[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]], atol=0.015)
    assert counts[1, 2] == 0


def test_categorical_is_reproducible_and_traces_like_the_other_random_ops():
    logits = np.zeros((3, 5), np.float32)

    def draws(fn):
        tf.random.set_seed(7)
        return [fn(tf.constant(logits)).numpy() for _ in range(3)]
    eager = draws(lambda x: tf.random.categorical(x, 4))
    assert not np.array_equal(eager[0], eager[1])  # a new draw every call
    np.testing.assert_array_equal(eager, draws(lambda x: tf.random.categorical(x, 4)))
    traced = tf.function(lambda x: tf.random.categorical(x, 4))
    np.testing.assert_array_equal(eager, draws(traced))  # the same sequence as eagerly
    tf.random.set_seed(7)
    a = tf.random.categorical(logits, 4, seed=3).numpy()
    tf.random.set_seed(7)
    np.testing.assert_array_equal(a, tf.random.categorical(logits, 4, seed=3).numpy())


def test_categorical_errors():
    with pytest.raises(ValueError, match=r"\[batch, classes\]"):
        tf.random.categorical(np.zeros(3), 2)
    with pytest.raises(TypeError, match="integer"):
        tf.random.categorical(np.zeros((1, 3)), 2, dtype=tf.float32)
