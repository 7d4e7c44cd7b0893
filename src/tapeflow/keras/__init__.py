"""``tapeflow.keras``: Keras 3's public modules, so code written for ``keras`` or ``tf.keras``
runs unchanged, ``from tapeflow.keras.layers import Dense`` included.

Each submodule is a real module that names tapeflow's objects (the same objects:
``tf.keras.layers.Dense is tapeflow.layers.Dense``); the code lives in tapeflow's own
packages.
"""
import importlib

from . import activations, backend, callbacks, constraints, initializers, layers, losses
from . import metrics, models, ops, optimizers, preprocessing, regularizers, saving, utils
from . import mixed_precision
from ..initializers import Initializer
from ..layers import Input, Layer
from ..losses import Loss
from ..metrics import Metric
from ..models import Model, Sequential
from ..optimizers import Optimizer
from ..regularizers import Regularizer
from ..serialization import register_serializable

# ``wrappers`` is left out, so that ``from tapeflow.keras import *`` needs no scikit-learn.
__all__ = [
    "activations", "backend", "callbacks", "constraints", "initializers", "layers", "losses",
    "metrics", "mixed_precision", "models", "ops", "optimizers", "preprocessing", "regularizers", "saving", "utils",
    "Input", "Initializer", "Layer", "Loss", "Metric", "Model", "Optimizer", "Regularizer",
    "Sequential", "register_serializable",
]


def __getattr__(name):
    """``wrappers`` (the scikit-learn estimators) is imported on first use, so that
    ``import tapeflow`` does not import scikit-learn.  (``from . import wrappers`` here would
    ask this very function whether the attribute exists, forever.)"""
    if name == "wrappers":
        return importlib.import_module(".wrappers", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
