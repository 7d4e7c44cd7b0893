"""``padded_batch``: batches of elements whose shapes differ, each padded to one shape (the
largest in the batch, or the shape given) with a padding value (0, or "" for strings)."""
import numpy as np

from ..core import nest
from ..tracing.function import TensorSpec
from .elements import leaf_array

__all__ = ["PaddingMixin"]


def _shape_list(shape, index):
    """A padded shape as given (a list, tuple, TensorShape or int tensor; -1 or None: the
    batch's largest) as a tuple of ints and Nones."""
    if shape is None:
        return None
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    if hasattr(shape, "numpy") or isinstance(shape, np.ndarray):
        array = np.asarray(shape.numpy() if hasattr(shape, "numpy") else shape)
        if array.dtype.kind not in "iu":
            raise TypeError(f"padded_batch: padded shape {array.tolist()} must be a 1-D tensor "
                            f"of tf.int64 values, but its element type was {array.dtype}.")
        shape = array.tolist()
    if not isinstance(shape, (list, tuple)) or any(isinstance(d, (list, tuple)) for d in shape):
        raise ValueError(f"padded_batch: padded shape {shape!r} must be a 1-D tensor of "
                         f"tf.int64 values, but its shape was {np.shape(shape)}.")
    try:
        return tuple(None if d is None or int(d) == -1 else int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"padded_batch: padded_shapes component {index} must be a shape "
                        f"(ints, -1 or None), got {shape!r}") from None


def _padding_value(value, spec, index):
    dtype = spec.dtype.as_numpy_dtype
    if value is None:
        return np.zeros((), dtype)
    array = leaf_array(value.numpy() if hasattr(value, "numpy") else value)
    if array.ndim != 0:
        raise ValueError(f"padded_batch: padding_values component {index} must be a scalar, "
                         f"got shape {array.shape}")
    return array


def _as_structure(given, spec, what):
    """``given`` read up to the element spec's structure (a shape is a list or tuple of
    dimensions below that level), flat; None gives None for every component, and one padding
    value serves every component."""
    if given is None:
        return [None] * len(nest.flatten(spec))
    if what == "padding_values" and not isinstance(given, (tuple, dict)):
        return [given] * len(nest.flatten(spec))
    return _up_to(spec, given, what)


def _up_to(spec, given, what):
    if given is None:                     # this part's default
        return [None] * len(nest.flatten(spec))
    if isinstance(spec, dict):
        if not isinstance(given, dict) or set(given) != set(spec):
            raise ValueError(f"padded_batch: {what} must have the keys of the elements "
                             f"{sorted(spec)}, got {given!r}")
        return [leaf for key in sorted(spec) for leaf in _up_to(spec[key], given[key], what)]
    if isinstance(spec, (tuple, list)):
        if not isinstance(given, (tuple, list)) or len(given) != len(spec):
            raise ValueError(f"padded_batch: {what} must have the structure of the elements "
                             f"({len(spec)} components), got {given!r}")
        return [leaf for part, g in zip(spec, given) for leaf in _up_to(part, g, what)]
    return [given]


class PaddingMixin:
    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False, name=None):
        """Consecutive elements padded to one shape per component and stacked.  A dimension
        that ``padded_shapes`` leaves None (or -1), or every unknown one when it is not given,
        is padded to the longest in the batch."""
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"padded_batch: batch_size must be at least 1, got {batch_size}")
        spec = self.element_spec
        component_specs = nest.flatten(spec)
        if padded_shapes is None:
            # every dimension to the batch's longest: the same for the dimensions a spec knows,
            # and right too where a spec was read off the first element (an untraceable map)
            shapes = [None if s.shape is None else (None,) * len(s.shape)
                      for s in component_specs]
        else:
            shapes = [_shape_list(s, i) for i, s in
                      enumerate(_as_structure(padded_shapes, spec, "padded_shapes"))]
        values = [_padding_value(v, s, i) for i, (v, s) in enumerate(
            zip(_as_structure(padding_values, spec, "padding_values"), component_specs))]
        for index, (shape, component) in enumerate(zip(shapes, component_specs)):
            if shape is None:
                raise ValueError(f"padded_batch: `padded_shapes` must be given for component "
                                 f"{index}, which has an unknown rank")
            known = component.shape
            if known is not None and (len(known) != len(shape) or any(
                    k is not None and p is not None and p < k for k, p in zip(known, shape))):
                raise ValueError(f"padded_batch: The padded shape {tuple(shape)} is not "
                                 f"compatible with the corresponding input component shape "
                                 f"{tuple(known)}.")

        def pad_batch(elements):
            rows = [nest.flatten(e) for e in elements]
            columns = []
            for index, (shape, value) in enumerate(zip(shapes, values)):
                column = [row[index] for row in rows]
                if any(a.ndim != len(shape) for a in column):
                    raise ValueError(f"padded_batch: component {index} has an element of rank "
                                     f"{next(a.ndim for a in column if a.ndim != len(shape))}, "
                                     f"but the padded shape {list(shape)} has rank {len(shape)}")
                target = tuple(max(a.shape[axis] for a in column) if d is None else d
                               for axis, d in enumerate(shape))
                # strings: wide enough for the longest and for the padding value
                dtype = np.result_type(*column, value) if column[0].dtype.kind in "SU" \
                    else column[0].dtype
                out = np.full((len(column),) + target, value, dtype)
                for i, a in enumerate(column):
                    if any(s > t for s, t in zip(a.shape, target)):
                        raise ValueError(f"padded_batch: attempted to pad to a smaller size than "
                                         f"the input element: component {index} has shape "
                                         f"{list(a.shape)}, padded shape {list(target)}")
                    out[(i,) + tuple(slice(0, s) for s in a.shape)] = a
                columns.append(out)
            return nest.pack_sequence_as(elements[0], columns)

        def make():
            pending = []
            for element in self._iterate():
                pending.append(element)
                if len(pending) == batch_size:
                    yield pad_batch(pending)
                    pending = []
            if pending and not drop_remainder:
                yield pad_batch(pending)
        out_spec = nest.pack_sequence_as(spec, [
            TensorSpec((batch_size if drop_remainder else None,) + tuple(
                s.shape if padded_shapes is None else shape), s.dtype)
            for shape, s in zip(shapes, component_specs)])
        n = self._cardinality
        if n >= 0:
            n = n // batch_size if drop_remainder else -(-n // batch_size)
        return self._derive(make, out_spec, n)
