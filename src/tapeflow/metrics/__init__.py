"""Keras 3's metrics: running statistics of predictions, kept in Variables.

``update_state`` folds a batch into the state, ``result`` reads the statistic,
``reset_state`` zeroes it.  How updates run eagerly and in a traced step (the
same array code, as ops there): ``metrics.base``.  The metrics are here and in
their family files, ``metrics.confusion`` (Precision, Recall, AUC) and
``metrics.regression`` (R2Score), which import from ``metrics.base`` only.

Names: ``get`` takes Keras's names ("mse", "mean_squared_error", "MeanSquaredError":
a new instance), ``Metric`` objects and classes, config dicts, and functions (and
loss functions' names), wrapped in ``MeanMetricWrapper``, by the rules of
``tapeflow.serialization``; None gives None.  "accuracy" given the data's shapes is
``match_accuracy``.  ``register_metric`` makes a user's metric loadable by name.
"""
from .. import backend, losses
from ..core.tensor import Tensor
from ..ops.elementwise import sqrt
from ..ops.sorting import _in_top_k_forward
from ..serialization import Registry, snake_case
from .base import (  # noqa: F401 - batch_size_tensor and _traced_sums: used by callers
    Mean, Metric, Sum, _array, _match_rank, _shape, _tensor, _traced_sums, _traced_values, _tracing,
    batch_size_tensor,
)
from .confusion import AUC, Precision, Recall
from .regression import R2Score
from ..dtypes import is_inexact_dtype

__all__ = [
    "Metric", "Mean", "Sum", "MeanMetricWrapper", "MeanSquaredError", "RootMeanSquaredError",
    "MeanAbsoluteError", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
    "SparseCategoricalAccuracy", "accuracy", "binary_accuracy", "categorical_accuracy",
    "sparse_categorical_accuracy", "match_accuracy", "register_metric", "get", "serialize",
    "deserialize", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
    "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy", "Precision", "Recall",
    "AUC", "R2Score", "Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence", "Poisson",
    "LogCoshError", "CosineSimilarity", "cosine_similarity", "hinge", "squared_hinge",
    "categorical_hinge", "kl_divergence", "poisson",
]


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` (per-sample values) over all samples seen.

    ``fn`` gets tensors no tape watches; the built-in metric functions run on
    their arrays directly.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None) or getattr(fn, "name", None),
                         dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs
        self._array_fn = _array_twin(fn)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if _tracing():
            if self._array_fn is not None:
                values = _traced_values(self._array_fn, y_true, y_pred, self._fn_kwargs)
            else:
                values = self._fn(_tensor(y_true), _tensor(y_pred), **self._fn_kwargs)
            self._update_traced(values, sample_weight)
            return
        values = self._values(_array(y_true), _array(y_pred))
        self._update_with_values(values, sample_weight)

    def _values(self, y_true, y_pred):
        if self._array_fn is not None:
            return self._array_fn(y_true, y_pred, **self._fn_kwargs)
        return _array(self._fn(Tensor(y_true), Tensor(y_pred), **self._fn_kwargs))

    def get_config(self):
        return {**super().get_config(), "fn": serialize(self._fn), **self._fn_kwargs}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("fn"), str):
            config["fn"] = FUNCTIONS.lookup(config["fn"])
        return cls(**config)


# --- per-sample values on arrays (the metric functions' bodies) -------------------------------
def _float_pair(y_true, y_pred):
    """y_pred as floats (float32 for integer data), y_true cast to it, ranks matched."""
    if not is_inexact_dtype(y_pred.dtype):
        y_pred = y_pred.astype("float32")
    return _match_rank(y_true.astype(y_pred.dtype, copy=False), y_pred)


def _squared_error_values(y_true, y_pred):
    y_true, y_pred = _float_pair(y_true, y_pred)
    d = y_true - y_pred
    return backend.array_module(d).mean(d * d, axis=-1)


def _absolute_error_values(y_true, y_pred):
    y_true, y_pred = _float_pair(y_true, y_pred)
    xp = backend.array_module(y_pred)
    return xp.mean(xp.abs(y_true - y_pred), axis=-1)


def _accuracy_values(y_true, y_pred):
    y_true, y_pred = _float_pair(y_true, y_pred)
    return y_true == y_pred


def _binary_accuracy_values(y_true, y_pred, threshold=0.5):
    y_true, y_pred = _match_rank(y_true, y_pred)
    return y_true == (y_pred > threshold).astype(y_true.dtype)


def _categorical_accuracy_values(y_true, y_pred):
    xp = backend.array_module(y_pred)
    return xp.argmax(y_true, axis=-1) == xp.argmax(y_pred, axis=-1)


def _sparse_categorical_accuracy_values(y_true, y_pred):
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    return y_true == backend.array_module(y_pred).argmax(y_pred, axis=-1)


def _in_top_k_rows(targets, y_pred, k):
    """``in_top_k`` with any leading axes: targets [...], y_pred [..., classes]."""
    hits = _in_top_k_forward(targets.reshape(-1).astype("int64"),
                             y_pred.reshape(-1, y_pred.shape[-1]), k=k)
    return hits.reshape(targets.shape)


def _top_k_categorical_accuracy_values(y_true, y_pred, k=5):
    return _in_top_k_rows(backend.array_module(y_true).argmax(y_true, axis=-1), y_pred, k)


def _sparse_top_k_categorical_accuracy_values(y_true, y_pred, k=5, from_sorted_ids=False):
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    if from_sorted_ids:  # y_pred holds class ids, best first
        return (y_true[..., None] == y_pred[..., :k]).any(axis=-1)
    return _in_top_k_rows(y_true, y_pred, k)


def _float32(values):
    return Tensor(values.astype("float32"))


def accuracy(y_true, y_pred):
    """1.0 where y_true == y_pred, else 0.0 (float32, not differentiable)."""
    return _float32(_accuracy_values(_array(y_true), _array(y_pred)))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where y_true == (y_pred > threshold), else 0.0."""
    return _float32(_binary_accuracy_values(_array(y_true), _array(y_pred), threshold))


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_true) == argmax(y_pred) over the last axis, else 0.0."""
    return _float32(_categorical_accuracy_values(_array(y_true), _array(y_pred)))


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the class index y_true == argmax(y_pred) over the last axis, else 0.0."""
    return _float32(_sparse_categorical_accuracy_values(_array(y_true), _array(y_pred)))


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the one-hot y_true's class is among the k largest of y_pred (ties at the
    boundary count, as ``in_top_k``), else 0.0."""
    return _float32(_top_k_categorical_accuracy_values(_array(y_true), _array(y_pred), k))


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where the class index y_true is among the k largest of y_pred (or, with
    ``from_sorted_ids``, among y_pred's first k class ids), else 0.0."""
    return _float32(_sparse_top_k_categorical_accuracy_values(_array(y_true), _array(y_pred), k,
                                                              from_sorted_ids))


def cosine_similarity(y_true, y_pred, axis=-1):
    """sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): 1 aligned, -1 opposite (the
    metric is the similarity; the loss of the same name is its negative)."""
    return -losses.cosine_similarity(y_true, y_pred, axis=axis)


# keras.metrics also names these loss functions (their means are the classes below)
hinge, squared_hinge = losses.hinge, losses.squared_hinge
categorical_hinge, kl_divergence, poisson = losses.categorical_hinge, losses.kl_divergence, \
    losses.poisson


# Functions whose per-sample values a MeanMetricWrapper computes on arrays directly.
_ARRAY_TWINS = {
    losses.mean_squared_error: _squared_error_values,
    losses.mean_absolute_error: _absolute_error_values,
    accuracy: _accuracy_values,
    binary_accuracy: _binary_accuracy_values,
    categorical_accuracy: _categorical_accuracy_values,
    sparse_categorical_accuracy: _sparse_categorical_accuracy_values,
    top_k_categorical_accuracy: _top_k_categorical_accuracy_values,
    sparse_top_k_categorical_accuracy: _sparse_top_k_categorical_accuracy_values,
}


def _array_twin(fn):
    try:
        return _ARRAY_TWINS.get(fn)
    except TypeError:  # an unhashable callable has no twin
        return None


# --- the metrics -----------------------------------------------------------------------------
class _FixedFunctionMetric(MeanMetricWrapper):
    """A MeanMetricWrapper whose function is part of the class: its config leaves fn out."""

    def get_config(self):
        return Metric.get_config(self)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class MeanSquaredError(_FixedFunctionMetric):
    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(losses.mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(_FixedFunctionMetric):
    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(losses.mean_absolute_error, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """sqrt of the (weighted) mean of the squared errors over all elements seen."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if _tracing():
            self._update_traced(_traced_values(_squared_differences, y_true, y_pred),
                                sample_weight)
            return
        self._update_with_values(_squared_differences(_array(y_true), _array(y_pred)),
                                 sample_weight)

    def result(self):
        if _tracing():
            return sqrt(super().result())
        mean = super().result()._value
        return Tensor(backend.array_module(mean).sqrt(mean))


def _squared_differences(y_true, y_pred):
    y_true, y_pred = _float_pair(y_true, y_pred)
    d = y_pred - y_true
    return d * d


class Accuracy(_FixedFunctionMetric):
    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(_FixedFunctionMetric):
    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold

    def get_config(self):
        return {**Metric.get_config(self), "threshold": self.threshold}


class CategoricalAccuracy(_FixedFunctionMetric):
    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(_FixedFunctionMetric):
    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(_FixedFunctionMetric):
    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k

    def get_config(self):
        return {**Metric.get_config(self), "k": self.k}


class SparseTopKCategoricalAccuracy(_FixedFunctionMetric):
    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None,
                 from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids

    def get_config(self):
        return {**Metric.get_config(self), "k": self.k, "from_sorted_ids": self.from_sorted_ids}


# Means of the losses' per-sample values, with Keras's metric names.
class Hinge(_FixedFunctionMetric):
    def __init__(self, name="hinge", dtype=None):
        super().__init__(losses.hinge, name=name, dtype=dtype)


class SquaredHinge(_FixedFunctionMetric):
    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(losses.squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(_FixedFunctionMetric):
    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(losses.categorical_hinge, name=name, dtype=dtype)


class KLDivergence(_FixedFunctionMetric):
    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(losses.kl_divergence, name=name, dtype=dtype)


class Poisson(_FixedFunctionMetric):
    def __init__(self, name="poisson", dtype=None):
        super().__init__(losses.poisson, name=name, dtype=dtype)


class LogCoshError(_FixedFunctionMetric):
    def __init__(self, name="logcosh", dtype=None):
        super().__init__(losses.log_cosh, name=name, dtype=dtype)


class CosineSimilarity(_FixedFunctionMetric):
    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)
        self.axis = axis

    def get_config(self):
        return {**Metric.get_config(self), "axis": self.axis}


def match_accuracy(y_true, y_pred, name="accuracy"):
    """What Keras's compile makes of "accuracy"/"acc" given the data's shapes: binary when
    y_pred has one column, sparse when y_true has fewer axes (or one column), else categorical."""
    t_shape, p_shape = _shape(y_true), _shape(y_pred)
    if p_shape[-1:] == (1,):
        return BinaryAccuracy(name=name)
    if len(t_shape) < len(p_shape) or (t_shape[-1:] == (1,) and p_shape[-1] > 1):
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)


# --- names (the rules: tapeflow.serialization) -----------------------------------------------
REGISTRY = Registry("metric", {
    **{snake_case(cls.__name__): cls for cls in (
        Mean, Sum, MeanMetricWrapper, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
        Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
        TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, Precision, Recall, AUC, R2Score,
        Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson, LogCoshError,
        CosineSimilarity)},
    "mse": MeanSquaredError, "mae": MeanAbsoluteError, "rmse": RootMeanSquaredError,
    "acc": Accuracy, "logcosh": LogCoshError,
}, base=Metric, functions=MeanMetricWrapper, config_only=(MeanMetricWrapper,),
    fallback=(losses.REGISTRY,), register_hint="tapeflow.metrics.register_metric")
register_metric = REGISTRY.register
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize

# The functions a MeanMetricWrapper's config names: these, the user's, and the loss functions.
FUNCTIONS = Registry("metric function", {fn.__name__: fn for fn in (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, cosine_similarity)},
    fallback=(REGISTRY,), register_hint="tapeflow.metrics.register_metric")
