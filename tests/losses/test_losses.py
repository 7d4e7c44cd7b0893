"""Loss values against the numpy formulas: every loss, reduction and weight shape;
Keras's rank matching; dtypes; errors."""
import numpy as np
import pytest

import tapeflow as tf

from . import references as ref
from .cases import CASES

REDUCTIONS = ["sum_over_batch_size", "sum", "none", None, "mean", "mean_with_sample_weight"]
N, D = 6, 4


def _weights(kind, rng):
    return {"none": None, "per_sample": rng.uniform(0.1, 2.0, N),
            "column": rng.uniform(0.1, 2.0, (N, 1)), "scalar": 0.5}[kind]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_function_form_matches_reference(case):
    rng = np.random.default_rng(0)
    y_true, y_pred = case.draw(rng, N, D)
    got = case.function(y_true, y_pred, **case.kwargs)
    assert got.dtype == tf.float64 and tuple(got.shape) == (N,)
    np.testing.assert_allclose(got.numpy(), case.reference(y_true, y_pred, **case.ref_kwargs),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("weights", ["none", "per_sample", "column", "scalar"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_loss_object_weights_and_reduces_as_keras(case, reduction, weights):
    rng = np.random.default_rng(1)
    y_true, y_pred = case.draw(rng, N, D)
    w = _weights(weights, rng)
    got = case.make64(reduction=reduction)(y_true, y_pred, sample_weight=w)
    per_sample = case.reference(y_true, y_pred, **case.ref_kwargs)
    expected = ref.reduce(per_sample, w, reduction)
    assert tuple(got.shape) == np.shape(expected)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_float32_inputs_give_float32_losses(case):
    rng = np.random.default_rng(2)
    y_true, y_pred = case.draw(rng, N, D)
    got = case.make()(y_true, y_pred.astype(np.float32))
    assert got.dtype == tf.float32 and got.shape == ()
    expected = case.reference(y_true, y_pred.astype(np.float32).astype(np.float64), **case.ref_kwargs)
    np.testing.assert_allclose(got.numpy(), expected.mean(), rtol=1e-5)


# --- Keras's shape rules -------------------------------------------------------------------------
@pytest.mark.parametrize("loss, reference", [
    (tf.losses.MeanSquaredError(dtype="float64"), lambda t, p: ref.mse(t[:, None], p)),
    (tf.losses.MeanAbsoluteError(dtype="float64"), lambda t, p: ref.mae(t[:, None], p)),
    (tf.losses.Huber(dtype="float64"), lambda t, p: ref.huber(t[:, None], p)),
    (tf.losses.BinaryCrossentropy(dtype="float64"),
     lambda t, p: ref.binary_crossentropy(t[:, None], p)),
    (tf.losses.BinaryCrossentropy(from_logits=True, dtype="float64"),
     lambda t, p: ref.binary_crossentropy(t[:, None], p, from_logits=True)),
])
def test_batch_labels_pair_with_batch_by_one_predictions(loss, reference):
    """y_true (batch,) with y_pred (batch, 1) is elementwise, never a (batch, batch) broadcast."""
    rng = np.random.default_rng(3)
    t = (rng.random(N) > 0.5).astype(float)
    p = rng.uniform(0.1, 0.9, (N, 1))
    np.testing.assert_allclose(loss(t, p).numpy(), reference(t, p).mean(), rtol=1e-12)
    np.testing.assert_allclose(loss(p, t[:, None]).numpy(), reference(p[:, 0], t[:, None]).mean(),
                               rtol=1e-12)  # and the other way round
    assert tuple(loss.fn(t, p).shape) == (N,)
    assert tuple(loss(t, p, sample_weight=np.ones((N, 1))).shape) == ()
    assert tuple(tf.losses.MeanSquaredError(reduction="none")(t, p).shape) == (N,)


def test_sparse_labels_may_carry_a_trailing_one_axis():
    rng = np.random.default_rng(4)
    labels, p = rng.integers(0, D, N), rng.uniform(0.1, 1.0, (N, D))
    loss = tf.losses.SparseCategoricalCrossentropy(dtype="float64")
    a, b = loss(labels, p), loss(labels[:, None], p)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0)
    np.testing.assert_allclose(a.numpy(), ref.sparse_categorical_crossentropy(labels, p).mean(), rtol=1e-12)


def test_sparse_labels_as_floats_and_higher_rank_predictions():
    rng = np.random.default_rng(5)
    labels, logits = rng.integers(0, D, (3, 5)), rng.standard_normal((3, 5, D))
    got = tf.losses.sparse_categorical_crossentropy(labels.astype(np.float32), logits, from_logits=True)
    np.testing.assert_allclose(got.numpy(), ref.sparse_categorical_crossentropy(labels, logits, True),
                               rtol=1e-12)


def test_integer_and_bool_labels_are_cast_to_the_losss_dtype():
    p = np.array([[0.2, 0.9], [0.6, 0.3]])
    t_int = np.array([[0, 1], [1, 0]])
    expected = ref.binary_crossentropy(t_int.astype(float), p).mean()
    for t in (t_int, t_int.astype(bool), t_int.tolist(), tf.constant(t_int)):
        got = tf.losses.BinaryCrossentropy(dtype="float64")(t, tf.constant(p))
        assert got.dtype == tf.float64
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    assert tf.losses.MeanSquaredError()([1, 2], [1, 4]).dtype == tf.float32  # integer y_pred -> floatx


def test_categorical_crossentropy_along_another_axis():
    rng = np.random.default_rng(6)
    t, logits = np.eye(D)[rng.integers(0, D, N)], rng.standard_normal((N, D))
    got = tf.losses.categorical_crossentropy(t.T, logits.T, from_logits=True, axis=0)
    np.testing.assert_allclose(got.numpy(), ref.categorical_crossentropy(t, logits, True), rtol=1e-12)


def test_user_loss_subclass_gets_weighting_and_reduction():
    class Cubic(tf.losses.Loss):
        def call(self, y_true, y_pred):
            return tf.reduce_mean(tf.abs(y_true - y_pred) ** 3, axis=-1)

    t, p, w = np.zeros((3, 2)), np.array([[1.0, 2.0], [0.0, 1.0], [2.0, 2.0]]), np.array([1.0, 0.0, 2.0])
    loss = Cubic()
    assert loss.name == "cubic"
    np.testing.assert_allclose(loss(t, p, sample_weight=w).numpy(), (4.5 * 1 + 8 * 2) / 3)
    assert Cubic(reduction="sum")(np.array([1, 2]), np.array([[0.0, 0.0], [0.0, 0.0]])).numpy() == 1 + 8


def test_empty_batch_reduces_to_zero():
    got = tf.losses.MeanSquaredError()(np.zeros((0, 3)), np.zeros((0, 3)))
    assert got.shape == () and got.numpy() == 0.0


def test_zero_weights_with_mean_with_sample_weight_is_zero_not_nan():
    got = tf.losses.MeanSquaredError(reduction="mean_with_sample_weight")(
        np.ones((2, 2)), np.zeros((2, 2)), sample_weight=np.zeros(2))
    assert got.numpy() == 0.0


# --- errors ---------------------------------------------------------------------------------------
def test_invalid_reduction_is_a_value_error():
    with pytest.raises(ValueError, match="reduction"):
        tf.losses.MeanSquaredError(reduction="average")


@pytest.mark.parametrize("fn", [tf.losses.binary_crossentropy, tf.losses.categorical_crossentropy])
def test_mismatched_shapes_are_a_value_error(fn):
    with pytest.raises(ValueError, match="same shape"):
        fn(np.zeros((4, 3)), np.full((4, 2), 0.5))


def test_sparse_shape_mismatch_and_out_of_range_labels_are_value_errors():
    p = np.full((3, 4), 0.25)
    with pytest.raises(ValueError, match="shape"):
        tf.losses.sparse_categorical_crossentropy(np.zeros((3, 2)), p)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        tf.losses.sparse_categorical_crossentropy(np.array([0, 4, 1]), p)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        tf.losses.sparse_categorical_crossentropy(np.array([0, -1, 1]), p)


def test_categorical_crossentropy_warns_about_one_column():
    with pytest.warns(SyntaxWarning, match="binary_crossentropy"):
        tf.losses.categorical_crossentropy(np.ones((3, 1)), np.ones((3, 1)))
