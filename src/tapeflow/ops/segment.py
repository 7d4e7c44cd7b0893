"""Segment reductions: sum, mean, max and min of the rows of ``data`` that share a segment id.

Three primitives (``SegmentSum``, ``SegmentMax``, ``SegmentMin``) serve both of
TensorFlow's families:

* ``segment_*``: sorted 1-D ids, one per row of ``data``; the output has
  ``max(id) + 1`` rows; an empty segment is 0 (TensorFlow's CPU kernels);
* ``unsorted_segment_*``: ids of any shape that prefixes ``data.shape``, in any
  order, ``num_segments`` rows out; a negative id drops its row; an empty
  segment is 0 for the sum and mean and the dtype's lowest (max) or highest
  (min) value, as TensorFlow's.

The ids (an integer array) and the row count are the op's attributes.  The sum's
gradient gathers the cotangent by id; the max and min share it equally between
the elements that reached the extreme, as TensorFlow's rules do.  Means are the
sum divided by the (constant) segment sizes.  Every rule indexes the segment
axis from the right, so cotangents may carry leading (jacobian) axes.
"""
import numpy as np

from ..backend import to_host
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from ._util import array_module, as_tensor, on_device_of
from .arithmetic import equal, logical_and, maximum
from .shape import cast, where
from ..dtypes import finfo, is_float_dtype

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "unsorted_segment_sum",
           "unsorted_segment_mean", "unsorted_segment_max", "unsorted_segment_min"]


def _segment_forward(kind):
    def forward(data, ids, num_segments, fill):
        xp = array_module(data)
        rest = data.shape[ids.ndim:]
        flat_ids = ids.reshape(-1)
        rows = data.reshape((flat_ids.size,) + rest)
        keep = flat_ids >= 0
        if not keep.all():
            flat_ids, rows = flat_ids[keep], rows[keep]
        if kind == "sum":
            out = xp.zeros((num_segments,) + rest, dtype=data.dtype)
            xp.add.at(out, flat_ids, rows)
            return out
        ufunc = xp.maximum if kind == "max" else xp.minimum
        info = finfo(data.dtype) if is_float_dtype(data.dtype) else np.iinfo(data.dtype)
        out = xp.full((num_segments,) + rest, info.min if kind == "max" else info.max,
                      dtype=data.dtype)
        ufunc.at(out, flat_ids, rows)
        if fill is not None:  # the sorted ops' empty segments
            empty = xp.bincount(flat_ids, minlength=num_segments) == 0
            out[empty] = fill
        return out
    forward.__qualname__ = f"segment_{kind}.forward"
    return forward


# --- gradients ----------------------------------------------------------------------------------
def _gather_segments(t, ids, tail_ndim):
    """``t[..., ids, :, ...]``: row ``ids`` of the segment axis (``tail_ndim`` axes from the right
    end of it), with 0 for a negative id; works whatever leading axes ``t`` has."""
    tail = (slice(None),) * tail_ndim
    dropped = ids < 0
    if not dropped.any():
        return t[(Ellipsis, ids) + tail]
    xp = array_module(ids)
    gathered = t[(Ellipsis, xp.maximum(ids, 0)) + tail]
    keep = Tensor(~dropped.reshape(ids.shape + (1,) * tail_ndim))
    return where(keep, gathered, 0.0)


def _tail_ndim(op):
    return len(op.input_shape()) - op.get_attr("ids").ndim


def _segment_extremum_grad(op, g):
    # As TensorFlow's _UnsortedSegmentMinOrMaxGrad: the elements equal to their segment's
    # extreme share the segment's cotangent equally; the others get 0.
    (data,) = op.inputs
    (out,) = op.outputs
    ids = op.get_attr("ids")
    tail = _tail_ndim(op)
    chosen = equal(data, _gather_segments(out, ids, tail))
    if (ids < 0).any():
        chosen = logical_and(chosen, Tensor((ids >= 0).reshape(ids.shape + (1,) * tail)))
    dtype = g._value.dtype
    count = apply(SEGMENT_SUM, (cast(chosen, dtype),), {
        "ids": ids, "num_segments": op.get_attr("num_segments"), "fill": None})
    share = g / maximum(count, 1.0)  # never 0/0 in an empty segment, which nothing reads
    return where(chosen, _gather_segments(share, ids, tail), 0.0)


def _segment_sum_grad(op, g):
    return _gather_segments(g, op.get_attr("ids"), _tail_ndim(op))


SEGMENT_SUM = def_primitive("SegmentSum", _segment_forward("sum"), grad=_segment_sum_grad)
SEGMENT_MAX = def_primitive("SegmentMax", _segment_forward("max"),
                            grad=_segment_extremum_grad, saves=("inputs", "outputs"))
SEGMENT_MIN = def_primitive("SegmentMin", _segment_forward("min"),
                            grad=_segment_extremum_grad, saves=("inputs", "outputs"))


# --- the public functions -------------------------------------------------------------------------
def _ids_array(segment_ids, opname, data):
    """The ids as an integer array on ``data``'s device (moved there once, when the op is built),
    and the same ids on the host, for validation."""
    ids = segment_ids._value if isinstance(segment_ids, Tensor) else np.asarray(segment_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{opname}: segment_ids must be int32 or int64, not {ids.dtype.name}")
    return on_device_of(data._value, ids), np.asarray(to_host(ids))


def _sorted(data, segment_ids, opname):
    data = as_tensor(data)
    ids, host = _ids_array(segment_ids, opname, data)
    shape = data._value.shape
    if ids.ndim != 1:
        raise ValueError(f"{opname}: segment_ids should be a vector, got shape {tuple(ids.shape)}")
    if not shape or shape[0] != ids.shape[0]:
        raise ValueError(f"{opname}: segment_ids should be the same size as dimension 0 of data; "
                         f"got {ids.shape[0]} ids for data of shape {tuple(shape)}")
    if host.size and host[0] < 0:
        raise ValueError(f"{opname}: segment ids must be >= 0, got {host[0]}")
    if host.size > 1 and np.any(host[1:] < host[:-1]):
        k = int(np.argmax(host[1:] < host[:-1])) + 1
        raise ValueError(f"{opname}: segment ids are not increasing: segment_ids[{k}] = "
                         f"{host[k]} follows {host[k - 1]} (use tf.math.unsorted_{opname})")
    num_segments = int(host[-1]) + 1 if host.size else 0
    return data, ids, num_segments


def _unsorted(data, segment_ids, num_segments, opname):
    data = as_tensor(data)
    ids, host = _ids_array(segment_ids, opname, data)
    shape = data._value.shape
    if tuple(shape[:ids.ndim]) != tuple(ids.shape):
        raise ValueError(f"{opname}: segment_ids.shape {tuple(ids.shape)} should be a prefix of "
                         f"data.shape {tuple(shape)}")
    num_segments = int(num_segments.numpy() if isinstance(num_segments, Tensor) else num_segments)
    if num_segments < 0:
        raise ValueError(f"{opname}: num_segments must be >= 0, got {num_segments}")
    if host.size and host.max() >= num_segments:
        where = ", ".join(str(int(i)) for i in np.unravel_index(host.argmax(), host.shape))
        raise ValueError(f"{opname}: segment_ids[{where}] = {host.max()} is out of range "
                         f"[0, {num_segments})")
    return data, ids, num_segments


def _apply(op, data, ids, num_segments, fill):
    return apply(op, (data,), {"ids": ids, "num_segments": num_segments, "fill": fill})


def segment_sum(data, segment_ids, name=None):
    """Sum of the rows of ``data`` in each segment (sorted ids; empty segments are 0)."""
    data, ids, n = _sorted(data, segment_ids, "segment_sum")
    return _apply(SEGMENT_SUM, data, ids, n, None)


def segment_mean(data, segment_ids, name=None):
    """Mean of the rows of ``data`` in each segment (sorted ids; empty segments are 0)."""
    data, ids, n = _sorted(data, segment_ids, "segment_mean")
    return _mean(data, ids, n)


def segment_max(data, segment_ids, name=None):
    """Maximum of the rows of ``data`` in each segment (sorted ids; empty segments are 0)."""
    data, ids, n = _sorted(data, segment_ids, "segment_max")
    return _apply(SEGMENT_MAX, data, ids, n, 0)


def segment_min(data, segment_ids, name=None):
    """Minimum of the rows of ``data`` in each segment (sorted ids; empty segments are 0)."""
    data, ids, n = _sorted(data, segment_ids, "segment_min")
    return _apply(SEGMENT_MIN, data, ids, n, 0)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sum over the elements of ``data`` with each id (ids in any order; negative ids dropped)."""
    data, ids, n = _unsorted(data, segment_ids, num_segments, "unsorted_segment_sum")
    return _apply(SEGMENT_SUM, data, ids, n, None)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Mean over the elements of ``data`` with each id (empty segments are 0)."""
    data, ids, n = _unsorted(data, segment_ids, num_segments, "unsorted_segment_mean")
    return _mean(data, ids, n)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """Maximum over the elements of ``data`` with each id (empty segments: the dtype's lowest)."""
    data, ids, n = _unsorted(data, segment_ids, num_segments, "unsorted_segment_max")
    return _apply(SEGMENT_MAX, data, ids, n, None)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """Minimum over the elements of ``data`` with each id (empty segments: the dtype's highest)."""
    data, ids, n = _unsorted(data, segment_ids, num_segments, "unsorted_segment_min")
    return _apply(SEGMENT_MIN, data, ids, n, None)


def _mean(data, ids, num_segments):
    total = _apply(SEGMENT_SUM, data, ids, num_segments, None)
    flat = ids.reshape(-1)
    xp = array_module(ids)
    counts = xp.bincount(flat[flat >= 0], minlength=num_segments)
    counts = xp.maximum(counts, 1).reshape((num_segments,) + (1,) * (data._value.ndim - ids.ndim))
    if data._value.dtype.kind in "iu":  # TensorFlow's integer mean truncates toward zero
        return Tensor(xp.trunc(total._value / counts).astype(data._value.dtype))
    return total / Tensor(xp.asarray(counts, dtype=data._value.dtype))
