"""``confusion_matrix``: counts (or summed weights) of each (label, prediction) pair.

One primitive, ``ConfusionMatrix(labels, predictions[, weights])``: the labels and
predictions are inputs, so a traced graph counts the data it is called with.  It is
not differentiable (registered NotDifferentiable): its entries are counts of class
indices.
"""
import numpy as np

from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..dtypes import numpy_dtype
from ._util import array_module, as_tensor

__all__ = ["confusion_matrix"]


def _confusion_matrix_forward(labels, predictions, *weights, num_classes, dtype):
    xp = array_module(labels, predictions)
    for what, values in (("labels", labels), ("predictions", predictions)):
        if values.dtype.kind == "f" and not bool(xp.all(values == xp.floor(values))):
            raise ValueError(f"confusion_matrix: {what} must be whole numbers (class indices)")
    labels = labels.astype(np.int64, copy=False)
    predictions = predictions.astype(np.int64, copy=False)
    for what, values in (("labels", labels), ("predictions", predictions)):
        if values.size and int(values.min()) < 0:
            raise ValueError(f"confusion_matrix: {what} must be >= 0, got {int(values.min())}")
    n = num_classes
    if n is None:  # TensorFlow's default: one more than the largest class seen
        n = int(max(labels.max(initial=-1), predictions.max(initial=-1))) + 1
    for what, values in (("labels", labels), ("predictions", predictions)):
        if values.size and int(values.max()) >= n:
            raise ValueError(f"confusion_matrix: {what} must be < num_classes={n}, "
                             f"got {int(values.max())}")
    w = weights[0].astype(np.float64, copy=False) if weights else None
    counts = xp.bincount(labels * n + predictions, weights=w, minlength=n * n)
    return counts.reshape(n, n).astype(dtype)


CONFUSION_MATRIX = def_primitive("ConfusionMatrix", _confusion_matrix_forward,
                                 not_differentiable=True)  # counts of class indices


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=np.int32,
                     name=None):
    """[num_classes, num_classes]: entry (i, j) counts the samples with label i predicted as j
    (or sums their ``weights``), as ``tf.math.confusion_matrix``.  ``num_classes`` defaults to
    one more than the largest label or prediction."""
    labels, predictions = as_tensor(labels), as_tensor(predictions)
    for what, t in (("labels", labels), ("predictions", predictions)):
        if t._value.ndim != 1:
            raise ValueError(f"confusion_matrix: {what} must be 1-D, got shape "
                             f"{tuple(t._value.shape)}")
        if t._value.dtype.kind not in "iubf":
            raise TypeError(f"confusion_matrix: {what} must be class indices (integers), "
                            f"got {t._value.dtype.name}")
    if labels._value.shape != predictions._value.shape:
        raise ValueError(f"confusion_matrix: labels {tuple(labels._value.shape)} and predictions "
                         f"{tuple(predictions._value.shape)} must have the same shape")
    operands = (labels, predictions)
    if weights is not None:
        weights = as_tensor(weights)
        if tuple(weights._value.shape) != tuple(labels._value.shape):
            raise ValueError(f"confusion_matrix: weights {tuple(weights._value.shape)} must have "
                             f"the labels' shape {tuple(labels._value.shape)}")
        operands += (weights,)
    if num_classes is not None:
        num_classes = int(num_classes.numpy() if hasattr(num_classes, "numpy") else num_classes)
        if num_classes < 1:
            raise ValueError(f"confusion_matrix: num_classes must be >= 1, got {num_classes}")
    return apply(CONFUSION_MATRIX, operands,
                 {"num_classes": num_classes, "dtype": numpy_dtype(dtype)})
