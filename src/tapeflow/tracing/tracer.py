"""Tracing: running a Python function once on symbolic tensors to record its Graph.

While a ``Tracer`` is the context's trace, every op that ``apply`` runs becomes
an equation instead of running on data.  A traced tensor (``SymbolicTensor``)
holds an ``Abstract`` value, its shape and dtype only: asking for its data
(``numpy()``, ``bool(t)``, ``float(t)``, numpy functions on it) raises
``TraceError`` naming the tapeflow function that asked, never a silent
constant.  Shapes are inferred by running each op's own forward on example
arrays kept beside the abstract values (the arguments of the call being
traced), so no op needs a second, hand-written shape rule.

Variables are captured by reference: the first read is a ``READ`` equation,
an assignment an ``ASSIGN`` equation, and later reads in the same trace see
the assigned value.  Random draws made while tracing use a copy of the
context's random state, so tracing consumes no random numbers.
"""
import sys
import os

import numpy as np

from .. import backend
from ..core.context import context
from ..core.tensor import Tensor, Variable, convert_to_tensor, lift
from ..ops.arithmetic import add, subtract
from ..ops.shape import reshape
from .ir import ASSIGN, CUSTOM_GRADIENT, READ, Eqn, Graph

__all__ = ["TraceError", "Abstract", "SymbolicTensor", "Tracer", "tracing"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TraceError(Exception):
    """A traced function needed a tensor's value, which is not known while tracing."""


def _caller():
    """The public tapeflow function (or Tensor method) the user's code called to get here."""
    frame = sys._getframe(2)
    found = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        inside = path.startswith(_PACKAGE_DIR) and os.sep + "tracing" + os.sep not in path
        if inside:
            found = frame.f_code.co_name
        elif found is not None:
            break
        frame = frame.f_back
    return found


def needs_value(what, remedy=None):
    caller = _caller()
    where = f"'{caller}'" if caller and not caller.startswith("_") else "an operation"
    trace = context().trace
    fn = f" of '{trace.graph.name}'" if trace is not None else ""
    return TraceError(
        f"{where} needs {what} of a traced tensor while tracing{fn}: the value is not known "
        f"until the graph runs. " + (remedy or
        "Compute it outside the tf.function and pass it in (a Python value is part of the "
        "signature), use graph control flow (tf.cond, tf.where, tf.while_loop), or call "
        "tf.config.run_functions_eagerly(True) to debug."))


def _refuse(name):
    def method(self, *args, **kwargs):
        raise needs_value("the value")
    method.__name__ = name
    return method


class Abstract:
    """What a traced tensor holds instead of an array: its shape and dtype, no data."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __array__(self, *args, **kwargs):
        raise needs_value("the value")

    def __bool__(self):
        raise needs_value("the truth value",
                          "Python `if`/`while` on a tensor cannot be traced: use tf.cond, "
                          "tf.while_loop or tf.where (or pass a Python bool).")

    def __getattr__(self, name):
        raise needs_value(f"the value (array.{name})")

    def __repr__(self):
        return f"Abstract({self.dtype.name}{list(self.shape)})"


for _name in ("__float__", "__int__", "__index__", "__len__", "__iter__", "__getitem__",
              "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__pow__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__",
              "__matmul__", "__and__", "__or__", "__invert__"):
    setattr(Abstract, _name, _refuse(_name))


class SymbolicTensor(Tensor):
    """A tensor inside a trace: a value of the graph, with a shape and dtype but no data."""

    __slots__ = ("_vid", "_tracer", "_example")

    def __init__(self, tracer, vid, example):
        super().__init__(Abstract(example.shape, example.dtype))
        self._vid = vid
        self._tracer = tracer
        self._example = example

    def numpy(self):
        raise needs_value("the value (numpy())")

    def __array__(self, dtype=None, copy=None):
        raise needs_value("the value (numpy conversion)")

    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        raise needs_value("the value (float())")

    def __int__(self):
        raise needs_value("the value (int())")

    def __index__(self):
        raise needs_value("the value (as an index)")

    def __repr__(self):
        return (f"<tf.Tensor (traced) shape={self._value.shape}, dtype={self._value.dtype.name}>")

    __str__ = __repr__


class Tracer:
    """Records the ops applied while it is the context's trace into ``graph``.

    A nested tracer (a custom gradient, a branch of ``tf.cond``) captures the
    values of its parent that it uses as extra inputs (``captures``).
    """

    def __init__(self, name, parent=None):
        self.graph = Graph(name)
        self.parent = parent
        self.captures = []        # (parent's tensor, value id here), for nested graphs
        self._captured = {}       # id(parent tensor) -> value id
        self._variables = {}      # id(Variable) -> (value id, example): its current version
        self._consts = {}         # id(tensor) -> value id (graph.captured keeps the tensor alive)

    # --- values -------------------------------------------------------------------
    def placeholder(self, example):
        vid = self.graph.new_value(example.shape, example.dtype)
        self.graph.inputs.append(vid)
        return SymbolicTensor(self, vid, example)

    def value_of(self, t):
        """(value id, example array) of tensor ``t`` in this graph."""
        if t.__class__ is SymbolicTensor:
            if t._tracer is self:
                return t._vid, t._example
            return self._capture(t), t._example
        if isinstance(t, Variable):
            current = self._variables.get(id(t))
            if current is None:
                current = self._read(t)
            return current
        value = t._value
        vid = self._consts.get(id(t))
        if vid is None:
            arr = np.asarray(value) if not hasattr(value, "shape") else value
            vid = self._consts[id(t)] = self.graph.add_const(arr)
            self.graph.captured[vid] = t  # the tensor itself: an outer tape may watch it
        return vid, value

    def _capture(self, t):
        vid = self._captured.get(id(t))
        if vid is None:
            if self.parent is None:
                raise TraceError("A tensor traced in another tf.function was used here; pass it "
                                 "in as an argument or return it instead.")
            example = t._example if t.__class__ is SymbolicTensor else t._value
            vid = self.graph.new_value(example.shape, example.dtype)
            self._captured[id(t)] = vid
            self.captures.append((t, vid))
        return vid

    def _read(self, variable):
        example = variable._value
        vid = self.graph.new_value(example.shape, example.dtype)
        self.graph.eqns.append(Eqn(READ, {"variable": self.graph.variable_index(variable)}, (), (vid,)))
        self._variables[id(variable)] = current = (vid, example)
        return current

    def read(self, variable):
        """``variable.value()`` inside a trace: its current version as a traced tensor.

        It keeps the Variable's id, as an eager snapshot does, so that a tape watching the
        Variable also tracks what a gradient rule computes from this value (second order).
        """
        vid, example = self.value_of(variable)
        value = SymbolicTensor(self, vid, example)
        value._id = variable._id
        return value

    # --- equations -----------------------------------------------------------------
    def apply(self, op, inputs, attrs):
        if _folds(op, inputs):
            return _run_now(op, inputs, attrs)
        ids, examples = [], []
        for t in inputs:
            vid, ex = self.value_of(t)
            ids.append(vid)
            examples.append(ex)
        if op.effect:  # printed, asserted... when the graph runs, never on the examples
            self.graph.eqns.append(Eqn(op, attrs, ids, ()))
            return ()
        with np.errstate(all="ignore"):
            out = op.forward(*examples, **attrs) if attrs else op.forward(*examples)
        outs = (out,) if op.num_outputs == 1 else tuple(out)
        results = []
        out_ids = []
        for o in outs:
            if not hasattr(o, "shape") or not hasattr(o, "dtype"):
                o = np.asarray(o)
            vid = self.graph.new_value(o.shape, o.dtype)
            out_ids.append(vid)
            results.append(SymbolicTensor(self, vid, o))
        self.graph.eqns.append(Eqn(op, attrs, ids, out_ids))
        return tuple(results)

    def assign(self, variable, value, how="assign"):
        """Record ``variable.assign(value)`` (or ``assign_add``/``assign_sub``); later reads in
        this trace see the new value."""
        value = lift(value, variable)
        if how == "assign_add":
            value = add(variable, value)
        elif how == "assign_sub":
            value = subtract(variable, value)
        elif value.shape != variable.shape and value._value.size == variable._value.size:
            value = reshape(value, variable.shape)  # a scalar into a one-element variable
        vid, example = self.value_of(value)
        vshape, vdtype = variable._value.shape, variable._value.dtype
        if tuple(example.shape) != tuple(vshape) or example.dtype != vdtype:
            raise ValueError(f"Cannot assign a {example.dtype.name}{list(example.shape)} value to "
                             f"Variable '{variable.name}' of {vdtype.name}{list(vshape)}")
        index = self.graph.variable_index(variable)
        self.graph.eqns.append(Eqn(ASSIGN, {"variable": index}, (vid,), ()))
        self._variables[id(variable)] = (vid, example)

    def custom_gradient(self, name, inputs, variables, results, grad_fn):
        """``results`` passed through one CUSTOM_GRADIENT equation that carries ``grad_fn``
        traced as a graph of its own (so it can be saved and differentiated again).

        The equation's operands are the function's inputs and Variables (they get
        gradients), the values the gradient function captured, then ``results``.
        If ``grad_fn`` cannot be traced, the equation has no gradient graph and the
        error says why when one is needed (saving it, or differentiating a replay).
        """
        sub = Tracer(f"{name}_grad", parent=self)
        grad_error = None
        try:
            with tracing(sub):
                dys = [sub.placeholder(_zeros_example(r)) for r in results]
                grads = grad_fn(*dys, variables=list(variables)) if variables else grad_fn(*dys)
                flat = _flat_gradients(grads, len(inputs), len(variables))
                sub.graph.outputs = [None if g is None else sub.value_of(_as_tensor(g))[0]
                                     for g in flat]
                sub.graph.inputs = [vid for _, vid in sub.captures] + sub.graph.inputs
        except Exception as e:  # noqa: BLE001 - kept, and reported when the graph is needed
            grad_error = f"{type(e).__name__}: {e}"
        operands = list(inputs) + list(variables)
        n_diff = len(operands)
        if grad_error is None:
            operands += [t for t, _ in sub.captures]
        n_pass = len(operands)
        operands += list(results)
        attrs = {"n_inputs": n_pass, "n_differentiable": n_diff,
                 "grad": sub.graph if grad_error is None else None}
        if grad_error is not None:
            attrs["grad_error"] = grad_error
        return self.apply(CUSTOM_GRADIENT, operands, attrs)


def _folds(op, inputs):
    """Integer work on known values (``tf.shape(x)[-1] - 1``, ``tf.range(n)``) runs now, as
    TensorFlow's shape inference folds it: the trace is per shape, so sizes are known, and a
    Python int made from the result (a size, a slice bound) is what the rest of the trace needs.
    Only integers and booleans: no gradient flows through them, so nothing is lost."""
    if op.stateful or op.num_outputs == 0:
        return False
    for t in inputs:
        if t.__class__ is SymbolicTensor or isinstance(t, Variable) or \
                t._value.dtype.kind not in "iub":
            return False
    return True


def _run_now(op, inputs, attrs):
    values = [t._value for t in inputs]
    out = op.forward(*values, **attrs) if attrs else op.forward(*values)
    if op.num_outputs == 1:
        return (Tensor(out),)
    return tuple(Tensor(o) for o in out)


def _zeros_example(t):
    ex = t._example if t.__class__ is SymbolicTensor else t._value
    return backend.array_module(ex).zeros(ex.shape, ex.dtype)


def _as_tensor(g):
    return g if isinstance(g, Tensor) else convert_to_tensor(g)


def _flat_gradients(grads, n_inputs, n_variables):
    """The gradients custom_gradient's checked ``grad_fn`` returns, as one flat list."""
    if n_variables:
        input_grads, var_grads = grads
        return list(input_grads) + list(var_grads)
    return list(grads)


class tracing:  # noqa: N801 - a context manager, used as a statement
    """Make ``tracer`` the context's trace for the block.

    Ops traced in the block draw their shapes' example numbers from a copy of the random
    state, so tracing consumes none; ``init_scope`` inside it (weights built on a first
    call) draws from the real one, as it would eagerly.
    """

    def __init__(self, tracer):
        self._tracer = tracer

    def __enter__(self):
        ctx = context()
        self._outer = ctx.trace
        self._tapes = ctx.tapes
        self._random = ctx.random
        self._tracer.eager_random = getattr(self._outer, "eager_random", None) or ctx.random
        ctx.random = ctx.random.copy()
        ctx.trace = self._tracer
        ctx.tapes = []  # tapes outside the function do not see its trace-time ops
        ctx.refresh()
        return self._tracer

    def __exit__(self, *exc):
        ctx = context()
        ctx.trace = self._outer
        ctx.tapes = self._tapes
        ctx.random = self._random
        ctx.refresh()
        return False
