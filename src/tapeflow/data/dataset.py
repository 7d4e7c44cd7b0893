"""``tf.data.Dataset``: an input pipeline of elements, as TensorFlow's.

A Dataset is a recipe, not data: each ``iter(dataset)`` runs the recipe afresh
(one epoch).  Elements are nested structures (tuples, dicts) of tensors;
inside the pipeline they travel as numpy arrays and become tensors where the
user sees them (iteration, the functions given to ``map`` and ``filter``).

Randomness follows tapeflow's one random state: ``shuffle(seed=None)`` draws
each epoch's order from the context's random state when the epoch starts, so
``tf.random.set_seed`` makes a pipeline reproducible; ``shuffle(seed=s)`` is
reproducible on its own (its n-th epoch's order is a function of ``s`` and n,
or the same every epoch with ``reshuffle_each_iteration=False``).

``map`` runs its function under ``tf.function`` (traced once per element
signature and replayed, as TensorFlow does); a function that cannot be traced
(it needs a tensor's value in Python, say) runs eagerly instead.  ``prefetch``
and ``num_parallel_calls`` are accepted and do nothing: elements are made on
demand in the calling thread.  The functions of the other transformations
(``flat_map``, ``scan``, ``group_by_window``, ...) run eagerly, one call per
element; ``scan`` traces its function once to check it when built.

This module holds the sources and the core transformations; the families
(windows, padding, folds, grouping, resampling, generators) are mixins, each in
a module of its own, and element helpers are in ``elements.py``.  A spec that
needs data to work out (after ``flat_map``, say) is worked out when first asked
for (``spec_fn``), so building a pipeline reads no data.
"""
import numpy as np

from ..core import nest
from ..core.context import context
from ..core.tensor import Tensor
from ..tracing.function import TensorSpec
from .elements import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, as_arrays, as_tensors, call,
                       min_cardinality, spec_dtype, spec_of, stack, structure_of,
                       traced_output_spec)
from .folds import FoldsMixin
from .generator import GeneratorMixin
from .grouping import GroupingMixin
from .padding import PaddingMixin
from .resampling import ResamplingMixin
from .windowing import WindowingMixin

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

AUTOTUNE = -1


class Dataset(WindowingMixin, PaddingMixin, FoldsMixin, GroupingMixin, ResamplingMixin,
              GeneratorMixin):
    """A pipeline; make one with ``from_tensor_slices``, ``from_tensors``, ``range`` or
    ``from_generator``.  The transformation families live in the mixins' modules."""

    def __init__(self, make, spec, cardinality, spec_fn=None):
        self._make = make                # () -> an iterator of elements (structures of arrays)
        self._spec = spec                # None: not known without running the pipeline
        self._spec_fn = spec_fn          # () -> the spec, where working it out reads data
        self._cardinality = cardinality
        self._epochs = 0

    def _derive(self, make, spec, cardinality, spec_fn=None):
        """A dataset made from this one (the mixins build their results through it)."""
        return Dataset(make, spec, cardinality, spec_fn)

    def _spec_via(self, transform=lambda spec: spec):
        """``(spec, spec_fn)`` for a dataset whose spec is ``transform`` of this one's: worked
        out now where this spec is known, else when first asked for."""
        if self._spec is not None:
            return transform(self._spec), None
        return None, lambda: (None if self.element_spec is None else transform(self.element_spec))

    def _same_spec(self, make, cardinality):
        """A dataset of this one's elements, reordered or fewer (``filter``, ``take``, ...)."""
        spec, spec_fn = self._spec_via()
        return Dataset(make, spec, cardinality, spec_fn)

    def apply(self, transformation_func):
        """``transformation_func(self)``: for ``tf.data.experimental`` transformations."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"apply: the transformation must return a Dataset, got "
                            f"{type(result).__name__}")
        return result

    # --- sources -----------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """One element per row of ``tensors`` (every leaf sliced along its first axis)."""
        structure = structure_of(tensors)
        leaves = nest.flatten(structure)
        if not leaves or any(a.ndim == 0 for a in leaves):
            raise ValueError("from_tensor_slices: every component needs a first axis to slice")
        n = leaves[0].shape[0]
        if any(a.shape[0] != n for a in leaves):
            raise ValueError(f"from_tensor_slices: components have different first dimensions "
                             f"{[a.shape[0] for a in leaves]}")

        def make():
            for i in range(n):
                yield nest.pack_sequence_as(structure, [a[i] for a in leaves])
        spec = nest.map_structure(lambda a: TensorSpec(a.shape[1:], a.dtype), structure)
        return Dataset(make, spec, n)

    @staticmethod
    def from_tensors(tensors, name=None):
        """One element: ``tensors`` whole."""
        structure = structure_of(tensors)
        return Dataset(lambda: iter([structure]), spec_of(structure), 1)

    @staticmethod
    def range(*args, dtype="int64", name=None):
        """Like Python's ``range``: int64 scalars."""
        values = range(*args)
        np_dtype = np.dtype(str(getattr(dtype, "name", dtype)))

        def make():
            for v in values:
                yield np.asarray(v, np_dtype)
        return Dataset(make, TensorSpec((), np_dtype), len(values))

    @staticmethod
    def zip(*datasets, name=None):
        """Elements of several datasets side by side (as a tuple, or the structure given)."""
        structure = datasets[0] if len(datasets) == 1 else datasets
        members = nest.flatten(structure)
        if not all(isinstance(d, Dataset) for d in members):
            raise TypeError("Dataset.zip takes datasets (or a tuple or dict of them)")

        def make():
            iterators = [d._iterate() for d in members]
            for parts in zip(*iterators):
                yield nest.pack_sequence_as(structure, list(parts))
        n = min_cardinality([d._cardinality for d in members])
        if all(d._spec is not None for d in members):
            return Dataset(make, nest.pack_sequence_as(structure, [d._spec for d in members]), n)
        return Dataset(make, None, n, lambda: nest.pack_sequence_as(
            structure, [d.element_spec for d in members]))

    # --- transformations ---------------------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """``map_func`` applied to each element (traced once per element signature)."""
        from ..tracing.function import Function
        from ..tracing.tracer import TraceError
        # as TensorFlow's dataset functions, which get fresh containers: `d.pop("label")` is fine
        traced = Function(map_func, check_argument_mutation=False)
        state = {"eager": False}

        def apply(element):
            tensors = as_tensors(element)
            if not state["eager"]:
                try:
                    return as_arrays(call(traced, tensors))
                except TraceError:
                    state["eager"] = True   # needs Python values: run it as Python from now on
            return as_arrays(call(map_func, tensors))

        def make():
            for element in self._iterate():
                yield apply(element)
        spec, traced_spec_fn = self._spec_via(
            lambda spec: traced_output_spec(traced, spec if isinstance(spec, tuple) else (spec,)))
        mapped = Dataset(make, spec, self._cardinality)

        def untraced_spec():
            """Where the function cannot be traced, the first output's ranks and dtypes with
            every dimension unknown: its sizes may depend on the values (``tf.fill([x], x)``),
            and one element cannot say which do."""
            found = traced_spec_fn() if traced_spec_fn is not None else None
            if found is not None:
                return found
            first = mapped._peek()
            return None if first is None else nest.map_structure(_any_size, spec_of(first))
        if spec is None:
            mapped._spec_fn = untraced_spec
        return mapped

    def filter(self, predicate, name=None):
        """The elements for which ``predicate`` gives True."""
        def make():
            for element in self._iterate():
                keep = call(predicate, as_tensors(element))
                if bool(np.asarray(keep.numpy() if isinstance(keep, Tensor) else keep)):
                    yield element
        return self._same_spec(make, UNKNOWN_CARDINALITY)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """Elements drawn at random from a buffer of the next ``buffer_size`` (TensorFlow's
        algorithm: a buffer as large as the data gives a uniform shuffle)."""
        buffer_size = int(buffer_size)
        if buffer_size < 1:
            raise ValueError(f"shuffle: buffer_size must be at least 1, got {buffer_size}")

        def make():
            rng = self._shuffle_rng(seed, reshuffle_each_iteration)
            buffer = []
            for element in self._iterate():
                if len(buffer) < buffer_size:
                    buffer.append(element)
                    continue
                i = int(rng.integers(len(buffer)))
                yield buffer[i]
                buffer[i] = element
            while buffer:
                yield buffer.pop(int(rng.integers(len(buffer))))
        return self._same_spec(make, self._cardinality)

    def _shuffle_rng(self, seed, reshuffle):
        epoch = self._epochs
        self._epochs += 1
        if seed is None:
            return np.random.default_rng(int(context().random.rng.integers(2 ** 31)))
        return np.random.default_rng([int(seed), epoch if reshuffle else 0])

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None, name=None):
        """Consecutive elements stacked along a new first axis."""
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"batch: batch_size must be at least 1, got {batch_size}")

        def make():
            pending = []
            for element in self._iterate():
                pending.append(element)
                if len(pending) == batch_size:
                    yield stack(pending)
                    pending = []
            if pending and not drop_remainder:
                yield stack(pending)
        spec, spec_fn = self._spec_via(lambda spec: nest.map_structure(
            lambda s: TensorSpec((batch_size if drop_remainder else None,) + tuple(s.shape),
                                 s.dtype), spec))
        n = self._cardinality
        if n >= 0:
            n = n // batch_size if drop_remainder else -(-n // batch_size)
        return Dataset(make, spec, n, spec_fn)

    def unbatch(self, name=None):
        """The rows of each element, one element each (``batch``'s inverse)."""
        if self._spec is not None:
            _check_unbatchable(nest.flatten(self._spec))
        def make():
            for element in self._iterate():
                leaves = nest.flatten(element)
                if any(a.ndim == 0 for a in leaves):
                    raise ValueError("unbatch: input element must have a non-scalar value in "
                                     "each component.")
                sizes = [a.shape[0] for a in leaves]
                if any(size != sizes[0] for size in sizes):
                    wrong = next(i for i, size in enumerate(sizes) if size != sizes[0])
                    raise ValueError(f"unbatch: input element must have the same batch size in "
                                     f"each component. Component 0 had size {sizes[0]} but "
                                     f"component {wrong} had size {sizes[wrong]}.")
                for i in range(sizes[0]):
                    yield nest.pack_sequence_as(element, [a[i] for a in leaves])
        spec, spec_fn = self._spec_via(lambda spec: nest.map_structure(
            lambda s: TensorSpec(tuple(s.shape)[1:], s.dtype), spec))
        return Dataset(make, spec, UNKNOWN_CARDINALITY, spec_fn)

    def repeat(self, count=None, name=None):
        """The dataset ``count`` times over (forever for None or -1)."""
        forever = count is None or count == -1

        def make():
            done = 0
            while forever or done < count:
                produced = False
                for element in self._iterate():
                    produced = True
                    yield element
                done += 1
                if not produced:   # an empty dataset repeated forever is empty, not a hang
                    return
        if forever:
            n = 0 if self._cardinality == 0 else INFINITE_CARDINALITY
        else:
            n = self._cardinality * count if self._cardinality >= 0 else self._cardinality
        return self._same_spec(make, n)

    def take(self, count, name=None):
        count = int(count)

        def make():
            if count == 0:
                return
            for i, element in enumerate(self._iterate()):
                yield element
                if count > 0 and i + 1 >= count:
                    return
        n = self._cardinality
        if count >= 0:
            n = count if n == INFINITE_CARDINALITY else min(n, count) if n >= 0 else n
        return self._same_spec(make, n)

    def skip(self, count, name=None):
        count = int(count)

        def make():
            for i, element in enumerate(self._iterate()):
                if count < 0 or i < count:
                    continue
                yield element
        n = self._cardinality
        if count < 0:
            n = 0
        elif n >= 0:
            n = max(0, n - count)
        return self._same_spec(make, n)

    def cache(self, filename="", name=None):
        """Keep the elements of the first complete pass in memory and replay them
        (a ``filename`` is not supported: the cache is in memory only)."""
        if filename:
            raise NotImplementedError("Dataset.cache(filename): only the in-memory cache "
                                      "(filename='') is supported")
        store = {"elements": None}

        def make():
            if store["elements"] is not None:
                yield from store["elements"]
                return
            seen = []
            for element in self._iterate():
                seen.append(element)
                yield element
            store["elements"] = seen
        return self._same_spec(make, self._cardinality)

    def prefetch(self, buffer_size, name=None):
        """Accepted for TensorFlow code; elements are made on demand."""
        return self

    def concatenate(self, dataset, name=None):
        def make():
            yield from self._iterate()
            yield from dataset._iterate()
        a, b = self._cardinality, dataset._cardinality
        n = a + b if a >= 0 and b >= 0 else (INFINITE_CARDINALITY if INFINITE_CARDINALITY in
                                              (a, b) else UNKNOWN_CARDINALITY)
        return self._same_spec(make, n)

    def enumerate(self, start=0, name=None):
        def make():
            for i, element in enumerate(self._iterate(), start):
                yield (np.asarray(i, np.int64), element)
        return Dataset(make, (TensorSpec((), np.int64), self._spec), self._cardinality)

    # --- reading -----------------------------------------------------------------------------------
    def _iterate(self):
        return self._make()

    def _peek(self):
        """The first element (runs the pipeline: only where no spec could be worked out)."""
        return next(iter(self._make()), None) if self._cardinality != 0 else None

    def __iter__(self):
        for element in self._iterate():
            yield as_tensors(element)

    def as_numpy_iterator(self):
        """Elements as numpy arrays (scalars as numpy scalars), as TensorFlow's."""
        for element in self._iterate():
            yield nest.map_structure(lambda a: a[()] if a.ndim == 0 else a, element)

    @property
    def element_spec(self):
        """The structure of ``TensorSpec`` of one element (a leading None: a batch whose size
        varies)."""
        if self._spec is None and self._spec_fn is not None:
            self._spec = self._spec_fn()
        if self._spec is None:
            first = self._peek()
            self._spec = None if first is None else spec_of(first)
        return self._spec

    def cardinality(self):
        """The number of elements, ``INFINITE_CARDINALITY`` (-1) or ``UNKNOWN_CARDINALITY`` (-2)."""
        return self._cardinality

    def __len__(self):
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if self._cardinality == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return self._cardinality

    def __bool__(self):
        return True

    def __repr__(self):
        return f"<Dataset element_spec={self.element_spec}>"


def _any_size(spec):
    if not isinstance(spec, TensorSpec) or spec.shape is None:
        return spec
    return TensorSpec((None,) * len(spec.shape), spec.dtype)


def _check_unbatchable(specs):
    """TensorFlow's build-time checks: no scalar components, no two known first dimensions
    that differ."""
    if any(s.shape is not None and len(s.shape) == 0 for s in specs):
        raise ValueError("unbatch: Cannot unbatch an input with scalar components.")
    known = {s.shape[0] for s in specs if s.shape is not None and s.shape[0] is not None}
    if len(known) > 1:
        raise ValueError(f"unbatch: Cannot unbatch an input whose components have different "
                         f"batch sizes {sorted(known)}.")
