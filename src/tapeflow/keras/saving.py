"""``keras.saving``: whole-model save and load, and the registry of custom objects that
configs name (``register_keras_serializable`` is ``tapeflow.serialization``'s
``register_serializable``)."""
from ..saving.keras_saving import load_model, save_model
from ..serialization import CustomObjectScope, custom_object_scope
from ..serialization import get_registered_name, get_registered_object, register_serializable
from ..serialization import register_serializable as register_keras_serializable

__all__ = ["load_model", "save_model", "register_keras_serializable", "register_serializable",
           "get_registered_object", "get_registered_name", "custom_object_scope",
           "CustomObjectScope"]
