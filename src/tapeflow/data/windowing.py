"""Datasets of datasets and back: ``window`` makes each element a (structure of) dataset(s);
``flat_map`` and ``interleave`` turn a dataset per element into one stream of elements, with
TensorFlow's orders (``interleave`` cycles through ``cycle_length`` open datasets taking
``block_length`` elements from each)."""
import os

from ..core import nest
from .elements import UNKNOWN_CARDINALITY, DatasetSpec, as_tensors, call, replay

__all__ = ["WindowingMixin"]


def _positive(name, value, method):
    value = int(value)
    if value <= 0:
        raise ValueError(f"{method}: {name} must be greater than zero, got {value}")
    return value


def _window_count(n, size, shift, stride, drop_remainder):
    """How many windows ``window`` makes from ``n`` elements (n a cardinality)."""
    if n < 0:
        return n
    if drop_remainder:
        span = (size - 1) * stride + 1
        return max(0, (n - span) // shift + 1) if n >= span else 0
    return -(-n // shift)


class WindowingMixin:
    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        """Windows of ``size`` elements (every ``stride``-th), one starting every ``shift``
        elements; each window is the element's structure with a dataset per component.
        Windows starting near the end are shorter unless ``drop_remainder``."""
        size = _positive("size", size, "window")
        shift = size if shift is None else _positive("shift", shift, "window")
        stride = _positive("stride", stride, "window")
        span = (size - 1) * stride + 1

        def make_window(elements):
            picked = elements[:span:stride]
            leaves = [nest.flatten(e) for e in picked]
            structure = picked[0]
            component_specs = nest.flatten(self.element_spec)
            datasets = [self._derive(replay([row[i] for row in leaves]), component_specs[i],
                                     len(leaves)) for i in range(len(component_specs))]
            return nest.pack_sequence_as(structure, datasets)

        def make():
            buffer, to_skip = [], 0
            for element in self._iterate():
                if to_skip:
                    to_skip -= 1
                    continue
                buffer.append(element)
                if len(buffer) == span:
                    yield make_window(buffer)
                    to_skip = max(0, shift - len(buffer))
                    buffer = buffer[shift:]
            while buffer and not drop_remainder:     # the shorter windows starting before the end
                yield make_window(buffer)
                buffer = buffer[shift:]

        def window_spec(spec):
            return nest.map_structure(DatasetSpec, spec)
        spec, spec_fn = self._spec_via(window_spec)
        return self._derive(make, spec,
                            _window_count(self._cardinality, size, shift, stride, drop_remainder),
                            spec_fn)

    def flat_map(self, map_func, name=None):
        """The elements of the dataset ``map_func`` makes of each element, one after another."""
        def make():
            for element in self._iterate():
                yield from _dataset_of(map_func, element)._iterate()
        return self._derive(make, None, UNKNOWN_CARDINALITY, self._first_result_spec(map_func))

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """Elements of the datasets ``map_func`` makes, ``cycle_length`` of them open at once,
        ``block_length`` consecutive elements from each in turn (TensorFlow's order, which
        ``num_parallel_calls`` and ``deterministic`` do not change here: elements are made in
        the calling thread).  ``cycle_length`` None or AUTOTUNE is the number of CPU cores, as
        TensorFlow's."""
        cycle_length = (os.cpu_count() or 1) if cycle_length in (None, -1) else \
            _positive("cycle_length", cycle_length, "interleave")
        block_length = 1 if block_length is None else \
            _positive("block_length", block_length, "interleave")

        def make():
            inputs = self._iterate()
            slots = [None] * cycle_length
            open_count, index, taken, input_done = 0, 0, 0, False

            def advance():
                nonlocal index, taken
                index, taken = (index + 1) % cycle_length, 0

            while not input_done or open_count:
                if slots[index] is not None:
                    element = next(slots[index], _END)
                    if element is not _END:
                        taken += 1
                        if taken == block_length:
                            advance()
                        yield element
                        continue
                    slots[index] = None
                    open_count -= 1
                    advance()
                elif not input_done:
                    element = next(inputs, _END)
                    if element is _END:
                        input_done = True
                    else:
                        slots[index] = _dataset_of(map_func, element)._iterate()
                        open_count += 1
                else:
                    advance()
        return self._derive(make, None, UNKNOWN_CARDINALITY, self._first_result_spec(map_func))

    def _first_result_spec(self, map_func):
        """The spec of the datasets ``map_func`` makes, from the one it makes of the first
        element (as TensorFlow's tracing would give, None dimensions included)."""
        def spec():
            first = next(iter(self._iterate()), _END)
            if first is _END:
                first = self._empty_windows()
            return None if first is None else _dataset_of(map_func, first).element_spec
        return spec

    def _empty_windows(self):
        """Where this dataset's elements are windows but it has none: an element of empty
        datasets of the windows' specs, for reading a spec off ``map_func`` (else None)."""
        leaves = nest.flatten(self._spec) if self._spec is not None else [None]
        if not all(isinstance(leaf, DatasetSpec) for leaf in leaves):
            return None
        return nest.pack_sequence_as(self._spec, [
            self._derive(replay([]), leaf.element_spec, 0) for leaf in leaves])


_END = object()



def _dataset_of(map_func, element):
    result = call(map_func, as_tensors(element))
    if not hasattr(result, "_iterate"):
        raise TypeError(f"flat_map/interleave: map_func must return a Dataset, got "
                        f"{type(result).__name__}")
    return result
