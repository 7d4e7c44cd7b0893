"""The backward pass: cotangents from targets to sources through one tape's nodes.

Done once, here, for every rule: finding the nodes between the targets and the
sources (nodes that lead to no source are never run), visiting them in
reverse creation order without recursion, skipping nodes whose cotangents are
all absent (symbolic zeros), summing a cotangent back to the shape of an input
that was broadcast, and accumulating cotangents of tensors used twice.

Cotangents may carry ``batch_ndim`` extra leading axes: that is how a jacobian
is one backward pass.  Rules are written with negative axes so they hold for
any number of leading axes; a rule registered with ``vectorized=False`` makes
``backward`` raise ``NotVectorizable`` before any work, and the caller loops.
"""
import operator

import numpy as np

from .context import context
from .dispatch import apply
from .installed_ops import OPS
from .registry import Inline, def_primitive, register_gradient
from .tensor import Tensor, convert_to_tensor

__all__ = ["backward", "NotVectorizable", "reachable_nodes", "release_nodes", "lead_shape"]


class NotVectorizable(Exception):
    """The graph holds rules that cannot take cotangents with extra leading axes."""

    def __init__(self, op_names):
        super().__init__(", ".join(op_names))
        self.op_names = op_names


def reachable_nodes(tape_id, roots, ordered=True):
    """Nodes recorded on ``tape_id`` that ``roots`` depend on (in creation order if ``ordered``)."""
    seen = set()
    nodes = []
    stack = [n for n in roots if n is not None and tape_id in n.tapes]
    while stack:
        n = stack.pop()
        key = id(n)
        if key in seen:
            continue
        seen.add(key)
        nodes.append(n)
        for p in n.in_nodes:
            if p is not None and tape_id in p.tapes:
                stack.append(p)
    if ordered:
        nodes.sort(key=_by_seq)
    return nodes


_by_seq = operator.attrgetter("seq")


def backward(tape_id, targets, seeds, sources, batch_ndim=0, release=False):
    """Cotangents of ``sources`` (a list, None where unconnected).

    ``seeds[i]`` is the cotangent of ``targets[i]``, with ``batch_ndim``
    leading axes in front of the target's shape.  With ``release``, the tape
    gives up its claim on the records it walked (a non-persistent tape's one
    pass), and records no other tape holds drop their saved arrays.  inf and nan are legitimate
    results here (the guide's softplus at 100 has a nan gradient), so numpy's
    floating-point warnings are off for the pass.
    """
    with np.errstate(all="ignore"):
        return _backward(tape_id, targets, seeds, sources, batch_ndim, release)


def _backward(tape_id, targets, seeds, sources, batch_ndim, release):
    source_ids = {s._id for s in sources}
    # With no tape or accumulator seeing this pass, cotangents of a tensor used many times are
    # collected and summed in one go when needed (a training loop's variables, T1's 200 uses
    # of s); a recorded (or traced) pass adds them as ops, so that the sum can be differentiated.
    ctx = context()
    lazy = not ctx.tapes and not ctx.accumulators and ctx.trace is None
    grads = {}
    for t, seed in zip(targets, seeds):
        _accumulate(grads, t._id, seed)
    nodes = reachable_nodes(tape_id, [t._node for t in targets])

    # A node is useful when a source is upstream of it: only those are run.  Nodes come in
    # creation order, so a node's inputs are decided before the node itself.
    useful = set()
    path = []
    for n in nodes:
        ids, parents = n.in_ids, n.in_nodes
        if len(ids) == 2:  # most ops: unrolled, this loop runs once per recorded node
            p0, p1 = parents
            needs = [ids[0] in source_ids or (p0 is not None and id(p0) in useful),
                     ids[1] in source_ids or (p1 is not None and id(p1) in useful)]
        else:
            needs = [i in source_ids or (p is not None and id(p) in useful)
                     for i, p in zip(ids, parents)]
        if True in needs:
            useful.add(id(n))
            path.append((n, needs))
    path.reverse()
    if batch_ndim:
        blocked = sorted({n.op.name for n, _ in path if n.rule is not None and not n.rule.vectorized})
        if blocked:
            raise NotVectorizable(blocked)

    for n, needs in path:
        out_ids = n.out_ids
        if len(out_ids) == 1:
            oid = out_ids[0]
            g = grads.get(oid) if oid in source_ids else grads.pop(oid, None)
            if g is None:
                continue  # a symbolic zero: nothing flows back through this node
            if g.__class__ is list:
                g = _sum_collected(g)
            out_grads = (g,)
        else:
            out_grads = [grads.get(oid) if oid in source_ids else grads.pop(oid, None)
                         for oid in out_ids]
            out_grads = [_sum_collected(g) if g.__class__ is list else g for g in out_grads]
            if all(g is None for g in out_grads):
                continue
            out_grads = [g if g is not None else _zeros_cotangent(n, k, seeds[0], batch_ndim)
                         for k, g in enumerate(out_grads)]
        rule = n.rule
        if rule is None:
            raise LookupError(
                f"No gradient defined for operation '{n.op.name}' (op type: {n.op.name}). "
                f"Register one with tapeflow.RegisterGradient('{n.op.name}').")
        in_ids = n.in_ids
        n.needs_input_grad = needs  # set here, not earlier: a rule may start a backward of its own
        in_grads = rule.fn(n, *out_grads)
        if in_grads.__class__ is not tuple and in_grads.__class__ is not list:
            in_grads = (in_grads,)
        if len(in_grads) != len(in_ids):
            raise ValueError(f"The gradient of '{n.op.name}' returned {len(in_grads)} gradients "
                             f"for {len(in_ids)} inputs")
        for k, g in enumerate(in_grads):
            if g is None or not needs[k]:
                continue
            shape, dtype = n.in_meta[k]
            if g.__class__ is not Tensor:
                g = convert_to_tensor(g, dtype=dtype)
            value = g._value
            if value.dtype != dtype:
                g = OPS.cast(g, dtype)  # e.g. back to an integer source's dtype: dropped at the end
            if (value.shape[batch_ndim:] if batch_ndim else value.shape) != shape:
                g = unbroadcast(g, shape, batch_ndim)
            key = in_ids[k]
            prev = grads.get(key)
            if prev is None:
                grads[key] = g
            elif not lazy:
                grads[key] = prev + g
            elif prev.__class__ is list:
                prev.append(g)
            else:
                grads[key] = [prev, g]
    if release:
        release_nodes(tape_id, nodes)
    out = [grads.get(s._id) for s in sources]
    return [_sum_collected(g) if g.__class__ is list else g for g in out]


def _sum_collected(cotangents):
    """The sum of cotangents collected for one tensor (same shape and dtype), in one pass."""
    total = cotangents[0]._value
    for g in cotangents[1:]:
        total = total + g._value
    return Tensor(total)


def release_nodes(tape_id, nodes):
    """Drop ``tape_id``'s claim on ``nodes``; a node no tape claims frees what it saved."""
    alone = (tape_id,)
    for node in nodes:
        if node.tapes == alone:
            node.tapes = ()
            node.release()
        else:
            node.tapes = tuple([t for t in node.tapes if t != tape_id])
            if not node.tapes:
                node.release()


def _accumulate(grads, key, g):
    prev = grads.get(key)
    grads[key] = g if prev is None else prev + g


def _zeros_cotangent(node, k, like_seed, batch_ndim):
    lead = like_seed._value.shape[:batch_ndim]
    shape, dtype = node.out_meta[k]
    return OPS.zeros_on(lead + tuple(shape), dtype, like_seed._value)


def unbroadcast(g, shape, batch_ndim=0):
    """Sum ``g`` (batch axes + a broadcast shape) back down to batch axes + ``shape``."""
    return apply(_SUM_TO_SHAPE, (g,), {"shape": tuple(shape), "batch_ndim": batch_ndim})


def _sum_to_shape(g, shape, batch_ndim):
    gshape = g.shape
    extra = len(gshape) - batch_ndim - len(shape)
    axes = list(range(batch_ndim, batch_ndim + extra))
    for i, d in enumerate(shape):
        if d == 1 and gshape[batch_ndim + extra + i] != 1:
            axes.append(batch_ndim + extra + i)
    if axes:
        g = g.sum(axis=tuple(axes), dtype=g.dtype)
    return g.reshape(gshape[:batch_ndim] + tuple(shape))


_SUM_TO_SHAPE = def_primitive("SumToShape", _sum_to_shape)


def _sum_to_shape_kernel(in_types, attrs):
    """With the cotangent's shape known, the axes ``_sum_to_shape`` would sum are fixed."""
    ((gshape, dtype),) = in_types
    shape, batch_ndim = attrs["shape"], attrs["batch_ndim"]
    if None in gshape:
        return None
    extra = len(gshape) - batch_ndim - len(shape)
    axes = list(range(batch_ndim, batch_ndim + extra))
    for i, d in enumerate(shape):
        if d == 1 and gshape[batch_ndim + extra + i] != 1:
            axes.append(batch_ndim + extra + i)
    out_shape = tuple(gshape[:batch_ndim]) + tuple(shape)
    if not axes:
        return lambda g: g.reshape(out_shape)
    axes = tuple(axes)
    summed = tuple(d for i, d in enumerate(gshape) if i not in axes)
    if summed == out_shape and dtype.kind == "f":
        # (32, 30) -> (30,): the sum has the shape already, and a float array sums in its
        # own dtype by default; the axes are ints, so the expression holds nothing but them.
        return Inline(f"{{0}}.sum(axis={tuple(int(a) for a in axes)!r})")
    return lambda g: g.sum(axis=axes, dtype=dtype).reshape(out_shape)


_SUM_TO_SHAPE.specialize = _sum_to_shape_kernel


@register_gradient("SumToShape")
def _sum_to_shape_grad(op, g):
    in_shape, nb, shape = op.input_shape(), op.get_attr("batch_ndim"), op.get_attr("shape")
    lead = lead_shape(g, len(op.output_shape()))
    extra = len(in_shape) - nb - len(shape)
    kept = lead + tuple(in_shape[:nb]) + (1,) * extra + shape
    return OPS.broadcast_to(OPS.reshape(g, kept), lead + tuple(in_shape))


def lead_shape(g, out_ndim):
    """The extra leading (jacobian) axes of cotangent ``g`` for an output of rank ``out_ndim``."""
    shape = g._value.shape
    return tuple(shape[:len(shape) - out_ndim])
