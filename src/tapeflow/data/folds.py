"""Folds over a dataset: ``reduce`` to one value, ``scan`` to a running state with an output
per element.  The functions run eagerly on tensors, one call per element; the state keeps its
structure and dtypes from step to step (TensorFlow's rule)."""
from ..core import nest
from .elements import as_arrays, as_tensors, spec_dtype, structure_of

__all__ = ["FoldsMixin"]


def _checked_state(new_state, old_state, method):
    """``new_state`` as arrays, refused where its structure or a dtype differs from the old."""
    try:
        arrays = as_arrays(new_state)
        same_structure = nest.structure_key(arrays) == nest.structure_key(old_state)
    except (ValueError, TypeError):
        same_structure = False
    if not same_structure:
        raise TypeError(f"{method}: the new state must have the structure of the initial state "
                        f"{nest.structure_key(old_state)}, got {new_state!r}")
    for new, old in zip(nest.flatten(arrays), nest.flatten(old_state)):
        if spec_dtype(new) != spec_dtype(old):
            raise TypeError(f"{method}: the element types for the new state must match the "
                            f"initial state. Expected {spec_dtype(old)}; got {spec_dtype(new)}.")
    return arrays


class FoldsMixin:
    def reduce(self, initial_state, reduce_func, name=None):
        """``reduce_func(state, element)`` applied over every element from ``initial_state``;
        the final state, as tensors."""
        state = structure_of(initial_state)
        for element in self._iterate():
            state = _checked_state(reduce_func(as_tensors(state), as_tensors(element)), state,
                                   "reduce")
        return as_tensors(state)

    def scan(self, initial_state, scan_func, name=None):
        """``scan_func(state, element) -> (new_state, output)`` over the elements: the outputs,
        with the state carried from one element to the next."""
        initial = structure_of(initial_state)

        def make():
            state = initial
            for element in self._iterate():
                result = scan_func(as_tensors(state), as_tensors(element))
                if not isinstance(result, (tuple, list)) or len(result) != 2:
                    raise TypeError(f"scan: scan_func must return a pair (new_state, output), "
                                    f"got {result!r}")
                state = _checked_state(result[0], state, "scan")
                yield as_arrays(result[1])
        return self._derive(make, None, self._cardinality)
