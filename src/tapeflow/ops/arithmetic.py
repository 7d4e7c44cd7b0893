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
from ..core.registry import Inline, NotDifferentiable, def_primitive, register_gradient
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


# --- add, subtract ------------------------------------------------------------
ADD = def_primitive("AddV2", operator.add)
SUB = def_primitive("Sub", operator.sub)


@dispatches_symbols("math.add")
def add(x, y, name=None):
    return _binary(ADD, "add", x, y)


@dispatches_symbols("math.subtract")
def subtract(x, y, name=None):
    return _binary(SUB, "subtract", x, y)


@register_gradient("AddV2")
def _add_grad(op, g):
    return g, g


@register_gradient("Sub")
def _sub_grad(op, g):
    return g, (-g if op.needs_input_grad[1] else None)


# --- multiply, divide --------------------------------------------------------------
MUL = def_primitive("Mul", operator.mul)
DIV = def_primitive("RealDiv", _quiet(operator.truediv))


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


@register_gradient("Mul", saves="inputs")
def _mul_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    return (g * y if needs[0] else None), (g * x if needs[1] else None)


@register_gradient("RealDiv", saves="inputs")
def _div_grad(op, g):
    x, y = op.inputs
    needs = op.needs_input_grad
    gx = g / y if needs[0] else None
    gy = -g * x / (y * y) if needs[1] else None
    return gx, gy


# --- floor division and modulo -----------------------------------------------------
FLOORDIV = def_primitive("FloorDiv", _quiet(operator.floordiv))
FLOORMOD = def_primitive("FloorMod", _quiet(operator.mod))
NotDifferentiable("FloorDiv")


@dispatches_symbols("math.floordiv")
def floordiv(x, y, name=None):
    return _binary(FLOORDIV, "floordiv", x, y)


@dispatches_symbols("math.floormod")
def floormod(x, y, name=None):
    return _binary(FLOORMOD, "floormod", x, y)


@register_gradient("FloorMod", saves="inputs")
def _floormod_grad(op, g):
    x, y = op.inputs
    return g, -g * elementwise_ops.floor(x / y)


# --- power -------------------------------------------------------------------------
POW = def_primitive("Pow", _quiet(operator.pow))


@dispatches_symbols("math.pow")
def pow(x, y, name=None):  # noqa: A001 - TensorFlow's name
    return _binary(POW, "pow", x, y)


@register_gradient("Pow", saves=("inputs", "outputs"))
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


# --- maximum, minimum, squared difference --------------------------------------------
MAXIMUM = def_primitive("Maximum", lambda x, y: array_module(x, y).maximum(x, y))
MINIMUM = def_primitive("Minimum", lambda x, y: array_module(x, y).minimum(x, y))
SQDIFF = def_primitive("SquaredDifference", lambda x, y: (x - y) * (x - y))


@dispatches_symbols("math.maximum")
def maximum(x, y, name=None):
    return _binary(MAXIMUM, "maximum", x, y)


@dispatches_symbols("math.minimum")
def minimum(x, y, name=None):
    return _binary(MINIMUM, "minimum", x, y)


@dispatches_symbols("math.squared_difference")
def squared_difference(x, y, name=None):
    return _binary(SQDIFF, "squared_difference", x, y)


@register_gradient("Maximum", saves="inputs")
def _maximum_grad(op, g):
    x, y = op.inputs
    x_wins = x >= y  # ties go to x, as in TensorFlow
    return shape_ops.where(x_wins, g, 0.0), shape_ops.where(x_wins, 0.0, g)


@register_gradient("Minimum", saves="inputs")
def _minimum_grad(op, g):
    x, y = op.inputs
    x_wins = x <= y
    return shape_ops.where(x_wins, g, 0.0), shape_ops.where(x_wins, 0.0, g)


@register_gradient("SquaredDifference", saves="inputs")
def _sqdiff_grad(op, g):
    x, y = op.inputs
    d = g * 2.0 * (x - y)
    return d, (-d if op.needs_input_grad[1] else None)


# --- unary minus and abs (operators) ---------------------------------------------------
NEG = def_primitive("Neg", operator.neg)


def _inline(expression):
    """The specializer of an op whose forward is exactly a Python operator."""
    template = Inline(expression)
    return lambda in_types, attrs: template


# In a compiled graph these are written as the operators themselves (the same ufuncs).
ADD.specialize = _inline("{0} + {1}")
SUB.specialize = _inline("{0} - {1}")
MUL.specialize = _inline("{0} * {1}")
NEG.specialize = _inline("-{0}")
ABS = def_primitive("Abs", abs)


@dispatches_symbols("math.negative")
def negative(x, name=None):
    x = x if isinstance(x, Tensor) else _as_tensor(x)
    return apply(NEG, (x,))


@dispatches_symbols("math.abs")
def abs_(x, name=None):
    x = x if isinstance(x, Tensor) else _as_tensor(x)
    return apply(ABS, (x,))


@register_gradient("Neg")
def _neg_grad(op, g):
    return -g


@register_gradient("Abs", saves="inputs")
def _abs_grad(op, g):
    (x,) = op.inputs
    return g * elementwise_ops.sign(x)


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
def _compare(name, fn):
    op = def_primitive(name, fn)
    NotDifferentiable(name)
    return op


EQUAL = _compare("Equal", operator.eq)
NOT_EQUAL = _compare("NotEqual", operator.ne)
LESS = _compare("Less", operator.lt)
LESS_EQUAL = _compare("LessEqual", operator.le)
GREATER = _compare("Greater", operator.gt)
GREATER_EQUAL = _compare("GreaterEqual", operator.ge)
LOGICAL_AND = _compare("LogicalAnd", lambda x, y: array_module(x, y).logical_and(x, y))
LOGICAL_OR = _compare("LogicalOr", lambda x, y: array_module(x, y).logical_or(x, y))
LOGICAL_XOR = _compare("LogicalXor", lambda x, y: array_module(x, y).logical_xor(x, y))
LOGICAL_NOT = _compare("LogicalNot", lambda x: array_module(x).logical_not(x))


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
