"""Nested structures of tensors (lists, tuples, namedtuples, dicts), as ``tf.nest``.

Dicts are flattened in sorted-key order, as TensorFlow does, so a structure
and its gradients line up whatever order the dict was built in.  A ``Composite``
(a ``TensorArray``) is a value made of tensors: with ``expand_composites=True`` it
flattens to them, which is how it is a loop variable of ``tf.while_loop`` or a
result of ``tf.cond`` or ``tf.function``; otherwise it is a leaf, as in TensorFlow.
"""

__all__ = ["Composite", "flatten", "pack_sequence_as", "map_structure", "structure_key",
           "refine_composites", "find_composite"]


class Composite:
    """A Python value whose state is tensors (TensorFlow's CompositeTensor).

    ``_components()`` lists its tensors (``_num_components()`` counts them without making
    them), ``_from_components(tensors)`` makes a value like this one over other tensors (the
    same number), ``_structure_key()`` describes what
    is static about it (two values with one key have components of the same types), and
    ``_refine(other)`` returns this value made to match ``other``'s key (what a loop body
    taught it, a TensorArray's element shape), or None.
    """

    __slots__ = ()

    def _components(self):
        raise NotImplementedError

    def _num_components(self):
        return len(self._components())

    def _from_components(self, components):
        raise NotImplementedError

    def _structure_key(self):
        raise NotImplementedError

    def _refine(self, other):
        return None


_CONTAINERS = (list, tuple, dict)
_EXPANDED = (list, tuple, dict, Composite)


def flatten(structure, expand_composites=False):
    """The leaves of ``structure`` in a deterministic order (a lone leaf gives [leaf]).

    A Composite is a leaf, as in TensorFlow, unless ``expand_composites`` (what graph control
    flow and tf.function use): then its tensors are the leaves."""
    nested = _EXPANDED if expand_composites else _CONTAINERS
    cls = structure.__class__
    if cls is not list and cls is not tuple and cls is not dict:
        if not isinstance(structure, nested):
            return [structure]
    elif cls is not dict and not any(isinstance(x, nested) for x in structure):
        return list(structure)  # already flat: the common case of a list of variables
    out = []
    stack = [structure]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x[k] for k in reversed(sorted(x)))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        elif expand_composites and isinstance(x, Composite):
            stack.extend(reversed(x._components()))
        else:
            out.append(x)
    return out


def pack_sequence_as(structure, flat, expand_composites=False):
    """Rebuild ``structure`` with the leaves taken in order from ``flat``."""
    cls = structure.__class__
    nested = _EXPANDED if expand_composites else _CONTAINERS
    if (cls is list or cls is tuple) and len(structure) == len(flat) and \
            not any(isinstance(x, nested) for x in structure):
        return cls(flat)  # a flat list or tuple
    it = iter(flat)
    try:
        result = _pack(structure, it, expand_composites)
    except StopIteration:
        raise ValueError(f"pack_sequence_as: {len(flat)} leaves are fewer than the structure "
                         f"holds") from None
    leftover = sum(1 for _ in it)
    if leftover:
        raise ValueError(f"pack_sequence_as: {leftover} leaves more than the structure holds")
    return result


def _pack(structure, it, expand_composites):
    if expand_composites and isinstance(structure, Composite):
        return structure._from_components([next(it) for _ in range(structure._num_components())])
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], it, expand_composites) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)
    if isinstance(structure, (list, tuple)):
        items = [_pack(x, it, expand_composites) for x in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    return next(it)


def map_structure(fn, structure, expand_composites=False):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure, expand_composites)],
                            expand_composites)


def structure_key(structure):
    """A hashable description of how ``structure`` nests: each list, tuple, namedtuple and
    dict as its type (a dict with its keys), ``None`` for each leaf.  Two structures get one
    key only if they pack the same leaves the same way."""
    if isinstance(structure, dict):
        return type(structure), tuple((k, structure_key(structure[k])) for k in sorted(structure))
    if isinstance(structure, (list, tuple)):
        return type(structure), tuple(structure_key(x) for x in structure)
    if isinstance(structure, Composite):
        return type(structure), structure._structure_key()
    return None


def find_composite(structure):
    """The first Composite inside ``structure``, or None."""
    stack = [structure]
    while stack:
        x = stack.pop()
        if isinstance(x, Composite):
            return x
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return None


def refine_composites(structure, other):
    """``structure`` with each Composite whose key differs from its counterpart in ``other``
    (same nesting) replaced by its ``_refine(counterpart)``; None if none changed."""
    changed = []

    def walk(a, b):
        if isinstance(a, Composite):
            if type(a) is type(b) and a._structure_key() != b._structure_key():
                refined = a._refine(b)
                if refined is not None:
                    changed.append(True)
                    return refined
            return a
        if isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b):
            return type(a)((k, walk(a[k], b[k])) for k in a)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
            items = [walk(x, y) for x, y in zip(a, b)]
            return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
        return a

    result = walk(structure, other)
    return result if changed else None
