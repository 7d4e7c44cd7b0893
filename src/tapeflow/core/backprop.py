"""The backward pass: cotangents from targets to sources through one tape's nodes.

Done once, here, for every rule: finding the nodes between the targets and the
sources (nodes that lead to no source are never run), visiting them in
reverse creation order without recursion, and skipping nodes whose cotangents
are all absent (symbolic zeros).  Running a node's rule, summing a cotangent
back to the shape of an input that was broadcast and accumulating cotangents of
tensors used twice are the steps ``core/backward.py`` shares with
``tracing/graph_vjp.py``'s walk over a nested graph's equations.

Cotangents may carry ``batch_ndim`` extra leading axes: that is how a jacobian
is one backward pass.  Rules are written with negative axes so they hold for
any number of leading axes; a rule registered with ``vectorized=False`` makes
``backward`` raise ``NotVectorizable`` before any work, and the caller loops.
"""
import operator

import numpy as np

from .backward import accumulate, fill_zeros, lead_shape, rule_fn, run_rule, unbroadcast
from .context import context
from .tensor import Tensor

# unbroadcast and lead_shape live in .backward; named here too for the modules that import them
__all__ = ["backward", "NotVectorizable", "reachable_nodes", "release_nodes", "lead_shape",
           "unbroadcast"]


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
        accumulate(grads, t._id, seed)
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
            out_grads = fill_zeros(out_grads, n.out_meta, seeds[0]._value.shape[:batch_ndim],
                                   seeds[0]._value)
        n.needs_input_grad = needs  # set here, not earlier: a rule may start a backward of its own
        run_rule(rule_fn(n.op, n.rule), n, out_grads, n.in_ids, n.in_meta, needs, grads,
                 batch_ndim, lazy)
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
