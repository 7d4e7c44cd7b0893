"""metrics.get for every name, config round trips, and the user-metric registry."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import losses, metrics

NAMES = {
    "mse": metrics.MeanSquaredError, "MSE": metrics.MeanSquaredError,
    "mean_squared_error": metrics.MeanSquaredError, "MeanSquaredError": metrics.MeanSquaredError,
    "mae": metrics.MeanAbsoluteError, "MAE": metrics.MeanAbsoluteError,
    "mean_absolute_error": metrics.MeanAbsoluteError,
    "rmse": metrics.RootMeanSquaredError, "RMSE": metrics.RootMeanSquaredError,
    "root_mean_squared_error": metrics.RootMeanSquaredError,
    "accuracy": metrics.Accuracy, "acc": metrics.Accuracy,
    "binary_accuracy": metrics.BinaryAccuracy, "BinaryAccuracy": metrics.BinaryAccuracy,
    "categorical_accuracy": metrics.CategoricalAccuracy,
    "sparse_categorical_accuracy": metrics.SparseCategoricalAccuracy,
    "mean": metrics.Mean, "sum": metrics.Sum,
    "auc": metrics.AUC, "AUC": metrics.AUC, "precision": metrics.Precision,
    "recall": metrics.Recall, "r2_score": metrics.R2Score, "R2Score": metrics.R2Score,
    "top_k_categorical_accuracy": metrics.TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": metrics.SparseTopKCategoricalAccuracy,
    "hinge": metrics.Hinge, "squared_hinge": metrics.SquaredHinge,
    "categorical_hinge": metrics.CategoricalHinge, "kl_divergence": metrics.KLDivergence,
    "poisson": metrics.Poisson, "logcosh": metrics.LogCoshError,
    "log_cosh_error": metrics.LogCoshError, "cosine_similarity": metrics.CosineSimilarity,
}

CONFIGURED = [
    metrics.Mean(name="avg", dtype="float64"),
    metrics.Sum(),
    metrics.MeanSquaredError(name="val_mse"),
    metrics.RootMeanSquaredError(),
    metrics.MeanAbsoluteError(),
    metrics.Accuracy(),
    metrics.BinaryAccuracy(threshold=0.3),
    metrics.CategoricalAccuracy(),
    metrics.SparseCategoricalAccuracy(name="sca"),
    metrics.MeanMetricWrapper(losses.huber, delta=0.25),
    metrics.MeanMetricWrapper(metrics.binary_accuracy, name="ba", threshold=0.7),
    metrics.TopKCategoricalAccuracy(k=2, name="top2"),
    metrics.SparseTopKCategoricalAccuracy(k=3, from_sorted_ids=True),
    metrics.MeanMetricWrapper(metrics.top_k_categorical_accuracy, k=1),
    metrics.MeanMetricWrapper(metrics.cosine_similarity, axis=0),
    metrics.CosineSimilarity(axis=0),
    metrics.LogCoshError(),
    metrics.KLDivergence(name="kl"),
    metrics.R2Score(class_aggregation="variance_weighted_average", num_regressors=2),
    metrics.AUC(num_thresholds=10, curve="PR"),
    metrics.Precision(thresholds=[0.2, 0.7], top_k=2),
    metrics.Recall(class_id=1),
]


@pytest.fixture
def clean_registry():
    custom = dict(metrics.REGISTRY.custom)
    yield
    metrics.REGISTRY.custom.clear()
    metrics.REGISTRY.custom.update(custom)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_name_gives_a_fresh_metric(name):
    a, b = metrics.get(name), metrics.get(name)
    assert type(a) is NAMES[name] and a is not b


def test_loss_function_names_give_their_mean():
    metric = metrics.get("binary_crossentropy")
    assert isinstance(metric, metrics.MeanMetricWrapper) and metric.name == "binary_crossentropy"
    metric.update_state(np.array([[1.0], [0.0]]), np.array([[0.8], [0.4]]))
    np.testing.assert_allclose(metric.result().numpy(), -(np.log(0.8) + np.log(0.6)) / 2, rtol=1e-6)


def test_objects_classes_callables_and_none():
    m = metrics.Mean()
    assert metrics.get(m) is m
    assert isinstance(metrics.get(metrics.BinaryAccuracy), metrics.BinaryAccuracy)
    wrapped = metrics.get(losses.mean_absolute_error)
    assert isinstance(wrapped, metrics.MeanMetricWrapper) and wrapped.name == "mean_absolute_error"
    assert metrics.get(None) is None


def test_unknown_identifiers_raise_value_errors_listing_the_names():
    with pytest.raises(ValueError, match="Unknown metric 'acuracy'.*accuracy"):
        metrics.get("acuracy")
    with pytest.raises(ValueError, match="Could not interpret"):
        metrics.get(3.5)
    with pytest.raises(ValueError, match="Unknown metric"):
        metrics.get({"class_name": "NoSuchMetric", "config": {}})
    with pytest.raises(ValueError, match="Unknown metric"):
        metrics.get("MeanSquaredLogarithmicError")  # a loss class is not a metric


@pytest.mark.parametrize("metric", CONFIGURED, ids=lambda m: m.name)
def test_config_round_trips(metric):
    config = metric.get_config()
    again = type(metric).from_config(config)
    assert again.get_config() == config
    reloaded = metrics.get(metrics.serialize(metric))
    assert type(reloaded) is type(metric) and reloaded.get_config() == config
    assert [v.name for v in reloaded.variables] == [v.name for v in metric.variables]
    t, p = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.6, 0.2], [0.9, 0.4]])
    args = (p,) if type(metric) in (metrics.Mean, metrics.Sum) else (t, p)
    metric.reset_state()
    np.testing.assert_array_equal(metric(*args).numpy(), reloaded(*args).numpy())


def test_registered_user_metric_function_reloads_by_name(clean_registry):
    @metrics.register_metric
    def within_tenth(y_true, y_pred):
        return tf.cast(tf.abs(y_true - y_pred) < 0.1, y_pred.dtype)

    metric = metrics.get("within_tenth")
    assert isinstance(metric, metrics.MeanMetricWrapper) and metric.name == "within_tenth"
    metric.update_state([1.0, 2.0, 3.0], [1.05, 2.5, 3.0])
    np.testing.assert_allclose(metric.result().numpy(), 2 / 3, rtol=1e-6)
    again = metrics.get(metrics.serialize(metric))
    assert again._fn is within_tenth


def test_registered_user_metric_class_reloads(clean_registry):
    @metrics.register_metric
    class Maximum(metrics.Metric):
        def __init__(self, name="maximum", dtype=None):
            super().__init__(name=name, dtype=dtype)
            self.largest = self.add_variable(name="largest", initializer=-np.inf)

        def update_state(self, values):
            self.largest.assign(np.maximum(self.largest.numpy(), np.max(values)).astype(np.float32))

        def result(self):
            return tf.identity(self.largest)

    metric = metrics.get("Maximum")
    metric.update_state([1.0, 5.0])
    metric.update_state([2.0])
    assert metric.result().numpy() == 5.0
    metric.reset_state()
    assert metric.result().numpy() == 0.0
    assert isinstance(metrics.get(metrics.serialize(metric)), Maximum)


def test_unregistered_function_fails_to_reload_with_a_hint():
    def private_metric(y_true, y_pred):
        return y_pred

    config = metrics.MeanMetricWrapper(private_metric).get_config()
    with pytest.raises(ValueError, match="register_metric"):
        metrics.MeanMetricWrapper.from_config(config)


def test_builtin_names_cannot_be_taken_over(clean_registry):
    with pytest.raises(ValueError, match="built-in"):
        metrics.register_metric(lambda t, p: t, name="acc")
