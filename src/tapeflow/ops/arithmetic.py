"""Binary arithmetic, comparisons and logic: the ops behind Tensor's operators.

These are the hottest ops (a Python loop of ``y = y * 0.999 + s`` is nothing
else), so their wrappers take a short path when both operands are plain
tensors of one dtype; the tape sums a gradient back to a broadcast input's
shape, so no rule here deals with broadcasting.
"""
import operator

import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply, apply_binary
from ..core.registry import Inline, def_primitive
from ..core.tensor import Tensor, Variable
# The op families stack one way: shape < elementwise < arithmetic < reduce; a family's
# ops and rules use only the families below it (tests/test_import_graph.py checks).
from . import elementwise as elementwise_ops, shape as shape_ops
from ._util import array_module, as_tensor as _as_tensor, binary_operands

__all__ = [
    "add", "subtract", "multiply", "divide", "floordiv", "floormod", "pow", "negative", "abs_",
    "maximum", "minimum", "squared_difference", "add_n",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not",
]


def _binary(op, opname, x, y):
    if (x.__class__ not in _PLAIN or y.__class__ not in _PLAIN
            or x._value.dtype != y._value.dtype):
        x, y = binary_operands(opname, x, y)
    return apply_binary(op, x, y)


_PLAIN = frozenset((Tensor, Variable))  # operand classes that need no conversion


def _quiet(fn):
    """Forward code where inf and nan are expected results, not something to warn about."""
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    run.__name__ = run.__qualname__ = fn.__name__
    run.__module__ = __name__
    return run


def _inline(expression):
    """The specializer of an op whose forward is exactly a Python operator: in a compiled
    graph it is written as the operator itself (the same ufunc)."""
    template = Inline(expression)
    return lambda in_types, attrs: template


# --- add, subtract ------------------------------------------------------------
def _add_grad(op, g):
    return g, g


def _sub_grad(op, g):
    return g, (-g if op.needs_input_grad[1] else None)


ADD = def_primitive("AddV2", operator.add, grad=_add_grad, specialize=_inline("{0} + {1}"))
SUB = def_primitive("Sub", operator.sub, grad=_sub_grad, specialize=_inline("{0} - {1}"))


@dispatches_symbols("math.add")
def add(x, y, name=None):
    return _binary(ADD, "add", x, y)


@dispatches_symbols("math.subtract")
def subtract(x, y, name=None):
    return _binary(SUB, "subtract", x, y)


# --- multiply, divide --------------------------------------------------------------
def _mul_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (g * y if needs[0] else None), (g * x if needs[1] else None)


def _div_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    gx = g / y if needs[0] else None
    gy = -g * x / (y * y) if needs[1] else None
    return gx, gy


MUL = def_primitive("Mul", operator.mul, grad=_mul_grad, saves="inputs",
                    specialize=_inline("{0} * {1}"))
DIV = def_primitive("RealDiv", _quiet(operator.truediv), grad=_div_grad, saves="inputs")


@dispatches_symbols("math.multiply")
def multiply(x, y, name=None):
    return _binary(MUL, "multiply", x, y)


@dispatches_symbols("math.divide")
def divide(x, y, name=None):
    if type(x) is not Tensor or type(y) is not Tensor or x._value.dtype != y._value.dtype:
        x, y = binary_operands("divide", x, y)
    if x._value.dtype.kind in "iub":  # TensorFlow's truediv: int32 -> float64
        x, y = shape_ops.cast(x, "float64"), shape_ops.cast(y, "float64")
    return _binary(DIV, "divide", x, y)


# --- floor division and modulo -----------------------------------------------------
def _floormod_grad(op, g):
    x, y = op.inputs
    return g, -g * elementwise_ops.floor(x / y)


FLOORDIV = def_primitive("FloorDiv", _quiet(operator.floordiv), not_differentiable=True)
FLOORMOD = def_primitive("FloorMod", _quiet(operator.mod), grad=_floormod_grad, saves="inputs")


@dispatches_symbols("math.floordiv")
def floordiv(x, y, name=None):
    return _binary(FLOORDIV, "floordiv", x, y)


@dispatches_symbols("math.floormod")
def floormod(x, y, name=None):
    return _binary(FLOORMOD, "floormod", x, y)


# --- power -------------------------------------------------------------------------
def _pow_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    gx = g * y * x ** (y - 1) if needs[0] else None
    gy = None
    if needs[1]:
        (out,) = op.outputs
        safe_log = shape_ops.where(x > 0, elementwise_ops.log(shape_ops.where(x > 0, x, 1)), 0)  # TensorFlow: 0 where x <= 0
        gy = g * out * safe_log
    return gx, gy


POW = def_primitive("Pow", _quiet(operator.pow), grad=_pow_grad, saves=("inputs", "outputs"))


@dispatches_symbols("math.pow")
def pow(x, y, name=None):  # noqa: A001 - TensorFlow's name
    return _binary(POW, "pow", x, y)


# --- maximum, minimum, squared difference --------------------------------------------
def _maximum_grad(op, g):
    x, y = op.inputs
    x_wins = x >= y  # ties go to x, as in TensorFlow
    return shape_ops.where(x_wins, g, 0.0), shape_ops.where(x_wins, 0.0, g)


def _minimum_grad(op, g):
    x, y = op.inputs
    x_wins = x <= y
    return shape_ops.where(x_wins, g, 0.0), shape_ops.where(x_wins, 0.0, g)


def _sqdiff_grad(op, g):
    x, y = op.inputs
    d = g * 2.0 * (x - y)
    return d, (-d if op.needs_input_grad[1] else None)


MAXIMUM = def_primitive("Maximum", lambda x, y: array_module(x, y).maximum(x, y),
                        grad=_maximum_grad, saves="inputs")
MINIMUM = def_primitive("Minimum", lambda x, y: array_module(x, y).minimum(x, y),
                        grad=_minimum_grad, saves="inputs")
SQDIFF = def_primitive("SquaredDifference", lambda x, y: (x - y) * (x - y),
                       grad=_sqdiff_grad, saves="inputs")


@dispatches_symbols("math.maximum")
def maximum(x, y, name=None):
    return _binary(MAXIMUM, "maximum", x, y)


@dispatches_symbols("math.minimum")
def minimum(x, y, name=None):
    return _binary(MINIMUM, "minimum", x, y)


@dispatches_symbols("math.squared_difference")
def squared_difference(x, y, name=None):
    return _binary(SQDIFF, "squared_difference", x, y)


# --- unary minus and abs (operators) ---------------------------------------------------
def _neg_grad(op, g):
    return -g


def _abs_grad(op, g):
    (x,) = op.inputs
    return g * elementwise_ops.sign(x)


NEG = def_primitive("Neg", operator.neg, grad=_neg_grad, specialize=_inline("-{0}"))
ABS = def_primitive("Abs", abs, grad=_abs_grad, saves="inputs")


@dispatches_symbols("math.negative")
def negative(x, name=None):
    x = x if isinstance(x, Tensor) else _as_tensor(x)
    return apply(NEG, (x,))


@dispatches_symbols("math.abs")
def abs_(x, name=None):
    x = x if isinstance(x, Tensor) else _as_tensor(x)
    return apply(ABS, (x,))


@dispatches_symbols("math.add_n")
def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n needs at least one tensor")
    total = inputs[0] if isinstance(inputs[0], Tensor) else _as_tensor(inputs[0])
    for t in inputs[1:]:
        total = total + t
    return total


# --- comparisons and logic: boolean results, never differentiable -------------------
EQUAL = def_primitive("Equal", operator.eq, not_differentiable=True)
NOT_EQUAL = def_primitive("NotEqual", operator.ne, not_differentiable=True)
LESS = def_primitive("Less", operator.lt, not_differentiable=True)
LESS_EQUAL = def_primitive("LessEqual", operator.le, not_differentiable=True)
GREATER = def_primitive("Greater", operator.gt, not_differentiable=True)
GREATER_EQUAL = def_primitive("GreaterEqual", operator.ge, not_differentiable=True)
LOGICAL_AND = def_primitive("LogicalAnd", lambda x, y: array_module(x, y).logical_and(x, y),
                            not_differentiable=True)
LOGICAL_OR = def_primitive("LogicalOr", lambda x, y: array_module(x, y).logical_or(x, y),
                           not_differentiable=True)
LOGICAL_XOR = def_primitive("LogicalXor", lambda x, y: array_module(x, y).logical_xor(x, y),
                            not_differentiable=True)
LOGICAL_NOT = def_primitive("LogicalNot", lambda x: array_module(x).logical_not(x),
                            not_differentiable=True)


def _comparison(op, opname, x, y):
    x, y = binary_operands(opname, x, y)
    return apply_binary(op, x, y)


@dispatches_symbols("math.equal")
def equal(x, y, name=None):
    return _comparison(EQUAL, "equal", x, y)


@dispatches_symbols("math.not_equal")
def not_equal(x, y, name=None):
    return _comparison(NOT_EQUAL, "not_equal", x, y)


@dispatches_symbols("math.less")
def less(x, y, name=None):
    return _comparison(LESS, "less", x, y)


@dispatches_symbols("math.less_equal")
def less_equal(x, y, name=None):
    return _comparison(LESS_EQUAL, "less_equal", x, y)


@dispatches_symbols("math.greater")
def greater(x, y, name=None):
    return _comparison(GREATER, "greater", x, y)


@dispatches_symbols("math.greater_equal")
def greater_equal(x, y, name=None):
    return _comparison(GREATER_EQUAL, "greater_equal", x, y)


def _logical_operands(opname, x, y):
    x, y = binary_operands(opname, x, y)
    if x._value.dtype.kind != "b":
        raise TypeError(f"{opname} takes bool tensors, not {x._value.dtype.name}")
    return x, y


@dispatches_symbols("math.logical_and")
def logical_and(x, y, name=None):
    return apply(LOGICAL_AND, _logical_operands("logical_and", x, y))


@dispatches_symbols("math.logical_or")
def logical_or(x, y, name=None):
    return apply(LOGICAL_OR, _logical_operands("logical_or", x, y))


@dispatches_symbols("math.logical_xor")
def logical_xor(x, y, name=None):
    return apply(LOGICAL_XOR, _logical_operands("logical_xor", x, y))


@dispatches_symbols("math.logical_not")
def logical_not(x, name=None):
    x = _as_tensor(x)
    if x._value.dtype.kind != "b":
        raise TypeError(f"logical_not takes a bool tensor, not {x._value.dtype.name}")
    return apply(LOGICAL_NOT, (x,))
