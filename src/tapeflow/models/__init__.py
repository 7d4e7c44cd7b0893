"""``tapeflow.models`` (also ``tapeflow.keras.models``)."""
from .model import Model  # noqa: F401
from .sequential import Sequential  # noqa: F401
from .functional import Functional  # noqa: F401
