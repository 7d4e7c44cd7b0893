"""Keras 3's automatic config of a subclassed model: the arguments its constructor was given.

A subclass that writes no ``get_config`` is saved with the arguments of its ``__init__``
call when each is a plain value (str, int, float, bool, None, or lists and dicts of them),
as Keras 3 records them; otherwise ``get_config`` raises Keras's NotImplementedError and a
save keeps the model's graph only.
"""
import inspect

__all__ = ["constructor_arguments", "auto_config"]

_PLAIN = (str, int, float, bool, type(None))


def _plain(value):
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return isinstance(value, _PLAIN)


def constructor_arguments(cls, args, kwargs):
    """``{name: value}`` of an ``__init__`` call, or None when one is not a plain value."""
    try:
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
    except TypeError:
        return None  # __init__ itself will say what is wrong
    arguments = dict(list(bound.arguments.items())[1:])
    for name, parameter in inspect.signature(cls.__init__).parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD and name in arguments:
            arguments.update(arguments.pop(name))
        elif parameter.kind is inspect.Parameter.VAR_POSITIONAL and name in arguments:
            if arguments.pop(name):
                return None  # positional extras have no names to be saved under
    return arguments if _plain(arguments) else None


def auto_config(model, base_config):
    """``base_config`` (name, trainable, dtype) with the recorded constructor arguments; the
    base keys ``__init__`` does not take are dropped (Keras's rule)."""
    recorded = getattr(model, "_auto_config", None)
    if recorded is None:
        raise NotImplementedError(
            f"Object {type(model).__name__} was created by passing non-serializable argument "
            f"values in `__init__()`, and therefore the object must override `get_config()` in "
            f"order to be serializable. Please implement `get_config()`.")
    parameters = inspect.signature(type(model).__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    config = {k: v for k, v in base_config.items() if takes_any or k in parameters}
    config.update(recorded)
    return config
