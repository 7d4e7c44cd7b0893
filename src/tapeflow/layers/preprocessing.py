"""``Normalization``: feature scaling learned with ``adapt(data)`` and saved with the model.

``(x - mean) / max(sqrt(variance), 1e-7)`` per feature, Keras 3's formula, with
the population variance of the adapted data; mean and variance are
non-trainable weights, so a saved model takes raw features.
"""
import numpy as np

from .. import backend
from ..core.tensor import Tensor
from ..ops.arithmetic import maximum
from ..ops.elementwise import sqrt
from ..ops.shape import reshape
from .base import Layer

__all__ = ["Normalization"]



class Normalization(Layer):
    def __init__(self, axis=-1, mean=None, variance=None, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (then adapt)")
        self.axis = axis
        self._init_mean = None if mean is None else np.asarray(mean, self._np_dtype)
        self._init_variance = None if variance is None else np.asarray(variance, self._np_dtype)
        self.mean = self.variance = None

    def build(self, input_shape):
        dim = input_shape[self.axis]
        self.mean = self.add_weight("mean", (dim,), "zeros", trainable=False)
        self.variance = self.add_weight("variance", (dim,), "ones", trainable=False)
        if self._init_mean is not None:
            self.mean.assign(np.broadcast_to(self._init_mean, (dim,)))
            self.variance.assign(np.broadcast_to(self._init_variance, (dim,)))
        self.built = True

    def adapt(self, data):
        """Learn each feature's mean and variance from ``data`` (array or tensor)."""
        data = np.asarray(backend.to_host(data._value if isinstance(data, Tensor) else data),
                          dtype=np.float64)
        if data.ndim < 2:
            data = data.reshape(-1, 1)
        if not self.built:
            self.build(data.shape)
        axes = tuple(i for i in range(data.ndim) if i != self.axis % data.ndim)
        self.mean.assign(data.mean(axis=axes).astype(self._np_dtype))
        self.variance.assign(data.var(axis=axes).astype(self._np_dtype))

    def call(self, inputs):
        # the statistics are read from their Variables (not their arrays), so a traced call
        # sees the values a later adapt or load_weights assigns
        shape = [1] * inputs.ndim
        shape[self.axis] = -1
        mean = reshape(self.mean, shape)
        std = maximum(sqrt(reshape(self.variance, shape)), backend.EPSILON)
        return (inputs - mean) / std

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
