"""``keras.preprocessing``: Keras's array preprocessing (``sequence``) and, as tf.keras 2
keeps them here too, the dataset makers of ``keras.utils``; the preprocessing layers are in
``keras.layers``."""
from ...data.directory import image_dataset_from_directory, text_dataset_from_directory
from ...data.timeseries import timeseries_dataset_from_array
from . import sequence

__all__ = ["sequence", "timeseries_dataset_from_array", "text_dataset_from_directory",
           "image_dataset_from_directory"]
