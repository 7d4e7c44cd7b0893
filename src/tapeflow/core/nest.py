"""Nested structures of tensors (lists, tuples, namedtuples, dicts), as ``tf.nest``.

Dicts are flattened in sorted-key order, as TensorFlow does, so a structure
and its gradients line up whatever order the dict was built in.
"""

__all__ = ["flatten", "pack_sequence_as", "map_structure", "structure_key"]


def flatten(structure):
    """The leaves of ``structure`` in a deterministic order (a lone leaf gives [leaf])."""
    cls = structure.__class__
    if cls is not list and cls is not tuple and cls is not dict:
        if not isinstance(structure, (list, tuple, dict)):
            return [structure]
    elif cls is not dict and not any(isinstance(x, (list, tuple, dict)) for x in structure):
        return list(structure)  # already flat: the common case of a list of variables
    out = []
    stack = [structure]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x[k] for k in reversed(sorted(x)))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        else:
            out.append(x)
    return out


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with the leaves taken in order from ``flat``."""
    cls = structure.__class__
    if (cls is list or cls is tuple) and len(structure) == len(flat) and \
            not any(isinstance(x, (list, tuple, dict)) for x in structure):
        return cls(flat)  # a flat list or tuple
    it = iter(flat)
    try:
        result = _pack(structure, it)
    except StopIteration:
        raise ValueError(f"pack_sequence_as: {len(flat)} leaves are fewer than the structure "
                         f"holds") from None
    leftover = sum(1 for _ in it)
    if leftover:
        raise ValueError(f"pack_sequence_as: {leftover} leaves more than the structure holds")
    return result


def _pack(structure, it):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], it) for k in sorted(structure)}
        return type(structure)((k, packed[k]) for k in structure)
    if isinstance(structure, (list, tuple)):
        items = [_pack(x, it) for x in structure]
        if isinstance(structure, tuple) and hasattr(structure, "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    return next(it)


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])


def structure_key(structure):
    """A hashable description of how ``structure`` nests: each list, tuple, namedtuple and
    dict as its type (a dict with its keys), ``None`` for each leaf.  Two structures get one
    key only if they pack the same leaves the same way."""
    if isinstance(structure, dict):
        return type(structure), tuple((k, structure_key(structure[k])) for k in sorted(structure))
    if isinstance(structure, (list, tuple)):
        return type(structure), tuple(structure_key(x) for x in structure)
    return None
