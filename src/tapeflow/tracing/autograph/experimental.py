"""``tf.autograph.experimental``."""
from .conversion import do_not_convert

__all__ = ["do_not_convert"]
