"""``SKLearnTransformer``: a tapeflow model's output as features for a scikit-learn pipeline."""
import numpy as np
from sklearn.base import TransformerMixin
from sklearn.utils.validation import validate_data

from .base import FLOATS, SKLBase

__all__ = ["SKLearnTransformer"]


class SKLearnTransformer(TransformerMixin, SKLBase):
    """``fit`` trains the model on ``(X, y)`` (on ``(X, X)`` when ``y`` is None: an
    autoencoder); ``transform(X)`` is the fitted model's output, as Keras 3's.  For a
    model's intermediate features, give it that layer as its (one) output.
    """

    def fit(self, X, y=None, **kwargs):
        """Build the model and train it; ``kwargs`` go to ``model.fit``."""
        if y is None:
            X = validate_data(self, X, dtype=FLOATS)
            target = X
        else:
            X, target = validate_data(self, X, y, dtype=FLOATS, multi_output=True,
                                      y_numeric=True)
            target = target.reshape(-1, 1) if target.ndim == 1 else target
        return self._fit(X, np.asarray(target, dtype=X.dtype), **kwargs)

    def transform(self, X):
        """The fitted model's output for ``X``."""
        return self._outputs(X)
