"""Loaded tf.functions: a saved function's graphs, each called as it was traced.

``LoadedFunction`` holds every graph a tf.function was saved with and runs the
one whose traced call a new call matches (``arguments.py``): tensors of a
compatible shape and dtype, Python arguments equal to those it was traced with.
A version-1 save recorded no call, only the graph's input types: its functions
take their tensors positionally.
"""
import keyword

from .. import backend
from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..tracing.function import ConcreteFunction, TensorSpec
from . import format as fmt
from .arguments import bind, decode_arguments, decode_parameters, match, traced_arguments
from .format import LoadError

__all__ = ["LoadedFunction", "LoadedConcreteFunction", "decode_concrete", "load_functions",
           "valid_function_name"]


class SavedOutput:
    """A tensor leaf of a loaded function's output structure."""

    __slots__ = ()


def _decode_structure(value, where, depth=0):
    if depth > fmt.LIMITS["attr_depth"]:
        raise LoadError(f"{where}: a structure nested too deeply")
    if isinstance(value, list):
        return [_decode_structure(v, where, depth + 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$leaf" and body is None:
            return SavedOutput()
        if tag == "$spec" and isinstance(body, list) and len(body) == 2:
            shape = None if body[0] is None else fmt._shape(body[0], where, "a TensorSpec")
            return TensorSpec(shape, fmt._dtype(body[1], where).name)
        if tag == "$tuple" and isinstance(body, list):
            return tuple(_decode_structure(v, where, depth + 1) for v in body)
        if tag == "$dict" and isinstance(body, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in body):
            return {k: _decode_structure(v, where, depth + 1) for k, v in body}
    raise LoadError(f"{where}: {fmt._short(value)} is not a saved function structure")


class LoadedConcreteFunction(ConcreteFunction):
    """A ConcreteFunction rebuilt from a save: it checks its arguments against the saved types."""

    def __init__(self, graph, outputs, name, input_specs, input_signature):
        # The saved graph was optimized before it was saved: it is compiled as it is, so that
        # loading runs no op (constant folding would run a file's equations at load time).
        super().__init__(graph, outputs, name, optimized=True)
        self.input_specs = input_specs
        self.input_signature = input_signature
        # (inspect.Signature or None, the traced call bound to it); None in a version-1 save,
        # whose graphs take their tensors positionally
        self.saved_call = None

    def call_tensors(self, args, kwargs, convert):
        """The graph's input tensors for a call with these arguments, or None if this graph
        was not traced for them (``convert``: Python and numpy values may become tensors)."""
        if self.saved_call is None:
            flat = _flatten_args(args, self)
            if flat is None or kwargs:
                return None
            tensors = [_as_tensor(a, s) for a, s in zip(flat, self.input_specs)]
            ok = all(t is not None for t in tensors) and self.accepts(tensors)
            return tensors if ok else None
        parameters, saved = self.saved_call
        try:
            call = bind(parameters, args, kwargs)
        except TypeError:
            return None
        return match(saved, call, convert)

    def __call__(self, *args, **kwargs):
        """Positional or keyword arguments, as the traced function took them."""
        tensors = self.call_tensors(args, kwargs, convert=True)
        if tensors is None:
            raise TypeError(f"{self.name} (loaded) was saved for arguments "
                             f"{self.describe_arguments()}; it was called with "
                             f"{_describe_call(args, kwargs)}")
        return self._call_flat(tensors)

    def describe_arguments(self):
        if self.saved_call is None:
            return "(" + ", ".join(repr(s) for s in self.input_specs) + ")"
        return "(" + ", ".join(repr(v) for v in self.saved_call[1].values()) + ")"

    def accepts(self, tensors):
        return len(tensors) == len(self.input_specs) and all(
            s.is_compatible_with(t) for s, t in zip(self.input_specs, tensors))

    @property
    def structured_input_signature(self):
        return tuple(self.input_specs), {}


_ENTRY_KEYS = {"graph", "input_specs", "input_signature", "outputs"}
_CALL_KEYS = {"arguments", "parameters"}  # SavedModel version 2: how the graph was called


def decode_concrete(entry, arrays, variables, name, where):
    if not (isinstance(entry, dict) and set(entry) in (_ENTRY_KEYS, _ENTRY_KEYS | _CALL_KEYS)):
        raise LoadError(f"{where}: a function entry is not {{graph, input_specs, "
                        f"input_signature, outputs[, arguments, parameters]}}")
    graph = fmt.decode_graph(entry["graph"], arrays, variables, where=where)
    specs = entry["input_specs"]
    if not isinstance(specs, list) or len(specs) != len(graph.inputs):
        raise LoadError(f"{where}: input_specs do not match the graph's {len(graph.inputs)} inputs")
    input_specs = []
    for vid, spec in zip(graph.inputs, specs):
        if not (isinstance(spec, list) and len(spec) == 2):
            raise LoadError(f"{where}: an input spec is not [shape, dtype]")
        shape = None if spec[0] is None else fmt._shape(spec[0], where, "an input")
        dtype = fmt._dtype(spec[1], where)
        traced_shape, traced_dtype = graph.types[vid]
        if dtype != traced_dtype or (shape is not None and (
                len(shape) != len(traced_shape) or
                any(a is not None and b is not None and a != b
                    for a, b in zip(shape, traced_shape)))):
            raise LoadError(f"{where}: an input spec does not match the graph's type of value "
                            f"{vid}")
        input_specs.append(TensorSpec(shape, dtype.name))
    signature = None
    if entry["input_signature"] is not None:
        signature = _decode_structure(entry["input_signature"], where)
        if len(nest.flatten(signature)) != len(input_specs):
            raise LoadError(f"{where}: the input signature does not match the graph's inputs")
    outputs = _decode_structure(entry["outputs"], where)
    if len(nest.flatten(outputs)) != len(graph.outputs):
        raise LoadError(f"{where}: the output structure does not match the graph's "
                        f"{len(graph.outputs)} outputs")
    concrete = LoadedConcreteFunction(graph, outputs, name, input_specs, signature)
    if "arguments" in entry:
        parameters = decode_parameters(entry["parameters"], where)
        arguments = decode_arguments(entry["arguments"], input_specs, variables, where)
        try:
            concrete.saved_call = (parameters, bind(parameters, *arguments))
        except TypeError as e:
            raise LoadError(f"{where}: the saved arguments do not fit the saved parameters: "
                            f"{e}") from None
        # as a tf.function's trace has them, so that a loaded object saves again
        concrete.structured_arguments = traced_arguments(arguments)
        concrete.parameters = None if parameters is None else \
            list(parameters.parameters.values())
    return concrete


class LoadedFunction:
    """A saved ``tf.function``: calls run the first saved graph whose signature fits."""

    def __init__(self, name, concretes):
        self.__name__ = self.name = name
        self.concrete_functions = list(concretes)

    def __call__(self, *args, **kwargs):
        concrete, tensors = self._dispatch(args, kwargs)
        return concrete._call_flat(tensors)

    def _dispatch(self, args, kwargs):
        if kwargs and all(c.saved_call is None for c in self.concrete_functions):
            raise TypeError(f"{self.name} (loaded) takes its tensors as positional arguments")
        for convert in (False, True):  # an exact match first, as TensorFlow's restored functions
            for concrete in self.concrete_functions:
                tensors = concrete.call_tensors(args, kwargs, convert)
                if tensors is not None:
                    return concrete, tensors
        expected = "; ".join(c.describe_arguments() for c in self.concrete_functions)
        raise ValueError(f"Could not find matching concrete function to call: {self.name} "
                         f"(loaded) was saved for arguments {expected}; it was called with "
                         f"{_describe_call(args, kwargs)}")

    def get_concrete_function(self, *args, **kwargs):
        """The saved graph for these arguments (tensors or TensorSpecs); with none, the first."""
        if not args and not kwargs:
            return self.concrete_functions[0]
        return self._dispatch(args, kwargs)[0]

    def __repr__(self):
        return f"<loaded tf.function {self.name} ({len(self.concrete_functions)} signature(s))>"


def _describe_call(args, kwargs):
    def one(t):
        if isinstance(t, Tensor) or backend.is_array(t):
            return f"{t.dtype.name}{list(t.shape)}"
        return repr(t) if t is None or isinstance(t, (bool, int, float, str)) else \
            type(t).__name__
    return "(" + ", ".join([one(a) for a in args] +
                           [f"{k}={one(v)}" for k, v in kwargs.items()]) + ")"


def _flatten_args(args, concrete):
    """The call's tensors in the saved order: up to the input_signature's structure if there
    was one (a nested list argument is then one tensor), else one tensor per argument."""
    if concrete.input_signature is None:
        return list(args) if len(args) == len(concrete.input_specs) else None
    out = []

    def walk(spec, value):
        if isinstance(spec, dict):
            if not isinstance(value, dict) or sorted(value) != sorted(spec):
                raise ValueError
            for k in sorted(spec):
                walk(spec[k], value[k])
        elif isinstance(spec, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(spec):
                raise ValueError
            for s, v in zip(spec, value):
                walk(s, v)
        else:
            out.append(value)
    try:
        walk(list(concrete.input_signature), list(args))
    except ValueError:
        return None
    return out


def _as_tensor(arg, spec):
    """A tensor for ``arg``; a Python number or array takes the saved dtype, as a signature
    converts it; None if it cannot be a tensor."""
    if isinstance(arg, Tensor):
        return arg
    try:
        return convert_to_tensor(arg, dtype=spec.dtype)  # host data to the current device
    except (TypeError, ValueError):
        return None


def valid_function_name(name):
    """A function's name in a save: an attribute path (``f``, ``inner.double``,
    ``__call__``), nothing a path trick or a dunder could hide in."""
    parts = name.split(".") if isinstance(name, str) and len(name) <= 512 else [None]
    return all(isinstance(p, str) and p.isidentifier() and not keyword.iskeyword(p)
               and (not p.startswith("__") or p == "__call__") for p in parts) \
        and "__call__" not in parts[:-1] and len(parts) <= fmt.LIMITS["graph_depth"]


def load_functions(section, arrays, variables, where):
    if not isinstance(section, dict):
        raise LoadError(f"{where}: the functions are not an object")
    out = {}
    if len(section) > fmt.LIMITS["arrays"]:
        raise LoadError(f"{where}: too many functions")
    for name, entries in section.items():
        if not valid_function_name(name):
            raise LoadError(f"{where}: {fmt._short(name)} is not a valid function name")
        if not isinstance(entries, list) or not entries:
            raise LoadError(f"{where}: function '{name}' has no saved graph")
        out[name] = LoadedFunction(name, [
            decode_concrete(e, arrays, variables, name, f"{where}: function '{name}'")
            for e in entries])
    return out
