"""Keras 3's convolution and pooling layers: ``Conv1D``, ``Conv2D``, ``Conv1DTranspose``,
``Conv2DTranspose``, ``MaxPooling1D/2D``, ``AveragePooling1D/2D``, ``GlobalAveragePooling1D/2D``
and ``GlobalMaxPooling1D/2D``.

The math is ``tf.nn``'s (``ops/conv.py``); these classes hold Keras's arguments and config.
Inputs are ``(batch, steps, channels)`` / ``(batch, rows, cols, channels)`` with
``data_format="channels_last"`` (the default), channels second with ``"channels_first"``.
A conv kernel has Keras's shape ``kernel_size + (in_channels // groups, filters)``, a transposed
conv's ``kernel_size + (filters, in_channels)``.
"""
import re

import numpy as np

from .. import activations, constraints, initializers, regularizers
from ..ops.conv import (
    conv1d, conv1d_transpose, conv2d, conv2d_transpose, conv_output_length,
)
from ..ops.pooling import avg_pool2d, max_pool2d
from ..ops.reduce import reduce_max, reduce_mean
from ..ops.shape import reshape
from ..serialization import serialize
from .base import Layer, _unique_name
from .core import add_bias_and_activate

__all__ = ["Conv1D", "Conv2D", "Conv1DTranspose", "Conv2DTranspose", "MaxPooling1D",
           "MaxPooling2D", "AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D",
           "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D"]


def _tuple(value, rank, what):
    """An int or a sequence of ``rank`` positive ints, as a tuple (Keras's standardize_tuple)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),) * rank
    else:
        value = tuple(value)
        if len(value) != rank or not all(isinstance(v, (int, np.integer)) for v in value):
            raise ValueError(f"{what} must be an int or a tuple of {rank} ints, got {value!r}")
        value = tuple(int(v) for v in value)
    if any(v < 1 for v in value):
        raise ValueError(f"{what} must be positive, got {value}")
    return value


def _data_format(value):
    value = "channels_last" if value is None else str(value).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {value!r}")
    return value


def _padding(value, allowed):
    value = str(value).lower()
    if value not in allowed:
        raise ValueError(f"padding must be one of {list(allowed)}, got {value!r}")
    return value


def _keras_name(kwargs, cls):
    """Keras's default names for these classes ("conv2d", "max_pooling1d"; tapeflow's snake_case
    splits a digit from a capital: "conv2_d")."""
    if kwargs.get("name") is None:
        words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", cls.__name__)
        kwargs["name"] = _unique_name(re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower())
    return kwargs


def _maybe(obj):
    return None if obj is None else serialize(obj)


def _spatial_axes(rank, data_format):
    return tuple(range(1, rank + 1)) if data_format == "channels_last" else \
        tuple(range(2, rank + 2))


def _channel_axis(data_format):
    return -1 if data_format == "channels_last" else 1


# =================================================================================================
# Convolutions
# =================================================================================================
class _Conv(Layer):
    """Keras's BaseConv: ``activation(conv(inputs, kernel) + bias)``."""

    rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer,
                         **_keras_name(kwargs, type(self)))
        name = type(self).__name__
        if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"{name} filters must be a positive integer, got {filters!r}")
        if not isinstance(groups, (int, np.integer)) or groups < 1 or filters % groups:
            raise ValueError(f"{name}: groups ({groups!r}) must be a positive integer that divides "
                             f"filters ({filters})")
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, self.rank, "kernel_size")
        self.strides = _tuple(strides, self.rank, "strides")
        self.dilation_rate = _tuple(dilation_rate, self.rank, "dilation_rate")
        self.padding = _padding(padding, ("valid", "same", "causal") if self.rank == 1
                                else ("valid", "same"))
        self.data_format = _data_format(data_format)
        if self.padding == "causal" and self.data_format != "channels_last":
            raise ValueError(f"{name}: causal padding needs data_format='channels_last'")
        self.groups = int(groups)
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
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"{self.name}: expected inputs of rank {self.rank + 2} "
                             f"(batch, {'spatial, ' * self.rank}channels), got shape "
                             f"{tuple(input_shape)}")
        channels = input_shape[_channel_axis(self.data_format)]
        if channels is None:
            raise ValueError(f"{self.name}: the channel dimension of the input must be known")
        if channels % self.groups:
            raise ValueError(f"{self.name}: the input's {channels} channels do not split into "
                             f"{self.groups} groups")
        self.kernel = self.add_weight("kernel", self._kernel_shape(channels),
                                      self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def _kernel_shape(self, channels):
        return self.kernel_size + (channels // self.groups, self.filters)

    def _convolve(self, inputs):
        raise NotImplementedError

    def call(self, inputs):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"{self.name}: expected inputs of rank {self.rank + 2}, got shape "
                             f"{tuple(inputs.shape)}")
        y = self._convolve(inputs)
        if self.use_bias:
            if self.data_format == "channels_last":
                return add_bias_and_activate(y, self.bias, self.activation)
            y = y + reshape(self.bias, (self.filters,) + (1,) * self.rank)
        return self.activation(y)

    def compute_output_shape(self, input_shape):
        axes = _spatial_axes(self.rank, self.data_format)
        if self.padding == "causal":  # (k - 1) * d steps of padding in front
            spatial = [None if input_shape[a] is None else (input_shape[a] - 1) // s + 1
                       for a, s in zip(axes, self.strides)]
        else:
            spatial = [conv_output_length(input_shape[a], k, self.padding.upper(), s, d)
                       for a, k, s, d in zip(axes, self.kernel_size, self.strides,
                                             self.dilation_rate)]
        if self.data_format == "channels_last":
            return (input_shape[0],) + tuple(spatial) + (self.filters,)
        return (input_shape[0], self.filters) + tuple(spatial)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(self.kernel_regularizer),
                "bias_regularizer": _maybe(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("kernel_size", "strides", "dilation_rate"):  # lists after a JSON round trip
            if isinstance(config.get(key), list):
                config[key] = tuple(config[key])
        return cls(**config)


class Conv1D(_Conv):
    """1-D convolution over ``(batch, steps, channels)``; ``padding="causal"`` pads only the
    start, so output step t sees inputs up to t."""

    rank = 1

    def _convolve(self, inputs):
        (k,), (d,) = self.kernel_size, self.dilation_rate
        if self.padding == "causal":
            padding = [[0, 0], [(k - 1) * d, 0], [0, 0]]
        else:
            padding = self.padding.upper()
        return conv1d(inputs, self.kernel, self.strides[0], padding,
                      data_format="NWC" if self.data_format == "channels_last" else "NCW",
                      dilations=d)


class Conv2D(_Conv):
    """2-D convolution over ``(batch, rows, cols, channels)``."""

    rank = 2

    def _convolve(self, inputs):
        return conv2d(inputs, self.kernel, self.strides, self.padding.upper(),
                      data_format="NHWC" if self.data_format == "channels_last" else "NCHW",
                      dilations=self.dilation_rate)


# =================================================================================================
# Transposed convolutions
# =================================================================================================
def deconv_output_length(length, kernel, padding, output_padding=None, stride=1, dilation=1):
    """The output length of a transposed convolution along one axis (Keras's helper): the
    length whose convolution gives ``length`` back, ``output_padding`` more if given."""
    if length is None:
        return None
    kernel = (kernel - 1) * dilation + 1
    if output_padding is None:
        return length * stride + max(kernel - stride, 0) if padding == "valid" else \
            length * stride
    pad = kernel // 2 if padding == "same" else 0
    return (length - 1) * stride + kernel - 2 * pad + output_padding


class _ConvTranspose(_Conv):
    """Keras's BaseConvTranspose: ``activation(conv_transpose(inputs, kernel) + bias)``, the
    transpose of a convolution from the output's shape to the input's (each input position adds
    ``kernel @ input`` into its window of the output); the kernel is ``kernel_size + (filters,
    in_channels)``, Keras's (and ``tf.nn.conv2d_transpose``'s) layout."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=_padding(
                             padding, ("valid", "same")), data_format=data_format,
                         dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)
        self.output_padding = None
        if output_padding is not None:
            pads = (output_padding,) * self.rank if isinstance(output_padding, (int, np.integer)) \
                else tuple(output_padding)
            if len(pads) != self.rank or not all(
                    isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p >= 0
                    for p in pads):
                raise ValueError(f"{type(self).__name__}: output_padding must be a non-negative "
                                 f"int or a tuple of {self.rank} of them, got {output_padding!r}")
            if any(p >= s for p, s in zip(pads, self.strides)):
                raise ValueError(f"{type(self).__name__}: output_padding {pads} must be smaller "
                                 f"than the strides {self.strides}")
            self.output_padding = tuple(int(p) for p in pads)

    def _kernel_shape(self, channels):
        return self.kernel_size + (self.filters, channels)

    def compute_output_shape(self, input_shape):
        axes = _spatial_axes(self.rank, self.data_format)
        output_padding = self.output_padding or (None,) * self.rank
        spatial = tuple(deconv_output_length(input_shape[a], k, self.padding, p, s, d)
                        for a, k, p, s, d in zip(axes, self.kernel_size, output_padding,
                                                 self.strides, self.dilation_rate))
        if self.data_format == "channels_last":
            return (input_shape[0],) + spatial + (self.filters,)
        return (input_shape[0], self.filters) + spatial

    def get_config(self):
        config = super().get_config()
        del config["groups"]
        return {**config, "output_padding": self.output_padding}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("output_padding"), list):
            config["output_padding"] = tuple(config["output_padding"])
        return super().from_config(config)


class Conv1DTranspose(_ConvTranspose):
    """The transpose of Conv1D over ``(batch, steps, channels)``: ``tf.nn.conv1d_transpose``."""

    rank = 1

    def _convolve(self, inputs):
        channels_last = self.data_format == "channels_last"
        return conv1d_transpose(inputs, self.kernel, self.compute_output_shape(inputs.shape),
                                self.strides[0], self.padding.upper(),
                                data_format="NWC" if channels_last else "NCW",
                                dilations=self.dilation_rate[0])


class Conv2DTranspose(_ConvTranspose):
    """The transpose of Conv2D over ``(batch, rows, cols, channels)``: ``tf.nn.conv2d_transpose``
    (a stride-s transposed convolution grows each spatial size about s times)."""

    rank = 2

    def _convolve(self, inputs):
        channels_last = self.data_format == "channels_last"
        return conv2d_transpose(inputs, self.kernel, self.compute_output_shape(inputs.shape),
                                self.strides, self.padding.upper(),
                                data_format="NHWC" if channels_last else "NCHW",
                                dilations=self.dilation_rate)


# =================================================================================================
# Pooling
# =================================================================================================
class _Pooling(Layer):
    """Keras's BasePooling: a window of ``pool_size`` moved by ``strides`` (pool_size if None)."""

    rank = None
    _pool = None

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**_keras_name(kwargs, type(self)))
        self.pool_size = _tuple(pool_size, self.rank, "pool_size")
        self.strides = self.pool_size if strides is None else _tuple(strides, self.rank, "strides")
        self.padding = _padding(padding, ("valid", "same"))
        self.data_format = _data_format(data_format)

    def call(self, inputs):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"{self.name}: expected inputs of rank {self.rank + 2}, got shape "
                             f"{tuple(inputs.shape)}")
        fmt = "NHWC" if self.data_format == "channels_last" else "NCHW"
        if self.rank == 2:
            return type(self)._pool(inputs, self.pool_size, self.strides, self.padding.upper(),
                                    data_format=fmt)
        # 1-D: a height-1 image
        axis = 1 if self.data_format == "channels_last" else 2
        shape = tuple(inputs.shape)
        x = reshape(inputs, (-1,) + shape[1:axis] + (1,) + shape[axis:])  # -1: any batch, traced
        y = type(self)._pool(x, (1,) + self.pool_size, (1,) + self.strides, self.padding.upper(),
                             data_format=fmt)
        out = tuple(y.shape)
        return reshape(y, (-1,) + out[1:axis] + out[axis + 1:])

    def compute_output_shape(self, input_shape):
        axes = _spatial_axes(self.rank, self.data_format)
        shape = list(input_shape)
        for a, k, s in zip(axes, self.pool_size, self.strides):
            shape[a] = conv_output_length(input_shape[a], k, self.padding.upper(), s)
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("pool_size", "strides"):
            if isinstance(config.get(key), list):
                config[key] = tuple(config[key])
        return cls(**config)


class MaxPooling1D(_Pooling):
    rank = 1
    _pool = max_pool2d


class MaxPooling2D(_Pooling):
    rank = 2
    _pool = max_pool2d


class AveragePooling1D(_Pooling):
    rank = 1
    _pool = avg_pool2d


class AveragePooling2D(_Pooling):
    """The mean of each window; a "same" window averages only the input elements it holds."""

    rank = 2
    _pool = avg_pool2d


class _GlobalPooling(Layer):
    """The mean or maximum over every spatial position, per channel."""

    rank = None
    _reduce = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**_keras_name(kwargs, type(self)))
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)

    def call(self, inputs):
        if inputs.ndim != self.rank + 2:
            raise ValueError(f"{self.name}: expected inputs of rank {self.rank + 2}, got shape "
                             f"{tuple(inputs.shape)}")
        return type(self)._reduce(inputs, axis=list(_spatial_axes(self.rank, self.data_format)),
                                  keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        axes = _spatial_axes(self.rank, self.data_format)
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i not in axes)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling):
    rank = 1
    _reduce = reduce_mean


class GlobalAveragePooling2D(_GlobalPooling):
    rank = 2
    _reduce = reduce_mean


class GlobalMaxPooling1D(_GlobalPooling):
    rank = 1
    _reduce = reduce_max


class GlobalMaxPooling2D(_GlobalPooling):
    rank = 2
    _reduce = reduce_max
