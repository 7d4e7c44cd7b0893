"""``SKLearnClassifier``: a tapeflow model as a scikit-learn classifier (``score`` is accuracy).

Labels of any type (strings, ints, floats) are encoded with a ``LabelEncoder``
(``classes_``, sorted) and decoded by ``predict``.  The model function gets ``y`` one-hot, as
Keras 3's does (``y.shape[1]`` is the number of classes).  What the model is trained on
follows its output and loss: ``n_classes`` units and a categorical loss, one-hot rows; a
sparse categorical loss, the class indices; one unit (a sigmoid) for two classes, 0/1.
"""
import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from .base import FLOATS, SKLBase, output_units
from .model_io import loss_name

__all__ = ["SKLearnClassifier"]


class SKLearnClassifier(ClassifierMixin, SKLBase):
    """A tapeflow model fitted on ``(X, labels)`` by scikit-learn.

    ``model``: a tapeflow model (cloned at each fit) or a function ``model(X=, y=, **model_kwargs)``
    building one, with ``n_classes`` outputs (softmax) or, for two classes, one (sigmoid);
    compiled with Adam and a crossentropy when it is not compiled.  ``fit_kwargs``: arguments
    of ``model.fit``.  ``random_state``: an int makes the fit reproducible bit for bit.
    """

    def fit(self, X, y, **kwargs):
        """Encode the labels, build the model and train it; ``kwargs`` go to ``model.fit``."""
        X, y = validate_data(self, X, y, dtype=FLOATS)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        encoder = LabelEncoder().fit(y)
        if len(encoder.classes_) < 2:
            raise ValueError(f"SKLearnClassifier needs samples of at least 2 classes; y has "
                             f"1 class ({encoder.classes_[0]!r})")
        self.classes_ = encoder.classes_
        codes = encoder.transform(y)
        return self._fit(X, np.eye(len(self.classes_), dtype=X.dtype)[codes], **kwargs)

    def _fit_target(self, model, one_hot):
        n_classes = one_hot.shape[1]
        units = output_units(model, self.n_features_in_)
        name, _ = loss_name(model.loss)
        if units == 1 and n_classes == 2:
            return one_hot[:, 1:]
        if units != n_classes:
            raise ValueError(f"SKLearnClassifier: the model has {units} output units but y has "
                             f"{n_classes} classes; give it {n_classes} units (softmax)"
                             + (" or 1 unit (sigmoid)" if n_classes == 2 else ""))
        return one_hot.argmax(axis=1) if "sparse" in name else one_hot

    def _default_loss(self, model, one_hot):
        if output_units(model, self.n_features_in_) == 1:
            return "binary_crossentropy"
        return "categorical_crossentropy"

    def predict_proba(self, X):
        """Each class's probability, in the order of ``classes_``."""
        out = self._outputs(X).astype(np.float64)
        _, from_logits = loss_name(self.model_.loss)
        if out.ndim == 2 and out.shape[1] == 1:  # one sigmoid unit: P(classes_[1])
            p = 1 / (1 + np.exp(-out[:, 0])) if from_logits else out[:, 0]
            return np.stack([1 - p, p], axis=1)
        if from_logits:
            out = np.exp(out - out.max(axis=1, keepdims=True))
            out /= out.sum(axis=1, keepdims=True)
        return out

    def predict(self, X):
        """The most probable class of each row, as a label of ``classes_``."""
        proba = self.predict_proba(X)  # first: it says when the estimator is not fitted
        return self.classes_[np.argmax(proba, axis=1)]
