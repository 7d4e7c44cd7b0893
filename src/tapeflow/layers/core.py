"""Dense, Activation, Dropout, Flatten, and InputLayer / Input (the functional API's input)."""
import math

import numpy as np

from .. import activations, constraints, initializers, regularizers

from ..core.context import context
from ..ops import elementwise
from ..ops.bias_activation import bias_activation
from ..ops.nn import dropout
from ..ops.shape import reshape
from ..serialization import serialize
from .base import Layer
from .symbolic import input_tensor

__all__ = ["Dense", "Activation", "Dropout", "Flatten", "InputLayer", "Input",
           "add_bias_and_activate"]

# The activations ``BiasActivation`` computes with the bias add, by their functions: a Python
# activation of the user's (or any other) keeps the add and its own ops.
_FUSED = {activations.linear: "linear", elementwise.relu: "relu", elementwise.sigmoid: "sigmoid",
          elementwise.tanh: "tanh"}


def add_bias_and_activate(y, bias, activation):
    """``activation(y + bias)`` for a bias along y's last axis, as Dense and Conv compute it:
    one op each way where the activation has a fused form, else the add and the activation.
    Under ``gradient_override_map`` the ops stay apart, so an override of theirs applies."""
    fused = _FUSED.get(activation)
    if fused is None or context().overrides or y._value.dtype != bias._value.dtype \
            or y._value.dtype.kind != "f":  # bfloat16 (kind "V") keeps its own ops
        return activation(y + bias)
    return bias_activation(y, bias, fused)



class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` over the last axis of the input."""
    supports_masking = True  # a mask on the input passes through, as in Keras

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        if kwargs.get("input_dim") is not None:  # Keras 2's Dense(30, input_dim=8)
            input_dim = kwargs.pop("input_dim")
            if kwargs.get("input_shape") not in (None, (input_dim,), [input_dim]):
                raise ValueError(f"Dense: input_dim={input_dim!r} and input_shape="
                                 f"{kwargs['input_shape']!r} disagree; give one of them")
            kwargs["input_shape"] = (input_dim,)
        kwargs.pop("input_dim", None)
        super().__init__(**kwargs)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"Dense units must be a positive integer, got {units!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = None
        self.bias = None

    def build(self, input_shape):
        if len(input_shape) < 2:
            raise ValueError(f"{self.name}: inputs need a batch axis, got shape {tuple(input_shape)}")
        in_features = input_shape[-1]
        if in_features is None:
            raise ValueError(f"{self.name}: the last dimension of the input must be known")
        self.kernel = self.add_weight("kernel", (in_features, self.units), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def call(self, inputs):
        if inputs.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{self.name}: expected inputs with last dimension "
                             f"{self.kernel.shape[0]}, got shape {tuple(inputs.shape)}")
        if inputs.ndim == 1:
            raise ValueError(f"{self.name}: inputs need a batch axis, got shape {tuple(inputs.shape)}")
        y = inputs @ self.kernel
        if self.use_bias:
            return add_bias_and_activate(y, self.bias, self.activation)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(self.kernel_regularizer),
                "bias_regularizer": _maybe(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


def _maybe(obj):
    return None if obj is None else serialize(obj)


class Activation(Layer):
    supports_masking = True  # a mask on the input passes through, as in Keras

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Zero a fraction ``rate`` of inputs while training (scaled by 1/(1-rate)); seeded."""
    supports_masking = True  # a mask on the input passes through, as in Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= float(rate) < 1:
            raise ValueError(f"Dropout rate must be in [0, 1), got {rate!r}")
        self.rate = float(rate)
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return dropout(inputs, self.rate, noise_shape=self.noise_shape, seed=self.seed)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class Flatten(Layer):
    def call(self, inputs):
        # -1 for the batch: a traced call then fits any batch size (a saved model too)
        return reshape(inputs, (-1, math.prod(inputs.shape[1:])))

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], None if None in rest else int(np.prod(rest)))


class InputLayer(Layer):
    """A model's input: its shape (without the batch axis) and dtype; ``.output`` is the
    symbolic tensor the functional API calls layers on (``Input`` returns it)."""

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None, input_shape=None,
                 batch_shape=None, sparse=None, ragged=None, optional=None, **kwargs):
        super().__init__(name=name, dtype=dtype, **kwargs)
        # Keras 3 writes these (false) into every InputLayer config; only dense inputs exist here
        for flag, value in (("sparse", sparse), ("ragged", ragged), ("optional", optional)):
            if value:
                raise ValueError(f"InputLayer: {flag}=True inputs are not supported; tapeflow's "
                                 f"inputs are dense arrays")
        if batch_shape is not None:
            batch_shape = tuple(batch_shape)
            if not batch_shape:
                raise ValueError("InputLayer: batch_shape needs a batch axis")
            batch_size, shape = batch_shape[0], batch_shape[1:]
        shape = shape if shape is not None else input_shape
        if shape is None:
            raise ValueError("InputLayer needs shape= (the shape of one sample, e.g. (8,))")
        shape = (shape,) if isinstance(shape, int) else shape
        try:
            self.shape = tuple(None if d is None else _size(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError(f"InputLayer: shape must be a tuple of positive sizes (or None), "
                             f"got {shape!r}") from None
        if batch_size is not None:
            batch_size = _size(batch_size)
        self.batch_size = batch_size
        self.built = True
        self.output = input_tensor(self, self.batch_shape, self.dtype, self.name)

    @property
    def batch_shape(self):
        return (self.batch_size,) + self.shape

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "shape": list(self.shape), "batch_size": self.batch_size}


def _size(d):
    if isinstance(d, bool) or int(d) != d or d <= 0:
        raise ValueError(f"not a positive size: {d!r}")
    return int(d)


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None):  # noqa: N802
    """The symbolic input of a functional model, as Keras's: ``x = Input(shape=(8,))``, then
    ``tf.keras.Model(x, Dense(1)(x))``; also a ``Sequential``'s first entry."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                      batch_shape=batch_shape).output
