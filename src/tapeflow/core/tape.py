"""``GradientTape``: TensorFlow's recording context, with its semantics.

Inside ``with GradientTape() as tape:`` every differentiable op that reads a
watched tensor is recorded (see ``graph.py``); ``tape.gradient`` then runs one
backward pass (``backprop.py``).  ``jacobian`` and ``batch_jacobian`` are also
one backward pass each: the cotangent carries the target's elements on an
extra leading axis through every rule.
"""
import enum
import itertools
import operator
import warnings

import numpy as np

from .. import backend
from . import nest
from .backprop import NotVectorizable, backward, reachable_nodes, release_nodes
from .context import context
from .explain import explain_gradient
from .installed_ops import OPS
from .tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import is_inexact_dtype

__all__ = ["GradientTape", "UnconnectedGradients", "paused_tapes"]

_next_tape_id = itertools.count(1).__next__
# The largest jacobian cotangent one backward pass may carry, in elements (8 MB of float32).
_CHUNK_ELEMENTS = 1 << 21


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


def _unconnected_mode(value):
    if isinstance(value, UnconnectedGradients):
        return value
    try:
        return UnconnectedGradients(str(value).lower())
    except ValueError:
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero' "
                         f"(or tapeflow.UnconnectedGradients), not {value!r}") from None


class GradientTape:
    """Records operations for automatic differentiation.

    ``persistent=False`` (the default) allows one ``gradient`` or ``jacobian``
    call and then releases the records; ``persistent=True`` allows many.
    Trainable Variables read inside the context are watched automatically
    unless ``watch_accessed_variables=False``; ``watch`` adds any tensor.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._set_id(_next_tape_id())
        self._persistent = bool(persistent)
        self._watch_accessed_variables = bool(watch_accessed_variables)
        self._watched_ids = set()
        self._watched_variables = []
        self._recording = False
        self._used = False
        self._warned_in_context = False
        self._left_tapeflow = []  # (id, node) of watched tensors turned into numpy

    def _set_id(self, tape_id):
        self._id = tape_id
        self._id_tuple = (tape_id,)  # what a node records it in, made once

    # --- the context ---------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("This GradientTape is already recording.")
        self._push()
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        ctx = context()
        ctx.tapes.append(self)
        ctx.refresh()
        self._recording = True
        self._thread_context = ctx.tapes  # the list it was pushed on: this thread's

    def _pop(self):
        ctx = context()
        if self._thread_context is not ctx.tapes:
            raise RuntimeError("A GradientTape must be exited in the thread that entered it.")
        ctx.tapes.remove(self)
        ctx.refresh()
        self._recording = False

    def stop_recording(self):
        """A context in which this tape records nothing (other tapes still do)."""
        return _Paused(self)

    def reset(self):
        """Forget everything recorded and watched so far; keep recording if inside the context."""
        self._set_id(_next_tape_id())  # old nodes carry the old id, so they no longer count
        self._watched_ids = set()
        self._watched_variables = []
        self._left_tapeflow = []
        self._used = False

    # --- watching -------------------------------------------------------------
    def watch(self, tensor):
        """Watch a tensor, or every tensor in a nested structure of them.

        A watched tensor is a source of this tape even when another tape produced it:
        ops on it are recorded here too, and the gradient stops at it.
        """
        for t in nest.flatten(tensor):
            if not isinstance(t, Tensor):
                raise ValueError(f"GradientTape.watch takes tensors or variables, not {type(t).__name__}")
            if not is_inexact_dtype(t._value.dtype):
                warnings.warn(f"The dtype of the watched tensor must be floating (e.g. tf.float32), "
                              f"got tf.{t._value.dtype.name}: its gradient will be None", stacklevel=2)
            if isinstance(t, Variable):
                self._watch_variable(t)
            else:
                self._watched_ids.add(t._id)

    def _watch_variable(self, variable):
        if variable._id not in self._watched_ids:
            self._watched_ids.add(variable._id)
            self._watched_variables.append(variable)

    def watched_variables(self):
        """The Variables this tape watches, in order of construction (as TensorFlow's).

        A Variable's id is drawn when it is constructed, so sorting by it gives that
        order whatever order the Variables were first read or watched in.
        """
        return tuple(sorted(self._watched_variables, key=_by_id))

    # --- gradients ------------------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(sources), in the structure of ``sources``.

        ``target`` may be a tensor or any nesting of lists, tuples and dicts of
        them; non-scalar and multiple targets are summed.  ``output_gradients``
        weights each target (a vector-Jacobian product).
        """
        mode = _unconnected_mode(unconnected_gradients)
        self._check_usable()
        targets = [self._as_target(t) for t in nest.flatten(target)]
        flat_sources = _as_sources(sources)
        if output_gradients is None:
            seeds = [_ones_like(t) for t in targets]
        else:
            flat_grads = nest.flatten(output_gradients)
            if len(flat_grads) != len(targets):
                raise ValueError(f"output_gradients has {len(flat_grads)} tensors for "
                                 f"{len(targets)} targets")
            seeds = [convert_to_tensor(g, dtype=t._value.dtype)
                     for g, t in zip(flat_grads, targets)]
            for g, t in zip(seeds, targets):
                if g._value.shape != t._value.shape:
                    raise ValueError(f"output_gradients has shape {tuple(g._value.shape)} but its "
                                     f"target has shape {tuple(t._value.shape)}")
        watched = self._watched_sources(flat_sources)
        with self._differentiating(targets) as run:
            grads = backward(self._id, targets, seeds, watched, release=run.releases)
            run.released = run.releases
        grads = [_finish(g, s, mode, s._value.shape) for g, s in zip(grads, flat_sources)]
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True, chunk_size=None):
        """d(target)/d(source) for each source: shape target.shape + source.shape.

        One vectorized backward pass; ``chunk_size`` bounds memory by sending at
        most that many of the target's elements through each pass (by default,
        as many as keep the largest cotangent near 8 MB).
        """
        mode = _unconnected_mode(unconnected_gradients)
        self._check_usable()
        target = self._as_target(target)
        flat_sources = _as_sources(sources)
        tshape = target._value.shape
        n = int(np.prod(tshape, dtype=np.int64))
        with self._differentiating([target]):
            blocks = self._batched_backward([target], tshape, n, self._watched_sources(flat_sources),
                                            chunk_size, eye_seed)
        out = []
        for g, s in zip(blocks, flat_sources):
            if g is not None:
                g = OPS.reshape(g, tuple(tshape) + tuple(s._value.shape))
            out.append(_finish(g, s, mode, tuple(tshape) + tuple(s._value.shape)))
        return nest.pack_sequence_as(sources, out)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True, chunk_size=None):
        """Per-example jacobians: shape (batch,) + target.shape[1:] + source.shape[1:].

        Assumes example ``i`` of the target depends only on example ``i`` of the
        source (as TensorFlow does, this is not checked).  As TensorFlow requires, the
        source has rank >= 2 and target and source the same batch size (axis 0), with
        TensorFlow's error messages; a target of rank 1 (one scalar per example) is also
        accepted, where TensorFlow asks for rank 2.
        """
        mode = _unconnected_mode(unconnected_gradients)
        self._check_usable()
        target = self._as_target(target)
        source = _as_sources(source)[0]
        tshape, sshape = tuple(target._value.shape), tuple(source._value.shape)
        # TensorFlow's checks and messages (TensorShape.with_rank_at_least, then the batch size).
        for shape in (tshape, sshape):
            if len(shape) < 2:
                raise ValueError(f"Shape {shape} must have rank at least 2")
        if tshape[0] != sshape[0]:
            raise ValueError(f"Need first dimension of target shape {tshape} and "
                             f"source shape {sshape} to match. (batch_jacobian pairs example i "
                             f"of the target with example i of the source: both need the same "
                             f"batch size on axis 0)")
        m = int(np.prod(tshape[1:], dtype=np.int64))
        with self._differentiating([target]):
            (g,) = self._batched_backward([target], tshape, m, self._watched_sources([source]),
                                          chunk_size, batch_eye_seed)
        full = tuple(tshape) + tuple(sshape[1:])
        if g is not None:  # (m, batch, *sshape[1:]) -> (batch, *tshape[1:], *sshape[1:])
            g = OPS.reshape(OPS.moveaxis(g, 0, 1), full)
        elif is_inexact_dtype(source._value.dtype):
            # TensorFlow's batch_jacobian gives zeros (of the target's dtype) for a target that
            # does not depend on the source, whatever unconnected_gradients says
            return OPS.zeros_on(full, target._value.dtype, target._value)
        return _finish(g, source, mode, full)

    def _batched_backward(self, targets, tshape, n, sources, chunk_size, make_seed):
        """Backward passes whose cotangents carry ``n`` rows on a leading axis."""
        dtype = targets[0]._value.dtype
        like = targets[0]._value
        if n == 0:  # an empty target: an empty jacobian, no pass needed
            return [None if s is _UNWATCHED else
                    OPS.zeros_on((0,) + tuple(s._value.shape), s._value.dtype, s._value)
                    for s in sources]
        chunk = max(1, int(chunk_size)) if chunk_size else self._auto_chunk(targets, n)
        row_blocks = [range(s, min(s + chunk, n)) for s in range(0, n, chunk)]
        parts = [[] for _ in sources]
        try:
            for rows in row_blocks:
                seed = make_seed(rows, n, tshape, dtype, like)
                grads = backward(self._id, targets, [seed], sources, batch_ndim=1)
                for p, g in zip(parts, grads):
                    p.append(g)
        except NotVectorizable as e:
            warnings.warn(f"jacobian: the gradient of {e} cannot take a batch of cotangents, "
                          f"so this jacobian loops over its {n} rows", stacklevel=3)
            row_blocks = [range(row, row + 1) for row in range(n)]
            parts = [[] for _ in sources]
            for rows in row_blocks:
                seed = make_seed(rows, n, tshape, dtype, like)
                grads = backward(self._id, targets, [OPS.reshape(seed, seed._value.shape[1:])], sources)
                for p, g in zip(parts, grads):
                    p.append(None if g is None else OPS.expand_dims(g, 0))
        out = []
        for p in parts:
            if all(g is None for g in p):
                out.append(None)
                continue
            if any(g is None for g in p):  # rows that reached no source: zeros of their size
                ref = next(g for g in p if g is not None)
                p = [g if g is not None else OPS.zeros_on((len(r),) + ref._value.shape[1:],
                                                       ref._value.dtype, ref._value)
                     for g, r in zip(p, row_blocks)]
            out.append(p[0] if len(p) == 1 else OPS.concat(p, axis=0))
        return out

    def _auto_chunk(self, targets, n):
        """Rows per pass so that the largest cotangent stays near _CHUNK_ELEMENTS elements.

        Cotangents of a few megabytes stay in cache and reuse the allocator's memory: on
        the housing MLP's 301 x 301 Hessian this is twice as fast as one pass of 301 rows.
        """
        nodes = reachable_nodes(self._id, [t._node for t in targets], ordered=False)
        widest = max((int(np.prod(shape, dtype=np.int64)) for node in nodes
                      for shape, _ in node.out_meta), default=1)
        return max(1, min(n, _CHUNK_ELEMENTS // max(widest, 1)))

    # --- why is my gradient None? -----------------------------------------------
    def explain(self, target, source):
        """A sentence saying why d(target)/d(source) is, or is not, connected on this tape."""
        return explain_gradient(self, target, source)

    # --- internals ---------------------------------------------------------------
    def _check_usable(self):
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set "
                               "of gradients (or jacobians)")

    def _differentiating(self, targets):
        return _Differentiating(self, targets)

    def _as_target(self, t):
        """A target as a tensor.  A Variable target is read in the tape's context, as
        TensorFlow reads it: a trainable one is then watched (unless
        ``watch_accessed_variables=False``), so ``gradient(v, v)`` is 1."""
        if isinstance(t, Variable) and self._watch_accessed_variables and t.trainable:
            self._watch_variable(t)
        return _as_target(t)

    def _watched_sources(self, sources):
        """``sources`` with each Variable this tape does not watch replaced by a stand-in.

        As in TensorFlow, a Variable is a source only if the tape watches it (a trainable
        one read in the context, or one passed to ``watch``); otherwise its gradient is
        None even when an op that read it was recorded because of another input.  Tensors
        are differentiated as they are: one this tape (or any tape) produced is a valid source.
        """
        watched = self._watched_ids
        out = sources
        for k, s in enumerate(sources):
            if s.__class__ is not Tensor and isinstance(s, Variable) and s._id not in watched:
                if out is sources:
                    out = list(sources)
                out[k] = _UNWATCHED
        return out


class paused_tapes:
    """A context in which no tape that is recording now records (new tapes still do)."""

    def __enter__(self):
        self._tapes = [t for t in context().tapes if t._recording]
        for tape in self._tapes:
            tape._pop()
        return self

    def __exit__(self, *exc):
        for tape in self._tapes:
            tape._push()
        return False


class _Paused:
    """``tape.stop_recording()``: pause one tape for the block."""

    def __init__(self, tape):
        self._tape = tape

    def __enter__(self):
        if not self._tape._recording:
            raise ValueError("GradientTape.stop_recording() is only valid inside the tape's context")
        self._tape._pop()
        return self

    def __exit__(self, *exc):
        self._tape._push()
        return False


class _Differentiating:
    """Around one gradient/jacobian call: in-context rules, then releasing records."""

    def __init__(self, tape, targets):
        self._tape = tape
        self._targets = targets
        self._paused = False
        self.releases = not tape._persistent  # this call is the tape's last
        self.released = False

    def __enter__(self):
        tape = self._tape
        if tape._recording:
            if tape._persistent:
                if not tape._warned_in_context:
                    tape._warned_in_context = True
                    warnings.warn(
                        "GradientTape.gradient was called inside the context of a persistent tape: "
                        "the gradient computation is recorded on the tape as well (useful only for "
                        "higher-order gradients); call it after the `with` block otherwise.",
                        stacklevel=4)
            else:  # one use only: recording its own gradient would be wasted work
                tape._pop()
                self._paused = True
        return self

    def __exit__(self, exc_type, *exc):
        tape = self._tape
        if self._paused:
            tape._push()
        if not tape._persistent:
            tape._used = True
            if not self.released:
                release_nodes(tape._id, reachable_nodes(
                    tape._id, [t._node for t in self._targets], ordered=False))
        return False


def eye_seed(rows, n, tshape, dtype, like):
    """Rows ``rows`` of the identity, shaped (len(rows),) + target shape."""
    xp = backend.array_module(like)
    block = xp.zeros((len(rows), n), dtype=dtype)
    if len(rows):
        block[xp.arange(len(rows)), xp.arange(rows.start, rows.stop)] = 1
    return Tensor(block.reshape((len(rows),) + tuple(tshape)))


def batch_eye_seed(rows, m, tshape, dtype, like):
    """The identity over each example's elements: (len(rows), batch) + tshape[1:]."""
    xp = backend.array_module(like)
    block = xp.zeros((len(rows), m), dtype=dtype)
    if len(rows):
        block[xp.arange(len(rows)), xp.arange(rows.start, rows.stop)] = 1
    block = block.reshape((len(rows), 1) + tuple(tshape[1:]))
    return Tensor(xp.broadcast_to(block, (len(rows),) + tuple(tshape)))


_by_id = operator.attrgetter("_id")
# The stand-in for an unwatched Variable among the sources: an id no tensor has.
_UNWATCHED = Tensor(np.zeros((), np.float32), None, -1)

_SCALAR_ONES = {}


def _ones_like(t):
    """The default seed; a scalar target's is a shared constant (tensors are immutable)."""
    value = t._value
    if value.ndim == 0 and backend.module_of(value) is np:
        one = _SCALAR_ONES.get(value.dtype)
        if one is None:
            one = _SCALAR_ONES[value.dtype] = Tensor(value.dtype.type(1))
        return one
    return OPS.ones_like(t)


def _as_target(t):
    if isinstance(t, Tensor):
        return t
    if t is None:
        raise ValueError("gradient target is None: pass the tensor (or structure of tensors) "
                         "computed inside the tape")
    return convert_to_tensor(t)


def _as_sources(sources):
    flat = nest.flatten(sources)
    if not all(isinstance(s, Tensor) for s in flat):
        bad = next(s for s in flat if not isinstance(s, Tensor))
        raise ValueError(f"gradient sources must be tensors or variables, not {type(bad).__name__}")
    return flat


def _finish(g, source, mode, shape):
    """Apply ``unconnected_gradients`` and the integer-source rule to one result."""
    if g is not None and mode is UnconnectedGradients.NONE:
        if is_inexact_dtype(source._value.dtype):
            return g
    if not is_inexact_dtype(source._value.dtype):
        g = None
    if g is None and mode is UnconnectedGradients.ZERO:
        return OPS.zeros_on(shape, source._value.dtype, source._value)
    return g
