"""``Lambda``: a function of tensors as a layer, saved as a traced graph, never as code.

Keras saves a Lambda's function as Python bytecode (which ``load_model``
refuses in safe mode, and which runs whatever it holds).  tapeflow saves it
as data: ``get_config`` traces the function (with ``arguments`` bound) for the
input types the layer has been called with, batch size free, and writes the
graph in the saved format's encoding, its constants inline in the config
(base64).  ``from_config`` rebuilds a Lambda that replays that graph, eagerly,
under a GradientTape (to any order) and inside ``tf.function``, so a model with
a Lambda saves and loads without the function's code.

A function the graph cannot stand for is refused with the reason and the fix:
one that reads a Variable (its weights would not be saved with the layer: a
custom layer with ``add_weight`` does this), one whose graph depends on the
batch size (``x.shape[0]``: write ``-1`` or ``tf.shape(x)[0]``), one that
cannot be traced, or a Lambda not called yet (its input types are unknown).
Python side effects and random draws in the function run once, at tracing, as
in ``tf.function``.
"""
import base64
import inspect
import warnings

import numpy as np

from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..tracing.function import TensorSpec, function
from .base import Layer

__all__ = ["Lambda"]

_FORMAT = "tapeflow.traced_graph.v1"  # the "function" entry of a config: a traced graph
_CUSTOM_LAYER = ("To save it, write the computation as a layer class (a subclass of "
                 "tf.keras.layers.Layer, weights made with add_weight in build) registered with "
                 "@tf.keras.utils.register_keras_serializable()")


class Lambda(Layer):
    """``function(inputs, **arguments)`` as a layer (``training`` is passed when the function
    takes it).  ``output_shape``: the output's shape without the batch axis, or a function of
    the input shape; by default it is found by calling the function."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if mask is not None:
            raise NotImplementedError(f"{self.name}: Lambda(mask=...) is not supported; a layer "
                                      f"class with compute_mask carries a mask")
        self._saved = None  # the traced graph's config entry, once made (or loaded)
        self._loaded = isinstance(function, dict)
        if self._loaded:
            self._saved = function
            function = _replay(function, self.name)
            arguments = None
        elif not callable(function):
            raise TypeError(f"{self.name}: Lambda needs a function, got "
                            f"{type(function).__name__}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape
        self._input_specs = None  # the (shape, dtype) structure of the inputs seen, batch None
        try:
            self._takes_training = "training" in inspect.signature(function).parameters
        except (TypeError, ValueError):  # a builtin without a signature
            self._takes_training = False

    def call(self, inputs, training=None):
        inputs = nest.map_structure(self._as_tensor, inputs)  # a list's arrays are left as given
        self._record_inputs(inputs)
        kwargs = dict(self.arguments)
        if self._takes_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def _as_tensor(self, x):
        return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=self.dtype)

    def _record_inputs(self, inputs):
        """Widen the recorded input types to cover ``inputs``: a size that changes between calls
        (a symbolic call tries two) is free (None) in the traced graph."""
        seen = nest.map_structure(_spec_of, inputs)
        if self._input_specs is None:
            self._input_specs = seen
            return
        old, new = nest.flatten(self._input_specs), nest.flatten(seen)
        try:
            if len(old) != len(new):
                raise ValueError("another structure")
            widened = nest.pack_sequence_as(seen, [_widen(a, b) for a, b in zip(old, new)])
        except ValueError:
            widened = seen  # another structure or types: the latest call's
        if widened != self._input_specs and not self._loaded:
            self._saved = None  # traced for narrower types: trace again when asked
        self._input_specs = widened

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return tuple(self._output_shape(input_shape))
        return (input_shape[0],) + tuple(self._output_shape)

    def get_config(self):
        output_shape = self._output_shape
        if output_shape is not None and not callable(output_shape):
            output_shape = list(output_shape)
        return {**super().get_config(), "function": self._traced(),
                "output_shape": None if callable(output_shape) else output_shape,
                "arguments": None}

    def _traced(self):
        if self._saved is None:
            self._saved = _trace(self)
        return self._saved


def _spec_of(x):
    if not isinstance(x, Tensor):
        raise TypeError(f"a Lambda's inputs are tensors (in lists, tuples or dicts), got "
                        f"{type(x).__name__}")
    return TensorSpec((None,) + tuple(x.shape)[1:], x._value.dtype.name)


def _widen(a, b):
    if a.dtype != b.dtype or len(a.shape) != len(b.shape):
        raise ValueError("another input type")
    return TensorSpec([x if x == y else None for x, y in zip(a.shape, b.shape)], a.dtype)


# --- the function as a traced graph --------------------------------------------------------------
def _trace(layer):
    """The config entry of ``layer``'s function traced for its recorded inputs."""
    from ..saving import format as fmt
    from ..saving.saved_model import encode_concrete
    name = layer.name
    if layer._input_specs is None:
        raise ValueError(f"{name}: a Lambda is saved as the graph of its function traced for its "
                         f"inputs, and it has not been called yet, so their shape is unknown; "
                         f"call it (or the model) on data or on tf.keras.Input first")
    specs = layer._input_specs
    kwargs = dict(layer.arguments)
    if layer._takes_training:
        kwargs["training"] = False

    def bound(x):
        return layer.function(x, **kwargs)
    try:
        concrete = function(bound, input_signature=[specs], name=name).get_concrete_function()
    except Exception as e:  # noqa: BLE001 - any failure of user code is reported the same way
        raise ValueError(f"{name}: a Lambda is saved as the traced graph of its function (never "
                         f"as code), and tracing it failed: {type(e).__name__}: {e}. "
                         f"{_CUSTOM_LAYER}") from e
    _check_sizes_free(concrete, specs, name)
    arrays = fmt.ArrayWriter()

    def refuse_variable(variable):
        raise fmt.SaveError(f"{name}: the Lambda's function reads the Variable "
                            f"'{variable.path}', which a Lambda's config cannot hold (it would "
                            f"not be saved or trained as the layer's weight). {_CUSTOM_LAYER}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # _check_sizes_free has said what matters
        entry = encode_concrete(concrete, arrays, refuse_variable, custom_gradients=True,
                                where=f"Lambda '{name}'", signature=[specs])
    return {"format": _FORMAT, "graph": entry,
            "arrays": [_encode_array(a) for a in arrays.arrays]}


def _check_sizes_free(concrete, specs, name):
    """The graph takes every size its signature leaves free (None): the batch size, and any
    size that changed between calls."""
    graph = concrete.optimized_graph
    for spec, vid in zip(nest.flatten(specs), graph.inputs):
        traced = graph.types[vid][0]
        if any(a is None and b is not None for a, b in zip(spec.shape, traced)):
            raise ValueError(f"{name}: the Lambda's traced graph depends on a size that changes "
                             f"between calls (the batch size, or a size that differed between "
                             f"its calls: input {tuple(spec.shape)} was traced as "
                             f"{tuple(traced)}), so it cannot be saved for every size. Write "
                             f"the function without x.shape[0] (reshape with -1, or use "
                             f"tf.shape(x)). {_CUSTOM_LAYER}")


def _encode_array(array):
    array = np.array(array, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return {"dtype": array.dtype.name, "shape": list(array.shape),
            "base64": base64.b64encode(array.tobytes()).decode("ascii")}


class _InlineArrays:
    """The arrays of a traced-graph config entry, read as ``format.ArrayReader`` reads a file's:
    each checked against its dtype and shape."""

    def __init__(self, entries, where):
        from ..saving import format as fmt
        self._where = where
        if not isinstance(entries, list):
            raise fmt.LoadError(f"{where}: the traced graph's arrays are not a list")
        self._entries = entries

    def get(self, ref, what, expect=None):
        from ..saving import format as fmt
        if type(ref) is not int or not 0 <= ref < len(self._entries):
            raise fmt.LoadError(f"{self._where}: {what} refers to array {ref!r}, which the "
                                f"config does not hold")
        e = self._entries[ref]
        if not (isinstance(e, dict) and set(e) == {"dtype", "shape", "base64"}
                and isinstance(e["base64"], str)):
            raise fmt.LoadError(f"{self._where}: array {ref} is not {{dtype, shape, base64}}")
        dtype = fmt._dtype(e["dtype"], self._where)
        shape = fmt._shape(e["shape"], self._where, f"array {ref}")
        if None in shape:
            raise fmt.LoadError(f"{self._where}: array {ref} has an unknown dimension")
        if expect is not None and (tuple(shape) != tuple(expect[0])
                                   or dtype != np.dtype(expect[1])):
            raise fmt.LoadError(f"{self._where}: {what} does not match its array's type")
        data = base64.b64decode(e["base64"].encode("ascii"), validate=True)
        if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise fmt.LoadError(f"{self._where}: array {ref} holds {len(data)} bytes, not "
                                f"{dtype.name}{list(shape)}")
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _replay(saved, name):
    """The function a traced-graph config entry stands for (a saved tf.function's replay)."""
    from ..saving import format as fmt
    from ..saving.saved_model import LoadedFunction, decode_concrete
    where = f"Lambda '{name}'"
    if not (isinstance(saved, dict) and saved.get("format") == _FORMAT
            and set(saved) == {"format", "graph", "arrays"}):
        raise ValueError(f"{where}: its function is {fmt._short(saved)}, not a traced graph "
                         f"({_FORMAT}); tapeflow never loads a Lambda's function as code. "
                         f"{_CUSTOM_LAYER}")
    concrete = decode_concrete(saved["graph"], _InlineArrays(saved["arrays"], where), [],
                               name, where)
    return LoadedFunction(name, [concrete])
