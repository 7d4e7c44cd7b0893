"""``keras.utils``: labels and sequences as arrays, batches by index, seeding, the
custom-object registry, and datasets made from arrays and folders."""
from ..data.directory import image_dataset_from_directory, text_dataset_from_directory
from ..data.timeseries import timeseries_dataset_from_array
from ..layers.base import clear_session
from ..models.py_dataset import PyDataset, Sequence
from ..ops.random import set_seed as set_random_seed
from ..array_utils import pad_sequences, to_categorical
from ..serialization import CustomObjectScope, custom_object_scope
from ..serialization import get_registered_name, get_registered_object
from ..serialization import register_serializable as register_keras_serializable

__all__ = ["to_categorical", "pad_sequences", "set_random_seed", "PyDataset", "Sequence",
           "register_keras_serializable", "get_registered_object", "get_registered_name",
           "clear_session", "timeseries_dataset_from_array", "text_dataset_from_directory",
           "image_dataset_from_directory", "custom_object_scope", "CustomObjectScope"]
