"""Tensor's Python operators, installed on the core's Tensor class by ``install()``.

The core defines Tensor without its arithmetic so that it never imports the
ops (Chainer's ``install_variable_arithmetics``, JAX's array methods).
``tapeflow.ops`` calls ``install()`` once, at import.
"""
from ..core import installed_ops
from ..core.tensor import Tensor, Variable
from .arithmetic import (
    abs_, add, divide, equal, floordiv, floormod, greater, greater_equal, less, less_equal,
    logical_and, logical_not, logical_or, logical_xor, multiply, negative, not_equal, pow,
    subtract,
)
from .creation import ones_like, zeros_on
from .elementwise import square
from .linalg import matmul
from .shape import broadcast_to, cast, concat, expand_dims, moveaxis, reshape, stack
from .traced_index import getitem as traced_getitem

__all__ = ["install"]


def _radd(self, other):
    return add(other, self)


def _rsub(self, other):
    return subtract(other, self)


def _rmul(self, other):
    return multiply(other, self)


def _rtruediv(self, other):
    return divide(other, self)


def _rfloordiv(self, other):
    return floordiv(other, self)


def _rmod(self, other):
    return floormod(other, self)


def _pow(self, other):
    if other.__class__ is int and other == 2 or other.__class__ is float and other == 2.0:
        return square(self)  # the same value and gradient, without Pow's log branch
    return pow(self, other)


def _rpow(self, other):
    return pow(other, self)


def _rmatmul(self, other):
    return matmul(other, self)


def _pos(self):
    return self


def _eq(self, other):
    if other is None:
        return False
    return equal(self, other)


def _ne(self, other):
    if other is None:
        return True
    return not_equal(self, other)


_TENSOR_OPERATORS = {
    "__add__": add, "__radd__": _radd, "__sub__": subtract, "__rsub__": _rsub,
    "__mul__": multiply, "__rmul__": _rmul, "__truediv__": divide, "__rtruediv__": _rtruediv,
    "__floordiv__": floordiv, "__rfloordiv__": _rfloordiv, "__mod__": floormod, "__rmod__": _rmod,
    "__pow__": _pow, "__rpow__": _rpow, "__matmul__": matmul, "__rmatmul__": _rmatmul,
    "__neg__": negative, "__pos__": _pos, "__abs__": abs_, "__invert__": logical_not,
    "__and__": logical_and, "__or__": logical_or, "__xor__": logical_xor,
    "__lt__": less, "__le__": less_equal, "__gt__": greater, "__ge__": greater_equal,
    "__eq__": _eq, "__ne__": _ne, "__getitem__": traced_getitem,
}


def install():
    """Give Tensor its operators and the core the ops it applies (idempotent)."""
    for name, fn in _TENSOR_OPERATORS.items():
        setattr(Tensor, name, fn)
    # ``v += 1`` on a Variable gives a new Tensor, as in TensorFlow; it never assigns.
    Variable.__iadd__ = add
    Variable.__isub__ = subtract
    installed_ops.install(broadcast_to=broadcast_to, cast=cast, concat=concat,
                          expand_dims=expand_dims, moveaxis=moveaxis, ones_like=ones_like,
                          reshape=reshape, stack=stack, zeros_on=zeros_on)
