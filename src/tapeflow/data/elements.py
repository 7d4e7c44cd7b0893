"""Elements as a pipeline carries them: nested structures (tuples, dicts) of numpy arrays on
the host, handed to the user (and to the user's functions) as tensors.  Shared by every part of
``tf.data``, so each transformation converts, stacks and describes elements the same way."""
import numpy as np

from .. import backend
from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..dtypes import string
from ..tracing.function import TensorSpec

__all__ = ["leaf_array", "structure_of", "as_tensors", "as_arrays", "spec_of", "spec_dtype",
           "DatasetSpec", "call", "stack", "min_cardinality", "replay", "python_int",
           "traced_output_spec", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


def leaf_array(value):
    """A leaf as the pipeline carries it: a numpy array (tensors' conversion rules:
    Python floats become float32, ints int32)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (str, bytes)) or (isinstance(value, (list, tuple)) and value
                                          and isinstance(value[0], (str, bytes))):
        return np.asarray(value)
    return np.asarray(convert_to_tensor(value).numpy())


def structure_of(value):
    """A source's components as the pipeline's structure: tuples and dicts are structure,
    anything else (a list of numbers included, as TensorFlow reads it) one array."""
    if isinstance(value, dict):
        return type(value)((k, structure_of(v)) for k, v in value.items())
    if isinstance(value, tuple):
        items = [structure_of(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return leaf_array(value)


def as_tensors(element):
    """The user's view of an element: its numeric arrays as tensors on the current device
    (the pipeline runs on the host; each element handed out is moved there once).  Strings
    stay numpy arrays; nested datasets (``window``'s) stay datasets."""
    if element.__class__ is np.ndarray:             # the common lone leaf, without nest's walk
        return _as_tensor(element)
    return nest.map_structure(_as_tensor, element)


def _as_tensor(a):
    return Tensor(backend.to_device(a)) if isinstance(a, np.ndarray) and a.dtype.kind in "biuf" \
        else a


def as_arrays(element):
    if isinstance(element, Tensor):
        return np.asarray(element.numpy())
    return nest.map_structure(
        lambda t: np.asarray(t.numpy()) if isinstance(t, Tensor) else leaf_array(t), element)


def spec_dtype(array):
    """The dtype a spec names: every string array (any width, bytes or text) is ``tf.string``."""
    return string if array.dtype.kind in "SUO" else array.dtype


class DatasetSpec:
    """The spec of an element that is itself a dataset (``window``'s): its element spec."""

    def __init__(self, element_spec, dataset_shape=()):
        self.element_spec = element_spec
        self.shape = tuple(dataset_shape)

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and self.element_spec == other.element_spec

    def __hash__(self):
        return hash(repr(self.element_spec))

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r}, TensorShape({list(self.shape)}))"


def spec_of(element):
    return nest.map_structure(
        lambda a: TensorSpec(a.shape, spec_dtype(a)) if isinstance(a, np.ndarray)
        else DatasetSpec(a.element_spec), element)


def call(fn, element):
    """``fn(*element)`` for a tuple element (TensorFlow unpacks tuples), else ``fn(element)``."""
    return fn(*element) if isinstance(element, tuple) else fn(element)


def traced_output_spec(traced, arg_specs):
    """The spec of what ``traced`` (a ``tf.function``) gives for arguments of ``arg_specs``,
    from tracing it (no data read, no random draws); None when it cannot be traced (then a
    dataset's ``element_spec`` looks at its first element)."""
    from ..tracing.tracer import TraceError
    if any(spec is None for spec in arg_specs):
        return None
    try:
        concrete = traced.get_concrete_function(*arg_specs)
    except (TraceError, TypeError, ValueError):
        return None
    graph = concrete.graph
    specs = [_string_spec_normalised(TensorSpec(*graph.types[v])) for v in graph.outputs]
    template = concrete._outputs_template
    if isinstance(template, Tensor):
        return specs[0]
    try:
        return nest.pack_sequence_as(template, specs)
    except ValueError:
        return None


def _string_spec_normalised(spec):
    """A traced string output's spec says ``tf.string``, whatever width the trace saw."""
    if np.dtype(spec.dtype.as_numpy_dtype).kind in "SUO":
        return TensorSpec(spec.shape, string)
    return spec


def python_int(value):
    """A scalar tensor, numpy value or int a user function returned, as a Python int."""
    return int(np.asarray(value.numpy() if isinstance(value, Tensor) else value))


def stack(elements):
    """Elements stacked component by component along a new first axis; components whose
    shapes differ are TensorFlow's error, naming the component and the element."""
    leaves = [nest.flatten(e) for e in elements]
    columns = []
    for index, column in enumerate(zip(*leaves)):
        first = column[0].shape
        for position, array in enumerate(column):
            if array.shape != first:
                raise ValueError(
                    f"Cannot batch tensors with different shapes in component {index}. First "
                    f"element had shape {list(first)} and element {position} had shape "
                    f"{list(array.shape)}.")
        columns.append(np.stack(column))
    return nest.pack_sequence_as(elements[0], columns)


def replay(elements):
    """A ``make`` for a dataset of elements already in hand (a window, a group)."""
    return lambda: iter(elements)


def min_cardinality(values):
    known = [v for v in values if v >= 0]
    if known:
        return min(known)
    return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in values else INFINITE_CARDINALITY
