"""The model classes, for the code beneath them: ``Model(inputs, outputs)`` makes a functional
model, a saved config names its classes, the weights walker keys a Sequential's or functional
model's layers by position -- without importing the modules that define them, which import
this one's users (``Model.save`` the loaders, ``Functional`` and ``Sequential`` each other).

``model.py``, ``sequential.py`` and ``functional.py`` register their class here as they are
defined; ``tapeflow.models`` imports all three, so by the time anything asks, each is here.
"""
__all__ = ["register", "model_class", "layer_classes"]

_BY_NAME = {}


def register(cls):
    """Class decorator: ``cls`` is a model class found by its name."""
    _BY_NAME[cls.__name__] = cls
    return cls


def model_class(name):
    """The registered model class called ``name`` ("Model", "Sequential", "Functional")."""
    return _BY_NAME[name]


def layer_classes():
    """The classes a saved layer config may name: tapeflow's layers and models."""
    from .. import layers as layers_module  # TFOpLambda too: functions on symbolic tensors
    known = {n: getattr(layers_module, n) for n in dir(layers_module)
             if isinstance(getattr(layers_module, n), type)}
    known.update(_BY_NAME)
    return known
