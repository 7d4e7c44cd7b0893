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
import math

import numpy as np

from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..dtypes import is_float_dtype
from ._util import array_module, as_tensor
from .shape import broadcast_to, expand_dims

__all__ = ["ACTIVATIONS", "bias_activation", "activation_slope"]

ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh")
_TILED_ELEMENTS = 2048  # a row this long makes numpy's inner loop, not its per-row calls, the cost


# --- forward -----------------------------------------------------------------------------
def _rows(array, units):
    """``array`` (C-contiguous, last axis ``units``) as (rows, k * units) and k: wider rows for
    a bias broadcast along them (numpy runs its inner loop once per row)."""
    rows = array.size // units
    k = math.gcd(rows, max(1, _TILED_ELEMENTS // units))
    return array.reshape(rows // k, k * units), k


def _bias_activation_forward(y, bias, *, activation):
    xp = array_module(y, bias)
    if xp is not np or not y.flags.c_contiguous or y.size == 0:
        out = xp.add(y, bias)
        _ACTIVATE[activation](out, 0, xp)
        return out
    out = np.empty_like(y)
    wide, k = _rows(out, y.shape[-1])
    np.add(y.reshape(wide.shape), np.tile(bias, k) if k > 1 else bias, out=wide)
    # relu against a row of zeros: numpy's maximum with a scalar 0 measured ~3x slower
    _ACTIVATE[activation](wide, np.zeros(wide.shape[-1:], out.dtype), np)
    return out


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
                                grad=_bias_activation_grad, saves="outputs")


# --- backward: the pre-activation's cotangent and the bias's, in one op ------------------------
def _sum_over_rows(d, ndim):
    """``d`` summed over the axes of its last ``ndim`` but the last (the batch and any other
    axes the bias was broadcast along), keeping its extra leading (jacobian) axes."""
    lead = d.ndim - ndim
    if ndim == 1:
        return d.copy()  # a bias as long as y: nothing to sum (a new array, not d again)
    if array_module(d) is np and d.dtype in (np.float32, np.float64) and d.flags.c_contiguous:
        rows = math.prod(d.shape[lead:-1])
        stacked = d.reshape(d.shape[:lead] + (rows, d.shape[-1]))
        return np.ones(rows, d.dtype) @ stacked  # BLAS gemv: several times faster than sum()
    return d.sum(axis=tuple(range(lead, d.ndim - 1)), dtype=d.dtype)


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


def _bias_activation_grad_forward(g, out, *, activation):
    d = g * activation_slope(out, activation)
    return d, _sum_over_rows(d, out.ndim)


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
                                     num_outputs=2)


def _bias_add_grad_forward(g, *, ndim):
    return _sum_over_rows(g, ndim)


def _bias_add_grad_grad(op, gg):
    """The sum's gradient: ``gg`` broadcast back over the summed axes."""
    ndim = op.get_attr("ndim")
    g_shape = op.input_shape()
    lead = tuple(gg._value.shape[:gg._value.ndim - 1 - (len(g_shape) - ndim)])
    for _ in range(ndim - 1):
        gg = expand_dims(gg, -2)
    return broadcast_to(gg, lead + tuple(g_shape))


BIAS_ADD_GRAD = def_primitive("BiasAddGrad", _bias_add_grad_forward, grad=_bias_add_grad_grad)


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
