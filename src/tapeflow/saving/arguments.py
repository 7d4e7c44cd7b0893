"""A traced call's arguments in a save, and matching a later call against them.

A ``tf.function`` keeps one ConcreteFunction per call signature: the tensors'
shapes and dtypes, and every Python argument's value (``f(x, True)`` and
``f(x, False)`` are two graphs).  A save records, beside each graph, that
call's ``(args, kwargs)`` (tensors as ``{"$tensor": k}``, the k-th graph input;
Variables as ``{"$variable": i}``; Python values as plain JSON) and the Python
function's parameters (names, kinds, defaults that JSON holds).  A loaded
function binds a call to those parameters, as Python would, and runs the graph
whose recorded arguments it matches, as TensorFlow's restored functions do.
"""
import inspect
import keyword
import math

from .. import backend
from ..core import nest
from ..core.tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import DType, as_dtype
from ..tracing.function import TensorSpec
from . import format as fmt
from .format import LoadError, SaveError

__all__ = ["encode_arguments", "encode_parameters", "decode_arguments", "decode_parameters",
           "traced_arguments", "TensorArgument", "bind", "match"]

_KINDS = {kind.name: kind for kind in (
    inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
    inspect.Parameter.VAR_KEYWORD)}


# --- saving ------------------------------------------------------------------------------------
def encode_arguments(structure, variable_index, where):
    """The JSON of a traced call's ``(args, kwargs)``; TensorSpec leaves in flattening order are
    the graph's inputs."""
    positions = {id(leaf): k for k, leaf in enumerate(
        x for x in nest.flatten(structure) if isinstance(x, TensorSpec))}
    return _encode(structure, positions, variable_index, where, 0)


def _encode(value, positions, variable_index, where, depth):
    if depth > fmt.LIMITS["attr_depth"]:
        raise SaveError(f"{where}: an argument nested too deeply")
    if isinstance(value, TensorSpec):
        return {"$tensor": positions[id(value)]}
    if isinstance(value, Variable):
        return {"$variable": variable_index(value)}
    if isinstance(value, (list, tuple)):  # a namedtuple comes back as a tuple
        items = [_encode(v, positions, variable_index, where, depth + 1) for v in value]
        return items if isinstance(value, list) else {"$tuple": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise SaveError(f"{where}: an argument is a dict with non-string keys")
        return {"$dict": [[k, _encode(value[k], positions, variable_index, where, depth + 1)]
                          for k in value]}
    encoded = encode_constant(value)
    if encoded is _UNSAVEABLE:
        raise SaveError(f"{where} was traced with a Python argument of type "
                        f"{type(value).__qualname__} ({fmt._short(value)}); a save holds "
                        f"tensors, Variables, None, bool, int, float and str arguments")
    return encoded


_UNSAVEABLE = object()


def encode_constant(value):
    """A Python constant (None, bool, int, float, str, a tf.DType) as JSON, or
    ``_UNSAVEABLE``."""
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, DType) and value.name in fmt.DTYPES:  # f(x, dtype=tf.int32)
        return {"$dtype": value.name}
    return _UNSAVEABLE


def decode_constant(value):
    """The Python constant of ``encode_constant``'s JSON, or ``_UNSAVEABLE``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "$dtype" and isinstance(body, str) and body in fmt.DTYPES:
            return as_dtype(body)
    return _UNSAVEABLE


def encode_parameters(parameters):
    """The Python function's parameters: ``[{name, kind[, default]}]``; a default JSON cannot
    hold is left out (a call that leaves it out matches a trace that left it out)."""
    if parameters is None:
        return None
    out = []
    for p in parameters:
        entry = {"name": p.name, "kind": p.kind.name}
        if p.default is not inspect.Parameter.empty:
            default = encode_constant(p.default)
            entry["default"] = {"$unsaved": True} if default is _UNSAVEABLE else default
        out.append(entry)
    return out


# --- loading -----------------------------------------------------------------------------------
class TensorArgument:
    """A tensor position of a loaded call: the graph input it feeds and its TensorSpec."""

    __slots__ = ("index", "spec")

    def __init__(self, index, spec):
        self.index = index
        self.spec = spec

    def __repr__(self):
        return repr(self.spec)


class _VariableArgument:
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def __repr__(self):
        return f"<Variable {self.variable.name}>"


class _UnsavedDefault:
    """A default value the save could not hold: it matches only itself."""

    def __repr__(self):
        return "<default>"


def decode_arguments(doc, input_specs, variables, where):
    """The saved ``(args, kwargs)`` with TensorArgument and Variable leaves, checked."""
    structure = _decode(doc, input_specs, variables, where, 0)
    if not (isinstance(structure, tuple) and len(structure) == 2 and
            isinstance(structure[0], tuple) and isinstance(structure[1], dict)):
        raise LoadError(f"{where}: the saved arguments are not (args, kwargs)")
    order = [x.index for x in nest.flatten(structure) if isinstance(x, TensorArgument)]
    if order != list(range(len(input_specs))):
        raise LoadError(f"{where}: the saved arguments do not name each graph input once, in "
                        f"order")
    return structure


def _decode(value, specs, variables, where, depth):
    if depth > fmt.LIMITS["attr_depth"]:
        raise LoadError(f"{where}: the saved arguments are nested too deeply")
    constant = decode_constant(value)
    if constant is not _UNSAVEABLE:
        return constant
    if isinstance(value, list):
        return [_decode(v, specs, variables, where, depth + 1) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "$tensor" and type(body) is int and 0 <= body < len(specs):
            return TensorArgument(body, specs[body])
        if tag == "$variable" and type(body) is int and 0 <= body < len(variables):
            return _VariableArgument(variables[body])
        if tag == "$tuple" and isinstance(body, list):
            return tuple(_decode(v, specs, variables, where, depth + 1) for v in body)
        if tag == "$dict" and isinstance(body, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in body):
            return {k: _decode(v, specs, variables, where, depth + 1) for k, v in body}
    raise LoadError(f"{where}: {fmt._short(value)} is not a saved argument")


def traced_arguments(structure):
    """A decoded call as a tf.function's trace records it (TensorSpecs, Variables)."""
    def leaf(x):
        if isinstance(x, TensorArgument):
            return TensorSpec(x.spec.shape, x.spec.dtype, x.spec.name)
        return x.variable if isinstance(x, _VariableArgument) else x
    return nest.map_structure(leaf, structure)


def decode_parameters(doc, where):
    """An ``inspect.Signature`` for the saved parameters (None if none were saved)."""
    if doc is None:
        return None
    if not isinstance(doc, list) or len(doc) > 256:
        raise LoadError(f"{where}: the saved parameters are not a list")
    params = []
    for p in doc:
        if not (isinstance(p, dict) and {"name", "kind"} <= set(p) <= {"name", "kind", "default"}
                and isinstance(p["name"], str) and p["name"].isidentifier()
                and not keyword.iskeyword(p["name"]) and p["kind"] in _KINDS):
            raise LoadError(f"{where}: {fmt._short(p)} is not a saved parameter")
        default = inspect.Parameter.empty
        if "default" in p:
            default = p["default"]
            default = _UnsavedDefault() if default == {"$unsaved": True} else \
                decode_constant(default)
            if default is _UNSAVEABLE:
                raise LoadError(f"{where}: parameter '{p['name']}' has a default "
                                f"{fmt._short(p['default'])} that a save does not hold")
        params.append(inspect.Parameter(p["name"], _KINDS[p["kind"]], default=default))
    try:
        return inspect.Signature(params)
    except ValueError as e:  # out of order, duplicated
        raise LoadError(f"{where}: the saved parameters are not a Python signature: {e}") from None


def bind(signature, args, kwargs):
    """``{parameter: value}`` for a call, defaults filled in, as Python binds it; without a
    signature, the call's own ``(args, kwargs)``.  Raises TypeError as Python would."""
    if signature is None:
        return {"args": tuple(args), "kwargs": dict(kwargs)}
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def match(saved, call, convert):
    """The graph's input tensors for ``call`` (bound) if it matches ``saved`` (bound), else None.

    A tensor position takes a Tensor (or a device array) of a compatible shape and dtype; with
    ``convert``, also what converts to the saved dtype (Python numbers, lists, numpy arrays).
    A Python position takes an equal value of the same type, as the trace cache keyed it.
    """
    if saved.keys() != call.keys():
        return None
    tensors = {}
    for name in saved:
        if not _match(saved[name], call[name], convert, tensors):
            return None
    return [tensors[k] for k in range(len(tensors))]


def _match(saved, value, convert, tensors):
    if isinstance(saved, TensorArgument):
        if isinstance(value, TensorSpec):  # get_concrete_function(TensorSpec(...))
            tensors[saved.index] = value
            return value.dtype == saved.spec.dtype and _spec_fits(saved.spec, value.shape)
        tensor = _as_tensor(value, saved.spec, convert)
        if tensor is None or not saved.spec.is_compatible_with(tensor):
            return False
        tensors[saved.index] = tensor
        return True
    if isinstance(saved, _VariableArgument):
        return value is saved.variable
    if isinstance(saved, (list, tuple)):
        return isinstance(value, type(saved)) and len(value) == len(saved) and all(
            _match(s, v, convert, tensors) for s, v in zip(saved, value))
    if isinstance(saved, dict):
        return isinstance(value, dict) and value.keys() == saved.keys() and all(
            _match(saved[k], value[k], convert, tensors) for k in saved)
    if isinstance(saved, _UnsavedDefault):
        return value is saved
    if type(value) is not type(saved):
        return False
    return value == saved or (isinstance(saved, float) and math.isnan(saved) and
                              math.isnan(value))


def _spec_fits(spec, shape):
    if spec.shape is None:
        return True
    return shape is not None and len(shape) == len(spec.shape) and all(
        s is None or s == d for s, d in zip(spec.shape, shape))


def _as_tensor(value, spec, convert):
    if isinstance(value, Tensor) and not isinstance(value, Variable):
        return value
    if not convert and not backend.is_array(value):
        return None
    try:
        return convert_to_tensor(value, dtype=spec.dtype)  # host data to the current device
    except (TypeError, ValueError):
        return None
