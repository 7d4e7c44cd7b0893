"""Where fit / evaluate / predict take their batches from: arrays, a ``tf.data.Dataset``, a
``PyDataset`` or a Python generator.

An ``ArrayFeed`` batches arrays (``models.batching``): shuffled each epoch from the
random state, a short last batch.  A ``DatasetFeed`` reads the batches a
Dataset yields, as Keras does: each element is ``x``, ``(x,)``, ``(x, y)`` or
``(x, y, sample_weight)``; float features become the model's dtype; an epoch
is one pass over the dataset, or ``steps_per_epoch`` batches drawn from one
iterator that lives across epochs (then the dataset may repeat forever).
A ``GeneratorFeed`` reads a generator's batches the same way (it is read once:
several epochs need ``steps_per_epoch`` and a generator that loops, and one that
runs dry is an error), and a ``PyDatasetFeed`` reads a ``PyDataset``'s batches
by index.  Their arrays are checked and converted as ``fit``'s arrays are.
"""
import collections.abc
import numbers
import warnings

import numpy as np

from ..core import nest
from ..core.tensor import Tensor
from . import batching as data_module
from .py_dataset import PyDataset
from ..dtypes import is_float_dtype

__all__ = ["is_dataset", "is_batch_source", "is_one_shot", "batch_source_feed",
           "check_rereadable", "ArrayFeed", "DatasetFeed", "GeneratorFeed", "PyDatasetFeed"]


def is_dataset(value):
    from ..data import Dataset
    return isinstance(value, Dataset)


class ArrayFeed:
    shuffles = True  # fit draws each epoch's order from the random state

    def __init__(self, x, y, sample_weight, batch_size):
        self.x, self.y, self.sample_weight, self.batch_size = x, y, sample_weight, batch_size
        self.samples = data_module.num_samples(x)  # x may be a list or dict of inputs
        self.steps = data_module.num_batches(self.samples, batch_size)

    def epoch(self, rng=None):
        return data_module.batches(self.x, self.y, self.sample_weight, self.batch_size,
                                   shuffle=rng is not None, rng=rng)

    def first_batch(self):
        return next(self.epoch())

    def end_epoch(self):
        pass


class DatasetFeed:
    shuffles = False  # a Dataset shuffles itself (Dataset.shuffle)

    def __init__(self, dataset, dtype, where, steps=None, class_weight=None):
        from ..data import INFINITE_CARDINALITY
        n = dataset.cardinality()
        if steps is None and n == INFINITE_CARDINALITY:
            raise ValueError(f"{where}: the dataset repeats forever; pass steps_per_epoch "
                             f"(steps=) to say how many batches make an epoch")
        if steps is not None and (isinstance(steps, bool) or int(steps) != steps or steps < 1):
            raise ValueError(f"{where}: steps must be a positive integer, got {steps!r}")
        self.dataset, self.dtype, self.where = dataset, np.dtype(dtype), where
        self.steps = int(steps) if steps is not None else (n if n >= 0 else None)
        self._steps_given = steps is not None
        self.class_weight = class_weight
        self.samples = None
        self._iterator = None

    def epoch(self, rng=None):
        if not self._steps_given:
            for element in self.dataset:
                yield self._batch(element)
            return
        if self._iterator is None:
            self._iterator = iter(self.dataset)
        for step in range(self.steps):
            try:
                element = next(self._iterator)
            except StopIteration:
                warnings.warn(f"{self.where}: the dataset ran out of data after {step} of "
                              f"{self.steps} steps; repeat() it, or lower steps_per_epoch",
                              stacklevel=3)
                self._iterator = None
                return
            yield self._batch(element)

    def end_epoch(self):
        pass

    def _batch(self, element):
        parts = tuple(element) if isinstance(element, (tuple, list)) else (element,)
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"{self.where}: a dataset element is x, (x, y) or "
                             f"(x, y, sample_weight); got a tuple of {len(parts)}")
        x = nest.map_structure(self._features, parts[0])
        return (x, *_class_weighted(list(parts[1:]), self.class_weight, self.dtype, self.where))

    def _features(self, t):
        if isinstance(t, Tensor) and is_float_dtype(t._value.dtype) \
                and t._value.dtype != self.dtype:
            return Tensor(t._value.astype(self.dtype))  # cast where the batch is
        return t

    def first_batch(self):
        return self._batch(next(iter(self.dataset)))


def _class_weighted(rest, class_weight, dtype, where):
    """``[y]`` or ``[y, sample_weight]`` of one batch, with ``class_weight`` folded into the
    sample weights."""
    if class_weight is None:
        return rest
    if not rest:
        raise ValueError(f"{where}: class_weight needs labels: the batches must be (x, y)")
    y = rest[0]._value if isinstance(rest[0], Tensor) else np.asarray(rest[0])
    w = rest[1]._value if len(rest) > 1 else None  # the weights stay where the batch is
    return [rest[0], Tensor(data_module.class_sample_weight(y, w, class_weight, dtype, where))]


def _array_batch(element, dtype, where, class_weight, source):
    """A generator's or PyDataset's batch (arrays, or tensors) as fit's array batches are made:
    checked by ``data.as_arrays``, features in the model's dtype."""
    parts = tuple(element) if isinstance(element, (tuple, list)) else (element,)  # Keras's rule
    while len(parts) > 1 and parts[-1] is None:  # (x, y, None): no sample weights
        parts = parts[:-1]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"{where}: {source} must give x, (x, y) or (x, y, sample_weight) for "
                         f"each batch; got a tuple of {len(parts)}")
    arrays = data_module.as_arrays(*(parts + (None,) * (3 - len(parts))), dtype, where)

    def tensors(a):
        return None if a is None else data_module.map_arrays(Tensor, a)
    batch = [tensors(a) for a in arrays[:len(parts)]]
    return (batch[0], *_class_weighted(batch[1:], class_weight, dtype, where))


class GeneratorFeed:
    """Batches from a Python generator (or any iterator): read once, so an epoch is either the
    rest of it (one epoch only) or ``steps`` batches, and one that runs dry is an error."""

    shuffles = False

    def __init__(self, iterator, dtype, where, steps=None, class_weight=None):
        self._source, self.dtype, self.where = iterator, np.dtype(dtype), where
        self.steps = _positive_steps(steps, where)
        self.class_weight = class_weight
        self.samples = None
        self._pending = []      # a batch read ahead (to build the model) and not yet used
        self._read = 0

    def _next(self):
        if self._pending:
            return self._pending.pop()
        element = next(self._source)
        self._read += 1
        return element

    def first_batch(self):
        element = self._next()
        self._pending.append(element)
        return _array_batch(element, self.dtype, self.where, self.class_weight, "the generator")

    def epoch(self, rng=None):
        step = 0
        while self.steps is None or step < self.steps:
            try:
                element = self._next()
            except StopIteration:
                break
            step += 1
            yield _array_batch(element, self.dtype, self.where, self.class_weight,
                               "the generator")
        if self.steps is not None and step < self.steps:
            raise ValueError(f"{self.where}: the generator ran dry after {step} of "
                             f"{self.steps} steps of this epoch ({self._read} batches in all); "
                             f"it must give steps_per_epoch x epochs batches: loop for ever "
                             f"(while True: ... yield x, y), or lower steps_per_epoch / epochs")
        if step == 0:
            raise ValueError(f"{self.where}: the generator gave no batches (a generator is "
                             f"read once: is it used up by an earlier fit or epoch?); make a "
                             f"new one, or loop for ever and pass steps_per_epoch (steps=)")

    def end_epoch(self):
        pass


class PyDatasetFeed:
    """Batches ``0 .. len-1`` of a ``PyDataset``, in a new order each training epoch when
    shuffling; ``steps`` batches of an epoch when given; ``on_epoch_end`` after each epoch."""

    shuffles = True

    def __init__(self, dataset, dtype, where, steps=None, class_weight=None):
        self.dataset, self.dtype, self.where = dataset, np.dtype(dtype), where
        self.class_weight = class_weight
        n = dataset.num_batches
        steps = _positive_steps(steps, where)
        if n is None and steps is None:
            raise ValueError(f"{where}: the {type(dataset).__name__} has no __len__, so its "
                             f"epochs have no end; pass steps_per_epoch (steps=), or define "
                             f"__len__ (the number of batches)")
        if n is not None and n <= 0:
            raise ValueError(f"{where}: the {type(dataset).__name__} has no batches (len() is "
                             f"{n})")
        if n is not None and steps is not None and steps > n:
            raise ValueError(f"{where}: steps={steps} is more than the {n} batches of the "
                             f"{type(dataset).__name__}")
        self.n = n
        self.steps = steps if steps is not None else n
        self.samples = None

    def _get(self, index):
        return _array_batch(self.dataset[int(index)], self.dtype, self.where,
                            self.class_weight, f"{type(self.dataset).__name__}.__getitem__")

    def first_batch(self):
        return self._get(0)

    def epoch(self, rng=None):
        self.dataset.on_epoch_begin()
        if self.n is None:  # no length: indices 0, 1, 2, ... as Keras reads them
            order = range(self.steps)
        else:
            order = rng.permutation(self.n)[:self.steps] if rng is not None \
                else range(self.steps)
        for index in order:
            yield self._get(index)

    def end_epoch(self):
        self.dataset.on_epoch_end()


def _positive_steps(steps, where):
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"{where}: steps must be a positive integer, got {steps!r}")
    return int(steps)


def is_one_shot(value):
    """A Python generator or iterator: its batches can be read once only."""
    return isinstance(value, collections.abc.Iterator) and not is_dataset(value) \
        and not isinstance(value, Tensor)


def is_batch_source(value):
    """Something that yields whole batches: a Dataset, a PyDataset, a generator."""
    return is_dataset(value) or isinstance(value, PyDataset) or is_one_shot(value)


def batch_source_feed(source, dtype, where, steps=None, class_weight=None):
    """The feed of a Dataset, PyDataset or generator."""
    if is_dataset(source):
        return DatasetFeed(source, dtype, where, steps, class_weight)
    if isinstance(source, PyDataset):
        return PyDatasetFeed(source, dtype, where, steps, class_weight)
    return GeneratorFeed(source, dtype, where, steps, class_weight)


def check_rereadable(source, steps, rounds, where, what, steps_name):
    """A generator read in ``rounds`` passes (epochs, validations) needs ``steps`` for each:
    without it, the first pass would use it up and leave the next ones nothing."""
    if is_one_shot(source) and steps is None and rounds > 1:
        raise ValueError(f"{where}: {what} is a generator, which can be read only once, and "
                         f"it would be read {rounds} times; pass {steps_name} (batches each "
                         f"time) and make it loop for ever (while True: ... yield x, y)")
