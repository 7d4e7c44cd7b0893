"""Grouping by a key: ``group_by_window`` gathers elements per key and hands each full group
(and, at the end, each group left, in increasing key order) to ``reduce_func`` as a dataset;
``bucket_by_sequence_length`` uses it to batch elements of similar lengths together."""
import numpy as np

from ..core import nest
from ..tracing.function import TensorSpec
from .elements import UNKNOWN_CARDINALITY, as_tensors, call, python_int, replay

__all__ = ["GroupingMixin"]

_INT32 = np.iinfo(np.int32)


class GroupingMixin:
    def group_by_window(self, key_func, reduce_func, window_size=None, window_size_func=None,
                        name=None):
        """Elements grouped by ``key_func(element)`` (an int64 scalar); each time a group
        holds its window size of elements, ``reduce_func(key, window_dataset)`` makes the
        dataset whose elements come out next."""
        if (window_size is None) == (window_size_func is None):
            raise ValueError("group_by_window: give exactly one of window_size and "
                             "window_size_func")
        if window_size is not None:
            size = int(window_size)
            if size <= 0:
                raise ValueError(f"group_by_window: window_size must be greater than zero, "
                                 f"got {size}")

            def window_size_func(key):
                return size

        def size_of(key):
            value = python_int(window_size_func(as_tensors(np.asarray(key, np.int64))))
            if value <= 0:
                raise ValueError(f"group_by_window: window size must be greater than zero, got "
                                 f"{value}")
            return value

        def reduced(key, elements):
            window = self._derive(replay(elements), self._spec, len(elements))
            result = reduce_func(as_tensors(np.asarray(key, np.int64)), window)
            if not hasattr(result, "_iterate"):
                raise TypeError(f"group_by_window: reduce_func must return a Dataset, got "
                                f"{type(result).__name__}")
            return result._iterate()

        def make():
            groups, sizes = {}, {}
            for element in self._iterate():
                key = python_int(call(key_func, as_tensors(element)))
                if key not in sizes:
                    sizes[key] = size_of(key)
                group = groups.setdefault(key, [])
                group.append(element)
                if len(group) == sizes[key]:
                    del groups[key]
                    yield from reduced(key, group)
            for key in sorted(groups):
                yield from reduced(key, groups[key])

        def spec():
            first = next(iter(self._iterate()), None)
            if first is None:
                return None
            key = python_int(call(key_func, as_tensors(first)))
            window = self._derive(replay([first]), self._spec, 1)
            return reduce_func(as_tensors(np.asarray(key, np.int64)), window).element_spec
        return self._derive(make, None, UNKNOWN_CARDINALITY, spec)

    def bucket_by_sequence_length(self, element_length_func, bucket_boundaries,
                                  bucket_batch_sizes, padded_shapes=None, padding_values=None,
                                  pad_to_bucket_boundary=False, no_padding=False,
                                  drop_remainder=False, name=None):
        """Elements put in buckets by ``element_length_func(element)`` (bucket i holds lengths
        in [boundaries[i-1], boundaries[i])), each bucket batched (padded) by its own batch
        size when full; what is left at the end comes out last, by bucket."""
        boundaries = [int(b) for b in bucket_boundaries]
        batch_sizes = [int(b) for b in bucket_batch_sizes]
        if len(batch_sizes) != len(boundaries) + 1:
            raise ValueError(f"bucket_by_sequence_length: len(bucket_batch_sizes) must equal "
                             f"len(bucket_boundaries) + 1 but len(bucket_batch_sizes)="
                             f"{len(batch_sizes)} and len(bucket_boundaries)={len(boundaries)}.")
        if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
            raise ValueError(f"bucket_by_sequence_length: bucket_boundaries must be strictly "
                             f"increasing, got {boundaries}")
        lows = [_INT32.min] + boundaries
        highs = boundaries + [_INT32.max]

        def bucket_of(*element):
            length = python_int(element_length_func(*element))
            return next(i for i, (low, high) in enumerate(zip(lows, highs)) if low <= length < high)

        def batch_bucket(bucket, grouped):
            bucket = python_int(bucket)
            size = batch_sizes[bucket]
            if no_padding:
                return grouped.batch(size, drop_remainder=drop_remainder)
            filler = None
            if pad_to_bucket_boundary:
                if bucket == len(batch_sizes) - 1:
                    raise ValueError("bucket_by_sequence_length: when pad_to_bucket_boundary="
                                     "True, elements must have length < max(bucket_boundaries).")
                filler = boundaries[bucket] - 1
            shapes = padded_shapes if padded_shapes is not None else nest.map_structure(
                lambda s: s.shape, grouped.element_spec, )
            shapes = _fill_unknown(shapes, grouped.element_spec, filler)
            return grouped.padded_batch(size, shapes, padding_values, drop_remainder)
        return self.group_by_window(bucket_of, batch_bucket,
                                    window_size_func=lambda bucket: batch_sizes[python_int(bucket)])


def _fill_unknown(shapes, spec, filler):
    """Each shape with its unknown dimensions set to ``filler`` (None: the batch's longest)."""
    if isinstance(spec, TensorSpec):
        return [filler if d is None or d == -1 else d for d in shapes]
    if isinstance(spec, dict):
        return {k: _fill_unknown(shapes[k], spec[k], filler) for k in spec}
    return type(spec)(_fill_unknown(s, p, filler) for s, p in zip(shapes, spec))

