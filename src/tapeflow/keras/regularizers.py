"""``keras.regularizers``: tapeflow's regularizers (``tapeflow.regularizers.__all__``), the
same objects."""
from ..regularizers import *  # noqa: F401,F403 - exactly tapeflow.regularizers.__all__
from ..regularizers import __all__  # noqa: F401
