"""``tf.keras.models.clone_model``: a model of the same architecture with new layers (new,
freshly initialized weights), as Keras 3's ``models/cloning.py``.

A functional model's graph is replayed from its config, each layer replaced by
``clone_function(layer)`` (by default a new layer from the layer's config) and each
``Input`` by a new one, or by ``input_tensors``; a Sequential gets its cloned layers in
order; a subclassed model is made again from its config (``clone_function`` and
``input_tensors`` apply to layer graphs only, as in Keras).  ``call_function(layer, *args,
**kwargs)`` calls each layer of a functional model's graph (to add layers around a call), and
``recursive=True`` clones the Sequential and functional models inside as models, with the
same arguments.  A layer shared by several calls, or by several inner models, is cloned once.
"""
from ..core import nest
from ..layers.base import Layer
from ..layers.core import Input, InputLayer
from ..layers.symbolic import KerasTensor
from .functional import Functional, _call_layer, replay_config
from .model import Model
from .sequential import Sequential

__all__ = ["clone_model"]


def _clone_layer(layer):
    return layer.__class__.from_config(layer.get_config())


def _cached_clones(clone_function, call_function, recursive, cache):
    """``clone_function`` that clones each layer once (a shared layer stays shared) and, when
    ``recursive``, clones inner Sequential and functional models with ``clone_model``."""
    clone_function = clone_function or _clone_layer
    cache = {} if cache is None else cache

    def clone(layer):
        if id(layer) not in cache:
            if recursive and isinstance(layer, (Sequential, Functional)):
                cache[id(layer)] = clone_model(
                    layer, clone_function=clone_function, recursive=True, cache=cache,
                    call_function=None if isinstance(layer, Sequential) else call_function)
            else:
                cache[id(layer)] = _checked_clone(clone_function, layer)
        return cache[id(layer)]
    return clone


def _checked_clone(clone_function, layer):
    clone = clone_function(layer)
    if not isinstance(clone, Layer):
        raise ValueError(f"clone_model: clone_function must return a Layer; for layer "
                         f"'{layer.name}' it returned {clone!r}")
    return clone


def clone_model(model, input_tensors=None, clone_function=None, call_function=None,
                recursive=False, **kwargs):
    """A new model like ``model``: same architecture, new layers and weights."""
    cache = kwargs.pop("cache", None)  # the clones made so far, shared with inner models
    if kwargs:
        raise ValueError(f"Unexpected keyword argument(s): {tuple(kwargs.keys())}")
    if not isinstance(model, Model):
        raise ValueError(f"clone_model: expected a tf.keras.Model, got {type(model).__name__}")
    for name, fn in (("clone_function", clone_function), ("call_function", call_function)):
        if fn is not None and not callable(fn):
            raise ValueError(f"Expected `{name}` argument to be a callable. Received: "
                             f"{name}={fn!r}")
    if isinstance(model, Sequential):
        if call_function is not None:
            raise ValueError(f"`call_function` argument is not supported with Sequential "
                             f"models.  In a Sequential model, layers aren't called at "
                             f"model-construction time (they're merely listed). Use "
                             f"`call_function` with Functional models only. Received model of "
                             f"type '{type(model).__name__}', with call_function={call_function}")
        clone = _cached_clones(clone_function, None, recursive, cache)
        return _clone_sequential(model, input_tensors, clone)
    if isinstance(model, Functional) and type(model).get_config is Functional.get_config:
        clone = _cached_clones(clone_function, call_function, recursive, cache)
        return _clone_functional(model, input_tensors, clone, call_function or _call_layer)
    if call_function is not None:
        raise ValueError(f"Argument `call_function` is only supported for Functional models. "
                         f"Received model of type '{type(model).__name__}', with "
                         f"call_function={call_function}")
    if clone_function is not None or input_tensors is not None:
        raise ValueError(f"Arguments `clone_function` and `input_tensors` are only supported "
                         f"for Sequential models or Functional models. Received model of type "
                         f"'{type(model).__name__}', with clone_function={clone_function} and "
                         f"input_tensors={input_tensors}")
    return type(model).from_config(model.get_config())


def _clone_sequential(model, input_tensors, clone_function):
    clone = Sequential(name=model.name, trainable=model.trainable, dtype=model.dtype)
    if input_tensors is not None:
        if isinstance(input_tensors, (list, tuple)):
            if len(input_tensors) != 1:
                raise ValueError("Argument `input_tensors` must contain a single tensor.")
            input_tensors = input_tensors[0]
        if not isinstance(input_tensors, KerasTensor):
            raise ValueError(f"Argument `input_tensors` must be a KerasTensor. Received invalid "
                             f"value: {input_tensors!r}")
        clone.add(input_tensors)
    elif model._input_shape is not None:  # an Input, a first layer's input_shape, a first call
        clone.add(Input(batch_shape=(model._input_batch_size,) + tuple(model._input_shape[1:]),
                        dtype=model.dtype))
    for layer in model.layers:
        clone.add(clone_function(layer))
    return clone


def _clone_functional(model, input_tensors, clone_function, call_function):
    """The model's graph replayed with each layer's clone (shared layers cloned once)."""
    originals = {layer.name: layer for layer in model.layers}
    new_inputs = _new_inputs(model, input_tensors)

    def make_layer(entry):
        layer = originals[entry.get("name")]
        if isinstance(layer, InputLayer):
            return new_inputs[layer.name]
        return clone_function(layer)
    inputs, outputs = replay_config(model.get_config(), make_layer, call_function)
    return Functional(inputs, outputs, name=model.name, trainable=model.trainable)


def _new_inputs(model, input_tensors):
    """{the model's InputLayer names: the InputLayer of each new input tensor}."""
    if input_tensors is None:
        input_tensors = nest.map_structure(
            lambda t: Input(batch_shape=t.shape, dtype=t.dtype, name=t._keras_history[0].name),
            model._inputs_struct)
    if nest.structure_key(input_tensors) != nest.structure_key(model._inputs_struct):
        raise ValueError(f"`input_tensors` must have the same structure as model.input\n"
                         f"Reference structure: {model._inputs_struct}\n"
                         f"Received structure: {input_tensors}")
    given = nest.flatten(input_tensors)
    for t in given:
        if not (isinstance(t, KerasTensor) and isinstance(t._keras_history[0], InputLayer)):
            raise ValueError(f"clone_model: input_tensors must be tf.keras.Input tensors, got "
                             f"{t!r}")
    return {t._keras_history[0].name: g._keras_history[0]
            for t, g in zip(model.inputs, given)}
