"""``keras.preprocessing.sequence``: ``pad_sequences``."""
from ...preprocessing import pad_sequences

__all__ = ["pad_sequences"]
