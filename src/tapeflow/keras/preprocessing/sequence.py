"""``keras.preprocessing.sequence``: ``pad_sequences``."""
from ...array_utils import pad_sequences

__all__ = ["pad_sequences"]
