"""``keras.callbacks``: tapeflow's callbacks (``tapeflow.callbacks.__all__``), the same objects."""
from ..callbacks import *  # noqa: F401,F403 - exactly tapeflow.callbacks.__all__
from ..callbacks import __all__  # noqa: F401
