"""The layers that start a mask: ``Embedding`` (token ids to vectors) and ``Masking``.

A mask is Keras's: one bool per timestep, True where the step holds data, attached to a
layer's output as ``_keras_mask`` (``layers/base.py``) for the next layers (an RNN skips the
masked steps).  ``Embedding(mask_zero=True)`` masks id 0 (padding); ``Masking(mask_value)``
masks the steps whose features all equal ``mask_value``.
"""
import numpy as np

from .. import backend, constraints, initializers, regularizers
from ..core.tensor import Tensor
from ..ops.arithmetic import not_equal
from ..ops.reduce import reduce_any
from ..ops.shape import cast, gather
from ..serialization import serialize
from .base import Layer

__all__ = ["Embedding", "Masking"]


def _positive_int(value, what):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


class Embedding(Layer):
    """Row ``i`` of an ``(input_dim, output_dim)`` table for each integer id ``i`` of the input:
    ``(batch, ...)`` ids give ``(batch, ..., output_dim)``.  Ids must lie in
    ``[0, input_dim)``; float inputs are cast to int32 (as Keras's).  With ``mask_zero=True``
    id 0 is padding: the output carries a mask that is False there (so ``input_dim`` should be
    the vocabulary size + 1)."""

    supports_masking = True
    _autocast = False  # ids stay integers

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 weights=None, input_length=None, activity_regularizer=None, lora_rank=None,
                 **kwargs):
        if input_length is not None and kwargs.get("input_shape") is None:
            kwargs["input_shape"] = (input_length,)  # Keras 2's way of declaring the input
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if lora_rank is not None:
            raise ValueError(f"{self.name}: lora_rank is not supported")
        self.input_dim = _positive_int(input_dim, "Embedding input_dim")
        self.output_dim = _positive_int(output_dim, "Embedding output_dim")
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        # Keras's weights=[table] or weights=table (a pretrained table, often with
        # trainable=False): the layer is built at once with it, as Keras 3's
        if isinstance(weights, (list, tuple)) and len(weights) == 1:
            weights = weights[0]
        self._initial_table = None if weights is None else _table(weights)
        if self._initial_table is not None and \
                self._initial_table.shape != (self.input_dim, self.output_dim):
            raise ValueError(f"{self.name}: weights=[table] needs a table of shape "
                             f"({self.input_dim}, {self.output_dim}), got "
                             f"{self._initial_table.shape}")
        self.embeddings = None
        if self._initial_table is not None:
            self.build()

    def build(self, input_shape=None):  # the table's shape does not depend on the input's
        self.embeddings = self.add_weight(
            "embeddings", (self.input_dim, self.output_dim), self.embeddings_initializer,
            regularizer=self.embeddings_regularizer, constraint=self.embeddings_constraint)
        if self._initial_table is not None:
            self.embeddings.assign(self._initial_table.astype(self.embeddings._value.dtype))
            self._initial_table = None
        self.built = True

    def call(self, inputs):
        if inputs._value.dtype.kind not in "iu":
            inputs = cast(inputs, "int32")
        self._check_ids(inputs._value)
        return gather(self.embeddings, inputs)

    def _check_ids(self, ids):
        """Known ids (not a trace's) outside the table: one error naming the layer.  (A traced
        graph's gather checks its ids when it runs.)"""
        if not backend.is_array(ids) or not ids.size:
            return
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= self.input_dim:
            bad = low if low < 0 else high
            raise ValueError(f"{self.name}: input id {bad} is out of range for an Embedding with "
                             f"input_dim={self.input_dim} (ids must lie in "
                             f"[0, {self.input_dim}))")

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        reg = self.embeddings_regularizer
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": None if reg is None else serialize(reg),
                "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
                "mask_zero": self.mask_zero, "input_length": self.input_length}


class Masking(Layer):
    """Masks the timesteps of ``(batch, steps, features)`` inputs whose features all equal
    ``mask_value``: the output is the input with those steps zeroed, and its mask is False
    there, so the layers after it (RNNs) skip them."""

    supports_masking = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = _one_number(mask_value, self.name)

    def _keep(self, inputs):
        dtype = inputs._value.dtype
        value = self.mask_value
        if dtype.kind in "iub":  # integer data: compare as integers where the value is whole
            if value.is_integer():
                value = dtype.type(value)
            else:
                inputs = cast(inputs, "float64")
        return reduce_any(not_equal(inputs, value), axis=-1)

    def call(self, inputs):
        keep = self._keep(inputs)
        outputs = inputs * cast(keep, inputs._value.dtype)[..., None]
        outputs._keras_mask = keep
        return outputs

    def compute_mask(self, inputs, mask=None):
        return self._keep(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


def _one_number(value, name):
    """``mask_value`` as a float: a number, or a one-element array or tensor (Keras 3 takes
    ``Masking(mask_value=ops.convert_to_tensor([0.0]))``)."""
    array = np.asarray(backend.to_host(value._value) if isinstance(value, Tensor) else value)
    if array.size != 1 or array.dtype.kind not in "iufb":
        raise ValueError(f"{name}: mask_value must be one number, got {value!r}")
    return float(array.reshape(()))


def _table(table):
    """A pretrained table as an array, a device array (or tensor's) left on its device."""
    table = table._value if isinstance(table, Tensor) else table
    return table if backend.is_array(table) else np.asarray(table)
