"""``Normalization``: feature scaling learned with ``adapt(data)`` and saved with the model;
``Rescaling`` (``x * scale + offset``, fixed) and ``UnitNormalization`` (each row to unit
length).

``(x - mean) / max(sqrt(variance), 1e-7)`` per feature, Keras 3's formula, with
the population variance of the adapted data; mean and variance are
non-trainable weights, so a saved model takes raw features.
"""
import numpy as np

from .. import backend
from ..core.tensor import Tensor
from ..ops.arithmetic import maximum
from ..ops.elementwise import sqrt
from ..ops.nn import l2_normalize
from ..ops.shape import cast, reshape
from .base import Layer

__all__ = ["Normalization", "Rescaling", "UnitNormalization"]



class Normalization(Layer):
    """``axis``: the axis (an int) or axes (a tuple) that keep a mean and variance per index,
    as Keras 3's; the statistics are over the others.  None: one mean and variance overall."""

    def __init__(self, axis=-1, mean=None, variance=None, **kwargs):
        super().__init__(**kwargs)
        if (mean is None) != (variance is None):
            raise ValueError("Normalization: give both mean and variance, or neither (then adapt)")
        if isinstance(axis, (list, tuple)):
            axis = tuple(int(a) for a in axis)
        elif axis is not None:
            axis = int(axis)
        self.axis = axis
        # host copies (a few numbers, read once when the layer builds); device data allowed
        self._init_mean = None if mean is None else _host(mean, self._np_dtype)
        self._init_variance = None if variance is None else _host(variance, self._np_dtype)
        self.mean = self.variance = None

    def _kept_axes(self, ndim):
        axes = () if self.axis is None else \
            self.axis if isinstance(self.axis, tuple) else (self.axis,)
        if any(not -ndim <= a < ndim for a in axes):
            raise ValueError(f"{self.name}: All `axis` values must be in the range [-{ndim}, "
                             f"{ndim}), got axis={self.axis!r} for inputs of rank {ndim}")
        return tuple(sorted(a % ndim for a in axes))

    def build(self, input_shape):
        ndim = len(input_shape)
        kept = self._kept_axes(ndim)
        shape = tuple(input_shape[a] for a in kept)
        if None in shape:
            raise ValueError(f"{self.name}: All `axis` values to be kept must have a known "
                             f"shape, got input shape {tuple(input_shape)}")
        self._broadcast_shape = [input_shape[i] if i in kept else 1 for i in range(ndim)]
        self.mean = self.add_weight("mean", shape, "zeros", trainable=False)
        self.variance = self.add_weight("variance", shape, "ones", trainable=False)
        if self._init_mean is not None:
            self.mean.assign(np.broadcast_to(self._init_mean, shape))
            self.variance.assign(np.broadcast_to(self._init_variance, shape))
        self.built = True

    def adapt(self, data):
        """Learn each feature's mean and variance from ``data`` (array or tensor)."""
        data = np.asarray(backend.to_host(data._value if isinstance(data, Tensor) else data),
                          dtype=np.float64)
        if data.ndim < 2:
            data = data.reshape(-1, 1)
        if not self.built:
            self.build(data.shape)
        kept = self._kept_axes(data.ndim)
        if tuple(data.shape[a] for a in kept) != tuple(self.mean.shape):
            raise ValueError(f"{self.name}: adapt got data of an incompatible shape "
                             f"{data.shape}: the layer keeps statistics of shape "
                             f"{tuple(self.mean.shape)} along axis {self.axis!r}")
        axes = tuple(i for i in range(data.ndim) if i not in kept)
        self.mean.assign(data.mean(axis=axes).astype(self._np_dtype))
        self.variance.assign(data.var(axis=axes).astype(self._np_dtype))

    def call(self, inputs):
        # the statistics are read from their Variables (not their arrays), so a traced call
        # sees the values a later adapt or load_weights assigns
        shape = self._broadcast_shape
        mean = reshape(self.mean, shape)
        std = maximum(sqrt(reshape(self.variance, shape)), backend.EPSILON)
        return (inputs - mean) / std

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        # the statistics given to the constructor, as Keras 3's (adapted ones are weights)
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return {**super().get_config(), "axis": axis,
                "mean": None if self._init_mean is None else self._init_mean.tolist(),
                "variance": None if self._init_variance is None else self._init_variance.tolist()}


class Rescaling(Layer):
    """``inputs * scale + offset`` in the layer's dtype (integer pixels in, floats out), as
    Keras's: ``Rescaling(1 / 255)``; a list ``scale`` or ``offset`` acts along the last axis."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = _constant(scale, "scale", self.name)
        self.offset = _constant(offset, "offset", self.name)

    def call(self, inputs):
        if inputs.dtype != self._np_dtype:
            inputs = cast(inputs, self._np_dtype)
        scale = np.asarray(self.scale, self._np_dtype)
        offset = np.asarray(self.offset, self._np_dtype)
        return inputs * scale + offset

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale, "offset": self.offset}


def _host(value, dtype):
    value = value._value if isinstance(value, Tensor) else value
    return np.asarray(backend.to_host(value), dtype)


def _constant(value, what, layer):
    """A float, or a list of floats (a config holds it as written)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{layer}: {what} must be a number or a list of numbers, got "
                         f"{value!r}") from None
    if array.ndim > 1:
        raise ValueError(f"{layer}: {what} must be a number or a list of numbers (one per "
                         f"channel), got shape {array.shape}")
    return float(array) if array.ndim == 0 else [float(v) for v in array]


class UnitNormalization(Layer):
    """Each sample scaled to unit Euclidean length along ``axis``: ``x / max(||x||, 1e-6)``
    (Keras's, through ``tf.nn.l2_normalize`` with epsilon 1e-12 on the squared norm)."""

    supports_masking = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis if isinstance(axis, int) else [int(a) for a in axis]

    def call(self, inputs):
        return l2_normalize(inputs, axis=self.axis, epsilon=1e-12)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
