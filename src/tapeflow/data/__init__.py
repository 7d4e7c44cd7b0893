"""``tapeflow.data`` (``tf.data``): input pipelines."""
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset  # noqa: F401

