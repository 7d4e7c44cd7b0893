"""Public ops called on symbolic tensors: the functional API's ``tf.concat([a, b], -1)``.

TensorFlow marks its public ops with a dispatch decorator, so that Keras can
record ``tf.reduce_mean(x, axis=1)`` on a symbolic tensor as a layer call
(TF-Keras's ``TFOpLambda``).  ``dispatches_symbols("math.reduce_mean")`` is
that decorator here: called with a ``Symbolic`` value among its arguments (at
the top level, or in a list or tuple, as ``concat``'s values), the function
hands the call to that value's class (``_call_function``), which records it;
otherwise it runs as before.  The name is the function's TensorFlow API name
without ``tf.``: a saved functional model names the function by it, and
``symbolic_function(name)`` finds it again (nothing is imported or evaluated).
"""
import functools

__all__ = ["Symbolic", "dispatches_symbols", "symbolic_function", "symbolic_function_names"]

_FUNCTIONS = {}  # API name -> the decorated function
# Whether a Symbolic value was ever made: until then (in programs that make no functional
# model) a public op pays one list read for the check, not a scan of its arguments.
_MADE = [False]


class Symbolic:
    """Base of the symbolic tensors of graph-building APIs (``layers.symbolic.KerasTensor``).
    A subclass records a dispatched call: ``_call_function(name, function, args, kwargs)``."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        _MADE[0] = True
        return super().__new__(cls)

    @classmethod
    def _call_function(cls, name, function, args, kwargs):
        raise NotImplementedError


def _symbolic_in(values):
    for v in values:
        if isinstance(v, Symbolic):
            return v
        if v.__class__ is list or v.__class__ is tuple:
            for item in v:
                if isinstance(item, Symbolic):
                    return item
    return None


def dispatches_symbols(name):
    """Decorate the public function ``tf.<name>`` so that a call on symbolic tensors is recorded."""
    def decorate(function):
        if name in _FUNCTIONS:
            raise ValueError(f"two functions are registered for symbolic calls as {name!r}")

        @functools.wraps(function)
        def dispatching(*args, **kwargs):
            if _MADE[0]:
                symbol = _symbolic_in(args)
                if symbol is None and kwargs:
                    symbol = _symbolic_in(kwargs.values())
                if symbol is not None:
                    return type(symbol)._call_function(name, dispatching, args, kwargs)
            return function(*args, **kwargs)
        dispatching.symbolic_name = name
        _FUNCTIONS[name] = dispatching
        return dispatching
    return decorate


def symbolic_function(name):
    """The function registered as ``name``; a KeyError that lists the names otherwise."""
    try:
        return _FUNCTIONS[name]
    except (KeyError, TypeError):
        raise KeyError(f"{name!r} is not a tapeflow function that symbolic tensors record "
                       f"(known: {', '.join(sorted(_FUNCTIONS))})") from None


def symbolic_function_names():
    return sorted(_FUNCTIONS)
