"""``activation(y + bias)`` as one op, and its gradient as one op: Dense's and Conv's last step.

Unfused, a layer's bias and activation are an add and an activation forward, and backward the
activation's gradient and the sum of that gradient over the batch for the bias (``SumToShape``),
each its own equation and temporary.  ``BiasActivation`` adds the bias into a fresh array and
applies the activation to it in place; its rule is one ``BiasActivationGrad`` that computes the
pre-activation cotangent from the saved output (relu, sigmoid and tanh have their derivatives in
their outputs) and the bias's from it.  ``linear`` (no activation) is the bias add alone; its rule
passes the cotangent through and sums it for the bias (``BiasAddGrad``, TensorFlow's name).

On numpy two tricks make these passes cheaper than the ops they replace (benchmarks/README.md):
a row of ``units`` broadcast over many rows costs an inner-loop call per row, so the bias and
relu's zero are tiled to rows of a few thousand elements; and the bias's gradient is a
matrix-vector product with ones (BLAS), several times faster than ``sum(axis=0)`` over a
(batch, units) array.  The sums then round differently from ``SumToShape``'s (float rounding only).
"""
import functools
import math

import numpy as np

from ..core.array_rows import BLAS_SUM_DTYPES as _BLAS_SUM_DTYPES
from ..core.array_rows import TILE_FROM as _TILE_FROM
from ..core.array_rows import tiled_row as _tiled_row
from ..core.array_rows import wide_rows as _wide_rows
from ..core.dispatch import apply
from ..core.registry import Inline, def_primitive
from ..dtypes import is_float_dtype
from . import jit
from ._util import array_module, as_tensor
from .shape import broadcast_to, expand_dims

__all__ = ["ACTIVATIONS", "bias_activation", "activation_slope"]

ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")


# --- compiled relu (the jit extra) -----------------------------------------------------------
def _relu_kernels(y, *others):
    """numba's relu kernels (``_dense_numba``) for float32 numpy arrays of at least
    ``TILE_FROM`` elements, C-contiguous: one pass where numpy makes two or three (forward 4-5x,
    backward 1.7-2.5x faster on (1024, 64) to (8192, 64)); below that size the import of numba
    would not pay.  The eager op and its compiled kernel both ask here, so they give one bits."""
    if y.size < _TILE_FROM or not jit.plain(y, *others, contiguous=True):
        return None
    return jit.kernels("tapeflow.ops._dense_numba")


def _relu_bias_compiled(kernels, y, bias):
    out = np.empty(y.shape, y.dtype)
    kernels.relu_bias(y.reshape(-1, y.shape[-1]), bias, out.reshape(-1, y.shape[-1]))
    return out


def _relu_bias_grad_compiled(kernels, g, out):
    d = np.empty(g.shape, g.dtype)
    d_bias = np.empty(g.shape[-1], g.dtype)
    kernels.relu_bias_grad(g.reshape(-1, g.shape[-1]), out.reshape(-1, g.shape[-1]),
                           d.reshape(-1, g.shape[-1]), d_bias)
    return d, d_bias


# --- forward -----------------------------------------------------------------------------
def _bias_activation_forward(y, bias, *, activation):
    xp = array_module(y, bias)
    kernels = _relu_kernels(y, bias) if activation == "relu" else None
    if kernels is not None:
        return _relu_bias_compiled(kernels, y, bias)
    if xp is not np or y.size < _TILE_FROM or not y.flags.c_contiguous:
        out = xp.add(y, bias)
        _ACTIVATE[activation](out, 0, xp)
        return out
    wide, k = _wide_rows(y.shape)
    return _tiled(y, bias, activation, wide, k, np.zeros(wide[-1], y.dtype))


def _tiled(y, bias, activation, wide, k, zeros):
    """act(y + bias) through rows of ``wide`` shape (``_wide_rows``); ``zeros`` a row of them:
    numpy's maximum against a row of zeros measured ~3x faster than against a scalar 0."""
    out = np.empty(y.shape, y.dtype)
    rows = out.reshape(wide)
    np.add(y.reshape(wide), _tiled_row(bias, k) if k > 1 else bias, out=rows)
    _ACTIVATE[activation](rows, zeros, np)
    return out


def _bias_activation_kernel(in_types, attrs):
    """A compiled graph's kernel for known shapes: below ``_TILE_FROM`` elements the plain
    expression, written in place of a call; above, the tiled rows fixed now."""
    (shape, dtype), (bias_shape, _) = in_types
    activation = attrs["activation"]
    if None in shape or dtype not in _BLAS_SUM_DTYPES or (shape[-1],) != tuple(bias_shape):
        return None
    if math.prod(shape) < _TILE_FROM:
        return _PLAIN.get(activation)
    wide, k = _wide_rows(shape)
    zeros = np.zeros(wide[-1], dtype)  # read only, shared by every call

    def bias_activation_tiled(y, bias):
        kernels = _relu_kernels(y, bias) if activation == "relu" else None
        if kernels is not None:
            return _relu_bias_compiled(kernels, y, bias)
        return _tiled(y, bias, activation, wide, k, zeros)
    return bias_activation_tiled


_PLAIN = {"linear": Inline("{0} + {1}"), "relu": Inline("np.maximum({0} + {1}, 0)")}


def _linear(x, zero, xp):
    return x


def _relu(x, zero, xp):
    xp.maximum(x, zero, out=x)


def _sigmoid(x, zero, xp):
    # 1 / (1 + e^-x) in place: exp overflows to inf below -88 (float32), giving the limit 0
    with np.errstate(over="ignore"):
        xp.negative(x, out=x)
        xp.exp(x, out=x)
        x += 1
        xp.reciprocal(x, out=x)


def _tanh(x, zero, xp):
    xp.tanh(x, out=x)


_ACTIVATE = {"linear": _linear, "relu": _relu, "sigmoid": _sigmoid, "tanh": _tanh}


def _bias_activation_grad(op, g):
    activation = op.get_attr("activation")
    ndim = len(op.output_shape())
    if activation == "linear":
        return g, apply(BIAS_ADD_GRAD, (g,), {"ndim": ndim})
    (out,) = op.outputs
    return apply(BIAS_ACTIVATION_GRAD, (g, out), {"activation": activation})


BIAS_ACTIVATION = def_primitive("BiasActivation", _bias_activation_forward,
                                grad=_bias_activation_grad, saves="outputs",
                                specialize=_bias_activation_kernel)


# --- backward: the pre-activation's cotangent and the bias's, in one op ------------------------
def _sum_over_rows(d, ndim, ones=None):
    """``d`` summed over the axes of its last ``ndim`` but the last (the batch and any other
    axes the bias was broadcast along), keeping its extra leading (jacobian) axes.  Where
    ``ones`` (a vector as long as those axes) is given, and for any float32 or float64 array,
    as a product with ones: BLAS's gemv measured 4-6x faster than ``sum(axis=0)`` over
    (1024, 64) float32 (and a compiled graph's kernel, given its ones, gives the same bits)."""
    lead = d.ndim - ndim
    if ndim == 1:
        return d.copy()  # a bias as long as y: nothing to sum (a new array, not d again)
    rows = math.prod(d.shape[lead:-1])
    stacked = (d.shape[:lead] + (rows, d.shape[-1]))
    if ones is not None:
        return ones @ d.reshape(stacked)
    if d.dtype in _BLAS_SUM_DTYPES:  # on a device too: its sums then round as the host's do
        return array_module(d).ones(rows, d.dtype) @ d.reshape(stacked)
    return d.sum(axis=tuple(range(lead, d.ndim - 1)), dtype=d.dtype)


def _ones_for_rows(g_shape, out_ndim, dtype):
    """The ones ``_sum_over_rows`` multiplies by, for a cotangent of known shape (or None)."""
    if None in g_shape or out_ndim < 2 or dtype not in _BLAS_SUM_DTYPES:
        return None
    return np.ones(math.prod(g_shape[len(g_shape) - out_ndim:-1]), dtype)  # read only, shared


def activation_slope(out, activation):
    """act'(x) from out = act(x) (relu, sigmoid or tanh), an array: a new array."""
    if activation == "relu":
        return out > 0  # numpy multiplies by the booleans without a float copy of them
    if activation == "sigmoid":
        slope = 1 - out
        slope *= out
        return slope
    slope = out * out  # tanh
    array_module(out).subtract(1, slope, out=slope)
    return slope


def _bias_activation_grad_forward(g, out, *, activation, ones=None):
    kernels = _relu_kernels(g, out) if activation == "relu" and g.ndim == out.ndim else None
    if kernels is not None:
        return _relu_bias_grad_compiled(kernels, g, out)
    d = g * activation_slope(out, activation)
    return d, _sum_over_rows(d, out.ndim, ones)


def _bias_activation_grad_kernel(in_types, attrs):
    (g_shape, dtype), (out_shape, _) = in_types
    ones = _ones_for_rows(g_shape, len(out_shape), dtype)
    activation = attrs["activation"]
    if ones is None:
        return None
    if len(g_shape) != 2 or len(out_shape) != 2:
        return functools.partial(_bias_activation_grad_forward, activation=activation, ones=ones)
    # (batch, units), no jacobian axes: the forward's operations with no call between them
    # (a batch of 32 spends as long in calls as in arithmetic)
    if activation == "relu":
        def relu_bias_grad(g, out):
            d = g * (out > 0)
            return d, ones @ d

        if math.prod(g_shape) < _TILE_FROM:
            return relu_bias_grad  # small: numba's kernels never run (_relu_kernels)

        def relu_bias_grad_large(g, out):
            kernels = _relu_kernels(g, out)
            if kernels is not None:
                return _relu_bias_grad_compiled(kernels, g, out)
            return relu_bias_grad(g, out)
        return relu_bias_grad_large

    def bias_activation_grad(g, out):
        d = g * activation_slope(out, activation)
        return d, ones @ d
    return bias_activation_grad


def _bias_activation_grad_grad(op, gg, gg_bias):
    """d_pre = g * act'(out) and d_bias = its sum: linear in g, so g's cotangent is act'(out)
    times the total cotangent of d_pre; out's is g * act''(...) (zero for relu)."""
    g, out = op.inputs
    activation = op.get_attr("activation")
    for _ in range(out._value.ndim - 1):  # (lead, units) -> (lead, 1, ..., 1, units)
        gg_bias = expand_dims(gg_bias, -2)
    total = gg + gg_bias
    d_g, _ = apply(BIAS_ACTIVATION_GRAD, (total, out), {"activation": activation})
    if activation == "relu":
        return d_g, None  # piecewise linear: nothing flows to out
    if activation == "sigmoid":  # d/d out of out * (1 - out) is 1 - 2 out
        return d_g, total * g * (1.0 - 2.0 * out)
    return d_g, total * g * (-2.0 * out)  # tanh: d/d out of 1 - out^2


BIAS_ACTIVATION_GRAD = def_primitive("BiasActivationGrad", _bias_activation_grad_forward,
                                     grad=_bias_activation_grad_grad, saves="inputs",
                                     num_outputs=2, specialize=_bias_activation_grad_kernel)


def _bias_add_grad_forward(g, *, ndim, ones=None):
    return _sum_over_rows(g, ndim, ones)


def _bias_add_grad_kernel(in_types, attrs):
    ((g_shape, dtype),) = in_types
    ones = _ones_for_rows(g_shape, attrs["ndim"], dtype)
    if ones is None:
        return None
    if len(g_shape) != 2 or attrs["ndim"] != 2:
        return functools.partial(_bias_add_grad_forward, ndim=attrs["ndim"], ones=ones)

    def bias_sum(g):  # (batch, units): one product, no call between
        return ones @ g
    return bias_sum


def _bias_add_grad_grad(op, gg):
    """The sum's gradient: ``gg`` broadcast back over the summed axes."""
    ndim = op.get_attr("ndim")
    g_shape = op.input_shape()
    lead = tuple(gg._value.shape[:gg._value.ndim - 1 - (len(g_shape) - ndim)])
    for _ in range(ndim - 1):
        gg = expand_dims(gg, -2)
    return broadcast_to(gg, lead + tuple(g_shape))


BIAS_ADD_GRAD = def_primitive("BiasAddGrad", _bias_add_grad_forward, grad=_bias_add_grad_grad,
                              specialize=_bias_add_grad_kernel)


# --- the function layers call -----------------------------------------------------------------
def bias_activation(y, bias, activation="linear"):
    """``activation(y + bias)`` for ``bias`` of shape (units,) along the last axis of ``y``,
    as one op (and one op backward).  ``activation`` is one of ``ACTIVATIONS``, by name."""
    if activation not in _ACTIVATE:
        raise ValueError(f"bias_activation: activation must be one of {ACTIVATIONS}, "
                         f"got {activation!r}")
    y, bias = as_tensor(y), as_tensor(bias)
    if bias._value.ndim != 1 or y._value.ndim == 0 or y._value.shape[-1] != bias._value.shape[0]:
        raise ValueError(f"bias_activation: the bias must be a vector as long as the last axis "
                         f"of y; got y {tuple(y._value.shape)} and bias "
                         f"{tuple(bias._value.shape)}")
    if not is_float_dtype(y._value.dtype) or y._value.dtype != bias._value.dtype:
        raise TypeError(f"bias_activation: y is {y._value.dtype.name} and the bias "
                        f"{bias._value.dtype.name}; they must be of one float dtype (use tf.cast)")
    return apply(BIAS_ACTIVATION, (y, bias), {"activation": activation})
