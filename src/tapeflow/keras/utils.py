"""``keras.utils``: labels and sequences as arrays, batches by index, seeding, and the
custom-object registry."""
from ..layers.base import clear_session
from ..models.py_dataset import PyDataset, Sequence
from ..ops.random import set_seed as set_random_seed
from ..preprocessing import pad_sequences, to_categorical
from ..serialization import CustomObjectScope, custom_object_scope
from ..serialization import get_registered_name, get_registered_object
from ..serialization import register_serializable as register_keras_serializable

__all__ = ["to_categorical", "pad_sequences", "set_random_seed", "PyDataset", "Sequence",
           "register_keras_serializable", "get_registered_object", "get_registered_name",
           "clear_session", "custom_object_scope", "CustomObjectScope"]
