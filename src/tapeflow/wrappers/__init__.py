"""scikit-learn estimators around tapeflow models, as Keras 3's ``keras.wrappers``.

Imported only when ``tf.keras.wrappers`` is first used, so ``import tapeflow`` does not
import scikit-learn.
"""
from .classifier import SKLearnClassifier
from .regressor import SKLearnRegressor
from .transformer import SKLearnTransformer

__all__ = ["SKLearnClassifier", "SKLearnRegressor", "SKLearnTransformer"]
