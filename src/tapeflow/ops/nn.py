"""Neural-network ops: softmax family, cross-entropies, moments, dropout, and friends.

``softmax`` and ``log_softmax`` are primitives with their own rules (stable and
cheap); the losses are written in ops whose gradients are already exact.
"""
import numpy as np

from .. import backend
from ..core.array_rows import BLAS_SUM_DTYPES, TILE_FROM
from ..core.symbolic_dispatch import dispatches_symbols
from ..core.context import context
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from . import jit
from ._util import BLAS_ROW_SUM_MAX, array_module, as_tensor, binary_operands, one_axis, \
    trailing_sum
from .arithmetic import greater_equal, less, logical_or, maximum
from .creation import one_hot
from .linalg import matmul
from .elementwise import erf, exp, rsqrt, sigmoid, stop_gradient, tanh
from .random import uniform, uniform_like
from .reduce import reduce_mean, reduce_sum
from .shape import where

__all__ = [
    "softmax", "log_softmax", "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits",
    "l2_loss", "moments", "batch_normalization", "dropout", "silu", "gelu", "bias_add",
    "l2_normalize", "checked_class_indices",
]


def _softmax_forward(x, axis):
    xp = array_module(x)
    kernels = jit.kernels("tapeflow.ops._norm_numba") if (axis == -1 or axis == x.ndim - 1) \
        and x.size >= TILE_FROM and jit.plain(x) else None
    if kernels is not None:  # numba's one read of each row (the jit extra)
        out = np.empty(x.shape, x.dtype)
        n = x.shape[-1]
        kernels.softmax_rows(np.ascontiguousarray(x).reshape(-1, n), out.reshape(-1, n),
                             np.float32(np.log(np.finfo(np.float32).max) - np.log(n) - 1.0))
        return out
    if xp is np and _unshifted_applies(x, axis):
        e = _softmax_unshifted(x)
        if e is not None:
            return e
    return _softmax_shifted(x, axis, xp)


def _softmax_shifted(x, axis, xp):
    e = xp.subtract(x, xp.max(x, axis=axis, keepdims=True))
    xp.exp(e, out=e)  # in place: one array, not three (issue 22: attention's scores)
    e /= trailing_sum(e) if axis == -1 else xp.sum(e, axis=axis, keepdims=True)
    return e


def _unshifted_applies(x, axis):
    """Large float arrays with short last-axis rows: numpy's max over a row of 64 costs a
    call per row (~0.5 ms on attention's (32, 4, 64, 64) scores, a quarter of the softmax)."""
    return (axis == -1 or axis == x.ndim - 1) and x.dtype in BLAS_SUM_DTYPES and \
        x.size >= TILE_FROM and 1 < x.shape[-1] <= BLAS_ROW_SUM_MAX


def _softmax_unshifted(x):
    """``exp(x) / sum(exp(x))`` without subtracting each row's maximum, or None where that
    could overflow (the largest entry too big, or NaN).

    Where a row's maximum is >= 0 this is at least as accurate as the shifted form (no term
    nearer underflow, no rounding of ``x - max``).  A row whose sum is >= 1 has its maximum
    >= -log(n), so only outputs below n times the smallest normal float can round otherwise.
    A row whose sum is below 1 may have a lower maximum: those rows, if any, are recomputed
    shifted (a fully masked row among them).
    """
    n = x.shape[-1]
    if not x.max() <= np.log(np.finfo(x.dtype).max) - np.log(n) - 1.0:  # the sum stays finite
        return None
    e = np.exp(x, order="C")  # rows viewed below
    sums = trailing_sum(e)
    low = np.flatnonzero(sums < 1.0)
    if low.size:
        rows, sums_flat = e.reshape(-1, n), sums.reshape(-1)
        rows[low] = _softmax_shifted(x.reshape(-1, n)[low], -1, np)
        sums_flat[low] = 1.0
    e /= sums
    return e


def _log_softmax_forward(x, axis):
    xp = array_module(x)
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _softmax_grad(op, g):
    (y,) = op.outputs
    axis = op.get_attr("axis")
    return y * (g - _sum_kept(g * y, axis))


def _sum_kept(x, axis):
    """``reduce_sum(x, axis, keepdims=True)``; over the last axis in float32/64 a matmul with
    a column of ones, one BLAS call (numpy's sum over short rows runs row by row: 5x slower on
    attention's scores, issue 22), which differentiates again as a matmul."""
    value = x._value
    if axis != -1 or value.ndim < 2 or value.dtype not in (np.float32, np.float64) or \
            not 0 < value.shape[-1] <= BLAS_ROW_SUM_MAX:  # long rows: numpy's pairwise sum
        return reduce_sum(x, axis=axis, keepdims=True)
    ones = backend.module_of(value).ones((value.shape[-1], 1), dtype=value.dtype)
    return matmul(x, Tensor(ones))  # on x's device, or a trace's


SOFTMAX = def_primitive("Softmax", _softmax_forward, grad=_softmax_grad, saves="outputs")


def _log_softmax_grad(op, g):
    (y,) = op.outputs
    axis = op.get_attr("axis")
    return g - exp(y) * reduce_sum(g, axis=axis, keepdims=True)


LOG_SOFTMAX = def_primitive("LogSoftmax", _log_softmax_forward,
                            grad=_log_softmax_grad, saves="outputs")


@dispatches_symbols("nn.softmax")
def softmax(logits, axis=-1, name=None):
    logits = as_tensor(logits)
    axis = one_axis(axis, logits._value.ndim, "softmax")
    return apply(SOFTMAX, (logits,), {"axis": axis})


@dispatches_symbols("nn.log_softmax")
def log_softmax(logits, axis=-1, name=None):
    logits = as_tensor(logits)
    axis = one_axis(axis, logits._value.ndim, "log_softmax")
    return apply(LOG_SOFTMAX, (logits,), {"axis": axis})


def _sigmoid_xent_grad(op, g):
    z, x = op.inputs
    needs = op.needs_input_grad
    return (-g * x if needs[0] else None), g * (sigmoid(x) - z)


SIGMOID_XENT = def_primitive(
    "SigmoidCrossEntropyWithLogits",
    lambda z, x: (array_module(x).maximum(x, 0) - x * z
                  + array_module(x).log1p(array_module(x).exp(-array_module(x).abs(x)))).astype(x.dtype),
    grad=_sigmoid_xent_grad, saves="inputs")


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """max(x, 0) - x z + log(1 + exp(-|x|)): stable for any logit."""
    labels, logits = binary_operands("sigmoid_cross_entropy_with_logits", labels, logits)
    if labels._value.shape != logits._value.shape:
        raise ValueError(f"labels {tuple(labels._value.shape)} and logits "
                         f"{tuple(logits._value.shape)} must have the same shape")
    return apply(SIGMOID_XENT, (labels, logits))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    labels, logits = binary_operands("softmax_cross_entropy_with_logits", labels, logits)
    return -reduce_sum(labels * log_softmax(logits, axis=axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    logits = as_tensor(logits)
    depth = logits._value.shape[-1]
    labels, out_of_range = checked_class_indices(as_tensor(labels), depth)
    hot = one_hot(labels, depth, dtype=logits._value.dtype)
    loss = -reduce_sum(hot * log_softmax(logits, axis=-1), axis=-1)
    return loss if out_of_range is None else where(out_of_range, np.nan, loss)


def checked_class_indices(labels, depth):
    """``(labels, out_of_range)``: the class indices of a sparse cross-entropy, checked to lie
    in [0, depth) (an out-of-range one would get a zero one-hot row, a silent zero loss).

    Eagerly they are checked now, and in a traced step on the host when the graph runs
    (``CheckClassIndices``); ``out_of_range`` is then None.  A traced step on a device does
    not read its labels back (that would stall every step): as with TensorFlow's GPU kernel,
    the caller makes an out-of-range label's loss NaN, where ``out_of_range`` is true.
    """
    if context().trace is None:
        _checked_class_indices(labels._value, depth=depth)
        return labels, None
    if backend.module_of(labels._value) is np:
        return apply(CHECK_CLASS_INDICES, (labels,), {"depth": int(depth)}), None
    return labels, logical_or(less(labels, 0), greater_equal(labels, depth))


def _checked_class_indices(v, *, depth):
    xp = backend.array_module(v)
    if v.size and bool(xp.any((v < 0) | (v >= depth))):
        raise ValueError(f"sparse cross-entropy: class indices must lie in [0, {depth}), "
                         f"got values from {v.min()} to {v.max()}")
    return v


# The check as an op of a traced graph: the labels pass through, or it raises when it runs.
CHECK_CLASS_INDICES = def_primitive("CheckClassIndices", _checked_class_indices,
                                    not_differentiable=True)  # class indices


@dispatches_symbols("nn.l2_loss")
def l2_loss(t, name=None):
    t = as_tensor(t)
    return reduce_sum(t * t) / 2.0


@dispatches_symbols("math.l2_normalize")
def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    x = as_tensor(x)
    sq = reduce_sum(x * x, axis=axis, keepdims=True)
    return x * rsqrt(maximum(sq, epsilon))


def moments(x, axes, shift=None, keepdims=False, name=None):
    x = as_tensor(x)
    mean = reduce_mean(x, axis=axes, keepdims=True)
    d = x - stop_gradient(mean)
    variance = reduce_mean(d * d, axis=axes, keepdims=True) - (
        reduce_mean(d, axis=axes, keepdims=True) ** 2)
    if not keepdims:
        from .reduce import squeeze_axes
        mean = squeeze_axes(mean, x._value.ndim, axes)
        variance = squeeze_axes(variance, x._value.ndim, axes)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    x = as_tensor(x)
    inv = rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    out = x * inv - mean * inv
    return out + offset if offset is not None else out


@dispatches_symbols("nn.bias_add")
def bias_add(value, bias, name=None):
    return as_tensor(value) + bias


@dispatches_symbols("nn.silu")
def silu(features, beta=1.0):
    features = as_tensor(features)
    return features * sigmoid(beta * features)


@dispatches_symbols("nn.gelu")
def gelu(features, approximate=False, name=None):
    x = as_tensor(features)
    if approximate:
        c = float(np.sqrt(2.0 / np.pi))
        return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + erf(x / float(np.sqrt(2.0))))


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each element with probability ``rate``; scale the rest by 1/(1-rate)."""
    x = as_tensor(x)
    if not 0 <= rate < 1:
        raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    if rate == 0:
        return x
    if noise_shape is None:  # the shape x has when the op runs: a traced graph fits any batch
        draws = uniform_like(x, dtype=x._value.dtype, seed=seed)
    else:
        shape = tuple(d if d is not None else x._value.shape[i] for i, d in enumerate(noise_shape))
        draws = uniform(shape, dtype=x._value.dtype, seed=seed)
    keep = draws >= rate
    if backend.is_array(x._value) and backend.is_array(keep._value):
        # drawn on the current device: x may live on another (made inside a tf.device block)
        keep = Tensor(backend.on_device_of(x._value, keep._value))
    return where(keep, x / (1.0 - rate), 0.0)
