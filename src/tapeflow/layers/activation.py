"""Activation layers, as Keras's: ``ReLU``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``Softmax``, and
``Identity`` (the linear activation: it returns its input).

Each is its activation function as a layer, with the function's options as
config; the math reuses the primitives of ``ops.elementwise`` / ``ops.nn``
(their gradient rules differentiate again), composed with ``where`` and
``minimum`` where Keras's options go past the plain function.
"""
import warnings

from .. import constraints, initializers, regularizers
from ..ops.arithmetic import minimum
from ..ops.elementwise import elu, exp, leaky_relu, relu
from ..ops.nn import softmax
from ..ops.reduce import reduce_logsumexp
from ..ops.shape import cast, where
from ..serialization import serialize
from .base import Layer

__all__ = ["ReLU", "LeakyReLU", "PReLU", "ELU", "Softmax", "Identity"]

# Keras's: a masked softmax entry gets this added (large, but finite in float16 too)
_LARGE_NEGATIVE = -1e9


def _number(value, what, layer):
    """``value`` as a float, >= 0: Keras's checks of the activation layers' options."""
    if value is None or isinstance(value, bool):
        raise ValueError(f"{layer}: {what} must be a number >= 0, got {value!r}")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: {what} must be a number >= 0, got {value!r}") from None
    if not value >= 0:
        raise ValueError(f"{layer}: {what} must be a number >= 0, got {value!r}")
    return value


class _Elementwise(Layer):
    """An activation applied element by element: the output is shaped as the input."""

    supports_masking = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class Identity(_Elementwise):
    """Returns its input unchanged (a placeholder in a list of layers, as Keras's)."""

    def call(self, inputs):
        return inputs


class ReLU(_Elementwise):
    """``x`` for ``threshold <= x < max_value``, ``max_value`` above, ``negative_slope *
    (x - threshold)`` below the threshold (Keras's ReLU; the defaults are plain relu)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_value = None if max_value is None else _number(max_value, "max_value",
                                                                "ReLU")
        self.negative_slope = _number(negative_slope, "negative_slope", "ReLU")
        self.threshold = _number(threshold, "threshold", "ReLU")

    def call(self, inputs):
        if self.negative_slope == 0 and self.threshold == 0:
            y = relu(inputs)
        else:
            below = (inputs - self.threshold) * self.negative_slope
            y = where(inputs > self.threshold, inputs, below)  # Keras's: 0 at the threshold
        return y if self.max_value is None else minimum(y, self.max_value)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(_Elementwise):
    """``x`` for ``x > 0``, ``negative_slope * x`` below (Keras 3's name; ``alpha``, Keras 2's,
    is taken too)."""

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            warnings.warn("LeakyReLU: alpha is Keras 2's name; Keras 3 calls it negative_slope",
                          DeprecationWarning, stacklevel=2)
            negative_slope = kwargs.pop("alpha")
        super().__init__(**kwargs)
        self.negative_slope = _number(negative_slope, "negative_slope", "LeakyReLU")

    def call(self, inputs):
        return leaky_relu(inputs, alpha=self.negative_slope)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(_Elementwise):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        y = elu(inputs)
        return y if self.alpha == 1.0 else where(inputs > 0, y, y * self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(_Elementwise):
    """Leaky relu with a learned slope: ``relu(x) - alpha * relu(-x)``, one ``alpha`` per input
    element (batch axis aside), shared along ``shared_axes`` (e.g. [1, 2] for images: one per
    channel)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None, alpha_constraint=None,
                 shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, int):
            self.shared_axes = [shared_axes]
        else:
            self.shared_axes = [int(a) for a in shared_axes]
        self.alpha = None

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            if not 1 <= axis < len(input_shape):
                raise ValueError(f"{self.name}: shared_axes {self.shared_axes} must name axes "
                                 f"1..{len(input_shape) - 1} of inputs of shape "
                                 f"{tuple(input_shape)}")
            shape[axis - 1] = 1
        if None in shape:
            raise ValueError(f"{self.name}: every non-shared axis must have a known size, got "
                             f"{tuple(input_shape)}")
        self.alpha = self.add_weight("alpha", shape, self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.built = True

    def call(self, inputs):
        return relu(inputs) - self.alpha * relu(-inputs)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": _maybe(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


def _maybe(obj):
    return None if obj is None else serialize(obj)


class Softmax(_Elementwise):
    """``softmax`` over ``axis``; where ``mask`` is False an entry gets a large negative number
    added first, so it takes (almost) no weight."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else [int(a) for a in axis]

    def call(self, inputs, mask=None):
        if mask is not None:
            inputs = inputs + (1.0 - cast(mask, inputs.dtype)) * _LARGE_NEGATIVE
        if isinstance(self.axis, int):
            return softmax(inputs, axis=self.axis)
        return exp(inputs - reduce_logsumexp(inputs, axis=self.axis, keepdims=True))

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
