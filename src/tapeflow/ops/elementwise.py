"""Unary elementwise math: forward in array code, gradient rule right below it.

Every rule multiplies the cotangent by the derivative written in tapeflow ops
on the saved input or output, so it holds for cotangents with extra leading
axes and can itself be differentiated.
"""
import math

import numpy as np

from .. import backend
from ..core.symbolic_dispatch import dispatches_symbols
from ..core.array_rows import TILE_FROM, wide_rows
from ..core.dispatch import apply, apply_unary
from ..core.registry import Inline, def_primitive
from ..core.tensor import Tensor
from ._util import array_module, as_tensor
from ..serialization import snake_case
# The op families stack one way: shape < elementwise < arithmetic < reduce; a family's
# ops and rules use only the families below it (tests/test_import_graph.py checks).
from . import shape as shape_ops
from .creation import zeros_like
from ..dtypes import is_float_dtype, is_inexact_dtype

__all__ = [
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh",
    "sigmoid", "softplus", "softsign", "relu", "relu6", "elu", "selu", "leaky_relu", "erf",
    "sign", "round", "floor", "ceil", "is_nan", "is_inf", "is_finite", "identity",
    "stop_gradient",
]


def _unary(opname, forward, *, quiet=False, float_only=True, **declaration):
    """Declare a one-input elementwise primitive and return its tapeflow function;
    ``declaration`` is def_primitive's gradient and kernel."""
    if quiet:
        plain = forward

        def forward(x):  # noqa: F811 - the same forward, without numpy's inf/nan warnings
            with np.errstate(all="ignore"):
                return plain(x)
        forward.__qualname__ = f"{opname}.forward"
    if float_only:
        forward = _in_input_dtype(forward)
    op = def_primitive(opname, forward, **declaration)

    def call(x, name=None):
        if not isinstance(x, Tensor):
            x = as_tensor(x)
        if float_only and not is_inexact_dtype(x._value.dtype):
            raise TypeError(f"{opname} takes a floating-point tensor, not {x._value.dtype.name} "
                            f"(use tf.cast)")
        return apply_unary(op, x)
    call.__name__ = call.__qualname__ = opname.lower()
    call.op = op
    return dispatches_symbols(_api_name(opname))(call)


def _in_input_dtype(kernel):
    """``kernel`` whose float result keeps a bfloat16 input's dtype: numpy promotes ml_dtypes'
    bfloat16 to float32 when a kernel's Python float literal meets it (``1.0 + x``), where
    numpy's own floats stay in their dtype."""
    def forward(x):
        out = kernel(x)
        if x.dtype.kind == "V" and out.dtype.kind == "f":
            return out.astype(x.dtype)
        return out
    forward.__qualname__ = getattr(kernel, "__qualname__", "forward")
    return forward


def _api_name(opname):
    """``tf.math.exp``'s name without ``tf.``: what a symbolic call of it is saved as."""
    name = snake_case(opname)
    return name if name in ("identity", "stop_gradient") else \
        f"nn.{name}" if name in ("relu", "relu6", "elu", "selu") else f"math.{name}"


def _xp(x):
    return array_module(x)


# --- exponentials and logarithms ------------------------------------------------------
def _exp_grad(op, g):
    (y,) = op.outputs
    return g * y


def _log_grad(op, g):
    (x,) = op.inputs
    return g / x


def _log1p_grad(op, g):
    (x,) = op.inputs
    return g / (x + 1.0)


def _expm1_grad(op, g):
    (y,) = op.outputs
    return g * (y + 1.0)


exp = _unary("Exp", lambda x: _xp(x).exp(x), quiet=True, grad=_exp_grad, saves="outputs")
log = _unary("Log", lambda x: _xp(x).log(x), quiet=True, grad=_log_grad, saves="inputs")
log1p = _unary("Log1p", lambda x: _xp(x).log1p(x), quiet=True, grad=_log1p_grad, saves="inputs")
expm1 = _unary("Expm1", lambda x: _xp(x).expm1(x), quiet=True, grad=_expm1_grad, saves="outputs")


# --- powers ------------------------------------------------------------------------------
def _sqrt_grad(op, g):
    (y,) = op.outputs
    return g * 0.5 / y


def _rsqrt_grad(op, g):
    (y,) = op.outputs
    return g * -0.5 * y * y * y


def _square_grad(op, g):
    (x,) = op.inputs
    return g * 2.0 * x


def _reciprocal_grad(op, g):
    (y,) = op.outputs
    return -g * y * y


def _square_kernel(in_types, attrs):
    return Inline("{0} * {0}")


sqrt = _unary("Sqrt", lambda x: _xp(x).sqrt(x), quiet=True, grad=_sqrt_grad, saves="outputs")
rsqrt = _unary("Rsqrt", lambda x: 1.0 / _xp(x).sqrt(x), quiet=True, grad=_rsqrt_grad,
               saves="outputs")
square = _unary("Square", lambda x: x * x, float_only=False, grad=_square_grad, saves="inputs",
                specialize=_square_kernel)
reciprocal = _unary("Reciprocal", lambda x: 1.0 / x, quiet=True, grad=_reciprocal_grad,
                    saves="outputs")


# --- trigonometric and hyperbolic ------------------------------------------------------------
def _sin_grad(op, g):
    (x,) = op.inputs
    return g * cos(x)


def _cos_grad(op, g):
    (x,) = op.inputs
    return -g * sin(x)


def _tan_grad(op, g):
    (y,) = op.outputs
    return g * (1.0 + y * y)


def _asin_grad(op, g):
    (x,) = op.inputs
    return g * rsqrt(1.0 - x * x)


def _acos_grad(op, g):
    (x,) = op.inputs
    return -g * rsqrt(1.0 - x * x)


def _atan_grad(op, g):
    (x,) = op.inputs
    return g / (1.0 + x * x)


def _sinh_grad(op, g):
    (x,) = op.inputs
    return g * cosh(x)


def _cosh_grad(op, g):
    (x,) = op.inputs
    return g * sinh(x)


def _tanh_grad(op, g):
    (y,) = op.outputs
    return g * (1.0 - y * y)


def _asinh_grad(op, g):
    (x,) = op.inputs
    return g * rsqrt(x * x + 1.0)


def _atanh_grad(op, g):
    (x,) = op.inputs
    return g / (1.0 - x * x)


sin = _unary("Sin", lambda x: _xp(x).sin(x), grad=_sin_grad, saves="inputs")
cos = _unary("Cos", lambda x: _xp(x).cos(x), grad=_cos_grad, saves="inputs")
tan = _unary("Tan", lambda x: _xp(x).tan(x), grad=_tan_grad, saves="outputs")
asin = _unary("Asin", lambda x: _xp(x).arcsin(x), quiet=True, grad=_asin_grad, saves="inputs")
acos = _unary("Acos", lambda x: _xp(x).arccos(x), quiet=True, grad=_acos_grad, saves="inputs")
atan = _unary("Atan", lambda x: _xp(x).arctan(x), grad=_atan_grad, saves="inputs")
sinh = _unary("Sinh", lambda x: _xp(x).sinh(x), quiet=True, grad=_sinh_grad, saves="inputs")
cosh = _unary("Cosh", lambda x: _xp(x).cosh(x), quiet=True, grad=_cosh_grad, saves="inputs")
tanh = _unary("Tanh", lambda x: _xp(x).tanh(x), grad=_tanh_grad, saves="outputs")
asinh = _unary("Asinh", lambda x: _xp(x).arcsinh(x), grad=_asinh_grad, saves="inputs")
atanh = _unary("Atanh", lambda x: _xp(x).arctanh(x), quiet=True, grad=_atanh_grad,
               saves="inputs")


# --- activations ----------------------------------------------------------------------------------
def _sigmoid_forward(x):
    xp = _xp(x)
    # Split by sign so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _softplus_forward(x):
    xp = _xp(x)
    return (xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))).astype(x.dtype, copy=False)


def _sigmoid_grad(op, g):
    (y,) = op.outputs
    return g * y * (1.0 - y)


def _softplus_grad(op, g):
    (x,) = op.inputs
    return g * sigmoid(x)


def _softsign_grad(op, g):
    (x,) = op.inputs
    d = 1.0 + abs(x)
    return g / (d * d)


sigmoid = _unary("Sigmoid", _sigmoid_forward, grad=_sigmoid_grad, saves="outputs")
softplus = _unary("Softplus", _softplus_forward, grad=_softplus_grad, saves="inputs")
softsign = _unary("Softsign", lambda x: x / (1.0 + _xp(x).abs(x)), grad=_softsign_grad,
                  saves="inputs")


def _mask(condition, like):
    """A 0/1 float mask: multiplying by it is several times faster than a select on large
    jacobian cotangents (which differs only where the cotangent is inf or nan)."""
    return shape_ops.cast(condition, like._value.dtype)


def _relu_grad(op, g):
    (y,) = op.outputs
    return apply(_RELU_GRAD, (g, y))


def _relu_kernel(in_types, attrs):
    """For floats, numpy's ufunc alone: a float array and the Python 0 keep the array's dtype
    (and CuPy arrays dispatch numpy's ufuncs to CuPy's).  From ``TILE_FROM`` elements of known
    shape, against a row of zeros through wide rows (``array_rows``): the same bits, faster."""
    ((shape, dtype),) = in_types
    if not is_float_dtype(dtype):
        return None
    if None in shape or not shape or math.prod(shape) < TILE_FROM:
        return Inline("np.maximum({0}, 0)")
    wide, _ = wide_rows(shape)
    zeros = np.zeros(wide[-1], dtype)  # read only, shared by every call

    def relu_wide_rows(x):
        return np.maximum(x.reshape(wide), zeros).reshape(shape)
    return relu_wide_rows


relu = _unary("Relu", lambda x: _xp(x).maximum(x, 0).astype(x.dtype, copy=False), float_only=False,
              grad=_relu_grad, saves="outputs", specialize=_relu_kernel)


def _relu_grad_grad(op, gg):
    _, y = op.inputs
    return apply(_RELU_GRAD, (gg, y)), None  # piecewise linear: nothing flows to y


def _relu_grad_kernel(in_types, attrs):
    return Inline("{0} * ({1} > 0)")


# Relu's gradient as one op, as TensorFlow's ReluGrad: the hottest rule of a training step.
# Multiplying by the boolean mask itself gives the same values as by a 0/1 float copy of it
# (numpy promotes the bools inside the multiply) without allocating that copy.
_RELU_GRAD = def_primitive("ReluGrad", lambda g, y: g * (y > 0), grad=_relu_grad_grad,
                           saves="inputs", specialize=_relu_grad_kernel)


def _relu6_grad(op, g):
    (x,) = op.inputs
    # ``&`` is Tensor's operator: logical_and's family (arithmetic) sits above this one
    return g * _mask((x > 0) & (x < 6), g)


def _elu_grad(op, g):
    (y,) = op.outputs  # elu(x) > 0 exactly when x > 0; below, elu' = e^x = y + 1
    return g * shape_ops.where(y > 0, 1.0, y + 1.0)


def _selu_grad(op, g):
    (y,) = op.outputs
    return g * shape_ops.where(y > 0, _SELU_SCALE, y + _SELU_SCALE * _SELU_ALPHA)


relu6 = _unary("Relu6", lambda x: _xp(x).clip(x, 0, 6).astype(x.dtype, copy=False),
               grad=_relu6_grad, saves="inputs")
elu = _unary("Elu", lambda x: _xp(x).where(x > 0, x, _xp(x).expm1(_xp(x).minimum(x, 0))).astype(x.dtype, copy=False),
             grad=_elu_grad, saves="outputs")

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
selu = _unary("Selu", lambda x: (_SELU_SCALE * _xp(x).where(
    x > 0, x, _SELU_ALPHA * _xp(x).expm1(_xp(x).minimum(x, 0)))).astype(x.dtype, copy=False),
    grad=_selu_grad, saves="outputs")


@dispatches_symbols("nn.leaky_relu")
def leaky_relu(features, alpha=0.2, name=None):
    features = as_tensor(features)
    return apply(_LEAKY_RELU, (features,), {"alpha": float(alpha)})


def _leaky_relu_grad(op, g):
    (x,) = op.inputs
    return shape_ops.where(x > 0, g, g * op.get_attr("alpha"))


_LEAKY_RELU = def_primitive(
    "LeakyRelu", lambda x, alpha: _xp(x).where(x > 0, x, x * alpha).astype(x.dtype, copy=False),
    grad=_leaky_relu_grad, saves="inputs")


def _erf_forward(x):
    return backend.special_function(x, "erf")(x).astype(x.dtype, copy=False)


def _erf_grad(op, g):
    (x,) = op.inputs
    return g * (2.0 / math.sqrt(math.pi)) * exp(-(x * x))


erf = _unary("Erf", _erf_forward, grad=_erf_grad, saves="inputs")


# --- rounding: TensorFlow's gradients are zero for sign, None for the rest ---------------------
def _sign_grad(op, g):
    return zeros_like(g)


sign = _unary("Sign", lambda x: _xp(x).sign(x), float_only=False, grad=_sign_grad)
round = _unary("Round", lambda x: _xp(x).round(x), float_only=False,  # noqa: A001 - half to even, as TF
               not_differentiable=True)
floor = _unary("Floor", lambda x: _xp(x).floor(x), not_differentiable=True)
ceil = _unary("Ceil", lambda x: _xp(x).ceil(x), not_differentiable=True)

is_nan = _unary("IsNan", lambda x: _xp(x).isnan(x), not_differentiable=True)
is_inf = _unary("IsInf", lambda x: _xp(x).isinf(x), not_differentiable=True)
is_finite = _unary("IsFinite", lambda x: _xp(x).isfinite(x), not_differentiable=True)


# --- identity and stop_gradient -------------------------------------------------------------------
def _identity_grad(op, g):
    return g


identity = _unary("Identity", lambda x: x, float_only=False, grad=_identity_grad)
stop_gradient = _unary("StopGradient", lambda x: x, float_only=False, not_differentiable=True)
