"""TensorFlow's check that a traced function leaves its list and dict arguments as they were.

A trace calls the Python function on copies of the argument containers (lists, tuples,
namedtuples, dicts) holding placeholders, so an ``append`` inside would change nothing
the caller sees, and only at trace time.  TensorFlow refuses it instead
(``func_graph.check_func_mutation``): after the call, the containers must nest as
before and hold the very same leaves (``is``), or the trace raises a ValueError naming
the modified parameters.  Objects that are not containers (a Python object's
attributes) are not checked: changing them is an ordinary trace-time side effect.
"""
import inspect

from ..core import nest

__all__ = ["snapshot", "check_unmodified"]


def snapshot(args, kwargs):
    """A copy of the containers of ``(args, kwargs)`` holding the same leaves."""
    structure = (args, kwargs)
    return nest.pack_sequence_as(structure, nest.flatten(structure))


def _modified(before, after):
    if nest.structure_key(before) != nest.structure_key(after):
        return True
    return any(a is not b for a, b in zip(nest.flatten(before), nest.flatten(after)))


def check_unmodified(before, args, kwargs, python_function):
    """Raise TensorFlow's ValueError if the call changed ``(args, kwargs)`` from ``before``
    (a ``snapshot``); ``args`` include a method's instance."""
    if not _modified(before, (args, kwargs)):
        return
    name = getattr(python_function, "__qualname__", getattr(python_function, "__name__",
                                                            python_function))
    try:
        signature = inspect.signature(python_function)
        old = signature.bind(*before[0], **before[1]).arguments
        new = signature.bind(*args, **kwargs).arguments
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}() should not modify its Python input arguments. Check if it "
                         f"modifies any lists or dicts passed as arguments. Modifying a copy "
                         f"is allowed.") from e
    changed = ", ".join(p for p in new if _modified(old[p], new[p]))
    raise ValueError(f"{name}{signature} should not modify its Python input arguments. "
                     f"Modifying a copy is allowed. The following parameter(s) were modified: "
                     f"{changed}")
