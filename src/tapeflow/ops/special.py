"""Elementwise math with guarded edges: the no-nan products and quotients, x*log(y), atan2, acosh.

Each is a primitive as in TensorFlow (``DivNoNan``, ``MulNoNan``, ``Xlogy``,
``Xlog1py``, ``Xdivy``, ``Atan2``, ``Acosh``) with TensorFlow's gradient,
written with these same ops so it can be differentiated again: where the guard
fires (``y == 0`` for the no-nan ops, ``x == 0`` for the x-ops) the output is a
constant zero and so is its gradient.  Binary ops broadcast; the tape sums a
gradient back to each input's shape.
"""
import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ._util import array_module, as_tensor, binary_operands
from .arithmetic import not_equal
from .elementwise import sinh, sqrt
from .reduce import reduce_sum
from .shape import cast
from ..dtypes import is_float_dtype, is_inexact_dtype

__all__ = ["divide_no_nan", "multiply_no_nan", "xlogy", "xlog1py", "xdivy", "atan2", "acosh",
           "nextafter", "reduce_euclidean_norm"]


def _float_operands(opname, x, y):
    x, y = binary_operands(opname, x, y)
    if not is_inexact_dtype(x._value.dtype):
        raise TypeError(f"{opname} takes floating-point tensors, not {x._value.dtype.name} "
                        f"(use tf.cast)")
    return x, y


def _guarded(fn):
    """``fn(xp, x, y)`` as a forward without numpy's inf/nan warnings (the guard removes them)."""
    def forward(x, y):
        xp = array_module(x, y)
        with np.errstate(all="ignore"):
            return fn(xp, x, y).astype(x.dtype, copy=False)
    forward.__qualname__ = fn.__qualname__
    return forward


def _div_no_nan(xp, x, y):
    return xp.where(y == 0, 0, x / xp.where(y == 0, 1, y))


def _mul_no_nan(xp, x, y):
    return xp.where(y == 0, 0, x * y)


def _xlogy(xp, x, y):
    return xp.where(x == 0, 0, x * xp.log(y))


def _xlog1py(xp, x, y):
    return xp.where(x == 0, 0, x * xp.log1p(y))


def _xdivy(xp, x, y):
    return xp.where(x == 0, 0, x / y)


def _div_no_nan_grad(op, g):
    # TensorFlow's: both partials are themselves div_no_nan, so they are 0 where y == 0.
    x, y = op.inputs
    needs = op.needs_input_grad
    gx = divide_no_nan(g, y) if needs[0] else None
    gy = g * divide_no_nan(divide_no_nan(-x, y), y) if needs[1] else None
    return gx, gy


DIV_NO_NAN = def_primitive("DivNoNan", _guarded(_div_no_nan), grad=_div_no_nan_grad,
                           saves="inputs")


def _mul_no_nan_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (multiply_no_nan(g, y) if needs[0] else None,
            multiply_no_nan(x, g) if needs[1] else None)


MUL_NO_NAN = def_primitive("MulNoNan", _guarded(_mul_no_nan), grad=_mul_no_nan_grad,
                           saves="inputs")


# TensorFlow's rules: the x-partial is 0 where x == 0 (the op is the constant 0 there, not x log y).
def _xlogy_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (g * xlogy(_nonzero(x), y) if needs[0] else None,
            g * xdivy(x, y) if needs[1] else None)


XLOGY = def_primitive("Xlogy", _guarded(_xlogy), grad=_xlogy_grad, saves="inputs")


def _xlog1py_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (g * xlog1py(_nonzero(x), y) if needs[0] else None,
            g * xdivy(x, y + 1.0) if needs[1] else None)


XLOG1PY = def_primitive("Xlog1py", _guarded(_xlog1py), grad=_xlog1py_grad, saves="inputs")


def _xdivy_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (g * xdivy(_nonzero(x), y) if needs[0] else None,
            g * xdivy(-x, y * y) if needs[1] else None)


XDIVY = def_primitive("Xdivy", _guarded(_xdivy), grad=_xdivy_grad, saves="inputs")


# --- divide_no_nan, multiply_no_nan ---------------------------------------------------------
@dispatches_symbols("math.divide_no_nan")
def divide_no_nan(x, y, name=None):
    """``x / y``, and 0 wherever ``y`` is 0 (even where ``x`` is 0, inf or nan)."""
    return apply(DIV_NO_NAN, _float_operands("divide_no_nan", x, y))


def multiply_no_nan(x, y, name=None):
    """``x * y``, and 0 wherever ``y`` is 0 (even where ``x`` is inf or nan)."""
    return apply(MUL_NO_NAN, _float_operands("multiply_no_nan", x, y))


# --- xlogy, xlog1py, xdivy --------------------------------------------------------------------
@dispatches_symbols("math.xlogy")
def xlogy(x, y, name=None):
    """``x * log(y)``, and 0 wherever ``x`` is 0 (even where ``y`` is 0)."""
    return apply(XLOGY, _float_operands("xlogy", x, y))


def xlog1py(x, y, name=None):
    """``x * log1p(y)``, and 0 wherever ``x`` is 0 (even where ``y`` is -1)."""
    return apply(XLOG1PY, _float_operands("xlog1py", x, y))


def xdivy(x, y, name=None):
    """``x / y``, and 0 wherever ``x`` is 0 (even where ``y`` is 0)."""
    return apply(XDIVY, _float_operands("xdivy", x, y))


def _nonzero(x):
    """1.0 where ``x`` is not 0, else 0.0: a constant (its derivative is zero almost everywhere)."""
    return cast(not_equal(x, 0.0), x._value.dtype)


# --- atan2, acosh -------------------------------------------------------------------------------
def _atan2_grad(op, g):
    y, x = op.inputs
    scale = g / (x * x + y * y)
    needs = op.needs_input_grad
    return (scale * x if needs[0] else None), (-scale * y if needs[1] else None)


ATAN2 = def_primitive("Atan2", lambda y, x: array_module(y, x).arctan2(y, x),
                      grad=_atan2_grad, saves="inputs")


@dispatches_symbols("math.atan2")
def atan2(y, x, name=None):
    """The angle of the point (x, y), elementwise, in [-pi, pi] (note the argument order)."""
    return apply(ATAN2, _float_operands("atan2", y, x))


# --- nextafter: the next representable float; TensorFlow registers no gradient for NextAfter ----
NEXTAFTER = def_primitive("NextAfter", lambda x1, x2: array_module(x1, x2).nextafter(x1, x2),
                          not_differentiable=True)


def nextafter(x1, x2, name=None):
    """The next representable value of ``x1`` in the direction of ``x2``, elementwise (float32
    or float64, as TensorFlow's kernel)."""
    x1, x2 = _float_operands("nextafter", x1, x2)
    if not is_float_dtype(x1._value.dtype):
        raise TypeError(f"nextafter takes float32 or float64 tensors, not {x1._value.dtype.name}")
    return apply(NEXTAFTER, (x1, x2))


def _acosh_forward(x):
    with np.errstate(all="ignore"):  # nan below 1, as TensorFlow, without a warning
        return array_module(x).arccosh(x)


def _acosh_grad(op, g):
    (y,) = op.outputs  # d acosh(x) / dx = 1 / sinh(acosh(x))
    return g / sinh(y)


ACOSH = def_primitive("Acosh", _acosh_forward, grad=_acosh_grad, saves="outputs")


@dispatches_symbols("math.acosh")
def acosh(x, name=None):
    """Inverse hyperbolic cosine (nan below 1)."""
    x = as_tensor(x)
    if not is_inexact_dtype(x._value.dtype):
        raise TypeError(f"Acosh takes a floating-point tensor, not {x._value.dtype.name} "
                        f"(use tf.cast)")
    return apply(ACOSH, (x,))


# --- reduce_euclidean_norm ------------------------------------------------------------------------
@dispatches_symbols("math.reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(sum(x ** 2))`` over ``axis``; integer tensors give an integer result (truncated),
    as in TensorFlow."""
    x = as_tensor(input_tensor)
    if x._value.dtype.kind in "iu":
        wide = cast(x, np.float64)
        return cast(sqrt(reduce_sum(wide * wide, axis=axis, keepdims=keepdims)), x._value.dtype)
    return sqrt(reduce_sum(x * x, axis=axis, keepdims=keepdims))
