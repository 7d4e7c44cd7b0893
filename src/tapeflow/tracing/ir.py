"""The traced program: a typed, first-order list of equations over registered primitives.

A ``Graph`` is data, small enough to read whole (torch.fx's lesson) and printed
one equation a line, as a jaxpr is::

    { lambda ; a:f32[32,8] b:f32[32,1]. let
        c:f32[8,30] = ReadVariableOp[variable=0]
        d:f32[32,30] = MatMul a c
        ...
        AssignVariableOp[variable=0] k
      in (j) }

Values are integers.  ``inputs`` are the function's flat tensor arguments,
``consts`` arrays baked in at trace time (Python numbers, ``tf.constant``),
``variables`` the Variables the graph reads or assigns, captured by reference.
Reads and assigns are equations (``READ``, ``ASSIGN``), in program order, so a
replay sees a Variable as the eager program would.  A ``CUSTOM_GRADIENT``
equation passes its last operands through and carries the traced gradient
function as a nested Graph (attribute ``grad``).
"""
import numpy as np

from ..core.registry import Primitive, def_primitive

__all__ = ["Graph", "Eqn", "READ", "ASSIGN", "CUSTOM_GRADIENT", "is_effect", "describe_source"]


def _read_forward(*_, variable):  # replaced by the executor: reads need the Variable itself
    raise RuntimeError("ReadVariableOp runs only inside a graph executor")


def _assign_forward(value, *, variable):
    raise RuntimeError("AssignVariableOp runs only inside a graph executor")


def _identity_n(*operands, n_inputs, n_differentiable=None, grad=None, grad_error=None):
    # the other attributes describe the gradient; the forward passes the last operands through
    return tuple(operands[n_inputs:])  # one result per passed operand (num_outputs=None)


# These three are graph-level: the executor handles reads and assigns itself.
READ = Primitive("ReadVariableOp", _read_forward)
ASSIGN = Primitive("AssignVariableOp", _assign_forward, num_outputs=0)
# TensorFlow's name for custom_gradient's op: a gradient through one without a saved
# gradient function fails with "No gradient defined for operation 'IdentityN'".
CUSTOM_GRADIENT = def_primitive("IdentityN", _identity_n, num_outputs=None,  # variadic
                                no_gradient="the traced grad_fn it carries is its gradient")


def is_effect(op):
    return op is ASSIGN or getattr(op, "stateful", False)


class Eqn:
    """``outputs = op[attrs](*inputs)``; ``source`` is where the user's code made it
    (file, line, function), as a jaxpr equation's ``source_info``, or None (a loaded graph)."""

    __slots__ = ("op", "attrs", "inputs", "outputs", "source")

    def __init__(self, op, attrs, inputs, outputs, source=None):
        self.op = op
        self.attrs = attrs or {}
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.source = source


def describe_source(eqn):
    """'MatMul, made at model.py:42 in call' for an error raised where ``eqn`` ran."""
    if eqn.source is None:
        return f"op {eqn.op.name}"
    path, line, function = eqn.source
    return f"op {eqn.op.name}, made at {path}:{line} in {function}"


class Graph:
    """A traced function: typed values, constants, captured Variables and equations."""

    def __init__(self, name="fn"):
        self.name = name
        self.inputs = []       # value ids of the flat tensor arguments
        self.outputs = []      # value ids of the flat results
        self.types = {}        # value id -> (shape tuple, numpy dtype)
        self.consts = {}       # value id -> array
        self.captured = {}     # value id -> the eager Tensor a constant was traced from
        self.variables = []    # captured Variables, by reference
        self.eqns = []
        self._next = 0

    def new_value(self, shape, dtype):
        vid = self._next
        self._next += 1
        self.types[vid] = (tuple(shape), np.dtype(dtype))
        return vid

    def add_const(self, array):
        vid = self.new_value(array.shape, array.dtype)
        self.consts[vid] = array
        return vid

    def variable_index(self, variable):
        for i, v in enumerate(self.variables):
            if v is variable:
                return i
        self.variables.append(variable)
        return len(self.variables) - 1

    def __str__(self):
        return format_graph(self)


_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "int32": "i32", "int64": "i64",
          "bool": "bool", "int8": "i8", "uint8": "u8", "int16": "i16", "complex64": "c64",
          "complex128": "c128"}


def format_graph(graph, indent=0):
    """A jaxpr-like listing: one equation a line, every value with its type."""
    names = {}

    def name(v):
        if v not in names:
            n, s = len(names), ""
            while True:
                s = chr(ord("a") + n % 26) + s
                n = n // 26 - 1
                if n < 0:
                    break
            names[v] = s
        return names[v]

    def typed(v):
        shape, dtype = graph.types[v]
        return f"{name(v)}:{_SHORT.get(dtype.name, dtype.name)}[{','.join(map(str, shape))}]"

    pad = " " * indent
    consts = " ".join(typed(c) for c in graph.consts)
    lines = [f"{pad}{{ lambda {consts}; {' '.join(typed(v) for v in graph.inputs)}. let"]
    for e in graph.eqns:
        graphs = {k: v for k, v in e.attrs.items() if isinstance(v, Graph)}
        attrs = {k: v for k, v in e.attrs.items() if k not in graphs and k != "grad"}
        shown = f"[{', '.join(f'{k}={_short_attr(v)}' for k, v in attrs.items())}]" if attrs else ""
        lhs = " ".join(typed(o) for o in e.outputs)
        rhs = f"{e.op.name}{shown} {' '.join(name(i) for i in e.inputs)}".rstrip()
        lines.append(f"{pad}    {lhs + ' = ' if lhs else ''}{rhs}")
        for key, sub in graphs.items():  # a custom gradient, a branch, a loop body
            lines.append(f"{pad}      {key} =")
            lines.append(format_graph(sub, indent + 8))
    lines.append(f"{pad}  in ({', '.join('None' if o is None else name(o) for o in graph.outputs)}) }}")
    return "\n".join(lines)


def _short_attr(value):
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)}"
    if isinstance(value, np.dtype):
        return value.name
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
