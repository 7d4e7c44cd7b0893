"""``SKLearnRegressor``: a tapeflow model as a scikit-learn regressor (``score`` is R²)."""
import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import validate_data

from .base import FLOATS, SKLBase

__all__ = ["SKLearnRegressor"]


class SKLearnRegressor(RegressorMixin, SKLBase):
    """A tapeflow model fitted on ``(X, y)`` by scikit-learn; ``y`` of one or more columns.

    ``model``: a tapeflow model (cloned at each fit) or a function ``model(X=, y=, **model_kwargs)``
    building one; compiled with Adam and mean squared error when it is not compiled.
    ``fit_kwargs``: arguments of ``model.fit`` (``epochs``, ``batch_size``; ``verbose`` is 0
    unless given).  ``random_state``: an int makes the fit reproducible bit for bit.
    """

    def fit(self, X, y, **kwargs):
        """Build the model and train it; ``kwargs`` go to ``model.fit`` over ``fit_kwargs``."""
        X, y = validate_data(self, X, y, dtype=FLOATS, multi_output=True, y_numeric=True)
        self._y_ndim = y.ndim
        target = y.reshape(-1, 1) if y.ndim == 1 else y
        return self._fit(X, target.astype(X.dtype), **kwargs)

    def predict(self, X):
        """The model's outputs (float64), one column dropped when ``y`` was 1-D."""
        out = self._outputs(X).astype(np.float64)
        return out.reshape(-1) if self._y_ndim == 1 and out.ndim == 2 and out.shape[1] == 1 \
            else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
