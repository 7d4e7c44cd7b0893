"""``Sequential``: a plain stack of layers, each taking the previous one's output.

The input shape comes from an ``Input`` first layer or a first layer's
``input_shape=`` (the model builds at once), or else from the first batch it
is called on; either way its batch size is recorded as None (unless ``Input``
gave one), so ``summary()`` shows ``(None, 30)`` and the config rebuilds the
model for any batch size.
"""
import contextlib

from ..core.context import context
from ..layers.base import name_scope
from ..layers.core import InputLayer
from ..layers.symbolic import KerasTensor
from ..serialization import deserialize, serialize
from . import model_classes
from .model import Model

__all__ = ["Sequential"]


@model_classes.register
class Sequential(Model):
    def __init__(self, layers=None, name=None, trainable=True, dtype=None):
        super().__init__(name=name, trainable=trainable, dtype=dtype)
        self._input_shape = None
        self._input_batch_size = None  # only an Input(batch_size=...) fixes it
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Append a layer; an ``Input`` fixes the input shape and builds the model now."""
        if isinstance(layer, KerasTensor):
            if not isinstance(layer._keras_history[0], InputLayer):
                raise TypeError("Sequential.add takes layers or a tf.keras.Input(...), not the "
                                "output of a layer call (that is the functional API: "
                                "tf.keras.Model(inputs, outputs))")
            layer = layer._keras_history[0]
        if isinstance(layer, InputLayer):
            if self._tracked_layers:
                raise ValueError("An Input must come first in a Sequential model")
            self._input_shape = layer.batch_shape
            self._input_batch_size = layer.batch_size
        elif not hasattr(layer, "__call__") or not hasattr(layer, "built"):
            raise TypeError(f"Sequential.add takes layers, not {type(layer).__name__}")
        else:
            if not self._tracked_layers and getattr(layer, "_declared_input_shape", None):
                self._input_shape = layer._declared_input_shape
            self._track(layer)
            self.built = False
        if self._input_shape is not None and self._tracked_layers:
            self.build(self._input_shape)

    def pop(self):
        if not self._tracked_layers:
            raise TypeError("There are no layers in the model")
        layer = self._tracked_layers.pop()
        self.built = False
        return layer

    def build(self, input_shape):
        """Build every layer in turn, from the input shape (the batch size may be None)."""
        input_shape = tuple(input_shape)
        if not input_shape:
            raise ValueError(f"{self.name}: the input needs a batch axis, got shape ()")
        self._input_shape = (self._input_batch_size,) + input_shape[1:]
        shape = self._input_shape
        # called from __call__, this model's scope is already open: don't name it twice
        already_open = context().name_scopes[-1:] == [self.name]
        with contextlib.nullcontext() if already_open else name_scope(self.name):
            for layer in self._tracked_layers:
                if not layer.built:
                    with name_scope(layer.name):
                        layer.build(shape)
                        layer.built = True
                shape = layer.compute_output_shape(shape)
        self.built = True

    def call(self, inputs, training=None):
        for layer in self._tracked_layers:
            inputs = layer(inputs, training=training)
        return inputs

    @property
    def input_shape(self):
        """The input's shape, batch axis first (None): known from an Input, input_shape= or a
        first call."""
        if self._input_shape is None:
            raise AttributeError(f"Sequential '{self.name}' has no input shape yet: start it "
                                 f"with tf.keras.Input(shape=...) or call it on a batch")
        return tuple(self._input_shape)

    @property
    def output_shape(self):
        return tuple(self.compute_output_shape(self.input_shape))

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        for layer in self._tracked_layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": self.dtype,
                "input_shape": None if self._input_shape is None else list(self._input_shape),
                "input_batch_size": self._input_batch_size,
                "layers": [serialize(layer) for layer in self._tracked_layers]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer_configs = config.pop("layers", [])
        input_shape = config.pop("input_shape", None)
        input_batch_size = config.pop("input_batch_size", None)
        model = cls(**config)
        model._input_batch_size = input_batch_size
        known = model_classes.layer_classes()  # a Sequential may hold a model
        for layer_config in layer_configs:
            model.add(deserialize(layer_config, known, custom_objects, kind="layer"))
        if input_shape is not None:
            model.build(tuple(input_shape))
        return model
