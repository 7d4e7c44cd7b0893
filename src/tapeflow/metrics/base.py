"""The machinery under Keras 3's metrics: ``Metric``, ``Sum``, ``Mean``, and how a metric's
update runs eagerly and inside a traced step.  (``tapeflow.metrics`` holds the metrics
themselves and their names; its family files import from here, never the other way.)

``update_state`` folds a batch into the state, ``result`` reads the statistic,
``reset_state`` zeroes it.  The state lives in non-trainable Variables named
``<metric name>/<state>`` so checkpoints can save and restore it.

Updates are not differentiated: eagerly they run on the arrays themselves
(numpy, or CuPy where the data is) because ``fit`` calls them every batch and no
tape needs to see them.  The state is born on the current device (``tf.device``),
as any variable; host batches met there move to it once per update, and state born
on another device follows the data on its first update and stays there.

Inside ``tf.function`` (a traced training step) the same array code runs as two
non-differentiable primitives, ``MetricValues`` (an array function's values: a
built-in metric function's per-sample values, or a batch's confusion counts)
and ``MetricSums`` (the weighted sum and count of a batch), and the state moves
with ``assign_add``; ``result`` and ``reset_state`` are ops too.  So the traced
and the eager updates compute the same numbers.
"""
import numpy as np

from .. import backend
from ..core.context import context
from ..core.dispatch import apply
from ..core.registry import Inline, def_primitive
from ..core.tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import as_dtype, numpy_dtype
from ..ops.shape import where
from ..serialization import snake_case

__all__ = ["Metric", "Mean", "Sum", "batch_size_tensor", "array_function", "accumulate",
           "scalar_zero",
           "METRIC_VALUES", "METRIC_SUMS"]


# --- array helpers ---------------------------------------------------------------------------
def _data(x):
    """The array under a tensor, or an array where it is; Python data becomes an array
    (on the current device) with TensorFlow's default dtypes."""
    if isinstance(x, Tensor):
        return x._value
    if backend.is_array(x):
        return x
    return convert_to_tensor(x)._value


def _array(x):
    """``_data(x)`` on the current device, as ``convert_to_tensor`` puts data: host data met
    inside a GPU ``tf.device`` moves there once per update (so it meets the state born
    there); device data stays where it is."""
    x = _data(x)
    xp = backend.device_module()
    if xp is np or backend.array_module(x) is xp:
        return x
    return xp.asarray(x)


def _on(xp, a):
    """Array ``a`` on the device of array module ``xp``, moved explicitly if it is elsewhere."""
    if backend.array_module(a) is xp:
        return a
    return backend.to_host(a) if xp is np else xp.asarray(a)


def _shape(x):
    """The shape of a tensor, array or Python data, without moving any data."""
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


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


def _add_to(variable, delta, data=None):
    """variable += delta.  The state is born on the current device, as the data of an
    update is (``_array``); state born on another device follows the data (``delta``, or
    the batch ``data`` when delta is a Python number) there once."""
    old = variable._value
    data = delta if data is None else data
    xp, data_xp = backend.array_module(old), backend.array_module(data)
    if data_xp is not xp and (data_xp is not np or isinstance(data, np.ndarray)):
        old, xp = _on(data_xp, old), data_xp  # (numpy scalars mix with device data: no move)
    variable._replace_value(xp.asarray(old + delta, dtype=old.dtype))


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
        # weights meet the values where they are: in a kernel, neither is moved by the context
        weights = xp.asarray(_on(xp, _data(sample_weight)), dtype=dtype)
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


def _leading_size(array):
    return backend.array_module(array).asarray(array.shape[0] if array.ndim else 1,
                                               dtype=np.float32)


def _metric_values_in_place(in_types, attrs):
    """``batch_size_tensor`` of an array with axes, in a compiled numpy graph (fit's loss
    tracker weighs every step by it): where the traced shape has the length (fit compiles a
    graph per batch shape), that length made once (~1 us a step less); else read where it runs,
    written in place.  The graph keeps the op, so a relaxed signature's graph still serves every
    batch size (its types have None there)."""
    if attrs["fn"] is not _leading_size or len(in_types) != 1 or not in_types[0][0]:
        return None
    length = in_types[0][0][0]
    if length is None:
        return Inline("np.float32({0}.shape[0])")
    size = np.asarray(length, dtype=np.float32)
    size.flags.writeable = False  # shared by every call, as a graph's constants are

    def known_batch_size(array):
        return size
    return known_batch_size


# metric state: never differentiated
METRIC_VALUES = def_primitive("MetricValues", _metric_values_kernel, not_differentiable=True,
                              specialize=_metric_values_in_place)
METRIC_SUMS = def_primitive("MetricSums", _metric_sums_kernel, num_outputs=2,
                            not_differentiable=True, specialize=_scalar_sums_kernel)


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


def array_function(fn, *operands, **kwargs):
    """``fn(*arrays, **kwargs)`` (an array function of a batch, or of a metric's state):
    eagerly run on the arrays and returned as a Tensor; in a traced step one ``MetricValues``
    op, run on each call's data (a Variable operand is read when the graph runs)."""
    if _tracing():
        tensors = tuple(o.value() if isinstance(o, Variable) else _tensor(o) for o in operands)
        return apply(METRIC_VALUES, tensors, {"fn": fn, "kwargs": tuple(sorted(kwargs.items()))})
    return Tensor(fn(*(_array(o) for o in operands), **kwargs))


def scalar_zero(dtype):
    """A result before any data: 0 (an array function of no operands), on the current device."""
    return backend.device_module().zeros((), dtype=dtype)


def accumulate(variables, deltas):
    """``variables[i] += deltas[i]`` for a Tensor ``deltas`` stacked on its first axis (an
    ``array_function`` result): ``assign_add`` ops in a trace, array additions eagerly."""
    if _tracing():
        for i, v in enumerate(variables):
            v.assign_add(deltas[i])
        return
    for v, delta in zip(variables, deltas._value):
        _add_to(v, delta)


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
    xp = backend.device_module()  # state is born on the current device, as any variable
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
        total = self.total._value
        if values.ndim == 0 and values.dtype == total.dtype and (
                sample_weight is None or isinstance(sample_weight, (int, float))) and \
                backend.array_module(values) is backend.array_module(total):
            # one scalar with a plain weight (fit's running loss, every step): nothing to reshape
            weight = 1 if sample_weight is None else sample_weight
            self.total._replace_value(total + values * values.dtype.type(weight))
            self.count._replace_value(self.count._value + self.count._value.dtype.type(weight))
            return
        self._update_with_values(values, sample_weight)

    def _update_traced(self, values, sample_weight):
        values = _tensor(values)
        weight = None if sample_weight is None else _tensor(sample_weight)
        if values.shape == () and values.dtype == self._dtype and weight is not None and \
                weight.shape == () and weight.dtype == self._dtype:
            # one scalar with a scalar weight (fit's running loss, every step): two
            # operators written in place, the arithmetic MetricSums does for it
            self.total.assign_add(values * weight)
            self.count.assign_add(weight)
            return
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
        _add_to(self.count, count, data=values)

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
