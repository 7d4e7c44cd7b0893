"""The vector-Jacobian product of a nested graph (a branch, loop body or mapped function), in
tapeflow ops.

``graph_vjp`` runs the graph again on Tensors through ``apply`` (``call_graph``: recorded by
any outer tape, or traced) and walks its equations backwards.  No tape is involved, so the
inputs may already be recorded by other tapes, and the result can be differentiated again.
The steps of the walk that the tape's backward pass takes too (the rule lookup and its one
error, zero cotangents, casting back, unbroadcasting, accumulating) are ``core/backward.py``'s;
this module only says how to visit a graph's equations and read their inputs and outputs.

The small helpers below (``is_float``, ``zeros_cotangent``, ``per_row``, ...) are shared with
the gradients of ``If``, ``While`` and ``MapFn`` in ``control_flow.py``.
"""
import numpy as np

from ..core.backward import fill_zeros, no_gradient_error, rule_fn, run_rule
from ..core.dispatch import apply
from ..core.registry import NOT_DIFFERENTIABLE
from ..core.tensor import Tensor
from ..ops.arithmetic import add
from ..ops.creation import zeros_on
from ..ops.shape import reshape, stack
from .compiler import _apply_custom, _graph_gradient
from .ir import CUSTOM_GRADIENT, READ
from .tracer import SymbolicTensor
from ..dtypes import is_inexact_dtype

__all__ = ["graph_vjp", "call_graph", "example", "is_float", "add_cotangents",
           "zeros_cotangent", "or_zeros", "cotangent_batch_ndim", "lead_axes", "per_row"]

# Stateful ops a gradient may run again: control flow re-runs its nested graphs, and their
# own random draws are refused there.
_RECOMPUTABLE = frozenset({"If", "While", "MapFn"})


def example(t):
    """The array behind ``t``: a traced tensor's example value, else its value."""
    return t._example if t.__class__ is SymbolicTensor else t._value


# --- running a nested graph on Tensors ----------------------------------------------------------
def call_graph(graph, inputs):
    """A nested graph run on Tensors through ``apply`` (recorded by tapes, traced by traces)."""
    env = {vid: Tensor(arr) for vid, arr in graph.consts.items()}
    env.update(zip(graph.inputs, inputs))
    for e in graph.eqns:
        _eval(graph, e, env)
    return [env[o] for o in graph.outputs]


def _eval(graph, e, env):
    # A nested graph runs again on Tensors only to differentiate it: its prints and
    # assertions happened when it ran forward, as TensorFlow's gradients do not repeat them.
    if e.op.effect:
        return
    if e.op is READ:
        env[e.outputs[0]] = graph.variables[e.attrs["variable"]]
        return
    ins = [env[i] for i in e.inputs]
    if e.op is CUSTOM_GRADIENT:
        if e.attrs.get("grad") is not None:
            outs = _apply_custom(e, ins)  # recorded with its traced gradient graph
        else:
            outs = ins[e.attrs["n_inputs"]:]
    else:
        out = apply(e.op, tuple(ins), e.attrs or None)
        outs = (out,) if e.op.num_outputs == 1 else out
    env.update(zip(e.outputs, outs))


# --- the walk ------------------------------------------------------------------------------------
def graph_vjp(graph, inputs, cotangents, batch_ndim=0):
    """Cotangents of ``graph``'s inputs, given its inputs (Tensors) and its outputs' cotangents
    (with ``batch_ndim`` leading jacobian axes).

    The forward runs again through ``apply`` and each equation's registered rule runs
    in reverse, with the tape's backward steps (``core/backward.py``): every op is
    recorded by outer tapes or traced, so the result can be differentiated again.
    Float inputs get zeros when unconnected; other inputs None.  Batched cotangents go
    through the rules in one pass when they are all vectorized, else one row at a time.
    """
    if batch_ndim and not _all_vectorized(graph):
        return per_row(lambda row: graph_vjp(graph, inputs, row), cotangents, batch_ndim)
    lead = lead_axes(cotangents, batch_ndim)
    env = {vid: Tensor(arr) for vid, arr in graph.consts.items()}
    env.update(zip(graph.inputs, inputs))
    live = {vid for vid, t in zip(graph.inputs, inputs) if is_float(t)}
    for e in graph.eqns:
        if e.op.stateful and not e.op.effect and e.op.name not in _RECOMPUTABLE:
            raise NotImplementedError(
                f"The gradient of '{graph.name}' would recompute its '{e.op.name}' draw, which "
                "gives other numbers: draw random values outside tf.cond / tf.while_loop / "
                "tf.map_fn and pass them in")
        _eval(graph, e, env)
        if e.op is not READ and any(i in live for i in e.inputs):
            live.update(e.outputs)
    ct = {}
    for o, g in zip(graph.outputs, cotangents):
        if g is not None and o in live:
            ct[o] = add_cotangents(ct.get(o), g)
    for e in reversed(graph.eqns):
        if e.op is READ:
            continue
        gs = [ct.pop(o, None) for o in e.outputs]
        needs = [i in live for i in e.inputs]
        if all(g is None for g in gs) or not any(needs):
            continue
        outs = [env[o] for o in e.outputs]
        if not any(is_float(o) for o in outs):
            continue
        fn = _rule(e)
        if fn is None:
            continue
        ins = [env[i] for i in e.inputs]
        gs = fill_zeros(gs, [_meta(o) for o in outs], lead, example(outs[0]))
        run_rule(fn, _EqnOp(e.op, e.attrs, ins, outs, needs), gs, e.inputs,
                 [_meta(t) for t in ins], needs, ct, batch_ndim)
    return [(or_zeros(ct.get(vid), t, lead) if is_float(t) else None)
            for vid, t in zip(graph.inputs, inputs)]


def _meta(t):
    value = t._value
    return tuple(value.shape), value.dtype


def _rule(e):
    """The gradient function of equation ``e``, or None where gradients stop."""
    if e.op is CUSTOM_GRADIENT:
        if e.attrs.get("grad") is None:
            raise no_gradient_error("IdentityN", e.attrs.get("grad_error",
                                                             "No gradient graph was saved."))
        return _graph_gradient(e)
    return rule_fn(e.op, e.op.gradient_rule(e.attrs))


def _all_vectorized(graph):
    for e in graph.eqns:
        if e.op is CUSTOM_GRADIENT:
            return False
        if e.op is not READ:
            rule = e.op.gradient_rule(e.attrs)
            if rule is not None and rule is not NOT_DIFFERENTIABLE and not rule.vectorized:
                return False
    return True


class _EqnOp:
    """What a gradient rule gets as ``op`` for one equation of a nested graph."""

    __slots__ = ("op", "attrs", "inputs", "_outputs", "needs_input_grad")

    def __init__(self, op, attrs, inputs, outputs, needs):
        self.op, self.attrs, self.inputs = op, attrs, inputs
        self._outputs, self.needs_input_grad = outputs, needs

    @property
    def type(self):
        return self.op.name

    name = type

    @property
    def outputs(self):
        return list(self._outputs)

    def get_attr(self, name):
        return self.attrs[name]

    def input_shape(self, k=0):
        return tuple(self.inputs[k]._value.shape)

    def output_shape(self, k=0):
        return tuple(self._outputs[k]._value.shape)

    @property
    def in_shapes(self):
        return [tuple(t._value.shape) for t in self.inputs]

    @property
    def out_shapes(self):
        return [tuple(t._value.shape) for t in self._outputs]

    @property
    def in_dtypes(self):
        return [t._value.dtype for t in self.inputs]


# --- helpers shared with the control-flow gradients ---------------------------------------------
def is_float(t):
    return is_inexact_dtype(t._value.dtype)


def add_cotangents(a, b):
    """``a + b`` where either may be None (a zero)."""
    if b is None:
        return a
    return b if a is None else add(a, b)


def zeros_cotangent(like, lead=()):
    """Zeros of ``like``'s shape and dtype behind ``lead`` axes, on its device."""
    value = like._value
    return zeros_on(tuple(lead) + tuple(value.shape), value.dtype, example(like))


def or_zeros(g, like, lead=()):
    return g if g is not None else zeros_cotangent(like, lead)


def cotangent_batch_ndim(op, dys):
    """How many leading (jacobian) axes the cotangents of ``op`` carry."""
    return len(dys[0]._value.shape) - len(op.output_shape(0))


def lead_axes(cotangents, nb):
    """The ``nb`` leading axes of the first cotangent that is not None."""
    for g in cotangents:
        if g is not None:
            return tuple(g._value.shape[:nb])
    return ()


def per_row(fn, cotangents, nb):
    """``fn(cotangents)`` for cotangents with ``nb`` leading axes, one row of them at a time;
    each result that is not None gets the leading axes back."""
    lead = lead_axes(cotangents, nb)
    rows = int(np.prod(lead, dtype=np.int64))
    flat = [None if g is None else reshape(g, (rows,) + tuple(g._value.shape[nb:]))
            for g in cotangents]
    if rows == 0:
        one = fn([None if g is None else _first_row_zeros(g) for g in flat])
        return [None if r is None else zeros_cotangent(r, lead) for r in one]
    results = [fn([None if g is None else g[b] for g in flat]) for b in range(rows)]
    out = []
    for k, first in enumerate(results[0]):
        if first is None:
            out.append(None)
        else:
            stacked = stack([r[k] for r in results])
            out.append(reshape(stacked, lead + tuple(first._value.shape)))
    return out


def _first_row_zeros(g):
    """Zeros shaped as one row of ``g`` (which has no rows)."""
    ex = example(g)
    return zeros_on(tuple(ex.shape[1:]), ex.dtype, ex)
