"""``tapeflow.layers`` (also ``tapeflow.keras.layers``)."""
from .base import Layer, name_scope  # noqa: F401
from .core import Activation, Dense, Dropout, Flatten, Input, InputLayer  # noqa: F401
from .normalization import BatchNormalization, LayerNormalization  # noqa: F401
from .preprocessing import Normalization  # noqa: F401
from .reshaping import Permute, RepeatVector, Reshape  # noqa: F401
