"""``tapeflow.data`` (``tf.data``): input pipelines."""
from . import experimental  # noqa: F401
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset  # noqa: F401
from .elements import DatasetSpec  # noqa: F401
