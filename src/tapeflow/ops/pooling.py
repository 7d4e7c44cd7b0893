"""Pooling: ``max_pool1d/2d``, ``avg_pool1d/2d`` and ``max_pool`` / ``avg_pool`` by rank, with
TensorFlow's arguments (ksize, strides, "SAME"/"VALID"/explicit padding, NHWC or NCHW).

Five primitives, in TensorFlow's design (``nn_grad.py``), all on NHWC arrays:

* ``MaxPool(x)``, ``MaxPoolGrad(x, dy)`` (dy sent to each window's first maximum) and
  ``MaxPoolGradGrad(x, g)`` (g read at each window's first maximum): the last two are each
  other's gradient in their second operand, and piecewise constant in x (no gradient);
* ``AvgPool(x)`` and ``AvgPoolGrad(dy)``, linear, each other's gradient.  "SAME" windows
  average only the elements inside the input, as TensorFlow's.

The gradient kernels stack each window's elements contiguously (one strided copy per window
element), find every window's first maximum with a few passes of boolean logic, and add the
results back by col2im, a transpose where the windows tile the input (``windows.py``).  With
numba (the jit extra), ``MaxPool`` and ``MaxPoolGrad`` on large float32 arrays run as compiled
loops over channels instead (``_pool_numba.py``), overlapping windows included, with these
routes' bits (its docstring names the two corners where they differ).

Leading (jacobian) axes of dy and g broadcast against x's; attributes never hold the batch
size, so one traced graph fits every batch.
"""
import numpy as np

from ..core.array_rows import TILE_FROM
from ..core.dispatch import apply
from ..core.registry import def_primitive
from . import jit
from ._util import array_module, as_tensor
from .shape import reshape
from .window_args import check_format, check_output, explicit_pads, fold_batch, from_nhwc, \
    spatial_arg, to_nhwc
from .windows import out_hw, reduce_windows, stack_windows, unstack_windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool", "avg_pool1d", "avg_pool2d", "avg_pool"]


# =================================================================================================
# The pooling primitives
# =================================================================================================
# numba's loops run over channels, vectorized 32 floats at a time (8 lanes, 4 interleaved);
# fewer channels run its scalar remainder: forwards slower than numpy's passes below 32 (0.2-0.5x
# at 8-24), 2x2 gradients below 16 (0.6-0.8x at 8); benchmarks/bench_pool.py --channels
FORWARD_CHANNELS_FROM, GRADIENT_CHANNELS_FROM = 32, 16


def _compiled(channels_from, x, *others):
    """numba's kernels (``_pool_numba.py``, the jit extra) for a large float32 x (N, H, W, C) of
    at least ``channels_from`` channels and others of x's batch and channels, or None: numpy's
    route, whose bits they give."""
    if x.ndim == 4 and x.size >= TILE_FROM and x.shape[3] >= channels_from and \
            jit.plain(x, *others) and all(a.ndim == 4 and a.shape[0] == x.shape[0] and
                                          a.shape[3] == x.shape[3] for a in others):
        return jit.kernels("tapeflow.ops._pool_numba")
    return None


def _max_pool_forward(x, ksize, strides, pads):
    kernels = _compiled(FORWARD_CHANNELS_FROM, x)
    if kernels is not None:
        out = np.empty((x.shape[0],) + out_hw(x.shape[1:3], ksize, strides, (1, 1), pads) +
                       (x.shape[3],), x.dtype)
        kernels.max_pool(np.ascontiguousarray(x), *ksize, *strides, pads[0][0], pads[1][0], out)
        return out
    return reduce_windows(x, ksize, strides, pads, array_module(x).maximum, -np.inf)


def _first_max_hits(x, ksize, strides, pads):
    """For each window element k = i * kw + j, in order: booleans (..., Ho, Wo, C), True where
    element k is its window's first maximum (TensorFlow's and torch's pick among ties)."""
    xp = array_module(x)
    stacked = stack_windows(x, ksize, strides, pads, -np.inf)  # (K, ..., Ho, Wo, C), contiguous
    best = stacked[0].copy()
    for part in stacked[1:]:
        xp.maximum(best, part, out=best)
    unclaimed = None  # windows whose first maximum is still ahead
    for part in stacked:
        hit = xp.equal(part, best)
        if unclaimed is None:
            unclaimed = xp.logical_not(hit)
        else:
            xp.logical_and(hit, unclaimed, out=hit)
            xp.greater(unclaimed, hit, out=unclaimed)  # unclaimed and not hit
        yield hit


def _max_pool_grad_forward(x, dy, ksize, strides, pads):
    """dy added at each window's first maximum, in x's shape (dy may have leading axes)."""
    kernels = _compiled(GRADIENT_CHANNELS_FROM, x, dy)
    if kernels is not None:  # overlapping windows too: it adds in col2im's order
        out = np.empty(x.shape, x.dtype)
        kernels.max_pool_grad(np.ascontiguousarray(x), np.ascontiguousarray(dy), *ksize,
                              *strides, pads[0][0], pads[1][0], out)
        return out
    xp = array_module(dy)
    parts = None
    for k, hit in enumerate(_first_max_hits(x, ksize, strides, pads)):
        if parts is None:
            parts = xp.empty((ksize[0] * ksize[1],) + np.broadcast_shapes(dy.shape, hit.shape),
                             dtype=dy.dtype)
        xp.multiply(dy, hit, out=parts[k])
    return unstack_windows(parts, x.shape[-3:-1], ksize, strides, (1, 1), pads)


def _max_pool_grad_grad_forward(x, g, ksize, strides, pads):
    """g (x's shape, maybe with leading axes) read at each window's first maximum."""
    xp = array_module(g)
    out = None
    for part, hit in zip(stack_windows(g, ksize, strides, pads, 0),
                         _first_max_hits(x, ksize, strides, pads)):
        read = part * hit
        out = read if out is None else xp.add(out, read, out=out)
    return out


def _window_counts(x_hw, ksize, strides, pads, xp, dtype):
    """How many input (not padding) elements each window holds, as (Ho, Wo, 1)."""
    ones = xp.ones(tuple(x_hw) + (1,), dtype=dtype)
    return reduce_windows(ones, ksize, strides, pads, xp.add, 0)


def _avg_pool_forward(x, ksize, strides, pads):
    xp = array_module(x)
    sums = reduce_windows(x, ksize, strides, pads, xp.add, 0)
    if pads == ((0, 0), (0, 0)):
        return sums / x.dtype.type(ksize[0] * ksize[1])
    return sums / _window_counts(x.shape[-3:-1], ksize, strides, pads, xp, x.dtype)


def _avg_pool_grad_forward(dy, input_hw, ksize, strides, pads):
    xp = array_module(dy)
    if pads == ((0, 0), (0, 0)):
        share = dy / dy.dtype.type(ksize[0] * ksize[1])
    else:
        share = dy / _window_counts(input_hw, ksize, strides, pads, xp, dy.dtype)
    parts = xp.broadcast_to(share, (ksize[0] * ksize[1],) + share.shape)
    return unstack_windows(parts, input_hw, ksize, strides, (1, 1), pads)


def _pool_attrs(op):
    return {k: op.get_attr(k) for k in ("ksize", "strides", "pads")}


def _max_pool_grad(op, g):
    (x,) = op.inputs
    return apply(MAX_POOL_GRAD, (x, g), _pool_attrs(op))


MAX_POOL = def_primitive("MaxPool", _max_pool_forward, grad=_max_pool_grad, saves="inputs")


def _max_pool_grad_grad(op, g):
    x, _ = op.inputs  # piecewise constant in x: which element is each window's maximum
    return None, apply(MAX_POOL_GRAD_GRAD, (x, g), _pool_attrs(op))


MAX_POOL_GRAD = def_primitive("MaxPoolGrad", _max_pool_grad_forward,
                              grad=_max_pool_grad_grad, saves="inputs")


def _max_pool_grad_grad_grad(op, g):
    x, _ = op.inputs
    return None, apply(MAX_POOL_GRAD, (x, g), _pool_attrs(op))


MAX_POOL_GRAD_GRAD = def_primitive("MaxPoolGradGrad", _max_pool_grad_grad_forward,
                                   grad=_max_pool_grad_grad_grad, saves="inputs")


def _avg_pool_grad(op, g):
    input_hw = tuple(op.input_shape(0)[-3:-1])
    return apply(AVG_POOL_GRAD, (g,), {"input_hw": input_hw, **_pool_attrs(op)})


AVG_POOL = def_primitive("AvgPool", _avg_pool_forward, grad=_avg_pool_grad)


def _avg_pool_grad_grad(op, g):
    return apply(AVG_POOL, (g,), _pool_attrs(op))


AVG_POOL_GRAD = def_primitive("AvgPoolGrad", _avg_pool_grad_forward, grad=_avg_pool_grad_grad)


# =================================================================================================
# The public functions: TensorFlow's arguments to the primitives' attributes
# =================================================================================================
def _pool2d(op, opname, input, ksize, strides, padding, data_format):  # noqa: A002
    check_format(data_format, ("NHWC", "NCHW"), opname)
    x = to_nhwc(as_tensor(input), data_format, 4)
    x, unfold = fold_batch(x, opname)
    ksize = spatial_arg(ksize, 2, "ksize", data_format)
    strides = spatial_arg(strides, 2, "strides", data_format)
    in_hw = tuple(x._value.shape[1:3])
    pads = explicit_pads(padding, in_hw, ksize, strides, (1, 1), data_format, opname)
    if any(p >= k for pair, k in zip(pads, ksize) for p in pair):
        raise ValueError(f"{opname}: padding {list(pads)} must be smaller than the window {list(ksize)}")
    check_output(out_hw(in_hw, ksize, strides, (1, 1), pads), opname, in_hw, ksize)
    y = apply(op, (x,), {"ksize": ksize, "strides": strides, "pads": pads})
    return from_nhwc(unfold(y), data_format, 4)


def _pool1d(pool2d, input, ksize, strides, padding, data_format, opname):  # noqa: A002
    check_format(data_format, ("NWC", "NCW"), opname)
    x = to_nhwc(as_tensor(input), data_format, 3)
    shape = tuple(x._value.shape)
    if len(shape) != 3:
        raise ValueError(f"{opname}: the input must have rank 3 [batch, W, C], got {list(shape)}")
    k = spatial_arg(ksize, 1, "ksize", data_format)[0]
    s = spatial_arg(strides, 1, "strides", data_format)[0]
    pad = padding if isinstance(padding, str) else [(0, 0)] + [
        tuple(p) for p in explicit_pads(padding, shape[1:2], (k,), (s,), (1,), data_format, opname)]
    y = pool2d(reshape(x, (-1, 1) + shape[1:]), (1, k), (1, s), pad)  # -1: any batch, traced
    y = reshape(y, (-1,) + tuple(y._value.shape[2:]))
    return from_nhwc(y, data_format, 3)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The maximum of each ksize window (padding never wins: it is -inf)."""
    return _pool2d(MAX_POOL, "max_pool2d", input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The mean of each ksize window; a "SAME" window averages only the input elements it holds."""
    return _pool2d(AVG_POOL, "avg_pool2d", input, ksize, strides, padding, data_format)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format, "max_pool1d")


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format, "avg_pool1d")


def _pool_by_rank(pool1d, pool2d, input, ksize, strides, padding, data_format):  # noqa: A002
    rank = as_tensor(input)._value.ndim
    if rank == 3:
        return pool1d(input, ksize, strides, padding, data_format=data_format or "NWC")
    if rank == 4:
        return pool2d(input, ksize, strides, padding, data_format=data_format or "NHWC")
    raise ValueError(f"pooling of a rank-{rank} input (only 1-D and 2-D are supported)")


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """``tf.nn.max_pool``: 1-D or 2-D by the input's rank."""
    return _pool_by_rank(max_pool1d, max_pool2d, input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """``tf.nn.avg_pool``: 1-D or 2-D by the input's rank."""
    return _pool_by_rank(avg_pool1d, avg_pool2d, input, ksize, strides, padding, data_format)
