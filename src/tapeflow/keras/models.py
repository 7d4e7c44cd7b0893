"""``keras.models``: the model classes and Keras's whole-model save and load."""
from ..models import Model, Sequential
from ..saving.keras_saving import load_model, save_model

__all__ = ["Model", "Sequential", "load_model", "save_model"]
