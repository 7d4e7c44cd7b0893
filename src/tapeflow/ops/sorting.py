"""Sorting: ``sort``, ``argsort``, ``searchsorted``, ``top_k`` and ``in_top_k``.

``argsort`` is an integer-valued primitive (``ArgSort``, never recorded, as
``ArgMax``); ``sort`` takes its input at those indices (``TakeAlongLastAxis``, the
axis moved last and back), the indices an input of that op, so a traced sort
sorts each call's data; its gradient puts each cotangent back where the element
came from.  Ties keep their input order in both directions (TensorFlow's TopKV2,
which its sort is built on, does the same).

``top_k`` is ``TopKV2`` (values and int32 indices along the last axis, as
TensorFlow's).  Its gradient puts each value's cotangent back at its index
(``ScatterAddAlongLastAxis``), whose gradient takes it again
(``TakeAlongLastAxis``): the two are closed under differentiation, the indices are
an input of both (a traced graph scatters to the positions it chose when it runs),
and both broadcast the indices over leading (jacobian) axes.
"""
import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from ..dtypes import numpy_dtype
from ._util import array_module, as_tensor, one_axis
from .shape import transpose

__all__ = ["sort", "argsort", "searchsorted", "top_k", "in_top_k"]

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _argsort_forward(x, axis, descending):
    xp = array_module(x)
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable").astype(np.int32)
    # A stable descending order: sort the reversed axis ascending, read it backwards, and map
    # the positions back (no negation, which would wrap unsigned and minimum integers).
    n = x.shape[axis]
    order = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - xp.flip(order, axis)).astype(np.int32)


ARGSORT = def_primitive("ArgSort", _argsort_forward,
                        no_gradient="an integer result: never recorded, so no rule")


def _checked(values, axis, direction, opname):
    values = as_tensor(values)
    if values._value.ndim == 0:
        raise ValueError(f"{opname}: the input must have rank >= 1, got a scalar")
    if direction not in _DIRECTIONS:
        raise ValueError(f"{opname}: direction {direction!r} should be one of "
                         f"{', '.join(_DIRECTIONS)}")
    axis = one_axis(axis, values._value.ndim, opname)
    return values, axis


@dispatches_symbols("argsort")
def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort ``values`` along ``axis`` (always a stable order here)."""
    values, axis = _checked(values, axis, direction, "argsort")
    return apply(ARGSORT, (values,), {"axis": axis, "descending": direction == "DESCENDING"})


@dispatches_symbols("sort")
def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis``; differentiable (a gather by ``argsort``)."""
    values, axis = _checked(values, axis, direction, "sort")
    order = argsort(values, axis=axis, direction=direction)
    if axis == -1:
        return apply(TAKE_ALONG_LAST_AXIS, (values, order))
    ndim = values._value.ndim
    perm = [a for a in range(ndim) if a != ndim + axis] + [ndim + axis]  # the axis moved last
    taken = apply(TAKE_ALONG_LAST_AXIS, (transpose(values, perm), transpose(order, perm)))
    return transpose(taken, [perm.index(a) for a in range(ndim)])


def _searchsorted_forward(seq, vals, side, dtype):
    xp = array_module(seq, vals)
    rows_seq = seq.reshape(-1, seq.shape[-1])
    rows_val = vals.reshape(-1, vals.shape[-1])
    out = xp.stack([xp.searchsorted(s, v, side=side) for s, v in zip(rows_seq, rows_val)]) \
        if rows_seq.shape[0] else xp.zeros(rows_val.shape, dtype=np.int64)
    return out.reshape(vals.shape).astype(dtype)


# TensorFlow's LowerBound / UpperBound as one integer-valued op (never recorded, as ArgSort);
# both inputs are operands, so a traced graph searches each call's data.
SEARCHSORTED = def_primitive("SearchSorted", _searchsorted_forward,
                             no_gradient="an integer result: never recorded, so no rule")


def searchsorted(sorted_sequence, values, side="left", out_type=np.int32, name=None):
    """Where each of ``values`` would go in ``sorted_sequence`` (sorted along its last axis),
    row by row: both have the same leading axes."""
    seq, vals = as_tensor(sorted_sequence), as_tensor(values)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    s, v = seq._value, vals._value
    if s.ndim == 0 or v.ndim == 0 or s.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"searchsorted: sorted_sequence {tuple(s.shape)} and values "
                         f"{tuple(v.shape)} must have rank >= 1 and the same leading axes")
    return apply(SEARCHSORTED, (seq, vals), {"side": side, "dtype": numpy_dtype(out_type)})


# --- top_k: the k largest along the last axis -------------------------------------------------
def _descending_order(x):
    """Stable descending order along the last axis: ties keep their input order."""
    return _argsort_forward(x, -1, True)


def _top_k_forward(x, k):
    indices = _descending_order(x)[..., :k]
    return array_module(x).take_along_axis(x, indices, axis=-1), indices


def _take_along_last_axis(x, indices):
    """x[..., indices]: row by row, the indices broadcast over x's extra leading axes."""
    xp = array_module(x)
    indices = xp.broadcast_to(indices, x.shape[:-1] + indices.shape[-1:])
    return xp.take_along_axis(x, indices, axis=-1)


def _scatter_add_along_last_axis(updates, indices, size):
    """Zeros with ``size`` entries on the last axis, each update added at its row's index
    (repeated indices add up)."""
    xp = array_module(updates)
    indices = xp.broadcast_to(indices, updates.shape)
    rows = int(np.prod(updates.shape[:-1], dtype=np.int64))
    out = xp.zeros((rows, size), dtype=updates.dtype)
    row_ids = xp.arange(rows).reshape(-1, 1)
    xp.add.at(out, (row_ids, indices.reshape(rows, -1)), updates.reshape(rows, -1))
    return out.reshape(updates.shape[:-1] + (size,))


def _top_k_grad(op, g_values, g_indices):
    indices = op.outputs[1]
    return apply(SCATTER_ADD_ALONG_LAST_AXIS, (g_values, indices),
                 {"size": op.in_shapes[0][-1]})


TOP_K = def_primitive("TopKV2", _top_k_forward, num_outputs=2, grad=_top_k_grad,
                      saves="outputs")


def _take_along_last_axis_grad(op, g):
    return apply(SCATTER_ADD_ALONG_LAST_AXIS, (g, op.inputs[1]),
                 {"size": op.in_shapes[0][-1]}), None


TAKE_ALONG_LAST_AXIS = def_primitive("TakeAlongLastAxis", _take_along_last_axis,
                                     grad=_take_along_last_axis_grad, saves="inputs")


def _scatter_add_along_last_axis_grad(op, g):
    return apply(TAKE_ALONG_LAST_AXIS, (g, op.inputs[1])), None


SCATTER_ADD_ALONG_LAST_AXIS = def_primitive("ScatterAddAlongLastAxis",
                                            _scatter_add_along_last_axis,
                                            grad=_scatter_add_along_last_axis_grad,
                                            saves="inputs")


def _static_k(k, opname):
    value = k.numpy() if isinstance(k, Tensor) else k
    if isinstance(value, bool) or np.ndim(value) != 0 or \
            not float(value).is_integer():
        raise TypeError(f"{opname}: k must be an integer, got {k!r}")
    return int(value)


def top_k(input, k=1, sorted=True, index_type=np.int32, name=None):  # noqa: A002
    """(values, indices): the ``k`` largest entries of each row (the last axis), largest first,
    ties in input order, as ``tf.math.top_k``.  The values are differentiable: the gradient goes
    to the chosen positions.  (``sorted=False`` gives the same sorted order.)"""
    x = as_tensor(input)
    k = _static_k(k, "top_k")
    if x._value.ndim == 0:
        raise ValueError("top_k: the input must have rank >= 1, got a scalar")
    n = x._value.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k must be in [0, {n}] (the last axis' size), got k={k}")
    values, indices = apply(TOP_K, (x,), {"k": k})
    if numpy_dtype(index_type) != np.int32:
        from .shape import cast
        indices = cast(indices, index_type)
    return values, indices


def _in_top_k_forward(targets, predictions, k):
    """TensorFlow's rule: the target is in the top k when fewer than k predictions in its row
    are larger than its own (so ties at the boundary count); an out-of-range target or a row
    with a non-finite prediction is never in the top k."""
    xp = array_module(predictions)
    n = predictions.shape[-1]
    valid = (targets >= 0) & (targets < n)
    safe = xp.where(valid, targets, 0).astype(np.int64)
    own = xp.take_along_axis(predictions, safe[:, None], axis=-1)
    larger = xp.sum(predictions > own, axis=-1)
    finite = xp.all(xp.isfinite(predictions), axis=-1)
    return valid & finite & (larger < k)


IN_TOP_K = def_primitive("InTopKV2", _in_top_k_forward, not_differentiable=True)  # a boolean result


def in_top_k(targets, predictions, k, name=None):
    """bool[batch]: whether each target class is among the ``k`` largest of its row of
    ``predictions`` [batch, classes], as ``tf.math.in_top_k(targets, predictions, k)``."""
    targets, predictions = as_tensor(targets), as_tensor(predictions)
    k = _static_k(k, "in_top_k")
    if predictions._value.ndim != 2 or targets._value.ndim != 1 or \
            targets._value.shape[0] != predictions._value.shape[0]:
        raise ValueError(f"in_top_k: predictions must be [batch, classes] and targets [batch], "
                         f"got predictions {tuple(predictions._value.shape)} and targets "
                         f"{tuple(targets._value.shape)}")
    if targets._value.dtype.kind not in "iu":
        raise TypeError(f"in_top_k: targets must be integers, not {targets._value.dtype.name}")
    return apply(IN_TOP_K, (targets, predictions), {"k": k})
