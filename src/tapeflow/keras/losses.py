"""``keras.losses``: tapeflow's losses (``tapeflow.losses.__all__``), the same objects."""
from ..losses import *  # noqa: F401,F403 - exactly tapeflow.losses.__all__
from ..losses import __all__  # noqa: F401
