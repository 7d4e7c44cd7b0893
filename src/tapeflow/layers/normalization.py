"""BatchNormalization and LayerNormalization, numerically as Keras 3's.

Training (``training=True`` on a trainable layer): normalize with the batch's
mean and (biased) variance and move the moving statistics toward them:
``moving = moving * momentum + batch * (1 - momentum)`` (inside ``tf.function`` as
ops and an ``assign``, so a traced training step moves them).  Inference, or a
frozen layer (``trainable = False``, as in Keras): use the moving statistics.
The batch statistics are exact functions of the input (no stop_gradient), so
second derivatives are right and the layer can sit under an input-gradient
penalty.
"""


from .. import backend, constraints, initializers, regularizers
from ..core.context import context
from ..core.tensor import Tensor, convert_to_tensor
from ..dtypes import is_float_dtype
from ..ops.arithmetic import not_equal
from ..ops.elementwise import rsqrt, square
from ..ops.layer_norm import layer_norm
from ..ops.nn import moments
from ..ops.reduce import reduce_sum
from ..ops.shape import broadcast_to, cast, expand_dims, reshape, where
from .base import Layer

__all__ = ["BatchNormalization", "LayerNormalization"]


class BatchNormalization(Layer):
    supports_masking = True  # a mask on the input passes through, as in Keras

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = int(axis)
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        _set_affine_arguments(self, center, scale, beta_initializer, gamma_initializer,
                              beta_regularizer, gamma_regularizer, beta_constraint,
                              gamma_constraint)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape):
        ndim = len(input_shape)
        axis = self.axis % ndim
        dim = input_shape[axis]
        self._reduction_axes = [i for i in range(ndim) if i != axis]
        self._broadcast_shape = [1] * ndim
        self._broadcast_shape[axis] = dim
        _add_affine_weights(self, (dim,), scale=self.scale, center=self.center)
        self.moving_mean = self.add_weight("moving_mean", (dim,), self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (dim,),
                                               self.moving_variance_initializer, trainable=False)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        if mask is not None and len(mask.shape) != inputs.ndim - 1:
            raise ValueError(f"{self.name}: The mask provided should be one dimension less than "
                             f"the inputs. Received: mask.shape={tuple(mask.shape)}, "
                             f"inputs.shape={tuple(inputs.shape)}")
        inputs, compute = _statistics_dtype(inputs)
        if training and self.trainable:
            mean, variance = moments(inputs, axes=self._reduction_axes) if mask is None else \
                _masked_moments(inputs, mask, self._reduction_axes)
            self._update_moving(self.moving_mean, mean)
            self._update_moving(self.moving_variance, variance)
        else:
            mean, variance = (_like(v, inputs) for v in (self.moving_mean, self.moving_variance))
        shape = self._broadcast_shape
        inv = rsqrt(reshape(variance, shape) + self.epsilon)
        if self.scale:
            inv = inv * reshape(_like(self.gamma, inputs), shape)
        shift = -reshape(mean, shape) * inv
        if self.center:
            shift = shift + reshape(_like(self.beta, inputs), shape)
        return _like(inputs * inv + shift, compute)

    def _update_moving(self, variable, batch_value):
        """``moving = moving * momentum + batch * (1 - momentum)`` in the variable's dtype."""
        dtype = variable._value.dtype
        m = dtype.type(self.momentum)
        if context().trace is not None:  # inside tf.function: ops and an assign, part of the graph
            if batch_value._value.dtype != dtype:
                batch_value = cast(batch_value, dtype)
            variable.assign(variable * Tensor(m) + batch_value * Tensor(dtype.type(1 - m)))
            return
        # Eagerly the same arithmetic on the arrays: a state update no tape needs to record.
        batch = batch_value._value.astype(dtype, copy=False)
        variable._replace_value(variable._value * m + batch * (1 - m))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        init = initializers.serialize
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, **_affine_config(self),
                "moving_mean_initializer": init(self.moving_mean_initializer),
                "moving_variance_initializer": init(self.moving_variance_initializer)}




class LayerNormalization(Layer):
    """Each example normalized over ``axis`` (the last by default): ``(x - mean) /
    sqrt(variance + epsilon) * gamma + beta``, the statistics of that example alone, so the
    same in training and inference (Keras 3's formula and defaults).  ``rms_scaling=True``:
    ``x / sqrt(variance + epsilon) * gamma``, no centering and no beta (Keras 3's)."""
    supports_masking = True  # a mask on the input passes through, as in Keras

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = tuple(axis) if isinstance(axis, (list, tuple)) else (int(axis),)
        self.epsilon = float(epsilon)
        self.rms_scaling = bool(rms_scaling)
        _set_affine_arguments(self, center, scale, beta_initializer, gamma_initializer,
                              beta_regularizer, gamma_regularizer, beta_constraint,
                              gamma_constraint)

    def build(self, input_shape):
        ndim = len(input_shape)
        self._axes = sorted(a % ndim for a in self.axis)
        shape = tuple(input_shape[a] for a in self._axes)
        self._broadcast_shape = [input_shape[i] if i in self._axes else 1 for i in range(ndim)]
        rms = self.rms_scaling  # gamma always, beta never
        _add_affine_weights(self, shape, scale=self.scale or rms, center=self.center and not rms)
        self.built = True

    def call(self, inputs):
        inputs, compute = _statistics_dtype(inputs)
        trailing = self._axes == list(range(inputs.ndim - len(self._axes), inputs.ndim))
        if self.gamma is not None and self.beta is not None and trailing and \
                len(self._axes) < inputs.ndim:  # the common case: one fused op
            out, _, _ = layer_norm(inputs, _like(self.gamma, inputs), _like(self.beta, inputs),
                                   len(self._axes), self.epsilon)
            return _like(out, compute)
        mean, variance = moments(inputs, axes=self._axes, keepdims=True)
        inv = rsqrt(variance + self.epsilon)
        out = inputs * inv if self.rms_scaling else (inputs - mean) * inv
        if self.gamma is not None:
            out = out * reshape(_like(self.gamma, inputs), self._broadcast_shape)
        if self.beta is not None:
            out = out + reshape(_like(self.beta, inputs), self._broadcast_shape)
        return _like(out, compute)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "axis": list(self.axis), "epsilon": self.epsilon,
                "rms_scaling": self.rms_scaling, **_affine_config(self)}


def _statistics_dtype(inputs):
    """``inputs`` in float32 if they are a 2-byte float (Keras 3's: float16 statistics
    overflow, bfloat16's lose precision; mixed-precision models keep float32 moving statistics),
    and their own dtype, which the layer's output returns to."""
    compute = inputs._value.dtype
    if compute.itemsize == 2 and is_float_dtype(compute):
        return cast(inputs, "float32"), compute
    return inputs, compute


def _like(tensor, dtype_of):
    """``tensor`` in the dtype of ``dtype_of`` (a tensor or a numpy dtype), cast if needed."""
    dtype = dtype_of._value.dtype if isinstance(dtype_of, Tensor) else dtype_of
    return tensor if tensor._value.dtype == dtype else cast(tensor, dtype)


def _masked_moments(inputs, mask, axes):
    """Mean and (biased) variance over ``axes`` of the steps the mask keeps (Keras 3's
    ``_moments``): a padded step does not move the batch statistics.  All masked: zeros."""
    mask = convert_to_tensor(mask)
    mask = mask if mask._value.dtype.kind == "b" else not_equal(mask, 0)
    keep = expand_dims(mask, -1)
    kept = where(keep, inputs, 0.0)
    weights = broadcast_to(cast(keep, inputs._value.dtype), tuple(inputs.shape))
    count = reduce_sum(weights, axis=axes, keepdims=True) + backend.EPSILON
    mean = reduce_sum(kept, axis=axes, keepdims=True) / count
    variance = reduce_sum(square(where(keep, inputs - mean, 0.0)), axis=axes, keepdims=True) / count
    return reshape(mean, (-1,)), reshape(variance, (-1,))


# --- gamma and beta: the arguments both layers share -------------------------------------------
def _set_affine_arguments(layer, center, scale, beta_initializer, gamma_initializer,
                          beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint):
    layer.center = bool(center)
    layer.scale = bool(scale)
    layer.beta_initializer = initializers.get(beta_initializer)
    layer.gamma_initializer = initializers.get(gamma_initializer)
    layer.beta_regularizer = regularizers.get(beta_regularizer)
    layer.gamma_regularizer = regularizers.get(gamma_regularizer)
    layer.beta_constraint = constraints.get(beta_constraint)
    layer.gamma_constraint = constraints.get(gamma_constraint)
    layer.gamma = layer.beta = None


def _add_affine_weights(layer, shape, *, scale, center):
    if scale:
        layer.gamma = layer.add_weight("gamma", shape, layer.gamma_initializer,
                                       regularizer=layer.gamma_regularizer,
                                       constraint=layer.gamma_constraint)
    if center:
        layer.beta = layer.add_weight("beta", shape, layer.beta_initializer,
                                      regularizer=layer.beta_regularizer,
                                      constraint=layer.beta_constraint)


def _affine_config(layer):
    return {"center": layer.center, "scale": layer.scale,
            "beta_initializer": initializers.serialize(layer.beta_initializer),
            "gamma_initializer": initializers.serialize(layer.gamma_initializer),
            "beta_regularizer": regularizers.serialize(layer.beta_regularizer),
            "gamma_regularizer": regularizers.serialize(layer.gamma_regularizer),
            "beta_constraint": constraints.serialize(layer.beta_constraint),
            "gamma_constraint": constraints.serialize(layer.gamma_constraint)}
