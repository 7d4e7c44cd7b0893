"""The one piece of run-time state tapeflow keeps: a context object per thread.

Everything that changes while a program runs lives here, not in module
globals: the tapes recording now, the forward-mode accumulators, custom_gradient's variable watchers,
``gradient_override_map`` scopes, the graph being traced, layer name scopes
and name counts, the default random state and the current device.  It is
thread-local, as TensorFlow's tape stack is: a tape open in one thread never
records the ops another thread runs.  ``reset()`` (``tf.keras.backend.clear_session``)
starts the calling thread afresh.

The op registry is the one other piece of shared state, and it only grows.
"""
import threading

import numpy as np

__all__ = ["Context", "context", "PER_THREAD", "reset", "RandomState", "init_scope"]


class RandomState:
    """The default random stream: a global seed, its generator, and per-op-seed draw counts."""

    __slots__ = ("seed", "rng", "op_counts")

    def __init__(self, seed=None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.op_counts = {}

    def snapshot(self):
        return (self.seed, self.rng.bit_generator.state, dict(self.op_counts))

    def copy(self):
        twin = RandomState()
        twin.restore(self.snapshot())
        return twin

    def restore(self, state):
        seed, bit_state, counts = state
        self.seed = seed
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = bit_state
        self.op_counts = dict(counts)


# The device of a thread outside any ``tf.device`` block (tf.config.set_default_device).
DEFAULT_DEVICE = ("CPU:0", np)


class Context:
    """One thread's state; ``context()`` is the calling thread's.

    ``active`` is True while anything wants to see ops as they run (a tape, a forward
    accumulator, a variable watcher or a trace): ``apply`` checks only this flag on its fast path.
    """

    __slots__ = ("tapes", "accumulators", "watchers", "overrides", "trace", "name_scopes", "name_counts",
                 "random", "device", "xp", "functions_run_eagerly", "active", "outermost_layer")

    def __init__(self):
        self.tapes = []             # GradientTapes recording now, outermost first
        self.accumulators = []      # ForwardAccumulators recording now, outermost first
        self.watchers = []          # custom_gradient's watchers of the Variables its function reads
        self.overrides = []         # gradient_override_map scopes: {op name: gradient name}
        self.trace = None           # the graph being traced (tracing.tracer.Tracer), or None
        self.name_scopes = []       # names of the layers being called or built, outermost first
        self.name_counts = {}       # base name -> how many layers have taken it
        self.random = RandomState()
        # the current device (tf.device) and its array module: where new tensors are born
        self.device, self.xp = DEFAULT_DEVICE  # (backend.device_module)
        self.functions_run_eagerly = False
        self.active = False
        self.outermost_layer = None  # the layer whose call is running outermost (add_loss)

    def refresh(self):
        """Recompute ``active`` after a tape, accumulator, watcher or trace came or went."""
        self.active = bool(self.tapes or self.accumulators or self.watchers or self.trace is not None)


class _PerThread(threading.local):
    # Reading an attribute of a thread-local costs several times a plain object's, so the
    # state is one plain object per thread: hot paths fetch it once (``PER_THREAD.context``).
    def __init__(self):
        self.context = Context()


PER_THREAD = _PerThread()


def context():
    """The calling thread's Context."""
    return PER_THREAD.context


def reset():
    """Start this thread's context afresh: no tapes, scopes or names, an unseeded random state
    (the current device stays: it belongs to the ``tf.device`` block around the call).

    Refuses while a tape or forward accumulator is recording or a function is being traced,
    which would be left pointing at state that no longer exists.
    """
    ctx = PER_THREAD.context
    if ctx.tapes or ctx.accumulators or ctx.trace is not None:
        raise RuntimeError("clear_session() was called inside a GradientTape, a ForwardAccumulator "
                           "or a traced function; call it between them.")
    device = (ctx.device, ctx.xp)  # a `with tf.device(...)` block still open keeps its device
    ctx.__init__()
    ctx.device, ctx.xp = device


class init_scope:  # noqa: N801 - TensorFlow's name, used as a statement
    """Run the block eagerly, outside any trace, tape and accumulator (TensorFlow's ``tf.init_scope``).

    Creating state (a layer's weights on its first call, an optimizer's slots)
    inside a traced function happens here: the initial values are computed
    once, as data, not as ops of the graph.
    """

    def __enter__(self):
        ctx = PER_THREAD.context
        self._saved = (ctx.trace, ctx.tapes, ctx.accumulators, ctx.watchers, ctx.random)
        if ctx.trace is not None:  # the random state outside every trace: draws here are real
            ctx.random = getattr(ctx.trace, "eager_random", None) or ctx.random
        ctx.trace, ctx.tapes, ctx.accumulators, ctx.watchers = None, [], [], []
        ctx.refresh()
        return self

    def __exit__(self, *exc):
        ctx = PER_THREAD.context
        ctx.trace, ctx.tapes, ctx.accumulators, ctx.watchers, ctx.random = self._saved
        ctx.refresh()
        return False
