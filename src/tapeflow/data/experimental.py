"""``tf.data.experimental``: the constants TensorFlow 2 still keeps there (``AUTOTUNE``, the
cardinality sentinels), the same values as ``tf.data``'s."""
from .dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]
