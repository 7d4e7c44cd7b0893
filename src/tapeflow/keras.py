"""``tapeflow.keras``: the Keras names, so code written for ``tf.keras`` runs unchanged."""
from . import activations, callbacks, initializers, layers, losses, metrics  # noqa: F401
from . import optimizers, regularizers  # noqa: F401
from .layers import Input  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .serialization import register_serializable  # noqa: F401


class models:  # noqa: N801 - a namespace, as keras.models
    from .models import Model, Sequential  # noqa: F401
    from .saving.keras_saving import load_model, save_model  # noqa: F401


class saving:  # noqa: N801 - a namespace, as keras.saving
    from .serialization import get_registered_object, register_serializable  # noqa: F401
    register_keras_serializable = register_serializable
    from .saving.keras_saving import load_model, save_model  # noqa: F401


class backend:  # noqa: N801 - a namespace, as keras.backend
    from .layers.base import clear_session  # noqa: F401

    @staticmethod
    def epsilon():
        from .backend import EPSILON
        return EPSILON


class utils:  # noqa: N801 - a namespace, as keras.utils
    register_keras_serializable = register_serializable
    from .models.py_dataset import PyDataset, Sequence  # noqa: F401
    from .preprocessing import pad_sequences  # noqa: F401

    @staticmethod
    def to_categorical(x, num_classes=None):
        """Integer class labels as one-hot rows of float32, as ``keras.utils.to_categorical``
        (a trailing axis of size 1 is dropped first)."""
        import numpy as np
        labels = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
        if labels.dtype.kind not in "biu" and not (
                labels.dtype.kind == "f" and np.array_equal(labels, np.round(labels))):
            raise ValueError(f"to_categorical: labels must be integers, got dtype {labels.dtype}")
        labels = labels.astype(np.int64)
        if labels.ndim > 1 and labels.shape[-1] == 1:
            labels = labels[..., 0]
        if labels.size and labels.min() < 0:
            raise ValueError("to_categorical: labels must be >= 0")
        n = int(labels.max()) + 1 if num_classes is None else int(num_classes)
        if labels.size and labels.max() >= n:
            raise ValueError(f"to_categorical: label {int(labels.max())} is not below "
                             f"num_classes={n}")
        return np.eye(n, dtype=np.float32)[labels]

    @staticmethod
    def set_random_seed(seed):
        """Seed tapeflow's random draws (initializers, dropout, shuffling), as Keras's."""
        from .ops.random import set_seed
        set_seed(seed)


def __getattr__(name):
    """``wrappers`` (keras.wrappers: the scikit-learn estimators) is imported on first use, so
    that ``import tapeflow`` does not import scikit-learn."""
    if name == "wrappers":
        from . import wrappers
        return wrappers
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class preprocessing:  # noqa: N801 - a namespace, as Keras 2's keras.preprocessing
    class sequence:  # noqa: N801
        from .preprocessing import pad_sequences  # noqa: F401
