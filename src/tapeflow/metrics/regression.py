"""R2Score: Keras 3's coefficient of determination, kept as running sums.

Per output column the state holds the weighted sums of y, of y^2 and of the squared
residuals, and the total weight; ``result`` turns them into

    R2 = 1 - sum(w (y - p)^2) / sum(w (y - mean_w(y))^2)

per column, aggregated as sklearn's ``multioutput`` ("uniform_average",
"variance_weighted_average", or None: one score per column), and adjusted for
``num_regressors`` with n = the number of elements seen (Keras counts elements,
not rows).  A column whose targets are all equal scores 0 where the ratio is
infinite, as Keras's.  Updates and result are array functions
(``metrics.base.array_function``): eager on the arrays, one op each in a traced step.
"""
import warnings

import numpy as np

from .. import backend
from .base import Metric, _shape, accumulate, array_function, scalar_zero

__all__ = ["R2Score"]

_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


def _matched_2d(y_true, y_pred, dtype):
    y_true, y_pred = y_true.astype(dtype, copy=False), y_pred.astype(dtype, copy=False)
    if y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1] == 1 and y_true.ndim == 1:
        y_true = y_true[:, None]
    elif y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1] == 1 and y_pred.ndim == 1:
        y_pred = y_pred[:, None]
    if y_true.ndim != 2 or y_pred.ndim != 2 or y_true.shape[1] != y_pred.shape[1]:
        raise ValueError("R2Score expects 2-D inputs of shape (batch_size, output_dim), got "
                         f"y_true.shape={tuple(y_true.shape)}, y_pred.shape={tuple(y_pred.shape)}")
    return y_true, y_pred


def _r2_sums(y_true, y_pred, *sample_weight, dtype):
    """[5, columns]: per column sum(w y), sum(w y^2), sum(w (y - p)^2), sum(w), and the
    number of elements in the batch (in every column)."""
    xp = backend.array_module(y_pred)
    y_true, y_pred = _matched_2d(y_true, y_pred, dtype)
    w = xp.ones((), dtype=dtype)
    if sample_weight:
        w = sample_weight[0].astype(dtype, copy=False)
        if w.ndim == 1:
            w = w[:, None]  # one weight per row, for each of its columns
    w = xp.broadcast_to(w, y_true.shape)
    weighted = w * y_true
    sums = [weighted.sum(0), (weighted * y_true).sum(0), (w * (y_true - y_pred) ** 2).sum(0),
            w.sum(0), xp.full(y_true.shape[1], y_true.size)]
    return xp.stack(sums).astype(dtype)


def _r2(total, squared, residual, count, num_samples, *, class_aggregation, num_regressors):
    xp = backend.array_module(total)
    dtype = total.dtype
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / count
        spread = squared - total * mean
        raw = 1 - residual / spread
    raw = xp.where(xp.isinf(raw), 0.0, raw)
    if class_aggregation == "uniform_average":
        score = xp.mean(raw)
    elif class_aggregation == "variance_weighted_average":
        score = xp.sum(spread * raw) / xp.sum(spread)
    else:
        score = raw
    if num_regressors:
        n = float(num_samples)
        if num_regressors > n - 1:
            warnings.warn("More independent predictors than datapoints in adjusted R2 score. "
                          "Falling back to standard R2 score.", stacklevel=2)
        elif num_regressors == n - 1:
            warnings.warn("Division by zero in adjusted R2 score. Falling back to standard R2 "
                          "score.", stacklevel=2)
        else:
            score = 1 - (1 - score) * (n - 1) / (n - num_regressors - 1)
    return xp.asarray(score, dtype=dtype)


class R2Score(Metric):
    """Keras 3's R2Score; its state is made at the first batch (its width is y's)."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score",
                 dtype=None):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in _AGGREGATIONS:
            raise ValueError(f"R2Score: class_aggregation must be one of {list(_AGGREGATIONS)}, "
                             f"got {class_aggregation!r}")
        if isinstance(num_regressors, bool) or int(num_regressors) != num_regressors or \
                num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be an integer >= 0, got "
                             f"{num_regressors!r}")
        self.class_aggregation = class_aggregation
        self.num_regressors = int(num_regressors)
        self.num_samples = self.add_variable((), name="num_samples")
        self._sums = None

    def _build(self, columns):
        self._sums = [self.add_variable((columns,), name=state)
                      for state in ("sum", "squared_sum", "residual", "count")]

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self._sums is None:
            shape = _shape(y_pred)
            self._build(shape[-1] if len(shape) == 2 else 1)
        operands = (y_true, y_pred) + (() if sample_weight is None else (sample_weight,))
        sums = array_function(_r2_sums, *operands, dtype=self._dtype)
        accumulate(self._sums, sums)
        accumulate([self.num_samples], sums[4:, 0])

    def result(self):
        if self._sums is None:
            return array_function(scalar_zero, dtype=self._dtype)  # no data yet
        return array_function(_r2, *self._sums, self.num_samples,
                              class_aggregation=self.class_aggregation,
                              num_regressors=self.num_regressors)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
