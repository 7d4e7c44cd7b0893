"""``keras.models``: the model classes, Keras's whole-model save and load, and clone_model."""
from ..models import Model, Sequential
from ..models.cloning import clone_model
from ..saving.keras_saving import load_model, save_model

__all__ = ["Model", "Sequential", "clone_model", "load_model", "save_model"]
