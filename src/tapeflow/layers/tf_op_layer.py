"""``TFOpLambda``: a tapeflow function or operator called on symbolic tensors, as a layer.

In the functional API, ``(a + b) * 2.0``, ``x[:, :2]``, ``tf.concat([a, b], -1)``
and ``tf.nn.relu(x)`` on KerasTensors each become one call of a ``TFOpLambda``
layer (TF-Keras's name for it), recorded as any layer call is (a ``Node``).
One class serves every function: the layer's config names the function -- its
TensorFlow API name without ``tf.`` (``"concat"``, ``"math.reduce_mean"``,
``"nn.relu"``, from ``core.symbolic_dispatch``'s registry) or a Python operator
(``"__operators__.add"``, ``"__operators__.getitem"``) -- and the call's other
arguments (axes, constants, slices) are saved with the node, as any layer
call's are.  Loading finds the function by that name: no code is saved or run.

Output shapes come from ``layers.symbolic``'s trial call (the function run on
zeros, with 2 and 3 for unknown sizes), not from per-op shape rules.
"""
import inspect
import operator

from ..core.symbolic_dispatch import symbolic_function
from .base import Layer, _unique_name
from .symbolic import call_on_symbols, holds_keras_tensor, install_recorders

__all__ = ["TFOpLambda", "call_function_on_symbols", "call_operator_on_symbols"]

OPERATOR_PREFIX = "__operators__."
# Python's operators a KerasTensor records, by the ``operator`` module's names
OPERATORS = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "abs",
    "lt", "le", "gt", "ge", "and_", "or_", "xor", "invert", "getitem")}


def function_named(name):
    """The function a TFOpLambda config names (a KeyError listing the names otherwise)."""
    if isinstance(name, str) and name.startswith(OPERATOR_PREFIX):
        key = name[len(OPERATOR_PREFIX):]
        if key in OPERATORS:
            return OPERATORS[key]
        raise KeyError(f"{name!r} is not an operator symbolic tensors record (known: "
                       f"{', '.join(OPERATOR_PREFIX + k for k in OPERATORS)})")
    return symbolic_function(name)


class TFOpLambda(Layer):
    """One function of tapeflow (``function``: its name, as ``function_named`` reads it) as a
    layer of a functional model; it has no weights and runs the function on its arguments."""

    _autocast = False  # the function sees its arguments' own dtypes

    def __init__(self, function, name=None, **kwargs):
        try:
            self._function = function_named(function)
        except KeyError as e:
            raise ValueError(f"TFOpLambda: {e.args[0]}") from None
        super().__init__(name=name or _unique_name(f"tf.{function}"), **kwargs)
        self.function = function
        self.built = True

    def __call__(self, *args, training=None, **kwargs):
        if holds_keras_tensor((args, kwargs)):
            if not args:
                raise TypeError(f"{self.name}: a symbolic call takes its arguments positionally "
                                f"first (call_function_on_symbols binds them so)")
            return call_on_symbols(self, args[0], args[1:], kwargs, None)
        return self._function(*args, **kwargs)

    def call(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def get_config(self):
        return {**super().get_config(), "function": self.function}


def call_function_on_symbols(name, function, args, kwargs):
    """``function(*args, **kwargs)`` with KerasTensors among the arguments: a new TFOpLambda
    layer's call.  The arguments are bound to the function's signature first, so a wrong one
    is refused now, and the tensors come first as positional arguments; ``name=`` (TensorFlow
    ops take one) names the layer."""
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"tf.{name} on symbolic tensors: {e}") from None
    layer_name = bound.arguments.pop("name", None)
    return TFOpLambda(name, name=layer_name)(*bound.args, **bound.kwargs)


def call_operator_on_symbols(name, operands):
    """``operator.<name>(*operands)`` on a KerasTensor: a new TFOpLambda layer's call."""
    return TFOpLambda(OPERATOR_PREFIX + name)(*operands)


install_recorders(call_operator_on_symbols, call_function_on_symbols)
