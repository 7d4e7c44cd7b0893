"""``keras.layers``: tapeflow's layers under Keras's module path.

``tapeflow.layers`` writes the names out once, in its ``__all__``; this module is
that list, the same objects (``tf.keras.layers.Dense is tapeflow.layers.Dense``).
"""
from ..layers import *  # noqa: F401,F403 - exactly tapeflow.layers.__all__
from ..layers import __all__  # noqa: F401
