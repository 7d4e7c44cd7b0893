"""Forward mode: ``ForwardAccumulator`` (TensorFlow's), ``jvp``, ``hvp`` and ``linearize``.

While an accumulator is active, every op that reads a tensor it has a tangent for computes
its outputs' tangents at once, as the primal computation runs (``graph.record`` calls
``_push_forward`` after the tapes).  ``acc.jvp(y)`` only looks the tangent up.  Tangents are
kept while the primal's array lives (a tape's record of it included), so a forward pass holds
no more than the tensors it would hold anyway.

**One rule per op: a JVP is derived from the op's registered gradient rule**, by the
double-VJP trick, on that one op.  The gradient rule ``u -> vjp(u)`` is linear in the output
cotangent ``u``, so ``<vjp(u), t> = <u, J t>`` and ``J t = d/du <vjp(u), t>``: run the rule on
a watched dummy cotangent ``u`` (zeros), then one backward pass from its results, seeded with
the input tangents ``t``, to ``u``.  No op carries a second, hand-written rule, and a newly
registered op has forward mode the moment it has a gradient.  This is what TensorFlow's own
accumulator does for ops without a special case (``forwardprop._jvp_helper``).

Why not transpose the rules instead (JAX's ``linear_transpose``)?  A rule is arbitrary
Python over tapeflow ops mixing the nonlinear part (functions of the saved inputs) with the
linear part (in ``u``); transposing it needs a transpose rule per linear op, a second
per-op declaration (JAX's ``deflinear``), and a partial evaluation to split the two parts.
The double-VJP trick needs only what the op battery already checks to second order: that
each rule is itself differentiable.  Its cost is the rule run once plus one backward pass
through it, some 30 us of Python per op: a 256-row, 8-30-1 MLP loss takes 24 us plain,
120 us with its tape gradient, 305 us with a JVP, and a forward-over-reverse Hessian-vector
product 720 us (reverse over reverse, ``hessian_vector_product``: 330 us).  Forward mode is
for directions (Gauss-Newton products, a few jacobian columns), not every training step.
With no accumulator active nothing here runs: ``apply``'s fast path checks one flag.

Nesting follows TensorFlow: accumulators apply in the order they were entered, and while
one computes tangents, only the accumulators and tapes entered before it see the work, so
an outer accumulator (or tape) differentiates an inner one's JVPs (forward-over-forward,
reverse-over-forward) and a tape inside an accumulator keeps no tangents: its gradient is
computed under the accumulator, whose JVP of it is a Hessian-vector product
(forward-over-reverse, ``hvp``).
"""
import warnings
import weakref

from .. import backend
from . import nest
from .backprop import backward
from .backward import no_gradient_error
from .context import PER_THREAD
from .graph import Node
from .installed_ops import OPS
from .registry import NOT_DIFFERENTIABLE
from .tape import GradientTape, UnconnectedGradients, _unconnected_mode
from .tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import is_inexact_dtype

__all__ = ["ForwardAccumulator", "jvp", "hvp", "linearize", "op_jvp"]


class ForwardAccumulator:
    """Computes Jacobian-vector products with forward-mode autodiff, as TensorFlow's.

    ``primals`` (a tensor, Variable or nested structure of them) are watched with
    ``tangents`` (the same structure and shapes): inside ``with acc:``, the tangent of every
    tensor computed from them is computed with it, and ``acc.jvp(y)`` returns it, inside or
    after the block.  A tensor that is not a primal has a zero tangent::

        x = tf.constant([1.0, 2.0])
        with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0])) as acc:
            y = tf.reduce_sum(x ** 3.0)
        acc.jvp(y)    # 3.0: the directional derivative of y along [1, 0]
    """

    def __init__(self, primals, tangents):
        flat_primals, flat_tangents = nest.flatten(primals), nest.flatten(tangents)
        if len(flat_primals) != len(flat_tangents):
            raise ValueError(f"ForwardAccumulator: {len(flat_primals)} primals but "
                             f"{len(flat_tangents)} tangents; they must have the same structure")
        seen = set()
        for p in flat_primals:
            if not isinstance(p, Tensor):
                raise TypeError(f"ForwardAccumulator watches tensors and Variables, "
                                f"not {type(p).__name__}")
            if id(p) in seen:
                raise ValueError(f"Tensor {p} was specified as a primal multiple times. This may "
                                 f"indicate an error. If it was intended, please sum the "
                                 f"corresponding tangents.")
            seen.add(id(p))
        # tensor id -> (tangent, weak reference to the tensor's array or None: kept for good)
        self._tangents = {}
        self._recording = False
        self._outer_tapes = ()
        self._self_ref = weakref.ref(self)
        for p, t in zip(flat_primals, flat_tangents):
            self._watch(p, t)

    def _watch(self, primal, tangent):
        dtype = primal._value.dtype
        if not is_inexact_dtype(dtype):
            warnings.warn(f"The dtype of the watched primal must be floating (e.g. tf.float32), "
                          f"got tf.{dtype.name}", stacklevel=3)
        tangent = convert_to_tensor(tangent, dtype=dtype)
        if tuple(tangent._value.shape) != tuple(primal._value.shape):
            raise ValueError(f"ForwardAccumulator: a tangent of shape {tuple(tangent._value.shape)} "
                             f"for a primal of shape {tuple(primal._value.shape)}; they must match")
        entry = self._tangents.get(primal._id)
        if entry is not None:  # watching one tensor twice sums its tangents, as TensorFlow's
            tangent = entry[0] + tangent
        self._tangents[primal._id] = (tangent, None)

    # --- the context ----------------------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise ValueError("Accumulator is already recording.")
        ctx = PER_THREAD.context
        if ctx.trace is not None:  # traced ops never reach graph.record: no tangent would come
            raise NotImplementedError(
                "ForwardAccumulator inside a function being traced (tf.function) is not "
                "supported: put the accumulator around the call (a traced function called under "
                "it runs op by op and carries tangents), or run the function eagerly.")
        self._outer_tapes = tuple(ctx.tapes)  # these see (and may differentiate) our JVPs
        ctx.accumulators.append(self)
        ctx.refresh()
        self._recording = True
        return self

    def __exit__(self, *exc):
        if self._recording:
            ctx = PER_THREAD.context
            if not any(a is self for a in ctx.accumulators):
                raise RuntimeError("A ForwardAccumulator must be exited in the thread that "
                                   "entered it.")
            ctx.accumulators.remove(self)
            ctx.refresh()
            self._recording = False
            self._outer_tapes = ()
        return False

    # --- results --------------------------------------------------------------------------
    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangents computed for ``primals`` (a tensor or nested structure of them).

        No computation: a lookup.  A tensor the accumulator has no tangent for (it does not
        depend on the watched primals, or was computed outside the block) gives None, or
        zeros of its shape and dtype with ``unconnected_gradients="zero"``.
        """
        mode = _unconnected_mode(unconnected_gradients)

        def fetch(t):
            entry = self._tangents.get(t._id) if isinstance(t, Tensor) else None
            if entry is not None:
                return entry[0]
            if mode is UnconnectedGradients.ZERO:
                value = convert_to_tensor(t)._value
                return OPS.zeros_on(value.shape, value.dtype, value)
            return None
        return nest.map_structure(fetch, primals)

    # --- called by graph.record for every op while active ---------------------------------
    def _push_forward(self, op, inputs, outputs, attrs, position, ctx):
        """Compute the tangents of ``outputs`` if any of ``inputs`` has one."""
        tangents = self._tangents
        in_tangents = None
        for i, t in enumerate(inputs):
            entry = tangents.get(t._id)
            if entry is not None:
                if in_tangents is None:
                    in_tangents = [None] * len(inputs)
                in_tangents[i] = entry[0]
        if in_tangents is None:
            return
        # Only the accumulators and tapes entered before this one see its computation.
        saved_accumulators, saved_tapes = ctx.accumulators, ctx.tapes
        outer = self._outer_tapes
        ctx.accumulators = saved_accumulators[:position]
        ctx.tapes = [t for t in saved_tapes if any(t is o for o in outer)] if outer else []
        ctx.refresh()
        try:
            out_tangents = op_jvp(op, attrs, inputs, outputs, in_tangents)
        finally:
            ctx.accumulators, ctx.tapes = saved_accumulators, saved_tapes
            ctx.refresh()
        for o, t in zip(outputs, out_tangents):
            if t is not None:
                self._keep(o, t)

    def _keep(self, tensor, tangent):
        # The tangent lives as long as the tensor's array: a tape's record keeps the array
        # (not the Tensor), and a gradient rule reading op.outputs looks its tangent up by id.
        key = tensor._id
        try:
            ref = weakref.ref(tensor._value, _forgetter(self._self_ref, key))
        except TypeError:  # a numpy scalar takes no weak reference: kept with the accumulator
            ref = None
        self._tangents[key] = (tangent, ref)


def _forgetter(accumulator_ref, key):
    def forget(ref):
        acc = accumulator_ref()
        if acc is not None:
            entry = acc._tangents.get(key)
            if entry is not None and entry[1] is ref:
                del acc._tangents[key]
    return forget


# --- the JVP of one op, from its gradient rule ----------------------------------------------
def op_jvp(op, attrs, inputs, outputs, in_tangents):
    """Tangents of ``outputs`` (None where zero) given those of ``inputs`` (None where zero).

    The double-VJP trick on the op's gradient rule: ``J t = d/du <vjp(u), t>``.
    """
    needs = [t is not None and is_inexact_dtype(x._value.dtype)
             for x, t in zip(inputs, in_tangents)]
    wanted = [is_inexact_dtype(o._value.dtype) for o in outputs]
    if True not in needs or True not in wanted:
        return [None] * len(outputs)  # integer and bool results are never differentiable
    rule = op.gradient_rule(attrs)
    if rule is NOT_DIFFERENTIABLE:
        return [None] * len(outputs)
    if rule is None:
        raise no_gradient_error(
            op.name, "Forward mode derives an op's JVP from its gradient: register one with "
                     f"tapeflow.RegisterGradient('{op.name}').")
    node = _node_for(op, rule, attrs, inputs, outputs, needs)
    us = [Tensor(backend.array_module(o._value).zeros_like(o._value)) for o in outputs]
    sources = [u for u, w in zip(us, wanted) if w]
    targets, seeds = [], []
    tape = GradientTape(watch_accessed_variables=False)
    tape._watched_ids.update([u._id for u in sources])  # tape.watch, without its checks
    with tape:
        grads = rule.fn(node, *us)
        if grads.__class__ is not tuple and grads.__class__ is not list:
            grads = (grads,)
        if len(grads) != len(inputs):
            raise ValueError(f"The gradient of '{op.name}' returned {len(grads)} gradients "
                             f"for {len(inputs)} inputs")
        for k, g in enumerate(grads):
            if g is None or not needs[k] or not isinstance(g, Tensor):
                continue  # a constant (or absent) gradient does not depend on u
            t = in_tangents[k]
            if g._value.dtype != t._value.dtype:
                g = OPS.cast(g, t._value.dtype)
            if tuple(g._value.shape) != tuple(t._value.shape):
                # The rule left a broadcast input's gradient unsummed: <sum_to(g), t> = <g, t>.
                t = OPS.broadcast_to(t, tuple(g._value.shape))
            targets.append(g)
            seeds.append(t)
    if not targets:
        return [None] * len(outputs)
    # tape.gradient without its argument handling: one pass, its records released after it
    jvps = iter(backward(tape._id, targets, seeds, sources, release=True))
    return [next(jvps) if w else None for w in wanted]


def _node_for(op, rule, attrs, inputs, outputs, needs):
    """A record of the op for its gradient rule to read; no tape holds it."""
    node = Node()
    node.op = op
    node.rule = rule
    node.attrs = attrs
    node.tapes = ()
    node.seq = -1
    node.in_ids = tuple([t._id for t in inputs])
    node.in_nodes = tuple([t._node for t in inputs])
    node.in_meta = tuple([(t._value.shape, t._value.dtype) for t in inputs])
    node.saved_inputs = [Tensor(t._value, None, t._id) if isinstance(t, Variable) else t
                         for t in inputs]
    node.out_values = list(outputs)  # the tensors themselves, with their tapes' records
    node.out_ids = tuple([o._id for o in outputs])
    node.out_meta = tuple([(o._value.shape, o._value.dtype) for o in outputs])
    node.needs_input_grad = needs
    return node


# --- functional forms -------------------------------------------------------------------------
def _as_args(primals):
    if isinstance(primals, (list, tuple)):
        return [p if isinstance(p, Tensor) else convert_to_tensor(p) for p in primals], True
    return [primals if isinstance(primals, Tensor) else convert_to_tensor(primals)], False


def _like_args(tangents, is_sequence):
    return list(tangents) if is_sequence else [tangents]


def jvp(f, primals, tangents):
    """``(f(*primals), J_f(primals) @ tangents)``, as ``jax.jvp``, by forward mode.

    ``primals`` is the sequence of ``f``'s positional arguments (tensors, Variables or
    nested structures of them; a single tensor is taken as the one argument) and
    ``tangents`` matches it.  Outputs that do not depend on the primals get zero tangents.
    """
    args, is_sequence = _as_args(primals)
    with ForwardAccumulator(args, _like_args(tangents, is_sequence)) as acc:
        out = f(*args)
    return out, acc.jvp(out, unconnected_gradients="zero")


def hvp(f, primals, tangents):
    """The Hessian-vector product of scalar ``f(*primals)`` along ``tangents``, forward over reverse.

    One forward pass carrying tangents and one backward pass under the accumulator: the
    jvp of the gradient.  ``primals`` and ``tangents`` as in ``jvp``; the result has the
    structure of ``primals`` (zeros where ``f`` does not depend on an argument).
    """
    args, is_sequence = _as_args(primals)
    with ForwardAccumulator(args, _like_args(tangents, is_sequence)) as acc:
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(args)
            y = f(*args)
        if not isinstance(y, Tensor) or y._value.size != 1:
            raise ValueError(f"hvp needs a scalar-valued function, got "
                             f"{getattr(y, 'shape', type(y).__name__)}")
        grads = tape.gradient(y, args, unconnected_gradients="zero")
    result = acc.jvp(grads, unconnected_gradients="zero")
    return list(result) if is_sequence else result[0]


def linearize(f, *primals):
    """``(f(*primals), f_jvp)``: ``f_jvp(*tangents)`` is ``J_f(primals) @ tangents``.

    ``f`` runs once.  Its gradient, taken once with a watched dummy cotangent ``u``, is
    linear in ``u``; each ``f_jvp`` call is one backward pass through that gradient
    (the double-VJP trick on the whole function), so no nonlinear op is evaluated again.
    """
    args = [p if isinstance(p, Tensor) else convert_to_tensor(p) for p in primals]
    flat_args = nest.flatten(args)
    with GradientTape(watch_accessed_variables=False, persistent=True) as outer:
        with GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(flat_args)
            out = f(*args)
        flat_out = nest.flatten(out)
        us = [Tensor(backend.array_module(o._value).zeros_like(o._value)) for o in flat_out]
        outer.watch([u for u, o in zip(us, flat_out) if is_inexact_dtype(o._value.dtype)])
        grads = inner.gradient(flat_out, flat_args, output_gradients=us,
                               unconnected_gradients="zero")

    def f_jvp(*tangents):
        flat_tangents = nest.flatten(list(tangents))
        if len(flat_tangents) != len(flat_args):
            raise ValueError(f"f_jvp takes tangents for {len(flat_args)} primals, "
                             f"got {len(flat_tangents)}")
        seeds = [convert_to_tensor(t, dtype=a._value.dtype) for t, a in zip(flat_tangents, flat_args)]
        result = outer.gradient(grads, us, output_gradients=seeds, unconnected_gradients="zero")
        return nest.pack_sequence_as(out, result)
    return out, f_jvp
