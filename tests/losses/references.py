"""Plain-numpy reference formulas for the losses, written from Keras's documentation.

Each returns per-sample losses (float64) for matching-shape inputs; ``reduce``
applies a Keras reduction to weighted per-sample losses.
"""
import numpy as np

EPS = 1e-7


def mse(t, p):
    return np.mean((t - p) ** 2, axis=-1)


def mae(t, p):
    return np.mean(np.abs(t - p), axis=-1)


def huber(t, p, delta=1.0):
    e = p - t
    a = np.abs(e)
    return np.mean(np.where(a <= delta, 0.5 * e ** 2, delta * a - 0.5 * delta ** 2), axis=-1)


def binary_crossentropy(t, p, from_logits=False, label_smoothing=0.0):
    t = t * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        p = 1 / (1 + np.exp(-p))
    p = np.clip(p, EPS, 1 - EPS)
    return np.mean(-(t * np.log(p) + (1 - t) * np.log(1 - p)), axis=-1)


def categorical_crossentropy(t, p, from_logits=False, label_smoothing=0.0):
    t = t * (1 - label_smoothing) + label_smoothing / p.shape[-1]
    if from_logits:
        m = p.max(axis=-1, keepdims=True)
        log_p = p - m - np.log(np.sum(np.exp(p - m), axis=-1, keepdims=True))
    else:
        log_p = np.log(np.clip(p / p.sum(axis=-1, keepdims=True), EPS, 1 - EPS))
    return -np.sum(t * log_p, axis=-1)


def sparse_categorical_crossentropy(labels, p, from_logits=False):
    hot = np.eye(p.shape[-1])[np.asarray(labels).reshape(p.shape[:-1]).astype(int)]
    return categorical_crossentropy(hot, p, from_logits=from_logits)


def _hinge_labels(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def hinge(t, p):
    return np.mean(np.maximum(1 - _hinge_labels(t) * p, 0), axis=-1)


def squared_hinge(t, p):
    return np.mean(np.maximum(1 - _hinge_labels(t) * p, 0) ** 2, axis=-1)


def categorical_hinge(t, p):
    pos = np.sum(t * p, axis=-1)
    neg = np.max((1 - t) * p, axis=-1)
    return np.maximum(neg - pos + 1, 0)


def kl_divergence(t, p):
    t, p = np.clip(t, EPS, 1), np.clip(p, EPS, 1)
    return np.sum(t * np.log(t / p), axis=-1)


def poisson(t, p):
    return np.mean(p - t * np.log(p + EPS), axis=-1)


def log_cosh(t, p):
    return np.mean(np.log(np.cosh(p - t)), axis=-1)


def cosine_similarity(t, p, axis=-1):
    t = t / np.maximum(np.linalg.norm(t, axis=axis, keepdims=True), EPS)
    p = p / np.maximum(np.linalg.norm(p, axis=axis, keepdims=True), EPS)
    return -np.sum(t * p, axis=axis)


def reduce(per_sample, weights, reduction):
    """Keras: weight, then sum / divide by the number of values / by the sum of the weights.

    As Keras: a (batch, 1) weight makes unreduced losses (batch, 1), and
    "mean_with_sample_weight" divides by the sum of the weights as given (a scalar
    weight is not counted once per sample).
    """
    w = np.asarray(1.0 if weights is None else weights)
    if w.ndim == per_sample.ndim + 1 and w.shape[-1] == 1:
        per_sample = per_sample[..., None]
    weighted = per_sample * w
    if reduction in (None, "none"):
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean_with_sample_weight" and weights is not None:
        return weighted.sum() / w.sum()
    return weighted.sum() / weighted.size
