"""How many elements a ``dynamic_size`` TensorArray gets in a traced ``tf.while_loop``.

A traced graph keeps static shapes, so an array that grows as the loop writes it is given,
before the loop is traced for real, the size the loop will reach.  ``while_loop`` traces
the loop once more with each growing array *tagged*: its writes at a traced index record
that index here (``record_write``), and the loop carries, per array, the highest index
written plus one.  That loop runs at trace time on the trace's example values, which is
right for every call only if the trip count and the written indices are the same for
every call: ``static_outputs`` checks it on the graphs (they must depend on constants and
on loop variables that start from constants only).  Where they depend on an integer
argument of the ``tf.function`` (``for i in tf.range(n)``), the function *pins* that
argument: it keys its traces on the argument's value, as it keys them on shapes.  Where
they depend on data, an array given a ``size`` keeps it (a write past it raises when the
graph runs) and one of size 0 is refused.  A sizing run leaves out prints and assertions.
"""
import threading

from .ir import READ

__all__ = ["record_write", "recording", "is_recording", "static_outputs", "growing"]

_STATE = threading.local()


class recording:  # noqa: N801 - a context manager, used as a statement
    """Inside: writes to tagged arrays at traced indices are recorded in ``writes`` as
    ``(tag, index tensor)``; writes past an array's size are left to the loop's sizing."""

    def __init__(self, sizing):
        self.sizing = sizing
        self.writes = []

    def __enter__(self):
        self._outer = getattr(_STATE, "recorder", None)
        _STATE.recorder = self
        return self

    def __exit__(self, *exc):
        _STATE.recorder = self._outer
        return False


def is_recording():
    """Whether a loop body is being traced (its growing arrays are sized before it runs)."""
    return getattr(_STATE, "recorder", None) is not None


def record_write(tag, index):
    recorder = getattr(_STATE, "recorder", None)
    if recorder is not None and recorder.sizing and tag is not None:
        recorder.writes.append((tag, index))


def growing(leaf):
    """Whether ``leaf`` is an array that may grow in a traced loop (a ``dynamic_size``
    TensorArray whose element shape is known)."""
    return getattr(leaf, "_grows_in_loops", False)


# Stateful ops whose results are still a function of their operands (nested graphs run on
# them); any other stateful op (a random draw) makes its results vary from call to call.
_DETERMINISTIC_STATEFUL = ("If", "While")


def static_outputs(graph, static_inputs):
    """For each output of ``graph``: whether it depends only on its constants and on the
    inputs in ``static_inputs`` (value ids)."""
    static = set(static_inputs) | set(graph.consts)
    for e in graph.eqns:
        if e.op is READ or (e.op.stateful and e.op.name not in _DETERMINISTIC_STATEFUL):
            continue
        if all(i in static for i in e.inputs):
            static.update(e.outputs)
    return [o in static for o in graph.outputs]
