"""Why is a gradient None?  ``tape.explain(target, source)`` names the reason.

The reasons TensorFlow's guide lists, each checked against what this tape
actually recorded: the source was never watched, it has an integer dtype, the
target was not computed on this tape, the path went through numpy (or a
``Variable.assign``), a ``stop_gradient``/``stop_recording`` cut it, or the
target simply does not depend on it.
"""
from .backprop import reachable_nodes
from ..dtypes import is_inexact_dtype

__all__ = ["explain_gradient"]


def explain_gradient(tape, target, source):
    from .tensor import Tensor, Variable

    if not isinstance(target, Tensor) or not isinstance(source, Tensor):
        return "target and source must both be tensors"
    name = _describe(source)
    if not is_inexact_dtype(source._value.dtype):
        return (f"{name} has integer dtype {source._value.dtype.name}: integers are not "
                f"differentiable, so its gradient is None (cast it to a float dtype first)")
    node = source._node
    on_tape = source._id in tape._watched_ids or (node is not None and tape._id in node.tapes)
    if not on_tape:
        if isinstance(source, Variable) and not source.trainable:
            return (f"{name} is not trainable, so the tape did not watch it "
                    f"(call tape.watch on it, or create it with trainable=True)")
        if isinstance(source, Variable) and not tape._watch_accessed_variables:
            return (f"{name} was not watched: the tape has watch_accessed_variables=False "
                    f"and tape.watch was not called on it")
        if isinstance(source, Variable):
            return f"{name} was not read by any recorded operation inside the tape's context"
        nodes = reachable_nodes(tape._id, [target._node])
        if any(source._id in n.in_ids for n in nodes):  # as TensorFlow: a tensor input counts
            return (f"connected: the target depends on {name} through {len(nodes)} recorded "
                    f"operation(s) (recorded because of their other, watched inputs)")
        return (f"{name} is a tf.Tensor that the tape never watched: call tape.watch on it "
                f"(only trainable Variables are watched automatically)")
    nodes = reachable_nodes(tape._id, [target._node])
    if target._id == source._id or any(source._id in n.in_ids for n in nodes):
        return f"connected: the target depends on {name} through {len(nodes)} recorded operation(s)"
    for left_id, left_node in tape._left_tapeflow:
        upstream = reachable_nodes(tape._id, [left_node]) if left_node is not None else []
        if left_id == source._id or any(source._id in n.in_ids for n in upstream):
            return (f"not connected: a value computed from {name} left tapeflow (it became a numpy "
                    f"array, or went through Variable.assign) and came back as a constant; "
                    f"keep the computation in tapeflow ops")
    if target._node is None or tape._id not in target._node.tapes:
        return ("not connected: the target was not computed by an operation this tape recorded "
                "(it is a constant, was computed before the tape or while it was paused, or came "
                "from numpy)")
    return (f"not connected: the target does not depend on {name} through recorded operations "
            f"(the path may go through tf.stop_gradient, stop_recording, an integer or boolean "
            f"value, or another variable's state)")


def _describe(t):
    from .tensor import Variable
    if isinstance(t, Variable):
        return f"Variable '{t.name}'"
    return f"the tensor of shape {tuple(t._value.shape)}"
