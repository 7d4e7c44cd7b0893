"""What tapes record: one ``Node`` per differentiable op applied to a watched tensor.

There is no list of records on a tape.  A node hangs off the tensors it made
and points at the nodes that made its inputs, so a record lives exactly as
long as some tensor that could still be differentiated depends on it; a
non-persistent tape also drops the saved arrays of its nodes after its one
backward pass.  ``node.tapes`` holds the ids of the tapes that recorded it,
which is how several tapes, each watching its own tensors, share one graph.

A node keeps only what its gradient rule declared it needs: an op whose rule
does not read its inputs (``Add``, ``Reshape``, ``Relu`` saves its output
instead) does not keep them alive.

Forward-mode accumulators (``forward.py``) see every op here too, after the tapes.
"""
import itertools

from . import registry as _registry
from .context import PER_THREAD
from .registry import NOT_DIFFERENTIABLE, Primitive
from .tensor import Tensor, Variable
from ..dtypes import is_inexact_dtype

__all__ = ["Node", "record"]

_next_seq = itertools.count().__next__


class Node:
    """The record of one op: enough to run its gradient rule later.

    ``seq`` orders nodes by creation, which is a topological order of the graph.
    Gradient rules receive the node as TensorFlow's ``op`` argument: it has
    ``inputs``, ``outputs``, ``type``, ``get_attr`` and ``needs_input_grad``.
    """

    __slots__ = (
        "op", "rule", "attrs", "tapes", "seq", "in_ids", "in_nodes", "in_meta", "saved_inputs",
        "out_ids", "out_values", "out_meta", "needs_input_grad", "__weakref__",
    )

    @property
    def type(self):
        return self.op.name

    name = type

    def input_shape(self, k=0):
        return self.in_meta[k][0]

    def output_shape(self, k=0):
        return self.out_meta[k][0]

    @property
    def in_shapes(self):
        return [shape for shape, _ in self.in_meta]

    @property
    def in_dtypes(self):
        return [dtype for _, dtype in self.in_meta]

    @property
    def out_shapes(self):
        return [shape for shape, _ in self.out_meta]

    @property
    def inputs(self):
        if self.saved_inputs is None:
            raise RuntimeError(
                f"The gradient of '{self.op.name}' read op.inputs, but its rule was registered "
                "without saves='inputs' (or the tape already released this record).")
        return self.saved_inputs

    @property
    def outputs(self):
        if self.out_values is None:
            raise RuntimeError(
                f"The gradient of '{self.op.name}' read op.outputs, but its rule was registered "
                "without saves='outputs' (or the tape already released this record).")
        return [v if isinstance(v, Tensor) else Tensor(v, self, i)
                for v, i in zip(self.out_values, self.out_ids)]

    def get_attr(self, name):
        return (self.attrs or {})[name]

    def release(self):
        """Forget the saved arrays and parents: no tape can use this record any more."""
        self.saved_inputs = None
        self.out_values = None
        self.in_nodes = ()
        self.rule = None

    def __repr__(self):
        return f"<Node {self.op.name} #{self.seq} tapes={self.tapes}>"


def record(op, inputs, outputs, attrs, ctx=None):
    """Record ``op`` on every active tape that watches one of ``inputs``.

    This runs for every op inside a tape, so it is written for speed: one pass
    over the inputs per tape, and the common shapes (one tape, one or two
    inputs, one output) without loops or intermediate lists.  ``ctx`` is the
    thread's context when the caller has it already.
    """
    if ctx is None:
        ctx = PER_THREAD.context
    if ctx.accumulators:
        _record_then_push_forward(op, inputs, outputs, attrs, ctx)
        return
    if ctx.watchers:
        for watcher in ctx.watchers:
            for t in inputs:
                if isinstance(t, Variable):
                    watcher.saw(t)
    tapes_now = ctx.tapes
    if len(tapes_now) == 1:  # the common case, without the loop
        tape = tapes_now[0]
        if not _watches(tape, inputs):
            return
        tapes = tape._id_tuple
    else:
        tapes = ()
        for tape in tapes_now:
            if _watches(tape, inputs):
                tapes = tape._id_tuple if not tapes else tapes + tape._id_tuple
        if not tapes:
            return
    if len(outputs) == 1:
        if not is_inexact_dtype(outputs[0]._value.dtype):
            return  # integer and bool results are never differentiable
    elif not any(is_inexact_dtype(o._value.dtype) for o in outputs):
        return
    if op.__class__ is Primitive and not ctx.overrides:
        rule = _registry._GRADIENTS.get(op.name)  # Primitive.gradient_rule, without the call
    else:
        rule = op.gradient_rule(attrs)
    if rule is NOT_DIFFERENTIABLE:
        return
    node = Node()
    node.op = op
    node.rule = rule
    node.attrs = attrs
    node.tapes = tapes
    node.seq = _next_seq()
    if len(inputs) == 2:
        a, b = inputs
        va, vb = a._value, b._value
        node.in_ids = (a._id, b._id)
        node.in_nodes = (a._node, b._node)
        node.in_meta = ((va.shape, va.dtype), (vb.shape, vb.dtype))
    else:
        node.in_ids = tuple([t._id for t in inputs])
        node.in_nodes = tuple([t._node for t in inputs])
        node.in_meta = tuple([(t._value.shape, t._value.dtype) for t in inputs])
    trace = ctx.trace
    if rule is None or rule.saves_inputs:
        # A Variable is saved as a snapshot of the value it had when read (same id); in a
        # trace, as the traced value it has at this point of the function.
        node.saved_inputs = [t if not isinstance(t, Variable) else
                             Tensor(t._value, None, t._id) if trace is None else trace.read(t)
                             for t in inputs]
    else:
        node.saved_inputs = None
    if rule is None or rule.saves_outputs:
        # Traced outputs are kept whole: their values exist only as tensors of the trace.
        node.out_values = [o._value for o in outputs] if trace is None else list(outputs)
    else:
        node.out_values = None
    if len(outputs) == 1:
        o = outputs[0]
        v = o._value
        node.out_ids = (o._id,)
        node.out_meta = ((v.shape, v.dtype),)
        o._node = node
    else:
        node.out_ids = tuple([o._id for o in outputs])
        node.out_meta = tuple([(o._value.shape, o._value.dtype) for o in outputs])
        for o in outputs:
            o._node = node


def _record_then_push_forward(op, inputs, outputs, attrs, ctx):
    """``record`` with accumulators: the tapes first (a JVP reads the op's records through its
    gradient rule), then each accumulator, outermost first, computes the outputs' tangents."""
    accumulators = ctx.accumulators
    if ctx.tapes or ctx.watchers:
        ctx.accumulators = []
        try:
            record(op, inputs, outputs, attrs, ctx)
        finally:
            ctx.accumulators = accumulators
    if ctx.trace is None:  # as tapes, accumulators do not see the ops of a function being traced
        for position, accumulator in enumerate(accumulators):
            accumulator._push_forward(op, inputs, outputs, attrs, position, ctx)


def _watches(tape, inputs):
    """Whether ``tape`` records an op on ``inputs``; reading a trainable Variable watches it.

    An input is tracked when this tape recorded the op that made it, or when the tape
    watches it: a node-less tensor, or one that another tape produced (``tape.watch(y)``
    makes ``y`` a source of this tape even though its node belongs to that other tape).
    """
    tape_id = tape._id
    watched = tape._watched_ids
    tracked = False
    for t in inputs:
        n = t._node
        if n is not None and tape_id in n.tapes:
            tracked = True
        elif t._id in watched:
            tracked = True
        elif tape._watch_accessed_variables and t.__class__ is not Tensor \
                and isinstance(t, Variable) and t.trainable:
            tape._watch_variable(t)
            tracked = True
    return tracked
