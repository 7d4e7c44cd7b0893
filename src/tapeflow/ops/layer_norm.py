"""Layer normalization over the trailing axes as one primitive with a hand-written backward.

Written in separate ops, a LayerNormalization is 13 equations forward and about 25 back,
each a full pass over the activations (issue 22: W4's two LayerNorms); here the forward is
7 passes and the backward one op of about 12.

``LayerNorm(x, gamma, beta)`` normalizes over the last ``axes_count`` axes and returns
``(y, mean, rstd)``: the statistics (kept axes of size 1) are outputs so that the backward
reads them instead of recomputing them.  ``LayerNormGrad(x, gamma, mean, rstd, dy, dmean,
drstd)`` returns ``(dx, dgamma, dbeta)``; as a function of its seven inputs taken as
independent, its own gradient (second order) is that of the same formula written in
tapeflow's ops, differentiated on a tape.
"""
import math

import numpy as np

from ..core.array_rows import BLAS_SUM_DTYPES, TILE_FROM
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tape import GradientTape
from . import jit
from ._util import array_module, as_tensor, trailing_sum
from .creation import zeros_like
from .elementwise import identity
from .reduce import reduce_mean, reduce_sum
from .shape import reshape, stack

__all__ = ["layer_norm"]


def _axes(n):
    return tuple(range(-n, 0))


def _compiled(x, *others):
    """numba's kernels (``_norm_numba``, the jit extra) for large float32 numpy arrays, else
    None: one read of each row where numpy makes a pass over the array per operation."""
    if x.size < TILE_FROM or not jit.plain(x, *others):
        return None
    return jit.kernels("tapeflow.ops._norm_numba")


def _layer_norm_forward(x, gamma, beta, *, axes_count, epsilon):
    xp = array_module(x, gamma, beta)
    kernels = _compiled(x, gamma, beta)
    if kernels is not None:
        count = math.prod(x.shape[-axes_count:])
        stats = x.shape[:-axes_count] + (1,) * axes_count
        y, mean, rstd = np.empty(x.shape, x.dtype), np.empty(stats, x.dtype), \
            np.empty(stats, x.dtype)
        kernels.layer_norm(np.ascontiguousarray(x).reshape(-1, count), gamma.reshape(count),
                           beta.reshape(count), np.float32(epsilon), y.reshape(-1, count),
                           mean.reshape(-1), rstd.reshape(-1))
        return y, mean, rstd
    count = math.prod(x.shape[-axes_count:])
    mean = trailing_sum(x, axes_count) / count
    y = xp.subtract(x, mean)
    variance = trailing_sum(xp.square(y), axes_count) / count
    rstd = 1.0 / xp.sqrt(variance + epsilon)
    y *= rstd   # in place: the centered input becomes the normalized one, then the output
    y *= gamma
    y += beta
    return y, mean, rstd


def _rows_fit(xp, x, axes_count):
    """Whether the numpy row layout applies: a large C-contiguous float32/64 array."""
    return xp is np and x.dtype in BLAS_SUM_DTYPES and x.size >= TILE_FROM and \
        x.flags.c_contiguous and x.ndim > axes_count


def _layer_norm_grad_forward(x, gamma, mean, rstd, dy, dmean, drstd, *, axes_count, epsilon):
    """``(dx, dgamma, dbeta)``; ``dy`` (and ``dmean``, ``drstd``) may carry extra leading
    axes (a jacobian's rows), which ``dgamma`` and ``dbeta`` keep."""
    xp = array_module(x, dy)
    kernels = _compiled(x, gamma, mean, rstd, dy, dmean, drstd) if dy.shape == x.shape else None
    if kernels is not None:
        return _layer_norm_grad_compiled(kernels, x, gamma, mean, rstd, dy, dmean, drstd,
                                         axes_count)
    if dy.shape == x.shape and _rows_fit(xp, x, axes_count) and dy.dtype == x.dtype:
        return _layer_norm_grad_rows(x, gamma, mean, rstd, dy, dmean, drstd, axes_count)
    count = math.prod(x.shape[-axes_count:])
    rows = tuple(range(dy.ndim - x.ndim, dy.ndim - axes_count))  # summed for gamma and beta
    xhat = xp.subtract(x, mean)
    xhat *= rstd
    dbeta = xp.sum(dy, axis=rows)
    dx = xp.multiply(dy, xhat)
    dgamma = xp.sum(dx, axis=rows)
    # the statistics' own cotangents fold into the two row terms (see _layer_norm_grad_ops)
    dx *= gamma
    shift = (trailing_sum(dx, axes_count) + drstd * rstd) / count
    dx = xp.multiply(dy, gamma)
    centre = (trailing_sum(dx, axes_count) - dmean / rstd) / count
    dx -= centre
    dx -= xhat * shift
    dx *= rstd
    return dx, dgamma, dbeta


def _layer_norm_grad_compiled(kernels, x, gamma, mean, rstd, dy, dmean, drstd, axes_count):
    count = math.prod(x.shape[-axes_count:])
    rows = x.size // count
    dx = np.empty(x.shape, x.dtype)
    dgamma, dbeta = np.empty(gamma.shape, x.dtype), np.empty(gamma.shape, x.dtype)

    def matrix(a):  # contiguous (a broadcast cotangent is a view: read once as rows)
        return np.ascontiguousarray(a).reshape(-1, count)

    def column(a):  # a statistic's (rows, 1, ...) shape, or its cotangent broadcast to it
        return np.ascontiguousarray(np.broadcast_to(a, mean.shape)).reshape(rows)
    kernels.layer_norm_grad(matrix(x), gamma.reshape(count), column(mean), column(rstd),
                            matrix(dy), column(dmean), column(drstd), dx.reshape(-1, count),
                            dgamma.reshape(count), dbeta.reshape(count))
    return dx, dgamma, dbeta


def _layer_norm_grad_rows(x, gamma, mean, rstd, dy, dmean, drstd, axes_count):
    """``_layer_norm_grad_forward`` on a large numpy array.  Its four sums (over the rows for
    gamma and beta, along them for the two row terms) are matrix-vector products, each one
    BLAS read of its array (numpy's sums make a call per row of 128); ``xhat = (x - mean)
    rstd`` is never formed, its ``rstd`` going into those products and the last scaling
    instead: a row's scalar broadcast along it costs numpy a call per row too."""
    count = math.prod(x.shape[-axes_count:])
    matrix = (x.size // count, count)
    column = gamma.reshape(count)
    dy = np.ascontiguousarray(dy)  # a mean's spread cotangent is a broadcast view: read as rows
    centred = np.subtract(x, mean)
    dy_centred = np.multiply(dy, centred)
    dgamma = (rstd.reshape(matrix[0]) @ dy_centred.reshape(matrix)).reshape(gamma.shape)
    dbeta = (np.ones(matrix[0], x.dtype) @ dy.reshape(matrix)).reshape(gamma.shape)
    # mean(g xhat) and mean(g) with g = dy gamma; the statistics' own cotangents fold into
    # the two row terms (see _layer_norm_grad_ops)
    shift = ((dy_centred.reshape(matrix) @ column).reshape(mean.shape) + drstd) * rstd / count
    centre = ((dy.reshape(matrix) @ column).reshape(mean.shape) - dmean / rstd) / count
    del dy_centred
    dx = np.multiply(dy, gamma)
    dx -= centre
    dx *= rstd
    centred *= shift * rstd * rstd  # xhat shift rstd
    dx -= centred
    return dx, dgamma, dbeta


def _layer_norm_grad_ops(x, gamma, mean, rstd, dy, dmean, drstd, axes_count):
    """``_layer_norm_grad_forward`` in differentiable ops (no extra leading axes): with ``xhat
    = (x - mean) rstd`` and ``g = dy gamma``, ``dx = rstd (g - mean(g) - xhat mean(g xhat))``
    plus the statistics' cotangents: ``dmean / count`` and ``drstd`` times ``d rstd / dx =
    -rstd^2 xhat / count``."""
    axes = list(_axes(axes_count))
    count = math.prod(x.shape[-axes_count:])
    rows = list(range(x.ndim - axes_count))
    xhat = (x - mean) * rstd
    g = dy * gamma
    shift = reduce_mean(g * xhat, axis=axes, keepdims=True) + drstd * rstd / count
    centre = reduce_mean(g, axis=axes, keepdims=True) - dmean / (rstd * count)
    dx = (g - centre - xhat * shift) * rstd
    return dx, reduce_sum(dy * xhat, axis=rows), reduce_sum(dy, axis=rows)


def _attrs(op):
    return {"axes_count": op.get_attr("axes_count"), "epsilon": op.get_attr("epsilon")}


def _layer_norm_grad(op, dy, dmean, drstd):
    x, gamma, _ = op.inputs
    y, mean, rstd = op.outputs
    dy, dmean, drstd = (zeros_like(t) if d is None else d
                        for d, t in zip((dy, dmean, drstd), (y, mean, rstd)))
    return apply(LAYER_NORM_GRAD, (x, gamma, mean, rstd, dy, dmean, drstd), _attrs(op))


LAYER_NORM = def_primitive("LayerNorm", _layer_norm_forward, num_outputs=3,
                           grad=_layer_norm_grad, saves=("inputs", "outputs"))


def _layer_norm_grad_grad(op, *cotangents):
    """The formula's gradient on a tape, once for each row of a jacobian's cotangents (extra
    leading axes): ``tape.gradient`` takes one cotangent per output."""
    with GradientTape(persistent=True) as tape:
        operands = [identity(t) for t in op.inputs]
        tape.watch(operands)
        outs = _layer_norm_grad_ops(*operands, op.get_attr("axes_count"))
    cotangents = [zeros_like(o) if c is None else c for c, o in zip(cotangents, outs)]
    lead = tuple(cotangents[0].shape[:cotangents[0].ndim - outs[0].ndim])
    if not lead:
        return tape.gradient(list(outs), operands, output_gradients=cotangents)
    rows = [reshape(c, (-1,) + tuple(o.shape)) for c, o in zip(cotangents, outs)]
    grads = [tape.gradient(list(outs), operands, output_gradients=[c[r] for c in rows])
             for r in range(math.prod(lead))]
    return [reshape(stack([row[k] if row[k] is not None else zeros_like(t) for row in grads]),
                    lead + tuple(t.shape)) for k, t in enumerate(operands)]


LAYER_NORM_GRAD = def_primitive("LayerNormGrad", _layer_norm_grad_forward, num_outputs=3,
                                grad=_layer_norm_grad_grad, saves="inputs")


def layer_norm(x, gamma, beta, axes_count, epsilon):
    """``(x - mean) / sqrt(variance + epsilon) * gamma + beta`` over the last ``axes_count``
    axes of ``x`` (``gamma`` and ``beta`` of those axes' shape), and the mean and ``1 /
    sqrt(variance + epsilon)`` (kept axes of size 1)."""
    x, gamma, beta = as_tensor(x), as_tensor(gamma), as_tensor(beta)
    axes_count = int(axes_count)
    if not 0 < axes_count < x.ndim:
        raise ValueError(f"layer_norm: axes_count must be in [1, {x.ndim - 1}] for an input of "
                         f"rank {x.ndim} (a batch axis is kept), got {axes_count}")
    tail = tuple(x.shape[-axes_count:])
    for what, t in (("gamma", gamma), ("beta", beta)):
        if tuple(t.shape) != tail:
            raise ValueError(f"layer_norm: {what} must have the normalized axes' shape {tail}, "
                             f"got {tuple(t.shape)}")
    return apply(LAYER_NORM, (x, gamma, beta), {"axes_count": axes_count,
                                                "epsilon": float(epsilon)})
