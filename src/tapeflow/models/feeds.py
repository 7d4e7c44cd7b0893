"""Where fit / evaluate / predict take their batches from: arrays, or a ``tf.data.Dataset``.

An ``ArrayFeed`` batches arrays (``models.data``): shuffled each epoch from the
random state, a short last batch.  A ``DatasetFeed`` reads the batches a
Dataset yields, as Keras does: each element is ``x``, ``(x,)``, ``(x, y)`` or
``(x, y, sample_weight)``; float features become the model's dtype; an epoch
is one pass over the dataset, or ``steps_per_epoch`` batches drawn from one
iterator that lives across epochs (then the dataset may repeat forever).
"""
import warnings

import numpy as np

from ..core import nest
from ..core.tensor import Tensor
from . import data as data_module

__all__ = ["is_dataset", "ArrayFeed", "DatasetFeed"]


def is_dataset(value):
    from ..data import Dataset
    return isinstance(value, Dataset)


class ArrayFeed:
    def __init__(self, x, y, sample_weight, batch_size):
        self.x, self.y, self.sample_weight, self.batch_size = x, y, sample_weight, batch_size
        self.samples = data_module.num_samples(x)  # x may be a list or dict of inputs
        self.steps = data_module.num_batches(self.samples, batch_size)

    def epoch(self, rng=None):
        return data_module.batches(self.x, self.y, self.sample_weight, self.batch_size,
                                   shuffle=rng is not None, rng=rng)


class DatasetFeed:
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

    def _batch(self, element):
        parts = tuple(element) if isinstance(element, (tuple, list)) else (element,)
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"{self.where}: a dataset element is x, (x, y) or "
                             f"(x, y, sample_weight); got a tuple of {len(parts)}")
        x = nest.map_structure(self._features, parts[0])
        rest = list(parts[1:])
        if self.class_weight is not None:
            if not rest:
                raise ValueError(f"{self.where}: class_weight needs labels: the dataset's "
                                 f"elements are (x, y)")
            y = rest[0].numpy() if isinstance(rest[0], Tensor) else np.asarray(rest[0])
            w = rest[1].numpy() if len(rest) > 1 else None
            weights = data_module.class_sample_weight(y, w, self.class_weight, self.dtype,
                                                      self.where)
            rest = [rest[0], Tensor(weights)]
        return (x, *rest)

    def _features(self, t):
        if isinstance(t, Tensor) and t.numpy().dtype.kind == "f" and \
                t.numpy().dtype != self.dtype:
            return Tensor(t.numpy().astype(self.dtype))
        return t
