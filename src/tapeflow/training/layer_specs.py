"""A layer a config names, ``{LayerName: {argument: value}}``: its class found among the layers
a config may name (nothing is imported by name), its arguments checked against the class's
signature, then made.  An argument ``layer``/``backward_layer``/``cell`` may itself be such a
mapping (``Bidirectional: {layer: {LSTM: {units: 8}}}``), made the same way."""
import difflib
import inspect

from .errors import ConfigError

__all__ = ["argument_problem", "make_layer", "FLOAT_DTYPES"]

LAYER_BASE_ARGUMENTS = ("name", "trainable", "dtype")
FLOAT_DTYPES = ("float16", "float32", "float64")
NESTED_LAYER_ARGUMENTS = ("layer", "backward_layer", "cell")


def argument_problem(name, arguments, known):
    """``(key suffix, message)`` for what is wrong with layer ``name`` and its ``arguments``
    (``known``: the classes a config may name, by name), or None."""
    cls = known.get(name)
    if cls is None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return "", f"unknown layer; {hint}known layers: {', '.join(known)}"
    accepted = [p for p in inspect.signature(cls.__init__).parameters
                if p not in ("self", "kwargs", "args")] + list(LAYER_BASE_ARGUMENTS)
    for arg, value in arguments.items():
        if arg not in accepted:
            close = difflib.get_close_matches(arg, accepted, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            return f".{arg}", (f"unknown argument of {name}{hint} Its arguments: "
                               f"{', '.join(accepted)}.")
        if arg in NESTED_LAYER_ARGUMENTS and isinstance(value, dict):
            inner = _single(value)
            if inner is None:
                return f".{arg}", ("a layer argument is one mapping {LayerName: {arguments}}, "
                                   f"got keys {sorted(value)}")
            found = argument_problem(*inner, known)
            if found is not None:
                return f".{arg}.{inner[0]}{found[0]}", found[1]
    dtype = arguments.get("dtype")
    if dtype is not None and dtype not in FLOAT_DTYPES:
        return ".dtype", f"a layer computes in {', '.join(FLOAT_DTYPES)}; got {dtype!r}"
    return None


def make_layer(name, arguments, known, where, key):
    """The layer ``name`` with ``arguments``; a ConfigError naming ``where: key...`` if the
    class is unknown, an argument is not its own or the class refuses a value."""
    found = argument_problem(name, arguments, known)
    if found is not None:
        raise ConfigError(f"{where}: {key}{found[0]}: {found[1]}")
    arguments = dict(arguments)
    for arg in NESTED_LAYER_ARGUMENTS:
        if isinstance(arguments.get(arg), dict):
            inner_name, inner_arguments = _single(arguments[arg])
            arguments[arg] = make_layer(inner_name, inner_arguments, known, where,
                                        f"{key}.{arg}.{inner_name}")
    try:
        return known[name](**arguments)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {key}: {e}") from None


def _single(mapping):
    """``(name, arguments)`` of a one-key mapping ``{name: {arguments}}``, else None."""
    if len(mapping) != 1:
        return None
    (name, arguments), = mapping.items()
    return (name, arguments) if isinstance(arguments, dict) else None
