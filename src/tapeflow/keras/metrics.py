"""``keras.metrics``: tapeflow's metrics (``tapeflow.metrics.__all__``), the same objects."""
from ..metrics import *  # noqa: F401,F403 - exactly tapeflow.metrics.__all__
from ..metrics import __all__  # noqa: F401
