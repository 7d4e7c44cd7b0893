"""``x[i]``, ``x[:, i]``, ``x[i:j]`` where ``i`` or ``j`` is known only when a graph runs.

Inside a ``tf.function`` an index may be a traced integer scalar (an argument, a
``tf.while_loop`` counter).  The static part of the index is one ``StridedSlice``
as everywhere else; then each traced scalar becomes a ``GatherV2`` along its axis
(negative values count from the end, as Python's), and each slice with traced
bounds a ``DynamicSlice``, whose bounds are operands.  A trace is made per shape,
so a slice keeps the length it had when traced: a later call whose bounds give
another length raises, naming both, instead of returning a wrongly shaped value
(``x[i:i + 2]`` in a loop is the common, fixed-length case).  Eager code never
comes here with a traced tensor and indexes as before.
"""
import numpy as np

from ..backend import array_module, is_array, to_host
from ..core.context import context
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor, convert_to_tensor
from .arithmetic import add, less, multiply
from .shape import cast, gather, getitem as static_getitem

__all__ = ["getitem"]


def _traced(item):
    return isinstance(item, Tensor) and not is_array(item._value)


def _traced_slice(item):
    return isinstance(item, slice) and any(_traced(p) for p in (item.start, item.stop, item.step))


def getitem(tensor, index):
    """``tensor[index]``, with traced integer scalars and slice bounds allowed in ``index``."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(_traced(it) or _traced_slice(it) for it in items):
        return static_getitem(tensor, index)
    tensor = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    static, dynamic = _split(items, tensor._value.ndim)
    out = static_getitem(tensor, tuple(static))
    for kind, axis, *parts in sorted(dynamic, key=lambda d: -d[1]):  # last axis first
        out = _take(out, axis, parts[0]) if kind == "take" else _slice(out, axis, *parts)
    return out


def _split(items, ndim):
    """The index with each traced item replaced by ``:``, and the replaced items with the axis
    of the static result they apply to."""
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    static, dynamic = [], []
    out_axis = 0
    for it in items:
        if _traced(it):
            if it._value.ndim != 0 or it._value.dtype.kind not in "iu":
                raise TypeError(
                    f"Only integers, slices, ellipsis, tf.newaxis and scalar int32/int64 tensors "
                    f"are valid indices inside a tf.function, got a {it._value.dtype.name} tensor "
                    f"of shape {tuple(it._value.shape)}; use tf.gather or tf.boolean_mask")
            dynamic.append(("take", out_axis, it))
            static.append(slice(None))
            out_axis += 1
        elif _traced_slice(it):
            if _traced(it.step):
                raise TypeError("A slice's step must be a Python int inside a tf.function; only "
                                "its start and stop may be traced tensors")
            dynamic.append(("slice", out_axis, it.start, it.stop, 1 if it.step is None else
                            int(it.step)))
            static.append(slice(None))
            out_axis += 1
        elif it is Ellipsis:
            static.append(it)
            out_axis += ndim - consumed
        else:
            static.append(it)
            if it is None or isinstance(it, slice):
                out_axis += 1
            elif not isinstance(it, (int, np.integer)) and not (isinstance(it, Tensor) and
                                                               it._value.ndim == 0):
                raise TypeError("An index that mixes traced tensors with integer or boolean "
                                "arrays is not supported inside a tf.function; use tf.gather")
    return static, dynamic


def _take(x, axis, i):
    n = x._value.shape[axis]
    i = add(i, multiply(cast(less(i, 0), i._value.dtype), n))  # -1 is the last, as in Python
    return gather(x, i, axis=axis)


# --- DynamicSlice(x, start, stop; axis, step, length) ------------------------------------------
# ``axis`` counts from the right, so a cotangent may carry leading (jacobian) axes.  The bounds
# follow Python's slice rules; None bounds are passed as the ints Python would use.
def _bounds(start, stop, step, n):
    """(begin, end, step) as ``slice.indices`` gives them: end -1 means before the first."""
    start, stop = int(to_host(start)), int(to_host(stop))
    return slice(start, stop, step).indices(n)


def _along(axis, begin, end, step):
    """The index that slices (begin, end, step) along ``axis`` (from the right)."""
    return (Ellipsis, slice(begin, None if end < 0 else end, step)) + (slice(None),) * (-axis - 1)


def _dynamic_slice(x, start, stop, *, axis, step, length):
    n = x.shape[axis]
    begin, end, step = _bounds(start, stop, step, n)
    got = len(range(begin, end, step))
    if got != length:
        if context().trace is not None:  # examples of the bounds while tracing: only the shape counts
            return _zeros(x, axis, length)
        raise ValueError(
            f"A slice with traced bounds gives {got} elements along an axis of {n} at this call "
            f"(start {int(to_host(start))}, stop {int(to_host(stop))}), but the tf.function was "
            f"traced where it gave {length}: a trace is made per shape, so slice bounds that "
            f"change the length must be Python values (they are then part of the signature)")
    return x[_along(axis, begin, end, step)]


def _dynamic_slice_grad_forward(g, start, stop, *, axis, step, size):
    shape = list(g.shape)
    shape[axis] = size
    out = array_module(g).zeros(shape, g.dtype)
    begin, end, step = _bounds(start, stop, step, size)
    if len(range(begin, end, step)) != g.shape[axis]:
        if context().trace is not None:  # examples of the bounds while tracing
            return out
        raise ValueError(f"DynamicSliceGrad: a cotangent of {g.shape[axis]} elements for a slice "
                         f"of {len(range(begin, end, step))}")
    out[_along(axis, begin, end, step)] = g
    return out


def _zeros(x, axis, length):
    shape = list(x.shape)
    shape[axis] = length
    return array_module(x).zeros(shape, x.dtype)


def _dynamic_slice_grad(op, g):
    _, start, stop = op.inputs
    axis = op.get_attr("axis")
    return apply(DYNAMIC_SLICE_GRAD, (g, start, stop),
                 {"axis": axis, "step": op.get_attr("step"), "size": op.in_shapes[0][axis]}), \
        None, None


DYNAMIC_SLICE = def_primitive("DynamicSlice", _dynamic_slice,
                              grad=_dynamic_slice_grad, saves="inputs")


def _dynamic_slice_grad_grad(op, g):
    _, start, stop = op.inputs
    axis = op.get_attr("axis")
    length = op.in_shapes[0][axis]
    return apply(DYNAMIC_SLICE, (g, start, stop),
                 {"axis": axis, "step": op.get_attr("step"), "length": length}), None, None


DYNAMIC_SLICE_GRAD = def_primitive("DynamicSliceGrad", _dynamic_slice_grad_forward,
                                   grad=_dynamic_slice_grad_grad, saves="inputs")


def _slice(x, axis, start, stop, step):
    n = x._value.shape[axis]
    if start is None:
        start = 0 if step > 0 else n - 1
    if stop is None:
        stop = n if step > 0 else -(n + 1)
    start, stop = (_as_int_tensor(b) for b in (start, stop))
    rank = x._value.ndim
    length = _example_length(start, stop, step, n)
    return apply(DYNAMIC_SLICE, (x, start, stop),
                 {"axis": axis - rank, "step": step, "length": length})


def _as_int_tensor(bound):
    if isinstance(bound, Tensor):
        if bound._value.ndim != 0 or bound._value.dtype.kind not in "iu":
            raise TypeError(f"Slice bounds must be integer scalars, got a "
                            f"{bound._value.dtype.name} tensor of shape "
                            f"{tuple(bound._value.shape)}")
        return cast(bound, np.int64)
    return convert_to_tensor(np.int64(bound))


def _example_length(start, stop, step, n):
    """The slice's length for the values the trace was made with (its arguments' examples)."""
    values = []
    for b in (start, stop):
        example = getattr(b, "_example", None)
        values.append(b._value if example is None else example)
    begin, end, step = _bounds(values[0], values[1], step, n)
    return len(range(begin, end, step))
