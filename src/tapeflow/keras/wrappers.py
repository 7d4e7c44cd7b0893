"""``keras.wrappers``: scikit-learn estimators around tapeflow models.

Importing this module imports scikit-learn; ``tapeflow.keras`` imports it only on first
use of ``tf.keras.wrappers`` (its ``__getattr__``), so ``import tapeflow`` does not.
"""
from ..wrappers import SKLearnClassifier, SKLearnRegressor, SKLearnTransformer

__all__ = ["SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"]
