"""``keras.optimizers.schedules``: tapeflow's learning-rate schedules
(``tapeflow.optimizers.schedules.__all__``), the same objects."""
from ...optimizers.schedules import *  # noqa: F401,F403 - exactly its __all__
from ...optimizers.schedules import __all__  # noqa: F401
