"""``keras.constraints``: tapeflow's constraints (``tapeflow.constraints.__all__``), the same
objects."""
from ..constraints import *  # noqa: F401,F403 - exactly tapeflow.constraints.__all__
from ..constraints import __all__  # noqa: F401
