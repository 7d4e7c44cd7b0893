"""The model a run config describes: layers, loss, metrics, optimizer, penalty.

Layers are named by class among tapeflow's own layers (nothing is imported by
name from a config), and their arguments are checked against the class's
signature before anything is built, so ``unitz: 64`` is an error naming
``model.layers.0.Dense.unitz``.  A ``builder`` runs user code, so it runs only
when the caller allowed it (``--allow-builder``).  The model always starts with
an ``Input`` of the data's feature count and, unless ``normalize: false``, a
``Normalization`` layer adapted on the training split: a saved model takes raw
features.  Image data come as flat pixel columns; a ``Reshape`` layer gives the
convolutions their (height, width, channels).

The loss is checked against the targets before training: a loss that takes class ids
(``sparse_categorical_crossentropy``) needs targets that are class ids and a model with one
output per class; class labels (``data.source: digits``) refuse tapeflow's regression and
one-hot losses.
"""
import difflib
import importlib
import importlib.util
import inspect
import os

import numpy as np

from .. import layers as layers_module
from .. import losses, optimizers
from ..layers.weight_budget import weight_budget
from ..models import Sequential
from ..optimizers import schedules
from .errors import ConfigError
from .layer_specs import make_layer
from .model_graph import build_functional
from .multi_output import compile_specs, output_view

__all__ = ["build_model", "loss_from_config", "metrics_from_config", "LAYERS"]

# The layers a config can name (the classes of tapeflow.layers that make sense in a stack).
LAYERS = {cls.__name__: cls for cls in (
    layers_module.Dense, layers_module.Dropout, layers_module.BatchNormalization,
    layers_module.LayerNormalization, layers_module.Activation, layers_module.Flatten,
    layers_module.Rescaling, layers_module.Reshape, layers_module.Permute,
    layers_module.RepeatVector,
    layers_module.Conv1D, layers_module.Conv2D, layers_module.MaxPooling1D,
    layers_module.MaxPooling2D, layers_module.AveragePooling1D, layers_module.AveragePooling2D,
    layers_module.GlobalAveragePooling1D, layers_module.GlobalAveragePooling2D,
    layers_module.GlobalMaxPooling1D, layers_module.GlobalMaxPooling2D,
    layers_module.Embedding, layers_module.Masking, layers_module.SimpleRNN, layers_module.LSTM,
    layers_module.GRU)}
SCHEDULES = {name: getattr(schedules, name) for name in
             ("ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay")}


def build_model(config, dataset, where, base_dir=".", allow_builder=False):
    """The compiled model for ``config`` (a RunConfig) on ``dataset`` (its training split
    adapts the Normalization layer); ``where`` names the config in messages.  A ``graph`` or
    ``keras_config`` is built by model_graph; ``layers`` and a ``builder`` make a Sequential."""
    if config.model.graph is not None or config.model.keras_config is not None:
        model, outputs = build_functional(config.model, dataset, where, base_dir)
        if isinstance(outputs, dict):  # named inputs and outputs: compile takes them by name
            model.compile(optimizer=_optimizer(config.optimizer, where),
                          **named_compile_arguments(config, dataset, outputs, where),
                          input_gradient=config.regularization.input_gradient or None)
            return model
    elif isinstance(dataset.x_train, dict):
        raise ConfigError(f"{where}: model: data.inputs feeds the named inputs of a functional "
                          f"model (model.graph or model.keras_config); a list of layers or a "
                          f"builder takes one input array (data without inputs/targets)")
    else:
        model, outputs = _sequential(config, dataset, where, base_dir, allow_builder)
    loss = loss_from_config(config.loss, where)
    _check_outputs(outputs, dataset, _takes_class_ids(loss, dataset, where), where)
    model.compile(optimizer=_optimizer(config.optimizer, where),
                  loss=loss,
                  metrics=_metrics(config.metrics, where),
                  input_gradient=config.regularization.input_gradient or None)
    return model


def named_compile_arguments(config, dataset, output_shapes, where):
    """``compile``'s per-output loss, loss_weights and metrics, each output's loss checked
    against its targets as one output's is (``output_shapes``: {name: shape for a batch of 1};
    None skips the checks)."""
    specs = compile_specs(config, list(dataset.target_names), where)
    losses_by_output = {}
    for name, spec in specs["loss"].items():
        loss = losses_by_output[name] = loss_from_config(spec, where, f"loss.{name}")
        metrics_from_config(specs["metrics"][name], where, key=f"metrics.{name}")
        if output_shapes is not None:
            view = output_view(dataset, name)
            try:
                _check_outputs(output_shapes[name], view, _takes_class_ids(loss, view, where),
                               where)
            except ConfigError as e:
                raise ConfigError(str(e).replace(f"{where}: model:", f"{where}: model output "
                                                 f"'{name}':", 1)) from None
    return dict(specs, loss=losses_by_output)


def _sequential(config, dataset, where, base_dir, allow_builder):
    """The Sequential of ``layers`` or a builder, after an Input of one example's shape (the
    feature columns, or an image's (height, width, channels)), and its output's shape."""
    example = dataset.x_train.shape[1:]
    body = _layers(config.model, where, base_dir, allow_builder)
    ids = dataset.x_train.dtype.kind in "iu"  # token ids stay integers; features, the default
    head = [layers_module.Input(shape=example, dtype=dataset.x_train.dtype.name if ids else None)]
    if config.model.normalize and ids:
        raise ConfigError(f"{where}: model.normalize: the data are token ids, which a "
                          f"Normalization would turn into meaningless numbers; set "
                          f"model.normalize: false (an Embedding takes the ids)")
    if config.model.normalize:
        norm = layers_module.Normalization()
        norm.adapt(dataset.x_train)
        head.append(norm)
    try:
        with weight_budget():
            model = Sequential(head + body, name="model")
            return model, model(dataset.x_train[:1], training=False).shape
    except ValueError as e:  # a layer's own message: a Reshape that does not fit the features
        what = f"{example[0]} feature columns" if len(example) == 1 else f"examples of shape " \
            f"{example}"
        raise ConfigError(f"{where}: model: on the data's {what}: {e}") from None


def _check_outputs(outputs, dataset, class_ids, where):
    """The model's ``outputs`` shape (for a batch of 1) gives one output per target (per class,
    for a loss on class ids): a loss would otherwise broadcast (n, k) against (n, 1) and train
    on nonsense without a word."""
    if class_ids:
        classes = dataset.n_classes or int(max(dataset.y_train.max(), dataset.y_test.max())) + 1
        if len(outputs) != 2 or outputs[1] != classes:
            raise ConfigError(f"{where}: model: its output has shape {tuple(outputs)} per batch "
                              f"of 1, but the loss takes class ids and the data have {classes} "
                              f"classes; end the model with Dense: {{units: {classes}}}")
        return
    targets = dataset.y_train.shape[1]
    if len(outputs) != 2 or outputs[1] != targets:
        raise ConfigError(f"{where}: model: its output has shape {tuple(outputs)} per batch of "
                          f"1, but the data have {targets} target column(s) "
                          f"({', '.join(dataset.target_names)}); end the model with "
                          f"Dense: {{units: {targets}}}")


def _takes_class_ids(loss, dataset, where):
    """Whether ``loss`` takes class ids (sparse categorical cross-entropy), checked against the
    targets: class ids need such a loss (of tapeflow's own; a user's loss is trusted), and such
    a loss needs class ids."""
    fn = getattr(loss, "fn", loss)
    sparse = fn is losses.sparse_categorical_crossentropy
    name = getattr(fn, "__name__", type(loss).__name__)
    if dataset.n_classes is not None and not sparse and \
            getattr(fn, "__module__", None) == losses.__name__:
        raise ConfigError(f"{where}: loss: '{name}' does not take class ids, and the targets "
                          f"({', '.join(dataset.target_names)}) are class labels 0.."
                          f"{dataset.n_classes - 1}; use loss: sparse_categorical_crossentropy "
                          f"(a softmax output), or {{name: SparseCategoricalCrossentropy, "
                          f"from_logits: true}} (a linear output)")
    if sparse:
        y = np.concatenate([dataset.y_train, dataset.y_test])
        if y.shape[1] != 1 or np.any(y < 0) or np.any(y != np.round(y)):
            raise ConfigError(f"{where}: loss: '{name}' takes one column of class ids "
                              f"(integers from 0), but the targets "
                              f"({', '.join(dataset.target_names)}) are not; for a regression "
                              f"use mse, mae or huber")
    return sparse


# --- layers ----------------------------------------------------------------------------------------
def _layers(model_config, where, base_dir, allow_builder):
    if model_config.builder is not None:
        return _from_builder(model_config, where, base_dir, allow_builder)
    built = []
    for i, spec in enumerate(model_config.layers):
        key = f"model.layers.{i}"
        if len(spec) != 1:
            raise ConfigError(f"{where}: {key}: a layer is one mapping {{LayerName: {{arguments}}}}"
                              f", e.g. {{Dense: {{units: 64, activation: relu}}}}; got keys "
                              f"{sorted(spec)}")
        (name, arguments), = spec.items()
        built.append(_layer(name, arguments, where, f"{key}.{name}"))
    return built


def _layer(name, arguments, where, key):
    return make_layer(name, arguments, LAYERS, where, key)


def _from_builder(model_config, where, base_dir, allow_builder):
    spec = model_config.builder
    if not allow_builder:
        raise ConfigError(f"{where}: model.builder: '{spec}' names code to run; allow it with "
                          f"--allow-builder (tapeflow.train(..., allow_builder=True)) if you "
                          f"trust it")
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise ConfigError(f"{where}: model.builder: expected 'package.module:function' or "
                          f"'path/to/file.py:function', got '{spec}'")
    module = _import_builder(target, where, base_dir)
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{where}: model.builder: {target} has no function '{attr}'")
    layers = fn(**model_config.arguments)
    if not isinstance(layers, (list, tuple)) or not all(
            isinstance(layer, layers_module.Layer) for layer in layers):
        raise ConfigError(f"{where}: model.builder: {spec} must return a list of layers, "
                          f"got {type(layers).__name__}")
    return list(layers)


def _import_builder(target, where, base_dir):
    if target.endswith(".py"):
        path = os.path.normpath(os.path.join(base_dir, target))
        if not os.path.isfile(path):
            raise ConfigError(f"{where}: model.builder: no file {path}")
        name = "tapeflow_builder_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(target)
    except ImportError as e:
        raise ConfigError(f"{where}: model.builder: cannot import {target} ({e})") from None


# --- loss, metrics, optimizer -----------------------------------------------------------------------
def loss_from_config(spec, where, key="loss"):
    try:
        if isinstance(spec, dict):  # {name: Huber, delta: 1.0}: the class's config
            arguments = dict(spec)
            name = arguments.pop("name", None)
            if not isinstance(name, str):
                raise ValueError("a loss given as a mapping needs a name: (e.g. {name: Huber, "
                                 "delta: 1.0})")
            return losses.get({"class_name": name, "config": arguments})
        return losses.get(spec)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {key}: {e}") from None


def _metrics(names, where):
    """The metric names, each checked (compile names them; "accuracy" waits for the data)."""
    metrics_from_config(names, where)
    return list(names)


def metrics_from_config(names, where, y=None, y_pred=None, key="metrics"):
    """Metric objects for ``names``, logged under those names; "accuracy" is matched to the
    targets ``y`` and predictions ``y_pred`` as compile matches it (skipped without ``y``).
    Without ``y_pred``, one column of integer labels beyond 0 and 1 is read as class ids."""
    from .. import metrics
    made = []
    for i, name in enumerate(names):
        try:
            if name in ("accuracy", "acc"):
                if y is not None:
                    made.append(_accuracy(metrics, y, y_pred, name))
                continue
            metric = metrics.get(name)
            metric.name = name
            made.append(metric)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {key}.{i}: {e}") from None
    return made


def _accuracy(metrics, y, y_pred, name):
    y = np.asarray(y)
    if y_pred is None and y.ndim == 2 and y.shape[1] == 1 and y.size and y.max() > 1 \
            and np.all(y == np.round(y)) and y.min() >= 0:
        return metrics.SparseCategoricalAccuracy(name=name)  # a binary accuracy would be nonsense
    return metrics.match_accuracy(y, y if y_pred is None else y_pred, name=name)


def _optimizer(config, where):
    try:
        cls = optimizers.REGISTRY.lookup(config.name)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: optimizer.name: {e}") from None
    kwargs = dict(config.options)
    if config.schedule is not None:
        kwargs["learning_rate"] = _schedule(config.schedule, where)
    elif config.learning_rate is not None:
        kwargs["learning_rate"] = config.learning_rate
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self",)]
    for arg in config.options:
        if arg not in accepted or arg == "learning_rate":
            close = difflib.get_close_matches(arg, accepted, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            if arg == "learning_rate":
                hint = "; give it as optimizer.learning_rate"
            raise ConfigError(f"{where}: optimizer.options.{arg}: not an argument of "
                              f"{cls.__name__}{hint}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: optimizer: {e}") from None


def _schedule(config, where):
    cls = SCHEDULES.get(config.name)
    if cls is None:
        raise ConfigError(f"{where}: optimizer.schedule.name: unknown schedule "
                          f"'{config.name}'; known: {', '.join(SCHEDULES)}")
    try:
        return cls(**config.options)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: optimizer.schedule: {e}") from None
