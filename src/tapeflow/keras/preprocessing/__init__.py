"""``keras.preprocessing``: Keras's array preprocessing (``sequence``); the preprocessing
layers are in ``keras.layers``."""
from . import sequence

__all__ = ["sequence"]
