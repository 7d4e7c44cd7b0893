"""Precision, Recall and AUC: Keras 3's metrics over confusion counts at thresholds.

A batch adds its weighted true/false positive/negative counts at each threshold
(``_confusion_counts``, an array function: a prediction is positive at threshold t
when it is strictly greater than t; a label is positive when it is non-zero) to the
state Variables; ``result`` reads them (``_precision``, ``_recall``, ``_auc``).  Both
go through ``metrics.base.array_function``: eagerly on the arrays, in a traced step
as one op each, so ``compile(metrics=[tf.keras.metrics.AUC()])`` works in a traced
``fit`` and gives the eager numbers.

The counts take O(n log T) for n predictions and T thresholds: each prediction is
placed among the sorted thresholds once and the per-bucket sums are accumulated
from the top, instead of comparing every prediction with every threshold.
"""
import numpy as np

from .. import backend
from .base import Metric, _shape, accumulate, array_function, scalar_zero

__all__ = ["Precision", "Recall", "AUC"]

NEG_INF = -1e10  # Keras's: what top_k filtering puts in place of the predictions it drops
_EPSILON = 1e-7  # Keras's backend epsilon: AUC's outer thresholds lie just outside [0, 1]
_TP, _FP, _TN, _FN = range(4)  # rows of _confusion_counts' result


# --- the array functions ------------------------------------------------------------------------
def _sigmoid(x):
    xp = backend.array_module(x)
    return xp.exp(-xp.logaddexp(0.0, -x))  # no overflow for large negative logits


def _keep_top_k(y_pred, k):
    """Predictions outside each row's top k (ties: the lower index first) become NEG_INF."""
    xp = backend.array_module(y_pred)
    rows = y_pred.reshape(-1, y_pred.shape[-1])
    order = xp.argsort(-rows, axis=-1, kind="stable")[:, :k]
    keep = xp.zeros(rows.shape, dtype=bool)
    keep[xp.arange(rows.shape[0])[:, None], order] = True
    return xp.where(keep.reshape(y_pred.shape), y_pred, NEG_INF)


def _prepared(y_true, y_pred, sample_weight, *, top_k, class_id, label_weights, clip, from_logits,
              multi_label, dtype):
    """(labels as 0/1, predictions, weights), each [examples, labels]: Keras's rank matching,
    logits, top_k, class_id and weight broadcasting done."""
    xp = backend.array_module(y_pred)
    y_pred = y_pred.astype(dtype, copy=False)
    y_true = y_true.astype(dtype, copy=False)
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1:
        y_pred = y_pred[..., 0]
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1:
        y_true = y_true[..., 0]
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true and y_pred must have the same shape, got y_true "
                         f"{tuple(y_true.shape)} and y_pred {tuple(y_pred.shape)}")
    if from_logits:
        y_pred = _sigmoid(y_pred)
    weights = xp.ones(y_pred.shape, dtype=dtype)
    if sample_weight:
        w = sample_weight[0].astype(dtype, copy=False)
        if 0 < w.ndim == y_pred.ndim - 1:
            w = w[..., None]  # one weight per example, for each of its labels
        weights = weights * w
    if label_weights is not None:
        weights = weights * xp.asarray(label_weights, dtype=dtype)
    if top_k is not None:
        y_pred = _keep_top_k(y_pred, top_k)
    if class_id is not None:
        y_true, y_pred, weights = (a[..., class_id] for a in (y_true, y_pred, weights))
    if clip:
        y_pred = xp.clip(y_pred, 0.0, 1.0)
    columns = y_pred.shape[-1] if multi_label and y_pred.ndim > 1 else 1
    return tuple(a.reshape(-1, columns) for a in (y_true != 0, y_pred, weights))


def _confusion_counts(y_true, y_pred, *sample_weight, thresholds, top_k=None, class_id=None,
                      label_weights=None, clip=False, from_logits=False, multi_label=False,
                      dtype=np.float32, rows=(_TP, _FP, _TN, _FN)):
    """[4, T] (or [4, T, labels] with ``multi_label``): the weighted true positives, false
    positives, true negatives and false negatives at each of the T thresholds (the ``rows``
    of them asked for, in that order)."""
    labels, y_pred, weights = _prepared(
        y_true, y_pred, sample_weight, top_k=top_k, class_id=class_id, label_weights=label_weights,
        clip=clip, from_logits=from_logits, multi_label=multi_label, dtype=dtype)
    xp = backend.array_module(y_pred)
    thresholds = xp.asarray(thresholds, dtype=dtype)
    count = thresholds.shape[0]
    order = xp.argsort(thresholds, kind="stable")
    # how many thresholds lie strictly below each prediction: it is positive at exactly those
    below = xp.searchsorted(thresholds[order], y_pred, side="left")
    below = xp.where(xp.isnan(y_pred), 0, below)  # NaN > t is false: never positive
    columns = y_pred.shape[1]
    buckets = (below + (count + 1) * xp.arange(columns)).ravel()
    sums = []
    for mask in (labels, ~labels):  # per bucket, then summed from the top bucket down
        hist = xp.bincount(buckets, weights=(weights * mask).ravel().astype(np.float64),
                           minlength=columns * (count + 1)).reshape(columns, count + 1)
        sums.append(xp.cumsum(hist[:, ::-1], axis=1)[:, ::-1])
    positives, negatives = sums
    out = xp.empty((4, columns, count), dtype=np.float64)
    out[_TP][:, order] = positives[:, 1:]
    out[_FP][:, order] = negatives[:, 1:]
    out[_TN] = negatives[:, :1] - out[_FP]
    out[_FN] = positives[:, :1] - out[_TP]
    out = out[list(rows)].astype(dtype)
    return xp.swapaxes(out, 1, 2) if multi_label else out[:, 0]


def _divide_no_nan(xp, x, y):
    zero = y == 0
    return xp.where(zero, 0, x / xp.where(zero, 1, y))


def _ratio(numerator, other, *, single):
    """numerator / (numerator + other), 0 where both are 0; a scalar for one threshold."""
    xp = backend.array_module(numerator)
    out = _divide_no_nan(xp, numerator, numerator + other).astype(numerator.dtype)
    return out[0] if single else out


def _labelwise_mean(xp, by_label, label_weights):
    if label_weights is None:
        return xp.mean(by_label)
    w = xp.asarray(label_weights, dtype=by_label.dtype)
    return _divide_no_nan(xp, xp.sum(by_label * w), xp.sum(w))


def _interpolated_pr_auc(xp, tp, fp, fn):
    """Davis & Goadrich's interpolation of the precision-recall curve between thresholds
    (Keras's ``interpolate_pr_auc``): precision varies as a ratio of linear functions."""
    dtp = tp[:-1] - tp[1:]
    p = tp + fp
    dp = p[:-1] - p[1:]
    slope = _divide_no_nan(xp, dtp, xp.maximum(dp, 0))
    intercept = tp[1:] - slope * p[1:]
    both_positive = (p[:-1] > 0) & (p[1:] > 0)
    ratio = xp.where(both_positive, _divide_no_nan(xp, p[:-1], xp.maximum(p[1:], 0)), 1.0)
    return _divide_no_nan(xp, slope * (dtp + intercept * xp.log(ratio)),
                          xp.maximum(tp[1:] + fn[1:], 0))


def _auc(tp, fp, tn, fn, *, curve, summation_method, multi_label, label_weights):
    """The area under the ROC or PR curve through the thresholds' points (Keras's result)."""
    xp = backend.array_module(tp)
    dtype = tp.dtype
    if curve == "PR" and summation_method == "interpolation":
        terms = _interpolated_pr_auc(xp, tp, fp, fn)
    else:
        recall = _divide_no_nan(xp, tp, tp + fn)
        if curve == "ROC":
            x, y = _divide_no_nan(xp, fp, fp + tn), recall
        else:
            x, y = recall, _divide_no_nan(xp, tp, tp + fp)
        if summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif summation_method == "minoring":
            heights = xp.minimum(y[:-1], y[1:])
        else:
            heights = xp.maximum(y[:-1], y[1:])
        terms = (x[:-1] - x[1:]) * heights
    if multi_label:
        return xp.asarray(_labelwise_mean(xp, xp.sum(terms, axis=0), label_weights), dtype=dtype)
    return xp.asarray(xp.sum(terms), dtype=dtype)


# --- arguments ----------------------------------------------------------------------------------
def _checked_thresholds(thresholds, default, who):
    values = [default] if thresholds is None else (
        [thresholds] if np.ndim(thresholds) == 0 else list(np.asarray(thresholds).ravel()))
    values = [float(t) for t in values]
    if thresholds is not None and not all(0.0 <= t <= 1.0 for t in values):
        raise ValueError(f"{who}: threshold values must be in [0, 1], got "
                         f"thresholds={thresholds!r}")
    if not values:
        raise ValueError(f"{who}: thresholds must not be empty")
    return values


def _evenly_spaced(thresholds):
    """Keras's ``is_evenly_distributed_thresholds``: then it clips predictions to [0, 1]."""
    n = len(thresholds)
    return n >= 3 and np.allclose(thresholds, np.arange(n) / (n - 1), atol=_EPSILON)


def _checked_index(value, who, what):
    if value is None:
        return None
    if isinstance(value, bool) or not float(value).is_integer() or value < 0 or \
            (what == "top_k" and value < 1):
        kind = "positive" if what == "top_k" else "non-negative"
        raise ValueError(f"{who}: `{what}` must be a {kind} integer, got {value!r}")
    return int(value)


# --- the metrics --------------------------------------------------------------------------------
class _ThresholdedCounts(Metric):
    """Precision and Recall: counts at ``thresholds`` (0.5 by default; NEG_INF with ``top_k``,
    so the top k predictions alone are positive), of ``class_id`` alone if given."""

    _STATE = ()  # (state name, row of _confusion_counts), in Keras's order

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        who = type(self).__name__
        # as given (one float or a list), in plain Python numbers so the config is JSON
        self.init_thresholds = thresholds if thresholds is None else (
            float(thresholds) if np.ndim(thresholds) == 0 else
            [float(t) for t in np.asarray(thresholds).ravel()])
        self.top_k = _checked_index(top_k, who, "top_k")
        self.class_id = _checked_index(class_id, who, "class_id")
        default = 0.5 if top_k is None else NEG_INF
        self.thresholds = _checked_thresholds(thresholds, default, who)
        self._clip = _evenly_spaced(self.thresholds)
        for state, _ in self._STATE:
            setattr(self, state, self.add_variable((len(self.thresholds),), name=state))

    def update_state(self, y_true, y_pred, sample_weight=None):
        operands = (y_true, y_pred) + (() if sample_weight is None else (sample_weight,))
        counts = array_function(_confusion_counts, *operands, thresholds=tuple(self.thresholds),
                                top_k=self.top_k, class_id=self.class_id, clip=self._clip,
                                dtype=self._dtype, rows=tuple(row for _, row in self._STATE))
        accumulate([getattr(self, state) for state, _ in self._STATE], counts)

    def result(self):
        (first, _), (second, _) = self._STATE
        return array_function(_ratio, getattr(self, first), getattr(self, second),
                              single=len(self.thresholds) == 1)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_ThresholdedCounts):
    """tp / (tp + fp): the fraction of predicted positives that are positive."""

    _STATE = (("true_positives", _TP), ("false_positives", _FP))

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision", dtype=None):
        super().__init__(thresholds, top_k, class_id, name=name, dtype=dtype)


class Recall(_ThresholdedCounts):
    """tp / (tp + fn): the fraction of positives predicted positive."""

    _STATE = (("true_positives", _TP), ("false_negatives", _FN))

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, top_k, class_id, name=name, dtype=dtype)


class AUC(Metric):
    """The area under the ROC (or precision-recall) curve, as Keras 3 approximates it: the
    curve through the points at ``num_thresholds`` thresholds evenly spaced over [0, 1] (or
    the given ``thresholds``), summed by the trapezoid rule ("interpolation"; for PR, Davis
    and Goadrich's interpolation), or by the lower / upper rectangles ("minoring" /
    "majoring").  ``multi_label``: one curve per label (the last axis), averaged (weighted by
    ``label_weights``); otherwise all labels are flattened into one curve."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name="auc", dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        super().__init__(name=name, dtype=dtype)
        curve = str(curve).upper()
        summation_method = str(summation_method).lower()
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError("AUC: summation_method must be 'interpolation', 'minoring' or "
                             f"'majoring', got {summation_method!r}")
        if thresholds is not None:
            inner = sorted(_checked_thresholds(thresholds, None, "AUC"))
            num_thresholds = len(inner) + 2
        else:
            if isinstance(num_thresholds, bool) or int(num_thresholds) != num_thresholds or \
                    num_thresholds <= 1:
                raise ValueError(f"AUC: num_thresholds must be an integer > 1, got "
                                 f"{num_thresholds!r}")
            num_thresholds = int(num_thresholds)
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.num_thresholds = num_thresholds
        self.thresholds = [0.0 - _EPSILON] + inner + [1.0 + _EPSILON]
        self._clip = thresholds is None or _evenly_spaced([0.0] + inner + [1.0])
        self._init_thresholds = None if thresholds is None else inner
        self.curve = curve
        self.summation_method = summation_method
        self.multi_label = bool(multi_label)
        self.from_logits = bool(from_logits)
        if label_weights is not None:
            label_weights = [float(w) for w in np.asarray(label_weights).ravel()]
            if any(w < 0 for w in label_weights):
                raise ValueError(f"AUC: label_weights must be non-negative, got {label_weights}")
        self.label_weights = label_weights
        self.num_labels = None
        if num_labels is not None or not self.multi_label:
            self._build(num_labels)

    def _build(self, num_labels):
        shape = (self.num_thresholds,)
        if self.multi_label:
            self.num_labels = int(num_labels)
            shape += (self.num_labels,)
        for state in ("true_positives", "false_positives", "true_negatives", "false_negatives"):
            setattr(self, state, self.add_variable(shape, name=state))

    @property
    def _counts(self):
        return [self.true_positives, self.false_positives, self.true_negatives,
                self.false_negatives]

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.multi_label and self.num_labels is None:
            shape = _shape(y_pred)
            self._build(shape[-1] if shape else 1)  # the first batch says how many labels
        operands = (y_true, y_pred) + (() if sample_weight is None else (sample_weight,))
        counts = array_function(
            _confusion_counts, *operands, thresholds=tuple(self.thresholds), clip=self._clip,
            from_logits=self.from_logits, multi_label=self.multi_label, dtype=self._dtype,
            label_weights=None if self.multi_label or self.label_weights is None
            else tuple(self.label_weights))
        accumulate(self._counts, counts)

    def result(self):
        if self.multi_label and self.num_labels is None:
            return array_function(scalar_zero, dtype=self._dtype)  # no data yet
        return array_function(
            _auc, *self._counts, curve=self.curve, summation_method=self.summation_method,
            multi_label=self.multi_label,
            label_weights=None if self.label_weights is None else tuple(self.label_weights))

    def get_config(self):
        config = {**super().get_config(), "num_thresholds": self.num_thresholds,
                  "curve": self.curve, "summation_method": self.summation_method,
                  "multi_label": self.multi_label, "num_labels": self.num_labels,
                  "label_weights": self.label_weights, "from_logits": self.from_logits}
        if self._init_thresholds is not None:
            config["thresholds"] = list(self._init_thresholds)
        return config
