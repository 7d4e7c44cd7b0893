"""A loaded graph's declarations checked against what its ops really do, before it runs.

A save declares every value's type, and compiled graphs trust those types (a specialized
``Mean`` divides by its input's declared count).  So after a graph is decoded:

1. every attribute whose name says what it holds (``keepdims`` a bool, ``axes`` ints or None,
   ``multiples`` non-negative ints ...) is checked for that kind: the names mean the same thing
   across the whole op registry, so one table by name covers every op, and a ``keepdims: NaN``
   or ``axes: 10**30`` is refused here instead of failing at the first call;
2. each equation's output size is bounded from its inputs' real shapes and its attributes by
   the op's size rule (``Tile`` by its ``multiples``, a matmul by both operands ...), and
   refused past the cap, before anything is allocated;
3. the equation then runs on zeros of its inputs' real shapes (a dry run, on the host, within
   a byte budget), and the shapes and dtypes it makes must be the declared ones.

Only ops with a size rule are dry-run; the others (control flow, random draws, effects,
gradient-only ops) keep their declared output types and are checked where their results are
used.  Unknown dimensions (None) are run as 1 and match any size.
"""
import math

import numpy as np

from .. import backend
from ..tracing.ir import ASSIGN, READ

__all__ = ["BYTES", "DeclarationError", "check_attribute_kinds", "check_declarations"]

BYTES = 2 << 30  # the most one output, and a dry run in all, may allocate (settable)
_INT_RANGE = 2 ** 31


class DeclarationError(ValueError):
    """A graph whose declarations or attributes are not what its ops make or accept."""


# --- 1. attribute kinds ------------------------------------------------------------------------
def _is_int(v):
    return (type(v) is int or isinstance(v, np.integer)) and -_INT_RANGE < v < _INT_RANGE


def _is_ints(v, minimum=-_INT_RANGE):
    if isinstance(v, (list, tuple)):
        return all(_is_ints(x, minimum) for x in v)
    return _is_int(v) and v >= minimum


_BOOL = ("a bool", lambda v: type(v) is bool or isinstance(v, np.bool_))
_COUNT = ("a non-negative int", lambda v: _is_int(v) and v >= 0)
_KINDS = {
    **dict.fromkeys(("keepdims", "transpose_a", "transpose_b", "exclusive", "reverse",
                     "descending", "full_matrices", "lower", "adjoint"), _BOOL),
    **dict.fromkeys(("depth", "num", "k", "num_segments", "num_classes", "num_samples",
                     "size", "n_vars", "n_elems", "batch_ndim"), _COUNT),
    "axis": ("an int or None", lambda v: v is None or _is_int(v)),
    "axes": ("ints or None", lambda v: v is None or _is_ints(v)),
    "multiples": ("non-negative ints", lambda v: _is_ints(v, 0)),
    "paddings": ("non-negative ints", lambda v: _is_ints(v, 0)),
    "perm": ("ints", _is_ints),
    **dict.fromkeys(("strides", "dilations", "ksize"), ("positive ints",
                                                        lambda v: _is_ints(v, 1))),
    "pads": ("non-negative ints", lambda v: _is_ints(v, 0)),
}


def check_attribute_kinds(op_name, attrs, what):
    """Refuse an attribute of the wrong kind, naming the equation (``what``) and attribute."""
    for name, value in attrs.items():
        kind = _KINDS.get(name)
        if kind is not None and not kind[1](value):
            raise DeclarationError(f"{what}: attribute '{name}' is {_short(value)}, but "
                                   f"{op_name} takes {kind[0]} there")


# --- 2. size rules: an upper bound on an equation's output elements ----------------------------
def _n(shape):
    return math.prod(int(d) for d in shape)


def _operands(ins, _):
    return sum(_n(s) for s in ins)


def _broadcast(ins, _):
    return _n(np.broadcast_shapes(*ins))


def _matmul(ins, attrs):
    a, b = ins
    if len(a) < 2 or len(b) < 2:
        return _operands(ins, attrs)
    rows = a[-1] if attrs.get("transpose_a") else a[-2]
    cols = b[-2] if attrs.get("transpose_b") else b[-1]
    return _n(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))) * rows * cols


def _einsum(ins, attrs):
    """Every output letter's size, from the operands that carry it."""
    equation = attrs.get("equation")
    if not isinstance(equation, str) or "->" not in equation or "." in equation:
        raise DeclarationError(f"einsum equation {_short(equation)} is not 'ab,bc->ac' form")
    sources, result = equation.replace(" ", "").split("->")
    sizes = {}
    for letters, shape in zip(sources.split(","), ins):
        for letter, d in zip(letters, shape):
            sizes[letter] = max(sizes.get(letter, 1), int(d))
    return math.prod(sizes.get(letter, 1) for letter in result)


def _tile(ins, attrs):
    return _n(ins[0]) * _n(attrs["multiples"])


def _pad(ins, attrs):
    return math.prod(int(d) + sum(p) for d, p in zip(ins[0], attrs["paddings"]))


def _window_positions(x, window, strides, dilations, pads):
    """Batch positions times output positions of a 2-D window op on NHWC ``x`` (at most: a
    stride of 1 on the padded input)."""
    spatial = [int(d) + sum(p) - (k - 1) * r for d, p, k, r in zip(x[-3:-1], pads, window,
                                                                     dilations)]
    return _n(x[:-3]) * math.prod(max(d, 0) for d in spatial)


def _conv2d(ins, attrs):
    x, w = ins
    return _window_positions(x, w[-4:-2], attrs["strides"], attrs["dilations"], attrs["pads"]) \
        * (_n(w[-4:-1]) + w[-1])  # its im2col columns and its output


def _pool(ins, attrs):
    x = ins[0]
    return _window_positions(x, attrs["ksize"], attrs["strides"], (1, 1), attrs["pads"]) \
        * _n(attrs["ksize"]) * x[-1]


def _gather(ins, attrs):
    params, indices = ins
    axis = attrs["axis"]
    return _n(indices) * _n(params) // max(params[axis], 1)


_SIZE_RULES = {
    "Conv2D": _conv2d, "MaxPool": _pool, "AvgPool": _pool, "GatherV2": _gather,
    "Tile": _tile, "PadV2": _pad,
    "BroadcastTo": lambda ins, attrs: _n(attrs["shape"]),
    "Reshape": lambda ins, attrs: _n(ins[0]),
    "OneHot": lambda ins, attrs: _n(ins[0]) * attrs["depth"],
    "BatchMatMulV2": _matmul, "Einsum": _einsum,
    **dict.fromkeys(("AddV2", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Maximum",
                     "Minimum", "SquaredDifference", "Equal", "NotEqual", "Less", "LessEqual",
                     "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr", "LogicalXor",
                     "SelectV2", "DivNoNan", "MulNoNan", "Xlogy", "Xlog1py", "Xdivy", "Atan2",
                     "NextAfter", "ReluGrad", "SigmoidCrossEntropyWithLogits"), _broadcast),
    # no larger than their operands: elementwise, reductions, rearrangements
    **dict.fromkeys(("Exp", "Log", "Log1p", "Expm1", "Sqrt", "Rsqrt", "Square", "Reciprocal",
                     "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh",
                     "Asinh", "Acosh", "Atanh", "Sigmoid", "Softplus", "Softsign", "Relu",
                     "Relu6", "Elu", "Selu", "LeakyRelu", "Erf", "Sign", "Round", "Floor",
                     "Ceil", "IsNan", "IsInf", "IsFinite", "Identity", "StopGradient", "Neg",
                     "Abs", "LogicalNot", "Cast", "Sum", "Mean", "Max", "Min", "Prod", "Any",
                     "All", "ArgMax", "ArgMin", "Cumsum", "Cumprod", "Transpose", "ConcatV2",
                     "ReverseV2", "Softmax", "LogSoftmax", "Roll", "ArgSort"), _operands),
}


# --- 3. the dry run ------------------------------------------------------------------------------
def check_declarations(graph, where):
    """Refuse ``graph`` (``where`` names it in messages) if an equation would allocate past ``BYTES`` or makes other shapes or
    dtypes than the graph declares (see the module's docstring)."""
    real = {}  # value id -> a host array of its real shape (zeros, or the saved data)
    budget = [BYTES]

    def take(shape, dtype, what):
        nbytes = _n(shape) * np.dtype(dtype).itemsize
        if nbytes > budget[0]:
            raise DeclarationError(f"{what} would allocate {nbytes / 2**30:.1f} GiB, past the "
                                   f"{budget[0] / 2**30:.1f} GiB left of the cap on a loaded "
                                   f"graph's dry run")
        budget[0] -= nbytes

    def declared_zeros(vid, what):
        shape, dtype = graph.types[vid]
        shape = tuple(1 if d is None else d for d in shape)
        take(shape, dtype, what)
        return np.zeros(shape, dtype)

    for vid in graph.inputs:
        real[vid] = declared_zeros(vid, f"{where}: input {vid}")
    for vid, value in graph.consts.items():
        real[vid] = np.asarray(backend.to_host(value))
    for k, e in enumerate(graph.eqns):
        what = f"{where}: equation {k} ({e.op.name})"
        rule = _SIZE_RULES.get(e.op.name)
        if e.op is READ:
            value = graph.variables[e.attrs["variable"]]._value
            real[e.outputs[0]] = np.asarray(backend.to_host(value))
            _compare(graph, e.outputs[0], real[e.outputs[0]], what)
            continue
        if rule is None or e.op is ASSIGN or any(i not in real for i in e.inputs):
            for vid in e.outputs:  # not run: its declared types stand
                real[vid] = declared_zeros(vid, f"the output of {what}")
            continue
        inputs = [real[i] for i in e.inputs]
        try:
            elements = rule([x.shape for x in inputs], e.attrs)
        except (KeyError, TypeError, ValueError) as err:
            raise DeclarationError(f"{what}: its attributes or operand shapes do not fit the "
                                   f"op ({err})") from None
        itemsize = max([graph.types[o][1].itemsize for o in e.outputs] or [1])
        take((elements,), np.dtype(f"V{itemsize}"), f"{what} (by its operand shapes "
             f"{[list(x.shape) for x in inputs]} and attributes)")
        try:
            outs = e.op.forward(*inputs, **e.attrs)
        except Exception as err:  # noqa: BLE001 - any failure of the op is the file's fault
            raise DeclarationError(f"{what} cannot run on operands of shapes "
                                   f"{[list(x.shape) for x in inputs]}: "
                                   f"{type(err).__name__}: {err}") from None
        outs = outs if isinstance(outs, tuple) else (outs,)
        if len(outs) != len(e.outputs):
            raise DeclarationError(f"{what} makes {len(outs)} results; the graph declares "
                                   f"{len(e.outputs)}")
        for vid, out in zip(e.outputs, outs):
            real[vid] = np.asarray(out)
            _compare(graph, vid, real[vid], what)


def _compare(graph, vid, array, what):
    shape, dtype = graph.types[vid]
    fits = len(shape) == array.ndim and all(d is None or d == r
                                            for d, r in zip(shape, array.shape))
    if not fits or array.dtype != dtype:
        declared = [d for d in shape]
        raise DeclarationError(f"{what} makes {array.dtype.name}{list(array.shape)} as value "
                               f"{vid}, but the graph declares {np.dtype(dtype).name}{declared}")


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
