"""R2Score against sklearn's r2_score; the top-k accuracies against sklearn's
top_k_accuracy_score and in_top_k's tie rule; the metrics that average a loss."""
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

import tapeflow as tf
from tapeflow import losses, metrics


def _feed(metric, *arrays, sizes=(7, 13, 10)):
    start = 0
    for size in sizes:
        metric.update_state(*(None if a is None else a[start:start + size] for a in arrays))
        start += size
    return metric.result().numpy()


# --- R2Score --------------------------------------------------------------------------------------
@pytest.mark.parametrize("aggregation, multioutput", [
    ("uniform_average", "uniform_average"), ("variance_weighted_average", "variance_weighted"),
    (None, "raw_values")])
@pytest.mark.parametrize("weighted", [False, True])
def test_r2_score_is_sklearns(aggregation, multioutput, weighted):
    rng = np.random.default_rng(0)
    y = rng.standard_normal((30, 3)) * [1.0, 3.0, 0.5]
    p = y + rng.standard_normal((30, 3))
    w = rng.uniform(0.2, 2.0, 30) if weighted else None
    got = _feed(metrics.R2Score(class_aggregation=aggregation), y, p, w)
    assert got.dtype == np.float32 and got.shape == (() if aggregation else (3,))
    np.testing.assert_allclose(got, skm.r2_score(y, p, sample_weight=w, multioutput=multioutput),
                               rtol=1e-5)


def test_adjusted_r2_counts_elements_as_keras_and_falls_back_with_a_warning():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((30, 2))
    p = y + 0.5 * rng.standard_normal((30, 2))
    r2 = skm.r2_score(y, p)
    n = y.size  # Keras's n: elements, not rows
    got = _feed(metrics.R2Score(num_regressors=4), y, p)
    np.testing.assert_allclose(got, 1 - (1 - r2) * (n - 1) / (n - 4 - 1), rtol=1e-5)
    one = _feed(metrics.R2Score(num_regressors=4), y[:, 0], p[:, :1])  # (batch,), (batch, 1)
    np.testing.assert_allclose(one, 1 - (1 - skm.r2_score(y[:, 0], p[:, 0])) * 29 / 25, rtol=1e-5)
    with pytest.warns(UserWarning, match="More independent predictors"):
        np.testing.assert_allclose(_feed(metrics.R2Score(num_regressors=80), y, p), r2, rtol=1e-5)


def test_r2_edge_cases_and_errors():
    metric = metrics.R2Score()
    assert metric.result().numpy() == 0.0  # before any data
    metric.update_state(np.ones((4, 1)), np.arange(4.0)[:, None])  # constant targets: -inf -> 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric.result().numpy() == 0.0
    with pytest.raises(ValueError, match="2-D inputs"):
        metrics.R2Score().update_state(np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="class_aggregation"):
        metrics.R2Score(class_aggregation="mean")
    with pytest.raises(ValueError, match="num_regressors"):
        metrics.R2Score(num_regressors=-1)


def test_r2_traced_equals_eager_and_config_round_trips():
    rng = np.random.default_rng(2)
    y, p = rng.standard_normal((20, 2)), rng.standard_normal((20, 2))
    eager = metrics.R2Score(class_aggregation=None, num_regressors=1)
    traced = metrics.deserialize(metrics.serialize(eager))
    assert traced.get_config() == eager.get_config()

    @tf.function
    def step(a, b):
        traced.update_state(a, b)
        return traced.result()
    for rows in (slice(0, 8), slice(8, 20)):
        eager.update_state(y[rows], p[rows])
        np.testing.assert_allclose(step(tf.constant(y[rows]), tf.constant(p[rows])).numpy(),
                                   eager.result().numpy(), rtol=1e-6)
    traced.reset_state()
    assert not np.any(traced.num_samples.numpy())


# --- top-k accuracies -----------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 5])
def test_top_k_accuracies_are_sklearns(k):
    rng = np.random.default_rng(3)
    labels, scores = rng.integers(0, 6, 30), rng.random((30, 6))
    want = skm.top_k_accuracy_score(labels, scores, k=k, labels=range(6))
    np.testing.assert_allclose(_feed(metrics.SparseTopKCategoricalAccuracy(k=k), labels, scores),
                               want, rtol=1e-6)
    np.testing.assert_allclose(_feed(metrics.TopKCategoricalAccuracy(k=k), np.eye(6)[labels],
                                     scores), want, rtol=1e-6)
    w = rng.uniform(0.5, 2, 30)
    np.testing.assert_allclose(
        _feed(metrics.SparseTopKCategoricalAccuracy(k=k), labels[:, None], scores, w),
        skm.top_k_accuracy_score(labels, scores, k=k, labels=range(6), sample_weight=w),
        rtol=1e-6)


def test_top_k_functions_count_ties_at_the_boundary_and_take_sorted_ids():
    scores = np.array([[0.5, 0.2, 0.5, 0.1], [0.1, 0.2, 0.3, 0.4]])
    got = metrics.sparse_top_k_categorical_accuracy([2, 0], scores, k=1)
    assert got.dtype == tf.float32
    np.testing.assert_array_equal(got.numpy(), [1.0, 0.0])  # 0.5 ties the largest: in the top 1
    np.testing.assert_array_equal(
        metrics.top_k_categorical_accuracy(np.eye(4)[[1, 2]], scores, k=2).numpy(), [0.0, 1.0])
    ids = np.array([[3, 1, 0], [2, 0, 1]])
    np.testing.assert_array_equal(
        metrics.sparse_top_k_categorical_accuracy([1, 1], ids, k=2, from_sorted_ids=True).numpy(),
        [1.0, 0.0])


def test_top_k_metric_in_a_traced_fit():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40, 5)).astype(np.float32)
    y = rng.integers(0, 4, 40)
    logs = []
    for run_eagerly in (False, True):
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(4)])
        model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[metrics.SparseTopKCategoricalAccuracy(k=2)],
                      run_eagerly=run_eagerly)
        logs.append(model.fit(x, y, epochs=2, batch_size=16, verbose=0).history)
    assert logs[0] == logs[1]


# --- means of losses ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, fn, sign", [
    (metrics.Hinge, losses.hinge, 1), (metrics.SquaredHinge, losses.squared_hinge, 1),
    (metrics.CategoricalHinge, losses.categorical_hinge, 1),
    (metrics.KLDivergence, losses.kl_divergence, 1), (metrics.Poisson, losses.poisson, 1),
    (metrics.LogCoshError, losses.log_cosh, 1),
    (metrics.CosineSimilarity, losses.cosine_similarity, -1)])
def test_loss_metrics_are_the_mean_loss(cls, fn, sign):
    rng = np.random.default_rng(5)
    y, p = rng.uniform(0.1, 1, (30, 3)), rng.uniform(0.1, 1, (30, 3))
    w = rng.uniform(0.5, 2, 30)
    values = sign * fn(y, p).numpy()
    np.testing.assert_allclose(_feed(cls(), y, p, w), np.sum(values * w) / np.sum(w), rtol=1e-5)
    traced = cls()
    tf.function(lambda a, b: traced.update_state(a, b))(tf.constant(y), tf.constant(p))
    np.testing.assert_allclose(traced.result().numpy(), values.mean(), rtol=1e-5)


def test_cosine_similarity_metric_is_positive_when_aligned():
    a = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(metrics.CosineSimilarity()(a, 2 * a).numpy(), 1.0, rtol=1e-6)
    np.testing.assert_allclose(metrics.CosineSimilarity(axis=0)(a, -a).numpy(), -1.0, rtol=1e-6)
