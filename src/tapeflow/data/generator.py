"""``Dataset.from_generator``: elements from a Python generator, checked against the declared
``output_signature`` (or the older ``output_types``/``output_shapes``) as TensorFlow checks
them: each value converted to its declared dtype (never float to int), its shape compatible
with the declared one (``None`` dimensions take any size)."""
import numpy as np

from ..core import nest
from ..core.tensor import Tensor
from ..dtypes import as_dtype
from ..tracing.function import TensorSpec
from .elements import UNKNOWN_CARDINALITY

__all__ = ["GeneratorMixin"]


def _signature(output_types, output_shapes, output_signature):
    if output_signature is not None:
        if output_types is not None or output_shapes is not None:
            raise TypeError("from_generator: give output_signature, or the deprecated "
                            "output_types (and output_shapes), not both")
        specs = nest.flatten(output_signature)
        if not specs or not all(isinstance(s, TensorSpec) for s in specs):
            raise TypeError(f"from_generator: output_signature must be a structure of "
                            f"tf.TensorSpec, got {output_signature!r}")
        return output_signature
    if output_types is None:
        raise TypeError("from_generator: give output_signature (or the deprecated "
                        "output_types)")
    types = output_types
    if output_shapes is None:
        return nest.map_structure(lambda t: TensorSpec(None, t), types)
    if isinstance(types, (tuple, dict)):
        shapes = _shapes_up_to(types, output_shapes)
        return nest.pack_sequence_as(types, [TensorSpec(shape, t) for shape, t in
                                             zip(shapes, nest.flatten(types))])
    return TensorSpec(_shape(output_shapes), types)


def _shape(shape):
    dims = getattr(shape, "as_list", None)
    return tuple(dims()) if dims is not None else tuple(shape)


def _shapes_up_to(types, shapes):
    """``output_shapes`` read up to the structure of ``output_types`` (a shape itself is a
    list or tuple of dimensions)."""
    if isinstance(types, dict):
        return [s for key in sorted(types) for s in _shapes_up_to(types[key], shapes[key])]
    if isinstance(types, tuple):
        if not isinstance(shapes, (tuple, list)) or len(shapes) != len(types):
            raise ValueError(f"from_generator: output_shapes {shapes!r} does not match the "
                             f"structure of output_types {types!r}")
        return [s for t, shape in zip(types, shapes) for s in _shapes_up_to(t, shape)]
    return [_shape(shapes)]


def _converted(value, spec):
    """A generated value as the declared dtype and shape, or TensorFlow's error."""
    if isinstance(value, Tensor):
        value = value.numpy()
    array = np.asarray(value)
    want = np.dtype(spec.dtype.as_numpy_dtype)
    string_wanted, string_given = want.kind in "SUO", array.dtype.kind in "SUO"
    if array.size == 0:                   # an empty list is any dtype's
        converted = array.astype(want)
    elif string_wanted and string_given:
        converted = array
    elif string_wanted != string_given or not np.can_cast(array.dtype, want, "same_kind"):
        raise TypeError(f"`generator` yielded an element that could not be converted to the "
                        f"expected type. The expected type was {as_dtype(want).name}, but the "
                        f"yielded element was {value!r}.")
    else:
        converted = array.astype(want, copy=False)
    if not spec.is_compatible_with(_Shaped(converted.shape, spec.dtype)):
        expected = "an unknown shape" if spec.shape is None else \
            f"shape {list(spec.shape)}".replace("None", "?")
        raise ValueError(f"`generator` yielded an element of shape {list(converted.shape)} "
                         f"where an element of {expected} was expected.")
    return converted


class _Shaped:
    """What ``TensorSpec.is_compatible_with`` reads of a value: a shape and a dtype."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


class GeneratorMixin:
    @classmethod
    def from_generator(cls, generator, output_types=None, output_shapes=None, args=None,
                       output_signature=None, name=None):
        """Elements ``generator(*args)`` yields, each read as ``output_signature`` says (a
        structure of ``tf.TensorSpec``; None dimensions for variable sizes).  The generator is
        called afresh for each pass."""
        if not callable(generator):
            raise TypeError("from_generator: `generator` must be a Python callable.")
        signature = _signature(output_types, output_shapes, output_signature)
        call_args = tuple(np.asarray(a.numpy() if isinstance(a, Tensor) else a)
                          for a in (args or ()))
        specs = nest.flatten(signature)

        def make():
            for value in generator(*call_args):
                if isinstance(signature, (tuple, dict)):
                    try:
                        values = [leaf.value for leaf in
                                  nest.flatten(_as_structure(value, signature))]
                    except (TypeError, ValueError, KeyError):
                        raise TypeError(f"`generator` yielded an element that did not match "
                                        f"the expected structure. The expected structure was "
                                        f"{signature!r}, but the yielded element was "
                                        f"{value!r}.") from None
                else:
                    values = [value]
                yield nest.pack_sequence_as(signature, [_converted(v, s) for v, s in
                                                         zip(values, specs)])
        return cls(make, signature, UNKNOWN_CARDINALITY)


def _as_structure(value, signature):
    """``value`` checked to nest as ``signature`` does (a list may stand for a tuple, as
    TensorFlow allows), leaves kept."""
    if isinstance(signature, dict):
        if not isinstance(value, dict) or set(value) != set(signature):
            raise ValueError("keys differ")
        return {k: _as_structure(value[k], signature[k]) for k in signature}
    if isinstance(signature, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(signature):
            raise ValueError("length differs")
        return tuple(_as_structure(v, s) for v, s in zip(value, signature))
    return _Leaf(value)


class _Leaf:
    """A yielded leaf kept whole while the structure is flattened (a list is a value)."""

    def __init__(self, value):
        self.value = value
