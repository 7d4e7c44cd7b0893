"""Keras's ``model.save(path)`` and ``tf.keras.models.load_model(path)``, in the saved format.

A saved model holds four things: the architecture (``serialize(model)``, the
config every layer already writes), every weight keyed by the model's
structure (``weights_io.weight_keys``, the key function of optimizer slots;
``save_weights`` files use Keras 3's layout instead), the optimizer's config and state (``get_state()``, keyed the
same way), and the model's call traced as a graph (``model(x, training=False)``
for a ``TensorSpec`` of the input shape with a None batch dimension, custom
gradients kept).

``load_model`` first rebuilds the model from its config (classes and
activations resolved only through tapeflow's registries and ``custom_objects``;
nothing is imported) and assigns the weights and optimizer state: the normal
case, where predictions are those of the saved model.  If the config names a
class or a function this process cannot resolve (a custom_gradient activation
defined in code that is not importable here), it returns a
``SavedGraphModel`` instead: the saved weights in new Variables and the saved
graph, which predicts and differentiates (to any order, through the custom
gradients' saved gradient graphs) like the model that was saved.
"""
import inspect
import json
import warnings

import numpy as np

from .. import backend
from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..serialization import get_registered_object, serialize
from ..tracing.function import TensorSpec, function
from . import format as fmt
from .format import LoadError, SaveError
from .saved_model import encode_concrete, read_contents

__all__ = ["save_model", "model_document", "load_model", "assign_saved_weights", "SavedGraphModel"]


class _KeyedTable:
    """The variable table of a Keras save: the model's weights under their structure keys."""

    def __init__(self, arrays, keyed):
        self._index = {}
        self.entries = []
        self._arrays = arrays
        for key, v in keyed:
            self.add(v, key)

    def add(self, variable, key=None):
        value = np.asarray(backend.to_host(variable._value))
        self._index[id(variable)] = len(self.entries)
        self.entries.append({"name": key or variable.path, "trainable": bool(variable.trainable),
                             "shape": list(value.shape), "dtype": value.dtype.name,
                             "value": {"$array": self._arrays.add(value)}})

    def __call__(self, variable):
        if id(variable) not in self._index:
            self.add(variable)
        return self._index[id(variable)]


def _input_signature(model):
    """The TensorSpec (or a functional model's structure of them) the call is traced for."""
    inputs = getattr(model, "_inputs_struct", None)
    if inputs is not None:
        return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), inputs)
    return TensorSpec(_input_shape(model), model.dtype)


def _input_shape(model):
    shape = getattr(model, "_input_shape", None)
    if shape is None:
        raise SaveError(f"model.save: the input shape of model '{model.name}' is not known, so "
                        f"its call cannot be traced; give a Sequential an Input (or input_shape=) "
                        f"or build it, or save it with tf.saved_model.save and a tf.function")
    return (None,) + tuple(shape[1:])


def _json_or_none(value, what):
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError) as e:
        warnings.warn(f"model.save: the {what} cannot be written as JSON ({e}); a load will use "
                      f"the saved graph instead", stacklevel=4)
        return None


def save_model(model, filepath, overwrite=True, include_optimizer=True, **kwargs):
    """Write ``model`` (architecture, weights, optimizer state, traced call) to ``filepath``.

    ``filepath`` is a directory, or one HDF5 file if it ends in ``.keras`` / ``.h5``.
    """
    import os
    if not overwrite and os.path.exists(os.fspath(filepath)):
        raise FileExistsError(f"model.save: {filepath} exists and overwrite=False")
    arrays = fmt.ArrayWriter()
    document = model_document(model, arrays, include_optimizer=include_optimizer)
    fmt.write(filepath, document, arrays)


def model_document(model, arrays, include_optimizer=True):
    """The document of a Keras save of ``model``, its arrays added to ``arrays`` (a trainer's
    checkpoint is this document with its training state added)."""
    from ..models import weights_io
    keyed = weights_io.weight_keys(model)
    if not keyed:
        raise SaveError(f"model.save: model '{model.name}' has no weights yet; build it first "
                        f"(call it on a batch, or start a Sequential with Input(shape=...))")
    spec = _input_signature(model)
    # a functional model of several inputs writes its first input's shape here (a checkpoint's
    # reader checks one shape); its graph's signature holds them all
    input_shape = tuple(nest.flatten(spec)[0].shape)
    concrete = function(lambda x: model(x, training=False), input_signature=[spec],
                        name="__call__").get_concrete_function()
    table = _KeyedTable(arrays, keyed)
    try:
        call = encode_concrete(concrete, arrays, table, custom_gradients=True,
                               where="model call", signature=[spec])
    except SaveError as e:
        if "custom_gradient" not in str(e):
            raise
        warnings.warn(f"model.save: {e} The graph is saved without custom gradients.",
                      stacklevel=3)
        call = encode_concrete(concrete, arrays, table, custom_gradients=False,
                               where="model call", signature=[spec])
    try:
        config = _json_or_none(serialize(model), "model config")
    except NotImplementedError:
        config = None
    optimizer = getattr(model, "optimizer", None) if include_optimizer else None
    optimizer_doc = None
    if optimizer is not None:
        from .. import optimizers
        optimizer_doc = {"config": _json_or_none(optimizers.serialize(optimizer),
                                                 "optimizer config"),
                         "loss": _json_or_none(_loss_config(getattr(model, "loss", None)),
                                               "loss config"),
                         "state": [[k, {"$array": arrays.add(v)}]
                                   for k, v in optimizer.get_state().items()]
                         if optimizer.built else []}
    return {"kind": "keras_model", "model_config": config,
            "input_shape": list(input_shape), "variables": table.entries,
            "tracked_variables": len(keyed), "functions": {"__call__": [call]},
            "optimizer": optimizer_doc}


def _loss_config(loss):
    """The compiled loss by its registered name (a wrapped function) or its config."""
    from .. import losses
    from ..models.multi_output import OutputLosses
    if loss is None:
        return None
    if isinstance(loss, OutputLosses):  # a loss per output of a functional model
        return loss.config(_loss_config)
    if type(loss) is losses.LossFunctionWrapper and not loss._fn_kwargs:
        return losses.REGISTRY.name_of(loss.fn)
    return losses.serialize(loss)


# --- loading -----------------------------------------------------------------------------------
class SavedGraphModel:
    """A saved Keras model whose code is not available here: its saved call graph.

    ``model(x)`` and ``predict(x)`` replay the graph; under a GradientTape the
    call is recorded op by op, so gradients with respect to the inputs and to
    ``trainable_variables``, and higher derivatives, are those of the saved model.
    """

    def __init__(self, name, call, variables, input_shape, config, reason):
        self.name = name
        self._call = call
        self.variables = self.weights = list(variables)
        self.trainable_variables = self.trainable_weights = [v for v in variables if v.trainable]
        self.non_trainable_variables = [v for v in variables if not v.trainable]
        self.input_shape = tuple(input_shape)
        self.built = True
        self._config = config
        self.load_reason = reason

    def __call__(self, inputs, training=None):
        if training:
            raise NotImplementedError(f"{self.name} was loaded from its saved graph (its code is "
                                      f"not available: {self.load_reason}); it runs only in "
                                      f"inference mode")
        signature = self._call.concrete_functions[0].input_signature
        if signature is not None and not isinstance(signature[0], TensorSpec):
            return self._call(inputs)  # a functional model's structure of inputs
        spec = self._call.concrete_functions[0].input_specs[0]
        if not isinstance(inputs, Tensor):
            inputs = convert_to_tensor(inputs, dtype=spec.dtype)  # device data stays there
        if spec.shape and spec.shape[0] == 1 and inputs.shape[0] != 1:
            # the graph was traced for one row (the model read the batch size): row by row
            from ..ops.shape import concat
            return concat([self._call(inputs[i:i + 1]) for i in range(inputs.shape[0])], 0)
        return self._call(inputs)

    def predict(self, x, batch_size=None, verbose="auto", callbacks=None):
        if isinstance(x, dict) or (isinstance(x, (list, tuple)) and x and
                                   hasattr(x[0], "shape")):  # a functional model's inputs
            return nest.map_structure(lambda t: t.numpy(), self(x))
        if not (isinstance(x, Tensor) or backend.is_array(x)):
            x = np.asarray(x)  # a tensor or device array is sliced where it is
        n = x.shape[0]
        step = n if not batch_size else int(batch_size)
        parts = [self(x[i:i + step]).numpy() for i in range(0, n, max(step, 1))]
        return np.concatenate(parts) if parts else np.zeros((0,))

    def get_config(self):
        return self._config

    def __repr__(self):
        return f"<SavedGraphModel {self.name} (saved graph; {self.load_reason})>"


def _known_classes():
    from ..models.functional import layer_classes
    return layer_classes()


def _rebuild(config, custom_objects):
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str) \
            or not isinstance(config.get("config"), dict):
        raise ValueError("no model config was saved")
    cls = get_registered_object(config["class_name"], custom_objects, _known_classes())
    if cls is None:
        raise ValueError(f"unknown model class '{config['class_name']}'")
    from_config = cls.from_config
    if "custom_objects" in inspect.signature(from_config).parameters:
        return from_config(dict(config["config"]), custom_objects=custom_objects)
    return from_config(dict(config["config"]))


def assign_saved_weights(model, variables, n_tracked, input_shape):
    from ..models import weights_io
    if not model.built:
        model.build(tuple(input_shape))
    keyed = weights_io.weight_keys(model)
    saved = {v.path: v for v in variables[:n_tracked]}
    names = [k for k, _ in keyed]
    if sorted(names) != sorted(saved):
        raise ValueError(f"the rebuilt model's weights {names} are not the saved {sorted(saved)}")
    for key, v in keyed:
        if tuple(v.shape) != tuple(saved[key].shape) or v.dtype != saved[key].dtype:
            raise ValueError(f"weight {key} is {tuple(v.shape)} in the rebuilt model but "
                             f"{tuple(saved[key].shape)} in the save")
    for key, v in keyed:
        v.assign(saved[key])


def _restore_optimizer(model, doc, arrays, where):
    from .. import optimizers
    if not isinstance(doc, dict) or not isinstance(doc.get("state"), list):
        raise LoadError(f"{where}: the optimizer entry is not {{config, loss, state}}")
    state = {}
    for pair in doc["state"]:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict)
                and set(pair[1]) == {"$array"}):
            raise LoadError(f"{where}: an optimizer state entry is not [name, array]")
        key = fmt.check_name(pair[0], f"{where}: optimizer state")
        state[key] = arrays.get(pair[1]["$array"], f"optimizer state '{key}'")
    if doc.get("config") is None:
        return
    try:
        optimizer = optimizers.deserialize(doc["config"])
    except (ValueError, TypeError, KeyError) as e:
        warnings.warn(f"load_model: the optimizer could not be rebuilt ({e}); the model is not "
                      f"compiled", stacklevel=3)
        return
    loss, loss_weights = None, None
    if doc.get("loss") is not None:
        from .. import losses
        try:
            if isinstance(doc["loss"], dict) and "output_losses" in doc["loss"]:
                loss = {name: None if c is None else losses.get(c)
                        for name, c in dict(doc["loss"]["output_losses"]).items()}
                loss_weights = dict(doc["loss"].get("loss_weights") or {})
            else:
                loss = losses.get(doc["loss"])
        except (ValueError, TypeError, KeyError) as e:
            warnings.warn(f"load_model: the loss could not be rebuilt ({e}); the model is "
                          f"compiled without one", stacklevel=3)
            loss, loss_weights = None, None
    model.compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights)
    if state:
        for target, value in optimizer._checked_state(state):
            target._replace_value(value)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model saved at ``filepath`` (see the module's docstring for how it is rebuilt)."""
    document, arrays = fmt.read(filepath)
    where = str(filepath)
    try:
        variables, n_tracked, functions = read_contents(
            document, arrays, where, "keras_model", "tf.saved_model.load", min_tracked=1)
        input_shape = fmt._shape(document.get("input_shape"), where, "the input")
        if set(functions) != {"__call__"}:
            raise LoadError(f"{where}: a Keras save holds exactly the model's call graph")
        config = document.get("model_config")
        optimizer_doc = document.get("optimizer")
        try:
            model = _rebuild(config, custom_objects)
            assign_saved_weights(model, variables, n_tracked, input_shape)
        except (ValueError, TypeError, KeyError, LookupError) as e:
            name = (config or {}).get("config", {}).get("name", "model") \
                if isinstance(config, dict) and isinstance(config.get("config"), dict) else "model"
            return SavedGraphModel(str(name), functions["__call__"], variables[:n_tracked],
                                   input_shape, config, f"its config could not be rebuilt: {e}")
        if compile and optimizer_doc is not None:
            _restore_optimizer(model, optimizer_doc, arrays, where)
        return model
    finally:
        arrays.close()
