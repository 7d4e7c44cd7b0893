"""Keras 3's losses, written in tapeflow ops so that they differentiate (twice).

A loss function ``fn(y_true, y_pred)`` returns per-sample losses (the mean over
the last axis, as Keras).  A ``Loss`` object's ``__call__`` also weights them by
``sample_weight`` and reduces them ("sum_over_batch_size", "sum", "none"...).

Stability: the ``from_logits`` paths use ``log_softmax`` and
``sigmoid_cross_entropy_with_logits``; the probability paths clip to
``[EPSILON, 1 - EPSILON]`` before the log, as Keras does.

Names: ``get`` takes Keras's names ("mse", "mean_squared_error" the function,
"MeanSquaredError" a new instance), ``Loss`` objects and classes, functions and
config dicts, by the rules of ``tapeflow.serialization``; None gives None.
``register_loss`` makes a user's loss loadable by name from a config.
"""
import re
import warnings

import numpy as np

from . import backend
from . import dtype_policy as dtype_policies
from .core.tensor import Tensor, convert_to_tensor
from .dtypes import numpy_dtype
from .ops.arithmetic import abs_, add_n, equal, logical_and, logical_or, maximum, not_equal
from .serialization import Registry, snake_case
from .ops.clip import clip_by_value
from .ops.creation import one_hot
from .ops.elementwise import log, rsqrt, softplus, square
from .ops.nn import checked_class_indices, log_softmax, sigmoid_cross_entropy_with_logits
from .ops.reduce import reduce_all, reduce_max, reduce_mean, reduce_sum
from .ops.shape import cast, expand_dims, squeeze, where
from .dtypes import is_inexact_dtype

__all__ = [
    "Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber",
    "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
    "Hinge", "SquaredHinge", "CategoricalHinge", "KLDivergence", "Poisson", "LogCosh",
    "CosineSimilarity",
    "mean_squared_error", "mean_absolute_error", "huber", "binary_crossentropy",
    "categorical_crossentropy", "sparse_categorical_crossentropy", "hinge", "squared_hinge",
    "categorical_hinge", "kl_divergence", "poisson", "log_cosh", "cosine_similarity",
    "mse", "mae", "MSE", "MAE", "kld", "KLD",
    "squeeze_or_expand_to_same_rank", "reduce_weighted_values", "sum_of_losses", "register_loss",
    "get",
    "serialize", "deserialize", "EPSILON", "REDUCTIONS",
]

EPSILON = backend.EPSILON  # probabilities are clipped to [EPSILON, 1 - EPSILON], as Keras
REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


# --- shapes and dtypes ------------------------------------------------------------------------
def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Keras's rank matching: when the ranks differ by one and the longer ends in a 1-axis,
    expand a rank-1 partner (or squeeze that axis), so (batch,) and (batch, 1) pair up
    elementwise instead of broadcasting to (batch, batch)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = expand_dims(x2, -1)
        else:
            x1 = squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = expand_dims(x1, -1)
        else:
            x2 = squeeze(x2, -1)
    return x1, x2


def _floating(x):
    """``x`` as a floating tensor; integer or bool data becomes float32 (Keras's floatx)."""
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    return t if is_inexact_dtype(t._value.dtype) else cast(t, "float32")


def _as_dtype(x, dtype):
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    return t if t._value.dtype == dtype else cast(t, dtype)


def _dtype_argument(dtype):
    """A Loss's ``dtype`` argument as its config keeps it: None, a dtype's or a policy's name."""
    if dtype is None or isinstance(dtype, str) and dtype.startswith("mixed_"):
        return dtype
    if isinstance(dtype, dtype_policies.DTypePolicy):
        return dtype.name
    return numpy_dtype(dtype).name


def _matched(y_true, y_pred):
    """y_pred as a float tensor, y_true cast to its dtype, ranks matched as Keras does."""
    y_pred = _floating(y_pred)
    y_true = cast(convert_to_tensor(y_true), y_pred._value.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def _same_shape(what, y_true, y_pred):
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"{what}: y_true and y_pred must have the same shape, got "
                         f"y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}")


def _log_probabilities(y_pred, from_logits, axis):
    """log p over ``axis``: log_softmax of logits, or the log of renormalised, clipped probabilities."""
    if from_logits:
        return log_softmax(y_pred, axis=axis)
    p = y_pred / reduce_sum(y_pred, axis=axis, keepdims=True)
    return log(clip_by_value(p, EPSILON, 1.0 - EPSILON))


# --- per-sample loss functions ---------------------------------------------------------------
def mean_squared_error(y_true, y_pred):
    """mean(square(y_true - y_pred), axis=-1)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return reduce_mean(square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(abs(y_true - y_pred), axis=-1)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return reduce_mean(abs_(y_true - y_pred), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """mean over the last axis of 0.5 e^2 where |e| <= delta, else delta |e| - 0.5 delta^2."""
    y_true, y_pred = _matched(y_true, y_pred)
    delta = float(delta)
    error = y_pred - y_true
    abs_error = abs_(error)
    quadratic = 0.5 * square(error)
    linear = delta * abs_error - 0.5 * delta * delta
    return reduce_mean(where(abs_error <= delta, quadratic, linear), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean over ``axis`` of -(y log p + (1 - y) log(1 - p)); smoothing pulls labels toward 0.5."""
    y_true, y_pred = _matched(y_true, y_pred)
    _same_shape("binary_crossentropy", y_true, y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        per_element = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per_element = -(y_true * log(p) + (1.0 - y_true) * log(1.0 - p))
    return reduce_mean(per_element, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log p, axis) for one-hot (or soft) targets; smoothing spreads
    ``label_smoothing`` evenly over the classes."""
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be an int, got axis={axis!r}")
    y_true, y_pred = _matched(y_true, y_pred)
    _same_shape("categorical_crossentropy", y_true, y_pred)
    if y_pred.shape[-1] == 1:
        warnings.warn("categorical_crossentropy expects y_pred of shape (batch, num_classes) with "
                      f"num_classes > 1, got {tuple(y_pred.shape)}; for two classes use "
                      "binary_crossentropy", SyntaxWarning, stacklevel=2)
    if label_smoothing:
        num_classes = y_pred.shape[axis]
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    return -reduce_sum(y_true * _log_probabilities(y_pred, from_logits, axis), axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Categorical crossentropy with integer class indices as targets (shape of y_pred less
    ``axis``).  Targets equal to ``ignore_class`` (Keras 3's: a padding label) give 0, and the
    result carries a mask that is False there, so a ``Loss`` averages over the others."""
    y_pred = _floating(y_pred)
    labels = y_true if isinstance(y_true, Tensor) else convert_to_tensor(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = squeeze(labels, -1)
    if ignore_class is None:
        return _sparse_crossentropy(labels, y_pred, from_logits, axis)
    valid = not_equal(labels, ignore_class)
    labels = where(valid, labels, 0)  # any class in range: its loss is replaced by 0 below
    loss = where(valid, _sparse_crossentropy(labels, y_pred, from_logits, axis), 0.0)
    loss._keras_mask = valid
    return loss


def _sparse_crossentropy(labels, y_pred, from_logits, axis):
    ndim = y_pred.ndim
    axis = axis % ndim if ndim else axis
    expected = tuple(d for i, d in enumerate(y_pred.shape) if i != axis)
    if tuple(labels.shape) != expected:
        raise ValueError("sparse_categorical_crossentropy: y_true must have y_pred's shape without "
                         f"the class axis, got y_true.shape={tuple(labels.shape)}, "
                         f"y_pred.shape={tuple(y_pred.shape)}")
    depth = y_pred.shape[axis]
    labels, out_of_range = checked_class_indices(labels, depth)
    if labels._value.dtype.kind not in "iu":  # Keras casts float labels to integers
        labels = cast(labels, "int64")
    hot = one_hot(labels, depth, axis=-1 if axis == ndim - 1 else axis, dtype=y_pred._value.dtype)
    loss = -reduce_sum(hot * _log_probabilities(y_pred, from_logits, axis), axis=axis)
    return loss if out_of_range is None else where(out_of_range, np.nan, loss)


def _hinge_labels(y_true):
    """Keras's ``convert_binary_labels_to_hinge``: labels that are all 0 or 1 become -1 or 1;
    any other labels are used as they are.  Decided with ops, so a traced step decides per batch."""
    binary = reduce_all(logical_or(equal(y_true, 0.0), equal(y_true, 1.0)))
    return where(binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    """mean(maximum(1 - y_true * y_pred, 0), axis=-1); labels -1/1 (0/1 are converted)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return reduce_mean(maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1); labels -1/1 (0/1 converted)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return reduce_mean(square(maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis,
    for one-hot y_true."""
    y_true, y_pred = _matched(y_true, y_pred)
    positive = reduce_sum(y_true * y_pred, axis=-1)
    negative = reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return maximum(negative - positive + 1.0, 0.0)


def kl_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred), axis=-1), both clipped to [EPSILON, 1] first."""
    y_true, y_pred = _matched(y_true, y_pred)
    y_true = clip_by_value(y_true, EPSILON, 1.0)
    y_pred = clip_by_value(y_pred, EPSILON, 1.0)
    return reduce_sum(y_true * log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + EPSILON), axis=-1)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return reduce_mean(y_pred - y_true * log(y_pred + EPSILON), axis=-1)


_LOG_2 = 0.6931471805599453


def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true)), axis=-1), as x + softplus(-2x) - log 2: cosh would
    overflow for |x| > ~89 in float32, this form stays finite (and smooth)."""
    y_true, y_pred = _matched(y_true, y_pred)
    x = y_pred - y_true
    return reduce_mean(x + softplus(-2.0 * x) - _LOG_2, axis=-1)


def _l2_normalize(x, axis):
    """x / max(||x||, EPSILON) along ``axis`` (Keras's ``normalize``): the norm is floored
    inside the rsqrt, so a zero vector has a finite (zero) gradient."""
    squares = reduce_sum(square(x), axis=axis, keepdims=True)
    return x * rsqrt(maximum(squares, EPSILON * EPSILON))


def cosine_similarity(y_true, y_pred, axis=-1):
    """-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis): Keras's loss is the negative
    similarity, so that minimising it aligns the vectors (-1 aligned, 0 orthogonal)."""
    y_true, y_pred = _matched(y_true, y_pred)
    return -reduce_sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
kld = KLD = kl_divergence


# --- reductions ------------------------------------------------------------------------------
def standardize_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid reduction {reduction!r}; expected one of {list(REDUCTIONS)}")
    return reduction


def reduce_weighted_values(values, sample_weight=None, reduction="sum_over_batch_size",
                           mask=None, dtype=None):
    """Weight per-sample ``values`` by ``sample_weight`` and reduce them, as Keras.

    "sum_over_batch_size" (and "mean") divides the weighted sum by the number of
    values, not by the sum of the weights; "mean_with_sample_weight" divides by
    the sum of the weights.  A ``mask`` (False: a padded step) zeroes those values, and
    the means divide by the number of unmasked values instead (Keras 3's ``apply_mask``).
    ``dtype`` (a Loss's) is the dtype the values are reduced in; None keeps theirs.
    """
    reduction = standardize_reduction(reduction)
    values = _floating(values) if dtype is None else _as_dtype(values, dtype)
    if mask is not None:
        sample_weight = _masked_weights(sample_weight, mask, values._value.dtype, reduction)
    if sample_weight is None and reduction == "sum_over_batch_size" and values._value.size:
        return reduce_mean(values)  # the same number in one op: fit calls this every step
    if sample_weight is not None:
        sample_weight = cast(convert_to_tensor(sample_weight), values._value.dtype)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = values * sample_weight
    if reduction is None or reduction == "none" or values.ndim == 0:
        return values
    total = reduce_sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return _divide_no_nan(total, reduce_sum(sample_weight))
    count = values.shape.num_elements()
    return total / float(count) if count else total  # an empty batch sums to zero


def _masked_weights(sample_weight, mask, dtype, reduction):
    """The mask folded into the sample weights, as Keras 3's ``apply_mask``: for the means an
    unmasked value weighs total / valid, so the mean is over the unmasked values alone (an
    all-masked batch gives 0, not NaN)."""
    mask = cast(convert_to_tensor(mask), dtype)
    if reduction in ("mean", "sum_over_batch_size"):
        total = float(mask.shape.num_elements())
        mask = mask * (total / (reduce_sum(mask) + EPSILON))
    if sample_weight is None:
        return mask
    sample_weight = cast(convert_to_tensor(sample_weight), dtype)
    mask, sample_weight = squeeze_or_expand_to_same_rank(mask, sample_weight)
    return sample_weight * mask


def sum_of_losses(terms):
    """The sum of scalar loss terms in the widest float dtype among them: a float32 compiled
    loss plus a float64 model's regularization penalties is float64, as Keras's ``ops.sum``
    of the list promotes (tapeflow's ``+`` does not convert dtypes)."""
    terms = [_floating(t) for t in terms]
    dtype = np.result_type(*(t._value.dtype for t in terms))
    terms = [_as_dtype(t, dtype) for t in terms]
    return terms[0] if len(terms) == 1 else add_n(terms)


def _divide_no_nan(x, y):
    zero = y == 0.0
    return where(zero, 0.0 * x, x / where(zero, 1.0, y))


_ELEMENTWISE = {mean_squared_error: square, mean_absolute_error: abs_}


# --- Loss objects ----------------------------------------------------------------------------
class Loss:
    """Base class: subclasses write ``call(y_true, y_pred)`` returning per-sample losses.

    ``loss(y_true, y_pred, sample_weight=None)`` casts y_pred and y_true to the loss's
    ``dtype``, calls ``call``, weights and reduces in that dtype: a scalar tensor unless
    ``reduction`` is "none"/None.  The mask a layer put on y_pred (``y_pred._keras_mask``,
    e.g. after ``Masking`` or ``Embedding(mask_zero=True)``) leaves the masked steps out, as
    in Keras 3.

    ``dtype`` is Keras 3's: None computes in ``keras.backend.floatx()`` (float32 unless
    ``set_floatx`` changed it) whatever the inputs' dtype, so a float64 model's loss is
    float32, as in Keras; a dtype name keeps that dtype (``dtype="float64"`` for float64
    second-order work), and a policy ("mixed_float16" or a DTypePolicy) its compute dtype.
    Fixed when the loss is made, as Keras's.
    """

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None):
        self.reduction = standardize_reduction(reduction)
        self.name = name or snake_case(type(self).__name__)
        self._dtype = dtype_policies.get(dtype if dtype is not None else
                                         dtype_policies.floatx()).compute_dtype
        self._dtype_argument = _dtype_argument(dtype)

    @property
    def dtype(self):
        """The dtype the loss computes in (a name), as Keras's ``Loss.dtype``."""
        return self._dtype

    def __call__(self, y_true, y_pred, sample_weight=None):
        mask = getattr(y_pred, "_keras_mask", None)
        y_true, y_pred = self._converted(y_true, y_pred)
        losses = self.call(y_true, y_pred)
        out_mask = getattr(losses, "_keras_mask", None)  # sparse crossentropy's ignore_class
        if out_mask is not None:
            mask = out_mask if mask is None else logical_and(mask, out_mask)
        return reduce_weighted_values(losses, sample_weight, self.reduction, mask=mask,
                                      dtype=self._dtype)

    def _converted(self, y_true, y_pred):
        """y_pred and y_true in the loss's dtype, as Keras's ``convert_to_tensor(x, dtype)``."""
        return _as_dtype(y_true, self._dtype), _as_dtype(y_pred, self._dtype)

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, "dtype": self._dtype_argument}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name} reduction={self.reduction}>"


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a per-sample function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(reduction=reduction, name=name or getattr(fn, "__name__", None),
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def __call__(self, y_true, y_pred, sample_weight=None):
        elementwise = _ELEMENTWISE.get(self.fn)
        if elementwise is not None and sample_weight is None \
                and self.reduction == "sum_over_batch_size" \
                and getattr(y_pred, "_keras_mask", None) is None:
            # A mean over the batch of per-sample means over the last axis is the mean of all
            # elements: one reduction instead of two, in the forward and backward pass.
            y_true, y_pred = squeeze_or_expand_to_same_rank(*self._converted(y_true, y_pred))
            if y_true.shape == y_pred.shape and y_pred._value.size:
                return reduce_mean(elementwise(y_true - y_pred))
        return super().__call__(y_true, y_pred, sample_weight)

    def get_config(self):
        config = super().get_config()
        config["fn"] = serialize(self.fn)
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("fn"), (str, dict)):
            config["fn"] = deserialize(config["fn"])
        return cls(**config)

    def __repr__(self):
        return f"<LossFunctionWrapper({getattr(self.fn, '__name__', self.fn)}, kwargs={self._fn_kwargs})>"


class _BuiltinLoss(LossFunctionWrapper):
    """A built-in loss class: its config is Loss's plus its function's keyword arguments."""

    def get_config(self):
        return {**Loss.get_config(self), **self._fn_kwargs}


class MeanSquaredError(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class Huber(_BuiltinLoss):
    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(huber, reduction=reduction, name=name, dtype=dtype, delta=delta)
        self.delta = delta


class BinaryCrossentropy(_BuiltinLoss):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="binary_crossentropy",
                 dtype=None):
        super().__init__(binary_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class CategoricalCrossentropy(_BuiltinLoss):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_crossentropy",
                 dtype=None):
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class SparseCategoricalCrossentropy(_BuiltinLoss):
    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 axis=-1, name="sparse_categorical_crossentropy",
                 dtype=None):
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         dtype=dtype, from_logits=from_logits, ignore_class=ignore_class,
                         axis=axis)
        self.ignore_class = ignore_class
        self.from_logits = from_logits
        self.axis = axis


class Hinge(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, reduction=reduction, name=name, dtype=dtype)


class KLDivergence(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, reduction=reduction, name=name, dtype=dtype)


class Poisson(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(poisson, reduction=reduction, name=name, dtype=dtype)


class LogCosh(_BuiltinLoss):
    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(log_cosh, reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(_BuiltinLoss):
    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity",
                 dtype=None):
        super().__init__(cosine_similarity, reduction=reduction, name=name, dtype=dtype,
                         axis=axis)
        self.axis = axis


# --- names (the rules: tapeflow.serialization) -----------------------------------------------
REGISTRY = Registry("loss", {
    **{obj.__name__: obj for obj in (
        mean_squared_error, mean_absolute_error, huber, binary_crossentropy,
        categorical_crossentropy, sparse_categorical_crossentropy, MeanSquaredError,
        MeanAbsoluteError, Huber, BinaryCrossentropy, CategoricalCrossentropy,
        SparseCategoricalCrossentropy, LossFunctionWrapper, hinge, squared_hinge,
        categorical_hinge, kl_divergence, poisson, log_cosh, cosine_similarity, Hinge,
        SquaredHinge, CategoricalHinge, KLDivergence, Poisson, LogCosh, CosineSimilarity)},
    "mse": mean_squared_error, "mae": mean_absolute_error, "bce": binary_crossentropy,
    "kld": kl_divergence,
}, base=Loss, config_only=(LossFunctionWrapper,), register_hint="tapeflow.losses.register_loss")
register_loss = REGISTRY.register
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
