"""A compiled step's small optimizer updates run as one call (horizontal fusion).

A traced training step updates each Variable with its own op (``ApplyAdam``, then three
assigns).  On a small Variable (a bias, a housing MLP's kernels) such an op is a dozen numpy
calls on a few hundred elements, so its time is all per-call overhead: six of them took about
a seventh of the housing MLP's step at batch 1,024.  ``group_updates`` replaces the small
updates of one op that share their attributes and scalar operands (the learning rate, the step
count) with one equation.  Its kernel lays each per-variable operand of the group end to end
(``np.concatenate``), runs the op's forward once (its in-place kernel where it has one: the
laid-out copies are the call's own), and hands each Variable a view of its part of each result.
The op must say that its forward works element by element (``core/elementwise_updates.py``),
so every element gets the arithmetic it got alone: the same bits.

The grouped equation stands where the group's last update stood, followed by every member's
assigns in their order.  Moving an update later is safe when nothing in between reads or
assigns a Variable it assigns (such a read closes the group before it), its results go only to
its own assigns, and nothing in between is an effect or a nested graph.  Large updates are left
to their in-place kernels (``memory_plan``): from ``MIN_BUFFER_BYTES`` on, copying the operands
would cost more than the calls it saves.  Only numpy graphs are grouped.
"""
import copy

import numpy as np

from ..core.elementwise_updates import elementwise_operands
from ..core.in_place import in_place_kernel
from ..core.registry import Primitive
from . import memory_plan
from .ir import ASSIGN, CUSTOM_GRADIENT, READ, Eqn, Graph, is_effect

__all__ = ["group_updates"]


def group_updates(graph):
    """``graph`` with each group of small elementwise updates as one equation (a new Graph),
    or ``graph`` itself when there is no group of two or more."""
    groups = _find_groups(graph)
    if not groups:
        return graph
    eqns = graph.eqns
    moved, placed = set(), {}
    for members in groups:
        for k in members:
            moved.update(range(k, k + 1 + len(eqns[k].outputs)))  # the update and its assigns
        placed[members[-1]] = members
    kept = []
    for k, e in enumerate(eqns):
        members = placed.get(k)
        if members is not None:
            kept.append(_grouped_eqn([eqns[m] for m in members]))
            for m in members:
                kept.extend(eqns[m + 1:m + 1 + len(eqns[m].outputs)])
        elif k not in moved:
            kept.append(e)
    grouped = copy.copy(graph)
    grouped.eqns = kept
    return grouped


class _Group:
    __slots__ = ("assigned", "members")

    def __init__(self):
        self.members = []     # positions of its update equations
        self.assigned = set()  # the Variables (indices) its members' assigns write


def _find_groups(graph):
    eqns = graph.eqns
    uses = _use_counts(graph)
    open_groups, groups = {}, []

    def close(keys):
        for key in keys:
            members = open_groups.pop(key).members
            if len(members) > 1:
                groups.append(members)

    k = 0
    while k < len(eqns):
        e = eqns[k]
        member = _member_key(graph, k, uses)
        if member is not None:
            key, assigned = member
            # an update assigning what an open group assigns must not be moved past it
            close([g for g, group in open_groups.items() if group.assigned & assigned])
            group = open_groups.setdefault(key, _Group())
            group.members.append(k)
            group.assigned |= assigned
            k += 1 + len(e.outputs)  # its own assigns move with it
            continue
        if e.op is READ or e.op is ASSIGN:
            variable = e.attrs["variable"]
            close([g for g, group in open_groups.items() if variable in group.assigned])
        elif e.op is CUSTOM_GRADIENT or is_effect(e.op) \
                or any(isinstance(v, Graph) for v in e.attrs.values()):
            close(list(open_groups))  # an effect, or a nested graph that may read Variables
        k += 1
    close(list(open_groups))
    return groups


def _use_counts(graph):
    uses = {}
    for e in graph.eqns:
        for i in e.inputs:
            uses[i] = uses.get(i, 0) + 1
    for o in graph.outputs:
        uses[o] = uses.get(o, 0) + 1
    return uses


def _member_key(graph, k, uses):
    """(group key, Variables assigned) when equation ``k`` is a small elementwise update whose
    results go only to the assigns right after it; else None."""
    e = graph.eqns[k]
    per_variable = elementwise_operands(e.op.name)
    if per_variable is None or len(e.inputs) <= per_variable or not e.outputs:
        return None
    own, shared = e.inputs[:per_variable], e.inputs[per_variable:]
    shape, dtype = graph.types[own[0]]
    if None in shape or dtype.kind != "f" or set(own) & set(shared) \
            or any(graph.types[i] != (shape, dtype) for i in own) \
            or dtype.itemsize * int(np.prod(shape, dtype=np.int64)) >= \
            memory_plan.MIN_BUFFER_BYTES:
        return None
    assigns = graph.eqns[k + 1:k + 1 + len(e.outputs)]
    if len(assigns) != len(e.outputs) \
            or any(a.op is not ASSIGN or a.inputs[0] != o for a, o in zip(assigns, e.outputs)) \
            or any(uses.get(o) != 1 for o in e.outputs):
        return None
    try:
        attrs = tuple(sorted(e.attrs.items()))
        key = (e.op.name, attrs, shared, dtype)
        hash(key)
    except TypeError:  # an unhashable attribute: left alone
        return None
    return key, {a.attrs["variable"] for a in assigns}


def _grouped_eqn(members):
    first = members[0]
    per_variable = elementwise_operands(first.op.name)
    inputs = [i for e in members for i in e.inputs[:per_variable]] + \
        list(first.inputs[per_variable:])
    outputs = [o for e in members for o in e.outputs]
    update = first.op.forward
    in_place = in_place_kernel(first.op.name)
    if in_place is not None and in_place[1] == len(first.outputs):
        update = in_place[0]  # the laid-out operands are the kernel's own: written in place
    kernel = _grouped_kernel(update, first.attrs, len(members), per_variable)
    op = Primitive(f"Grouped{first.op.name}", kernel, num_outputs=len(outputs))
    return Eqn(op, {}, inputs, outputs, members[-1].source)


def _grouped_kernel(forward, attrs, count, per_variable):
    """The kernel of ``count`` updates by ``forward``: operands are each member's
    ``per_variable`` arrays in turn, then the shared ones; results each member's in turn."""
    def grouped_update(*operands):
        own = operands[:count * per_variable]
        laid = [np.concatenate(own[j::per_variable], axis=None) for j in range(per_variable)]
        results = forward(*laid, *operands[count * per_variable:], **attrs)
        parts, start = [], 0
        for variable in own[::per_variable]:  # plain loops: a generator costs a frame each
            end = start + variable.size
            shape = variable.shape
            for result in results:
                parts.append(result[start:end].reshape(shape))
            start = end
        return tuple(parts)
    grouped_update.__qualname__ = f"grouped_update[{count} x {getattr(forward, '__name__', '?')}]"
    return grouped_update
