"""Folds over a dataset: ``reduce`` to one value, ``scan`` to a running state with an output
per element.  The functions run eagerly on tensors, one call per element; the state keeps its
structure and dtypes from step to step (TensorFlow's rule; ``scan`` checks it when built, by
tracing its function, where the function can be traced)."""
from ..core import nest
from ..tracing.function import TensorSpec
from .elements import as_tensors, spec_dtype, spec_of, structure_of, traced_output_spec

__all__ = ["FoldsMixin"]

_PAIR = "`scan_func` should return a pair consisting of new state and the output value."


def _check_dtypes(new_specs, old_specs, method):
    for new, old in zip(nest.flatten(new_specs), nest.flatten(old_specs)):
        if new.dtype != old.dtype:
            raise TypeError(f"{method}: The element types for the new state must match the "
                            f"initial state. Expected {old.dtype}; got {new.dtype}.")


def _checked_state(new_state, old_state, method):
    """``new_state`` as arrays (a list of values packed into one array, as TensorFlow converts
    it), refused where its structure or a dtype differs from the old state's."""
    arrays = structure_of(new_state if not isinstance(new_state, dict) else dict(new_state))
    if nest.structure_key(arrays) != nest.structure_key(old_state):
        raise TypeError(f"{method}: the new state must have the structure of the initial state "
                        f"{nest.structure_key(old_state)}, got {new_state!r}")
    _check_dtypes(spec_of(arrays), spec_of(old_state), method)
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
        from ..tracing.function import function
        initial = structure_of(initial_state)
        output_spec = self._traced_scan_spec(function(scan_func), initial)

        def make():
            state = initial
            for element in self._iterate():
                result = scan_func(as_tensors(state), as_tensors(element))
                if not isinstance(result, (tuple, list)) or len(result) != 2:
                    raise TypeError(f"scan: {_PAIR}")
                state = _checked_state(result[0], state, "scan")
                yield structure_of(result[1])
        return self._derive(make, output_spec, self._cardinality)

    def _traced_scan_spec(self, traced, initial):
        """The outputs' spec from tracing ``scan_func`` on the state and element specs, after
        checking it returns a pair with the state's dtypes.  Where the state's shape changes
        from step to step, the state spec is relaxed (the changing dimensions, or the rank,
        unknown) and traced again, as TensorFlow does.  None where it cannot be traced or the
        rank changes (then ``element_spec`` reads the first output)."""
        state_spec = spec_of(initial)
        for _ in range(8):
            traced_spec = traced_output_spec(traced, (state_spec, self._spec))
            if traced_spec is None:
                return None
            if not isinstance(traced_spec, (tuple, list)) or len(traced_spec) != 2:
                raise TypeError(f"scan: {_PAIR}")
            new_state, output = traced_spec
            if nest.structure_key(new_state) != nest.structure_key(state_spec):
                return None             # a list packed into one array: left to the first step
            _check_dtypes(new_state, state_spec, "scan")
            if new_state == state_spec:
                return output
            if any(old.shape is None for old in nest.flatten(state_spec)):
                return None             # the tracer takes no unknown ranks: the first step says
            state_spec = nest.pack_sequence_as(state_spec, [
                _relaxed(old, new) for old, new in
                zip(nest.flatten(state_spec), nest.flatten(new_state))])
        return None


def _relaxed(old, new):
    """The most specific spec both shapes fit."""
    if old.shape is None or new.shape is None or len(old.shape) != len(new.shape):
        return TensorSpec(None, old.dtype)
    return TensorSpec([a if a == b else None for a, b in zip(old.shape, new.shape)], old.dtype)
