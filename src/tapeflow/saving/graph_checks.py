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

Every op registered has a size rule (a test walks the registry); an op whose size its
operands' values decide (a ``SegmentSum`` without ``num_segments``) has one that says so.
Control flow, random draws, effects, collective ops and the decompositions that fail on a
singular matrix of zeros are bounded but not run: their declared types stand, and the
graphs they hold (branches, bodies, gradients) are checked as the graph is.  Unknown
dimensions (None) are run as 1 and match any size.
"""
import math

import numpy as np

from .. import backend
from ..tracing.ir import ASSIGN, READ, Graph

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
                     "size", "n_vars", "n_elems", "batch_ndim", "length", "nb"), _COUNT),
    "axis": ("an int or None", lambda v: v is None or _is_int(v)),
    "axes": ("ints or None", lambda v: v is None or _is_ints(v)),
    "multiples": ("non-negative ints", lambda v: _is_ints(v, 0)),
    "paddings": ("non-negative ints", lambda v: _is_ints(v, 0)),
    "perm": ("ints", _is_ints),
    **dict.fromkeys(("strides", "dilations", "ksize"), ("positive ints",
                                                        lambda v: _is_ints(v, 1))),
    "pads": ("non-negative ints", lambda v: _is_ints(v, 0)),
    **dict.fromkeys(("input_hw", "filter_hw"), ("non-negative ints", lambda v: _is_ints(v, 0))),
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


def _declared_elements(graph):
    """Elements of a nested graph's declared results (an unknown dimension counted as 1)."""
    return sum(_n(1 if d is None else d for d in graph.types[o][0])
               for o in graph.outputs if o is not None)


def _if(ins, attrs):
    return _operands(ins, attrs) + max(_declared_elements(attrs["then_branch"]),
                                       _declared_elements(attrs["else_branch"]))


def _map(ins, attrs):
    rows = ins[0][0] if attrs["n_elems"] and ins and ins[0] else 0
    return _operands(ins, attrs) + rows * _declared_elements(attrs["fn"])


def _sequence(ins, attrs):
    """A recurrent layer's whole sequence: (batch, time) rows of at most the widest operand's
    last dimension (its gates), for each result, and its operands."""
    x = ins[0]
    widest = max((int(s[-1]) for s in ins if len(s)), default=1)
    return 4 * _n(x[:2]) * widest + 2 * _operands(ins, attrs)


def _replaced_axis(operand, axis, size):
    """Elements of ``operand`` with its dimension ``axis`` (from the left) made ``size``."""
    return _n(operand) // max(int(operand[axis]), 1) * size if operand else size


def _strided_slice(ins, attrs):
    """Basic slices take no more than ``x``; each index array can repeat what it picks."""
    arrays = [np.shape(i) for i in attrs["index"] if isinstance(i, np.ndarray) or
              backend.is_array(i)]
    return _n(ins[0]) * math.prod(max(_n(a), 1) for a in arrays)


def _data_dependent(count):
    """An op whose size a count attribute gives, or (None) its operands' values: then it is not
    run (its declared type stands, its size charged like any declared value's)."""
    def rule(ins, attrs):
        n = attrs[count]
        return None if n is None else _replaced_axis(ins[0], 0, n)
    return rule


def _decomposition(ins, attrs):
    """Q and R, U, S and V of a batch of m x n matrices: at most three max(m, n)-square ones."""
    a = ins[0]
    return _n(a[:-2]) * 3 * max(int(a[-1]), int(a[-2])) ** 2 if len(a) >= 2 else _n(a)


def _conv_backprop_filter(ins, attrs):
    x, dy = ins
    window = _n(attrs["filter_hw"])
    return _window_positions(x, attrs["filter_hw"], attrs["strides"], attrs["dilations"],
                             attrs["pads"]) * window * x[-1] + window * x[-1] * dy[-1]


def _conv_backprop_input(ins, attrs):
    dy, w = ins
    return _n(dy[:-1]) * _n(w[:-1]) + dy[0] * _n(attrs["input_hw"]) * w[-2]


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
                     "ReverseV2", "Softmax", "LogSoftmax", "Roll", "ArgSort",
                     "AdjustContrastv2", "ApplyAdaMax", "ApplyAdagrad", "ApplyAdam",
                     "ApplyAdamWithAmsgrad", "ApplyGradientDescent", "ApplyLion", "ApplyMomentum",
                     "ApplyNadam", "ApplyRMSProp", "NadamMomentumProduct", "GlobalNorm",
                     "CheckClassIndices", "Cholesky", "MatrixDeterminant", "MatrixInverse",
                     "MatrixSolve", "MatrixTriangularSolve", "LogMatrixDeterminant",
                     "MatrixPinv", "IdentityN", "Unpack", "InTopKV2", "SearchSorted",
                     "MetricSums", "MetricValues", "MaxPoolGrad", "MaxPoolGradGrad", "SumToShape",
                     "RandomShuffle", "MPIAllReduceSum", "While", "WhileGrad", "LayerNorm",
                     "LayerNormGrad", "BiasActivationGrad", "BiasAddGrad"), _operands),
    "BiasActivation": _broadcast,
    "SelfAdjointEigV2": lambda ins, attrs: 2 * _operands(ins, attrs),
    # effects: no results
    **dict.fromkeys(("Assert", "CheckNumerics", "PrintV2"), lambda ins, attrs: 0),
    # sized by their attributes
    "If": _if, "MapFn": _map, "StridedSlice": _strided_slice,
    **dict.fromkeys(("GRUSequence", "LSTMSequence", "SimpleRNNSequence", "GRUSequenceGrad",
                     "LSTMSequenceGrad", "SimpleRNNSequenceGrad"), _sequence),
    **dict.fromkeys(("RandomUniform", "RandomStandardNormal", "TruncatedNormal"),
                    lambda ins, attrs: _n(attrs["shape"])),
    "Multinomial": lambda ins, attrs: _n(ins[0][:-1]) * attrs["num_samples"],
    "TopKV2": lambda ins, attrs: 2 * _n(ins[0][:-1]) * attrs["k"],
    "TakeAlongLastAxis": lambda ins, attrs: _n(ins[0][:-1]) * (ins[1][-1] if ins[1] else 1),
    "ScatterAddAlongLastAxis": lambda ins, attrs: _n(ins[0][:-1]) * attrs["size"],
    "ScatterAdd": lambda ins, attrs: _n(ins[0]) // max(_n(ins[1]), 1) * attrs["size"],
    "DynamicSlice": lambda ins, attrs: _replaced_axis(ins[0], attrs["axis"], attrs["length"]),
    "DynamicSliceGrad": lambda ins, attrs: _replaced_axis(ins[0], attrs["axis"], attrs["size"]),
    "SpreadReduced": lambda ins, attrs: _n(ins[0][:len(ins[0]) - len(attrs["out_shape"])])
    * _n(attrs["shape"]),
    "StridedSliceGrad": lambda ins, attrs: _n(ins[0][:attrs["nb"]]) * _n(attrs["shape"]),
    "AvgPoolGrad": lambda ins, attrs: ins[0][0] * _n(attrs["input_hw"]) * ins[0][-1],
    "Conv2DBackpropFilter": _conv_backprop_filter, "Conv2DBackpropInput": _conv_backprop_input,
    "Qr": _decomposition, "Svd": _decomposition,
    "ConfusionMatrix": lambda ins, attrs: None if attrs["num_classes"] is None
    else attrs["num_classes"] ** 2,
    **dict.fromkeys(("SegmentSum", "SegmentMax", "SegmentMin"), _data_dependent("num_segments")),
}

# Ops bounded but never run on zeros at load: they draw random numbers, print, talk to other
# ranks, loop on their operands' values, or fail on a singular matrix of zeros.
_NOT_RUN = frozenset({"If", "While", "WhileGrad", "MapFn", "Cholesky", "MatrixInverse",
                      "MatrixSolve", "MatrixTriangularSolve", "MPIAllReduceSum"})


# --- 3. the dry run ------------------------------------------------------------------------------
def check_declarations(graph, where, _budget=None):
    """Refuse ``graph`` (``where`` names it in messages) if an equation would allocate past ``BYTES`` or makes other shapes or
    dtypes than the graph declares (see the module's docstring)."""
    real = {}  # value id -> a host array of its real shape (zeros, or the saved data)
    budget = _budget or [BYTES]  # one cap for a graph and the graphs it holds

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
        if e.op is READ:
            value = graph.variables[e.attrs["variable"]]._value
            real[e.outputs[0]] = np.asarray(backend.to_host(value))
            _compare(graph, e.outputs[0], real[e.outputs[0]], what)
            continue
        for name, nested in e.attrs.items():  # a branch, a loop's body, a gradient
            if isinstance(nested, Graph):
                check_declarations(nested, f"{what}: its {name}", budget)
        rule = _SIZE_RULES.get(e.op.name)
        elements = None
        attrs = _on_host(e.attrs)  # the dry run is on the host, whatever device loaded the file
        if rule is not None and e.op is not ASSIGN and all(i in real for i in e.inputs):
            inputs = [real[i] for i in e.inputs]
            try:
                elements = rule([x.shape for x in inputs], attrs)
            except (KeyError, TypeError, ValueError, IndexError) as err:
                raise DeclarationError(f"{what}: its attributes or operand shapes do not fit "
                                       f"the op ({err})") from None
        if elements is not None:
            itemsize = max([graph.types[o][1].itemsize for o in e.outputs] or [1])
            take((elements,), np.dtype(f"V{itemsize}"), f"{what} (by its operand shapes "
                 f"{[list(x.shape) for x in inputs]} and attributes)")
        if elements is None or e.op.name in _NOT_RUN or e.op.stateful:
            for vid in e.outputs:  # not run: its declared types stand
                real[vid] = declared_zeros(vid, f"the output of {what}")
            continue
        try:
            outs = e.op.forward(*inputs, **attrs)
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


def _on_host(value):
    """``value`` (an equation's attributes) with every device array in it copied to the host."""
    if isinstance(value, dict):
        return {k: _on_host(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not isinstance(value, Graph):
        return type(value)(_on_host(v) for v in value)
    return backend.to_host(value)


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
