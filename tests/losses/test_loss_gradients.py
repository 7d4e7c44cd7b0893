"""Loss gradients against central differences in float64 (second order for smooth losses),
and finite values and gradients at extreme logits and saturated probabilities."""
import numpy as np
import pytest

import tapeflow as tf
from tests.ops.gradcheck import check_grads

from .cases import CASES

N, D = 4, 3


def _order(case):
    return 2 if case.smooth else 1


@pytest.mark.parametrize("case", CASES, ids=str)
def test_loss_object_gradients(case):
    rng = np.random.default_rng(10)
    y_true, y_pred = case.draw(rng, N, D)
    w = rng.uniform(0.5, 2.0, N)
    loss = case.make64()
    if case.labels_differentiable:
        check_grads(lambda t, p: loss(t, p, sample_weight=w), [y_true, y_pred], order=_order(case))
    else:
        check_grads(lambda p: loss(y_true, p, sample_weight=w), [y_pred], order=_order(case))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_per_sample_function_gradients(case):
    rng = np.random.default_rng(11)
    y_true, y_pred = case.draw(rng, N, D)
    check_grads(lambda p: case.function(y_true, p, **case.kwargs), [y_pred], order=_order(case))


def test_gradients_through_unreduced_and_summed_losses_with_column_weights():
    rng = np.random.default_rng(12)
    t, p, w = rng.standard_normal(N), rng.standard_normal((N, 1)), rng.uniform(0.5, 2, (N, 1))
    for reduction in ("none", "sum", "mean_with_sample_weight"):
        loss = tf.losses.Huber(delta=0.5, reduction=reduction, dtype="float64")
        check_grads(lambda t_, p_, w_: loss(t_, p_, sample_weight=w_), [t, p, w], order=2)


# --- stability ------------------------------------------------------------------------------------
def _value_and_gradient(loss, y_true, y_pred):
    y_pred = tf.constant(y_pred)
    with tf.GradientTape() as tape:
        tape.watch(y_pred)
        value = loss(y_true, y_pred)
    return value.numpy(), tape.gradient(value, y_pred).numpy()


def _softmax_grad(labels_one_hot, logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True) - labels_one_hot) / len(logits)


def test_binary_crossentropy_from_logits_is_finite_at_plus_minus_100():
    logits = np.array([[100.0, -100.0], [-100.0, 100.0], [0.0, 30.0]], np.float32)
    labels = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]], np.float32)
    value, grad = _value_and_gradient(tf.losses.BinaryCrossentropy(from_logits=True), labels, logits)
    x, z = logits.astype(np.float64), labels
    expected = np.mean(np.logaddexp(0, x) - x * z)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, (1 / (1 + np.exp(-x)) - z) / x.size, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_softmax_crossentropies_from_logits_are_finite_at_plus_minus_100(sparse):
    logits = np.array([[100.0, -100.0, 0.0], [-100.0, 100.0, 100.0], [-100.0, -100.0, -100.0]],
                      np.float32)
    classes = np.array([1, 0, 2])
    hot = np.eye(3, dtype=np.float32)[classes]
    loss = (tf.losses.SparseCategoricalCrossentropy(from_logits=True) if sparse
            else tf.losses.CategoricalCrossentropy(from_logits=True))
    value, grad = _value_and_gradient(loss, classes if sparse else hot, logits)
    x = logits.astype(np.float64)
    lse = x.max(-1) + np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1))
    np.testing.assert_allclose(value, np.mean(lse - x[np.arange(3), classes]), rtol=1e-6)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, _softmax_grad(hot, x), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("loss", [tf.losses.BinaryCrossentropy(), tf.losses.CategoricalCrossentropy()],
                         ids=["bce", "cce"])
def test_saturated_probabilities_are_clipped_to_finite_values_and_gradients(loss):
    p = np.array([[0.0, 1.0], [1.0, 0.0]], np.float32)
    t = np.array([[1.0, 0.0], [1.0, 0.0]], np.float32)
    value, grad = _value_and_gradient(loss, t, p)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert value > 5  # a confident wrong answer costs about -log(1e-7) / 2


def test_input_gradient_penalty_of_a_crossentropy_is_finite_at_large_logits():
    """d/dx |dL/dx|^2 through sigmoid_cross_entropy_with_logits (second order) at |x| = 100."""
    x = tf.constant(np.array([[100.0, -100.0, 3.0]]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            loss = tf.losses.BinaryCrossentropy(from_logits=True)(np.array([[0.0, 1.0, 1.0]]), x)
        g = inner.gradient(loss, x)
        penalty = tf.reduce_sum(g * g)
    assert np.all(np.isfinite(outer.gradient(penalty, x).numpy()))
