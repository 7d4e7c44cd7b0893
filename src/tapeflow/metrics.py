"""Keras 3's metrics: running statistics of predictions, kept in Variables.

``update_state`` folds a batch into the state, ``result`` reads the statistic,
``reset_state`` zeroes it.  The state lives in non-trainable Variables named
``<metric name>/<state>`` so checkpoints can save and restore it.

Updates are not differentiated: eagerly they run on the arrays themselves
(numpy, or CuPy where the data is) because ``fit`` calls them every batch and no
tape needs to see them.  A state array moves to the data's device on its first
update and stays there.

Inside ``tf.function`` (a traced training step) the same array code runs as two
non-differentiable primitives, ``MetricValues`` (a built-in metric function's
per-sample values) and ``MetricSums`` (the weighted sum and count of a batch),
and the state moves with ``assign_add``; ``result`` and ``reset_state`` are ops
too.  So the traced and the eager updates compute the same numbers.

Names: ``get`` takes Keras's names ("mse", "mean_squared_error", "MeanSquaredError":
a new instance), ``Metric`` objects and classes, config dicts, and functions (and
loss functions' names), wrapped in ``MeanMetricWrapper``, by the rules of
``tapeflow.serialization``; None gives None.  "accuracy" given the data's shapes is
``match_accuracy``.  ``register_metric`` makes a user's metric loadable by name.
"""
import numpy as np

from . import backend, losses
from .core.context import context
from .core.dispatch import apply
from .core.registry import NotDifferentiable, def_primitive
from .core.tensor import Tensor, Variable, convert_to_tensor
from .dtypes import as_dtype, numpy_dtype
from .ops.elementwise import sqrt
from .ops.shape import where
from .serialization import Registry, snake_case

__all__ = [
    "Metric", "Mean", "Sum", "MeanMetricWrapper", "MeanSquaredError", "RootMeanSquaredError",
    "MeanAbsoluteError", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
    "SparseCategoricalAccuracy", "accuracy", "binary_accuracy", "categorical_accuracy",
    "sparse_categorical_accuracy", "match_accuracy", "register_metric", "get", "serialize",
    "deserialize",
]


# --- array helpers ---------------------------------------------------------------------------
def _array(x):
    """The array under a tensor; Python data becomes an array with TensorFlow's default dtypes."""
    if isinstance(x, Tensor):
        return x._value
    if backend.is_array(x):
        return x
    return convert_to_tensor(x)._value


def _match_rank(a, b):
    """``losses.squeeze_or_expand_to_same_rank`` on arrays: (batch,) pairs with (batch, 1)."""
    if a.ndim == b.ndim + 1 and a.shape[-1] == 1:
        if b.ndim == 1:
            b = b[..., None]
        else:
            a = a[..., 0]
    elif b.ndim == a.ndim + 1 and b.shape[-1] == 1:
        if a.ndim == 1:
            a = a[..., None]
        else:
            b = b[..., 0]
    return a, b


def _add_to(variable, delta):
    """variable += delta, on the device of the data (the state follows it there once)."""
    old = variable._value
    xp = backend.array_module(old, delta)
    variable._replace_value(xp.asarray(xp.asarray(old) + delta, dtype=old.dtype))


def _samplewise(values, sample_weight, reduce_name, dtype):
    """Keras's ``reduce_to_samplewise_values``: per-sample weighted values and their weights.

    Values with more axes than the weights are first reduced to the weights' rank;
    the weights are broadcast to the values; both end with one entry per sample.
    """
    xp = backend.array_module(values)
    reduce = getattr(xp, reduce_name)
    values = values.astype(dtype, copy=False)
    weights = None
    if sample_weight is not None:
        weights = xp.asarray(_array(sample_weight), dtype=dtype)
        values, weights = _match_rank(values, weights)
        if values.ndim > weights.ndim:
            values = reduce(values, axis=tuple(range(weights.ndim, values.ndim)))
        weights = xp.broadcast_to(weights, values.shape)
        values = values * weights
        if weights.ndim > 1:
            weights = reduce(weights, axis=tuple(range(1, weights.ndim)))
    if values.ndim > 1:
        values = reduce(values, axis=tuple(range(1, values.ndim)))
    return values, weights


# --- the traced form: the array code above as ops ---------------------------------------------
def _metric_values_kernel(*arrays, fn, kwargs):
    return fn(*arrays, **dict(kwargs))


def _metric_sums_kernel(values, *sample_weight, reduce, dtype):
    """(weighted sum of ``values``, their count or total weight), as ``dtype`` scalars."""
    values, weights = _samplewise(values, sample_weight[0] if sample_weight else None, reduce,
                                  dtype)
    xp = backend.array_module(values)
    count = xp.sum(weights) if weights is not None else (values.shape[0] if values.ndim else 1)
    return xp.asarray(xp.sum(values), dtype=dtype), xp.asarray(count, dtype=dtype)


METRIC_VALUES = def_primitive("MetricValues", _metric_values_kernel)
METRIC_SUMS = def_primitive("MetricSums", _metric_sums_kernel, num_outputs=2)


def _scalar_sums_kernel(in_types, attrs):
    """A scalar weighted by a scalar (the loss tracker: the batch's mean loss times its
    size): what ``_metric_sums_kernel`` computes for it, without the general reshaping."""
    if len(in_types) != 2 or in_types[0][0] != () or in_types[1][0] != ():
        return None
    dtype = attrs["dtype"]

    def sums(values, weight):
        xp = backend.array_module(values)
        w = weight.astype(dtype, copy=False)
        return xp.asarray(values.astype(dtype, copy=False) * w, dtype=dtype), xp.asarray(w, dtype=dtype)
    return sums


METRIC_SUMS.specialize = _scalar_sums_kernel
NotDifferentiable("MetricValues")  # metric state: never differentiated
NotDifferentiable("MetricSums")


def _tracing():
    return context().trace is not None


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _traced_values(fn, y_true, y_pred, kwargs=()):
    """``fn``'s per-sample values (an array function) as one op of the traced graph."""
    return apply(METRIC_VALUES, (_tensor(y_true), _tensor(y_pred)),
                 {"fn": fn, "kwargs": tuple(sorted(dict(kwargs).items()))})


def _traced_sums(values, sample_weight, reduce, dtype):
    operands = (_tensor(values),) + (() if sample_weight is None else (_tensor(sample_weight),))
    return apply(METRIC_SUMS, operands, {"reduce": reduce, "dtype": np.dtype(dtype)})


def batch_size_tensor(t):
    """The leading dimension of ``t`` as a float32 scalar computed when the graph runs, so a
    traced step that weights by it fits every batch size."""
    return apply(METRIC_VALUES, (_tensor(t),), {"fn": _leading_size, "kwargs": ()})


def _leading_size(array):
    return np.asarray(array.shape[0] if array.ndim else 1, dtype=np.float32)


def _traced_mean(total, count):
    empty = count == 0.0
    return where(empty, 0.0, total / where(empty, 1.0, count))


# --- base class ------------------------------------------------------------------------------
class Metric:
    """Base class: subclasses create their state with ``add_variable`` in ``__init__`` and
    write ``update_state`` and ``result``.  ``metric(...)`` updates, then returns the result."""

    def __init__(self, name=None, dtype=None):
        self._name = name or snake_case(type(self).__name__)
        self._dtype = numpy_dtype(dtype) if dtype is not None else numpy_dtype("float32")
        self._variables = []  # (state name, Variable)

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        # compile() renames a metric to the user's string ("acc"); checkpoint keys follow.
        self._name = value
        for short, v in self._variables:
            v._name = f"{value}/{short}"

    @property
    def dtype(self):
        return as_dtype(self._dtype).name

    @property
    def variables(self):
        return [v for _, v in self._variables]

    def add_variable(self, shape=(), initializer="zeros", dtype=None, name=None):
        """A non-trainable Variable named ``<metric name>/<name>``, reset to zeros by ``reset_state``."""
        dtype = numpy_dtype(dtype) if dtype is not None else self._dtype
        shape = tuple(int(d) for d in shape)
        name = name or f"variable_{len(self._variables)}"
        value = _initial_value(initializer, shape, dtype)
        variable = Variable(value, trainable=False, name=f"{self._name}/{name}", dtype=dtype)
        self._variables.append((name, variable))
        return variable

    add_weight = add_variable

    def reset_state(self):
        for v in self.variables:
            xp = backend.array_module(v._value)
            zeros = xp.zeros(v._value.shape, dtype=v._value.dtype)
            if _tracing():
                v.assign(zeros)
            else:
                v._replace_value(zeros)

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result")

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _initial_value(initializer, shape, dtype):
    xp = backend.numpy  # new state starts on the host; _add_to moves it to the data
    if initializer == "zeros":
        return xp.zeros(shape, dtype=dtype)
    if initializer == "ones":
        return xp.ones(shape, dtype=dtype)
    if callable(initializer):
        return _array(initializer(shape, dtype=dtype))
    return xp.full(shape, initializer, dtype=dtype)


# --- reductions ------------------------------------------------------------------------------
class Sum(Metric):
    """The (weighted) sum of all values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        if _tracing():
            self.total.assign_add(_traced_sums(values, sample_weight, "sum", self._dtype)[0])
            return
        values, _ = _samplewise(_array(values), sample_weight, "sum", self._dtype)
        _add_to(self.total, backend.array_module(values).sum(values))

    def result(self):
        if _tracing():
            return self.total.value()
        return Tensor(self.total._value)


class Mean(Metric):
    """The (weighted) mean of all values seen: ``total / count``, 0 before any data."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        if _tracing():
            self._update_traced(values, sample_weight)
            return
        values = _array(values)
        if values.ndim == 0 and values.dtype == self.total._value.dtype and (
                sample_weight is None or isinstance(sample_weight, (int, float))):
            # one scalar with a plain weight (fit's running loss, every step): nothing to reshape
            weight = 1 if sample_weight is None else sample_weight
            self.total._replace_value(self.total._value + values * values.dtype.type(weight))
            self.count._replace_value(self.count._value + self.count._value.dtype.type(weight))
            return
        self._update_with_values(values, sample_weight)

    def _update_traced(self, values, sample_weight):
        total, count = _traced_sums(values, sample_weight, "mean", self._dtype)
        self.total.assign_add(total)
        self.count.assign_add(count)

    def _update_with_values(self, values, sample_weight):
        values, weights = _samplewise(values, sample_weight, "mean", self._dtype)
        xp = backend.array_module(values)
        _add_to(self.total, xp.sum(values))
        if weights is not None:
            count = xp.sum(weights)
        else:
            count = values.shape[0] if values.ndim else 1
        _add_to(self.count, count)

    def result(self):
        if _tracing():
            return _traced_mean(self.total.value(), self.count.value())
        total, count = self.total._value, self.count._value
        if total.ndim == 0 and count.ndim == 0 and backend.array_module(total) is np:
            return Tensor(total.dtype.type(total / count if count else 0))
        xp = backend.array_module(total, count)
        empty = count == 0
        return Tensor(xp.asarray(xp.where(empty, 0, total / xp.where(empty, 1, count)),
                                 dtype=total.dtype))


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
    if y_pred.dtype.kind not in "fc":
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


# Functions whose per-sample values a MeanMetricWrapper computes on arrays directly.
_ARRAY_TWINS = {
    losses.mean_squared_error: _squared_error_values,
    losses.mean_absolute_error: _absolute_error_values,
    accuracy: _accuracy_values,
    binary_accuracy: _binary_accuracy_values,
    categorical_accuracy: _categorical_accuracy_values,
    sparse_categorical_accuracy: _sparse_categorical_accuracy_values,
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


def match_accuracy(y_true, y_pred, name="accuracy"):
    """What Keras's compile makes of "accuracy"/"acc" given the data's shapes: binary when
    y_pred has one column, sparse when y_true has fewer axes (or one column), else categorical."""
    t_shape, p_shape = tuple(_array(y_true).shape), tuple(_array(y_pred).shape)
    if p_shape[-1:] == (1,):
        return BinaryAccuracy(name=name)
    if len(t_shape) < len(p_shape) or (t_shape[-1:] == (1,) and p_shape[-1] > 1):
        return SparseCategoricalAccuracy(name=name)
    return CategoricalAccuracy(name=name)


# --- names (the rules: tapeflow.serialization) -----------------------------------------------
REGISTRY = Registry("metric", {
    **{snake_case(cls.__name__): cls for cls in (
        Mean, Sum, MeanMetricWrapper, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
        Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy)},
    "mse": MeanSquaredError, "mae": MeanAbsoluteError, "rmse": RootMeanSquaredError,
    "acc": Accuracy,
}, base=Metric, functions=MeanMetricWrapper, config_only=(MeanMetricWrapper,),
    fallback=(losses.REGISTRY,), register_hint="tapeflow.metrics.register_metric")
register_metric = REGISTRY.register
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize

# The functions a MeanMetricWrapper's config names: these, the user's, and the loss functions.
FUNCTIONS = Registry("metric function", {fn.__name__: fn for fn in (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy)},
    fallback=(REGISTRY,), register_hint="tapeflow.metrics.register_metric")
