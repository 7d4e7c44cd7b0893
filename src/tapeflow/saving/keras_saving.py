"""Keras's ``model.save(path)`` and ``tf.keras.models.load_model(path)``, in the saved format.

A saved model holds four things: the architecture (``serialize(model)``, the
config every layer already writes), every weight keyed by the model's
structure (``weights_io.weight_keys``, the key function of optimizer slots;
``save_weights`` files use Keras 3's layout instead), the optimizer's config
and state (``get_state()``, keyed the same way) with the compiled loss and
metrics (``compile_config``), and the model's call traced as a graph
(``model(x, training=False)`` for a ``TensorSpec`` of the input shape with a
None batch dimension, custom gradients kept).

A subclassed model's architecture is Keras 3's: its class by ``registered_name`` and its
config (``get_config``, or the constructor's plain arguments); its input shape is that of
its first call.  A model never built is saved as its config alone, and loads unbuilt.

``load_model`` first rebuilds the model from its config (classes and
activations resolved only through tapeflow's registries and ``custom_objects``;
nothing is imported; under the weight budget, so that the config may make only weights
of the shapes the save's arrays have, and none past the cap, each refused as a LoadError
before it is allocated) and assigns the weights and optimizer state: the normal
case, where predictions are those of the saved model.  A compiled loss or metric
that cannot be found by name is Keras's "Could not locate ..." TypeError.  If the config names a
class or a function this process cannot resolve (a custom_gradient activation
defined in code that is not importable here), it returns a
``SavedGraphModel`` instead: the saved weights in new Variables and the saved
graph, which predicts and differentiates (to any order, through the custom
gradients' saved gradient graphs) like the model that was saved.

A ``.keras`` file Keras 3 wrote (a zip archive, read by ``keras_archive``) is loaded as
Keras loads it: the model from its ``config.json`` (``keras3_config`` reads Keras 3's
spellings), compiled from its ``compile_config``, its ``model.weights.h5`` by Keras's layout.
"""
import contextlib
import inspect
import json
import warnings

import numpy as np

from .. import backend
from ..core import nest
from ..core.tensor import Tensor, convert_to_tensor
from ..layers.weight_budget import WeightBudgetError, charge, weight_budget
from ..models.model_classes import layer_classes, model_class
from ..serialization import could_not_locate, custom_object_scope, get_registered_name
from ..serialization import get_registered_object, serialize
from ..tracing.function import TensorSpec, function
from . import format as fmt
from .damaged import reading
from .format import LoadError, SaveError
from .keras3_config import from_keras3
from .keras_archive import WEIGHTS, is_keras_archive, open_keras_archive
from .compile_config import decode_loss, decode_metrics, encode_metrics
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
    """The TensorSpec (or a functional model's structure of them) the call is traced for;
    None for a model never built (saved as its config alone, as Keras saves one)."""
    inputs = getattr(model, "_inputs_struct", None)
    if inputs is not None:
        return nest.map_structure(lambda t: TensorSpec(t.shape, t.dtype), inputs)
    shape = _input_shape(model)
    return None if shape is None else TensorSpec(shape, model.dtype)


def _input_shape(model):
    """(None, ...) from a Sequential's Input or a subclassed model's first call."""
    shape = getattr(model, "_input_shape", None)
    if shape is None:
        shape = getattr(model, "_build_input_shape", None)  # a subclassed model, once called
    if shape is None:
        if not model.built and not model.weights:
            return None
        raise SaveError(f"model.save: the input shape of model '{model.name}' is not known, so "
                        f"its call cannot be traced; give a Sequential an Input (or input_shape=) "
                        f"or build it, or save it with tf.saved_model.save and a tf.function")
    if not (isinstance(shape, tuple) and all(d is None or isinstance(d, int) for d in shape)):
        raise SaveError(f"model.save: model '{model.name}' was built for inputs of shape "
                        f"{shape!r}; a subclassed model is saved for one input tensor only "
                        f"(save a model of several inputs as a functional model)")
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
    keyed = weights_io.weight_keys(model)  # none for a weightless or unbuilt model
    spec = _input_signature(model)
    table = _KeyedTable(arrays, keyed)
    functions = {} if spec is None else {"__call__": [_encoded_call(model, spec, arrays, table)]}
    # a functional model of several inputs writes its first input's shape here (a checkpoint's
    # reader checks one shape); its graph's signature holds them all
    input_shape = None if spec is None else list(nest.flatten(spec)[0].shape)
    try:
        config = _json_or_none(_model_config(model), "model config")
    except NotImplementedError:
        config = None
    if spec is None and config is None:
        raise SaveError(f"model.save: model '{model.name}' is not built and has no config; "
                        f"call it on a batch first, so that its call can be saved as a graph")
    optimizer = getattr(model, "optimizer", None) if include_optimizer else None
    optimizer_doc = None
    if optimizer is not None:
        from .. import optimizers
        optimizer_doc = {"config": _json_or_none(optimizers.serialize(optimizer),
                                                 "optimizer config"),
                         "loss": _json_or_none(_loss_config(getattr(model, "loss", None)),
                                               "loss config"),
                         **{key: _json_or_none(encode_metrics(value), key)
                            for key, value in getattr(model, "_compile_metrics", {}).items()},
                         "state": [[k, {"$array": arrays.add(v)}]
                                   for k, v in optimizer.get_state().items()]
                         if optimizer.built else []}
    return {"kind": "keras_model", "model_config": config,
            "input_shape": input_shape, "variables": table.entries,
            "tracked_variables": len(keyed), "functions": functions,
            "optimizer": optimizer_doc}


def _encoded_call(model, spec, arrays, table):
    """The model's call, traced for ``spec``, as the saved graph (custom gradients kept where
    they can be)."""
    concrete = function(lambda x: model(x, training=False), input_signature=[spec],
                        name="__call__").get_concrete_function()
    try:
        return encode_concrete(concrete, arrays, table, custom_gradients=True,
                               where="model call", signature=[spec])
    except SaveError as e:
        if "custom_gradient" not in str(e):
            raise
        warnings.warn(f"model.save: {e} The graph is saved without custom gradients.",
                      stacklevel=4)
        return encode_concrete(concrete, arrays, table, custom_gradients=False,
                               where="model call", signature=[spec])


def _model_config(model):
    """Keras's serialized model: ``class_name`` (the class's own name), ``registered_name``
    (what ``load_model`` finds it by), ``config``, and ``module`` (information only: a load
    never imports it)."""
    cls = type(model)
    return {**serialize(model), "class_name": cls.__name__,
            "registered_name": get_registered_name(cls), "module": cls.__module__}


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


def _rebuild(config, custom_objects):
    """The model a saved config describes, its class found by name only: among tapeflow's,
    in ``custom_objects`` or registered with ``register_keras_serializable`` (``module`` is
    never imported)."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str) \
            or not isinstance(config.get("config"), dict):
        raise ValueError("no model config was saved")
    name = config.get("registered_name")
    name = name if isinstance(name, str) else config["class_name"]
    cls = get_registered_object(name, custom_objects, layer_classes())
    if cls is None:
        raise could_not_locate(name, config)
    from_config = cls.from_config
    if "custom_objects" in inspect.signature(from_config).parameters:
        return from_config(dict(config["config"]), custom_objects=custom_objects)
    return from_config(dict(config["config"]))


def _build(model, input_shape):
    """Make a rebuilt model's weights: a subclassed model's are made by its call (its build
    makes none), so it is called once on zeros, as Keras builds one from its build config."""
    Model = model_class("Model")
    if isinstance(model, Model) and not isinstance(
            model, (model_class("Sequential"), model_class("Functional"))) \
            and type(model).build is Model.build:
        xp = backend.device_module()
        shape = tuple(1 if d is None else d for d in input_shape)
        charge(f"model '{model.name}'", shape, model.dtype, what="the zeros it is built on")
        model(Tensor(xp.zeros(shape, np.dtype(model.dtype))), training=False)
    else:
        model.build(tuple(input_shape))


def assign_saved_weights(model, variables, n_tracked, input_shape):
    from ..models import weights_io
    if not model.built:
        _build(model, input_shape)
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
    if _compile_is_custom(model):
        return
    try:
        optimizer = optimizers.deserialize(doc["config"])
    except (ValueError, TypeError, KeyError) as e:
        warnings.warn(f"load_model: the optimizer could not be rebuilt ({e}); the model is not "
                      f"compiled", stacklevel=3)
        return
    # the loss and metrics are restored or refused (Keras's "Could not locate ..."), never
    # dropped: evaluate() after a load reports what it reported before the save
    loss, loss_weights = (None, None) if doc.get("loss") is None else decode_loss(doc["loss"])
    model.compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights,
                  metrics=decode_metrics(doc.get("metrics")),
                  weighted_metrics=decode_metrics(doc.get("weighted_metrics")))
    if state:
        for target, value in optimizer._checked_state(state):
            target._replace_value(value)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """The model saved at ``filepath`` (see the module's docstring for how it is rebuilt),
    or written by Keras 3 (a ``.keras`` zip archive: ``_load_keras_archive``)."""
    if is_keras_archive(filepath):
        return _load_keras_archive(filepath, custom_objects, compile)
    with reading(filepath):
        document, arrays = fmt.read(filepath)
        where = str(filepath)
        try:
            with custom_object_scope(dict(custom_objects or {})):  # for every name it holds
                return _load_document(document, arrays, where, custom_objects, compile)
        finally:
            arrays.close()


def _load_document(document, arrays, where, custom_objects, compile):
    variables, n_tracked, functions = read_contents(
        document, arrays, where, "keras_model", "tf.saved_model.load")
    config = document.get("model_config")
    optimizer_doc = document.get("optimizer")
    # the model is rebuilt under a weight budget that knows the stored arrays' shapes: a config
    # that would make a weight the save does not hold (units: 300000000) is refused before that
    # weight is allocated, and the zeros a subclassed model is built on count against the cap
    expected = [(v.shape, v._value.dtype) for v in variables[:n_tracked]]
    if document.get("input_shape") is None:  # a model saved before it was built
        if functions or n_tracked:
            raise LoadError(f"{where}: a save without an input shape holds no graph or weights")
        with _budget_for_stored(expected, where):
            model = _rebuild(config, custom_objects)
    else:
        input_shape = fmt._shape(document.get("input_shape"), where, "the input")
        if set(functions) != {"__call__"}:
            raise LoadError(f"{where}: a Keras save holds exactly the model's call graph")
        try:
            with _budget_for_stored(expected, where):
                model = _rebuild(config, custom_objects)
                assign_saved_weights(model, variables, n_tracked, input_shape)
        except LoadError:  # the save contradicts itself: no fallback to its graph
            raise
        except (ValueError, TypeError, KeyError, LookupError) as e:
            name = (config or {}).get("config", {}).get("name", "model") \
                if isinstance(config, dict) and isinstance(config.get("config"), dict) else "model"
            return SavedGraphModel(str(name), functions["__call__"], variables[:n_tracked],
                                   input_shape, config, f"its config could not be rebuilt: {e}")
    if compile and optimizer_doc is not None:
        _restore_optimizer(model, optimizer_doc, arrays, where)
    return model


def _load_keras_archive(filepath, custom_objects, compile):
    """A model from Keras 3's ``.keras`` archive, as Keras's ``load_model`` builds it: the
    model from ``config.json`` (Keras 3's spellings read by ``keras3_config``; classes by
    name only, under the weight budget of the stored arrays), compiled from its
    ``compile_config`` (with ``compile``), then ``model.weights.h5`` loaded by Keras's layout
    (the optimizer's variables too where they fit, else Keras's warning)."""
    from ..models import weights_io
    with open_keras_archive(filepath) as archive:
        where = archive.where
        weights = archive.weights_path
        expected = [] if weights is None else weights_io.stored_weight_shapes(weights)
        try:
            config = from_keras3(archive.config)
            with custom_object_scope(dict(custom_objects or {})), \
                    _budget_for_stored(expected, where):
                model = _rebuild(config, custom_objects)
                build_shape = (archive.config.get("build_config") or {}).get("input_shape")
                if not model.built and build_shape is not None:
                    _build(model, fmt._shape(build_shape, where, "build_config's input_shape"))
                compile_config = config.get("compile_config")
                if compile and isinstance(compile_config, dict) and compile_config:
                    _compile_from_config(model, compile_config)
        except LoadError:
            raise
        except (ValueError, TypeError, KeyError, LookupError) as e:
            raise LoadError(f"{where}: config.json: cannot build the model it describes: "
                            f"{e}") from None
        if weights is not None:
            try:
                weights_io.load_weights(model, weights)
            except ValueError as e:  # named as the archive's member, not the temporary copy
                raise LoadError(str(e).replace(weights, f"{where}/{WEIGHTS}")) from None
    return model


def _compile_is_custom(model):
    """Whether ``model`` overrides ``compile``, which a load then does not call (Keras's
    ``compile_from_config`` warns so)."""
    if type(model).compile is model_class("Model").compile:
        return False
    warnings.warn("`compile()` was not called as part of model loading because the model's "
                  "`compile()` method is custom. All subclassed Models that have "
                  "`compile()` overridden should also override `get_compile_config()` and "
                  "`compile_from_config(config)`. Alternatively, you can call `compile()` "
                  "manually after loading.", stacklevel=5)
    return True


def _compile_from_config(model, config):
    """Keras's ``compile_from_config``: ``compile(**config)``, each object by name only."""
    from .. import optimizers
    if _compile_is_custom(model):
        return
    loss = config.get("loss")
    model.compile(optimizer=optimizers.deserialize(config.get("optimizer") or "rmsprop"),
                  loss=None if loss is None else decode_loss(loss)[0],
                  loss_weights=config.get("loss_weights"),
                  metrics=decode_metrics(config.get("metrics")),
                  weighted_metrics=decode_metrics(config.get("weighted_metrics")))


@contextlib.contextmanager
def _budget_for_stored(expected, where):
    """Rebuild a model making only weights of the stored arrays' shapes, within the cap
    (``layers.weight_budget.DEFAULT_BYTES``); anything else is the save's fault: a LoadError."""
    try:
        with weight_budget(expected=expected):
            yield
    except WeightBudgetError as e:
        raise LoadError(f"{where}: the model config does not match the saved weights: {e}") \
            from None
