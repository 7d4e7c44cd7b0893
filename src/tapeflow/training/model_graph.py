"""A config's functional model: named inputs, named layers with the edges between them, and
one or more outputs; or a Keras model config (``get_config()``'s JSON, as a ``.keras`` file's
``config.json`` holds it).

    model:
      graph:
        inputs:
          - {name: words, shape: [20], dtype: int32}
          - {name: numbers, shape: [4]}
        layers:
          - {name: embed, inputs: words, Embedding: {input_dim: 100, output_dim: 8}}
          - {name: pooled, inputs: embed, GlobalAveragePooling1D: {}}
          - {name: joined, inputs: [pooled, numbers], Concatenate: {}}
          - {name: logits, inputs: joined, Dense: {units: 3}}
        outputs: logits

A layer may be any of tapeflow's layer classes but those that hold code (``Lambda``) or are
models; a layer with several ``inputs`` is called on them as a list when its call takes one
argument ``inputs`` (merging layers, ``Attention``), else with them as arguments in order
(``MultiHeadAttention``: query, value, key).  The edges are checked when the config is read:
a layer names inputs and earlier layers only, names are unique, and every layer leads to an
output; each problem is reported at its key (``model.graph.layers.3.inputs``).

``keras_config`` is a mapping (``{class_name: Functional, config: {...}}``) or the path of a
``.json``/``.yaml`` file holding one, or of a ``.keras`` file (its ``config.json`` is read,
its weights are not).  Its classes are resolved by name through tapeflow's deserializer:
nothing in a config is imported or run.
"""
import inspect
import json
import os
import zipfile
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, JsonValue, ValidationError, model_serializer, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .errors import ConfigError
from .multi_output import check_names
from .layer_specs import argument_problem, make_layer
from .section import Section

__all__ = ["GraphInput", "GraphLayer", "GraphModel", "KerasConfig", "build_graph",
           "build_keras_config", "build_functional", "graph_layer_classes"]

Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")]
Names = Union[Name, Annotated[list[Name], Field(min_length=1)]]
INPUT_DTYPES = ("float16", "float32", "float64", "int32", "int64", "bool")
# classes a graph may not name: models, layers that hold code, and what the graph makes itself
_NOT_IN_GRAPHS = ("Layer", "InputLayer", "Lambda", "TFOpLambda", "Model", "Sequential",
                  "Functional")


def graph_layer_classes():
    """The layer classes a graph config may name, by name."""
    from ..layers import Layer
    from ..models.model_classes import layer_classes
    return {name: cls for name, cls in sorted(layer_classes().items())
            if name not in _NOT_IN_GRAPHS and issubclass(cls, Layer)}


class GraphInput(Section):
    name: Name
    shape: list[Optional[Annotated[int, Field(ge=1)]]] = Field(
        description="one example's shape, without the batch axis (null: any length)")
    dtype: Literal[INPUT_DTYPES] = "float32"


class GraphLayer(Section):
    """Written ``{name: ..., inputs: ..., LayerName: {arguments}}``."""
    name: Name
    inputs: Names
    type: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_written_form(cls, data):
        if not isinstance(data, dict) or "type" in data:
            return data
        kinds = [k for k in data if k not in ("name", "inputs")]
        if len(kinds) != 1 or not isinstance(data[kinds[0]], dict):
            raise ValueError(f"a layer is {{name: ..., inputs: ..., LayerName: {{arguments}}}}, "
                             f"e.g. {{name: hidden, inputs: features, Dense: {{units: 64}}}}; "
                             f"got keys {sorted(data)}")
        rest = {k: v for k, v in data.items() if k != kinds[0]}
        return dict(rest, type=kinds[0], arguments=data[kinds[0]])

    @model_serializer
    def _to_written_form(self):
        return {"name": self.name, "inputs": self.inputs, self.type: self.arguments}

    @property
    def input_names(self):
        return [self.inputs] if isinstance(self.inputs, str) else list(self.inputs)


class GraphModel(Section):
    inputs: Annotated[list[GraphInput], Field(min_length=1)]
    layers: Annotated[list[GraphLayer], Field(min_length=1)]
    outputs: Names

    @model_validator(mode="after")
    def _edges(self):
        problems = []  # (location, message, value)
        known = graph_layer_classes()
        defined = {}
        for i, spec in enumerate(self.inputs):
            _define(defined, spec.name, ("inputs", i, "name"), problems)
        for i, spec in enumerate(self.layers):
            for name in spec.input_names:
                if name not in defined:
                    later = any(other.name == name for other in self.layers[i + 1:])
                    why = "a layer that comes later (a layer takes inputs and earlier " \
                          "layers)" if later else "no input or earlier layer"
                    problems.append((("layers", i, "inputs"), f"unknown layer '{name}': {why}; "
                                     f"known here: {', '.join(defined)}", name))
            if "name" in spec.arguments:
                problems.append((("layers", i, spec.type, "name"), "the layer's name is its "
                                 "'name:' key; give it once", spec.arguments["name"]))
            found = argument_problem(spec.type, spec.arguments, known)
            if found is not None:
                loc = ("layers", i, spec.type) + tuple(p for p in found[0].split(".") if p)
                problems.append((loc, found[1], spec.type))
            _define(defined, spec.name, ("layers", i, "name"), problems)
        outputs = [self.outputs] if isinstance(self.outputs, str) else list(self.outputs)
        layer_names = {spec.name for spec in self.layers}
        for name in outputs:
            if name not in layer_names:
                problems.append((("outputs",), f"unknown layer '{name}'; the layers are "
                                 f"{', '.join(spec.name for spec in self.layers)}", name))
        if not problems:
            used = set(outputs)
            for spec in reversed(self.layers):  # walk back from the outputs
                if spec.name in used:
                    used.update(spec.input_names)
            for i, spec in enumerate(self.layers):
                if spec.name not in used:
                    problems.append((("layers", i, "name"), f"layer '{spec.name}' leads to no "
                                     f"output; use it or take it out", spec.name))
            for i, spec in enumerate(self.inputs):
                if spec.name not in used:
                    problems.append((("inputs", i, "name"), f"input '{spec.name}' leads to no "
                                     f"output", spec.name))
        if problems:
            raise ValidationError.from_exception_data("GraphModel", [
                InitErrorDetails(type=PydanticCustomError("value_error", "{message}",
                                                          {"message": message}),
                                 loc=loc, input=value) for loc, message, value in problems])
        return self

    @property
    def output_names(self):
        return [self.outputs] if isinstance(self.outputs, str) else list(self.outputs)


def _define(defined, name, loc, problems):
    if name in defined:
        problems.append((loc, f"'{name}' names two inputs or layers (first at "
                         f"{'.'.join(map(str, defined[name]))}); names are unique", name))
    else:
        defined[name] = loc


KerasConfig = Union[Annotated[str, Field(min_length=1)], dict[str, JsonValue]]


# --- building ------------------------------------------------------------------------------------
def build_graph(graph, where, key="model.graph"):
    """The functional ``Model`` ``graph`` (a validated GraphModel) describes: one input and one
    output as themselves, several as lists in the config's order."""
    from ..layers import Input
    from ..models import Model

    known = graph_layer_classes()
    tensors = {}
    for spec in graph.inputs:
        tensors[spec.name] = Input(shape=tuple(spec.shape), dtype=spec.dtype, name=spec.name)
    for i, spec in enumerate(graph.layers):
        layer_key = f"{key}.layers.{i}.{spec.type}"
        layer = make_layer(spec.type, dict(spec.arguments, name=spec.name), known, where,
                           layer_key)
        inputs = [tensors[name] for name in spec.input_names]
        try:
            tensors[spec.name] = _call(layer, inputs)
        except (TypeError, ValueError) as e:
            shapes = ", ".join(f"{n} {_shape(tensors[n])}" for n in spec.input_names)
            raise ConfigError(f"{where}: {layer_key}: on {shapes}: {e}") from None
    inputs = [tensors[spec.name] for spec in graph.inputs]
    outputs = [tensors[name] for name in graph.output_names]
    return Model(inputs=inputs[0] if len(inputs) == 1 else inputs,
                 outputs=outputs[0] if len(outputs) == 1 else outputs, name="model")


def _call(layer, inputs):
    """A merging layer (its call takes one ``inputs``) gets a list; others get arguments."""
    if len(inputs) == 1:
        return layer(inputs[0])
    parameters = [p for p in inspect.signature(type(layer).call).parameters if p != "self"]
    return layer(inputs) if parameters[:1] == ["inputs"] else layer(*inputs)


def _shape(tensor):
    return tuple(tensor.shape) if hasattr(tensor, "shape") else type(tensor).__name__


def build_keras_config(spec, where, base_dir, key="model.keras_config"):
    """The model a Keras model config describes (``spec``: the mapping, or a file's path)."""
    from ..models.model_classes import layer_classes
    from ..saving.keras3_config import from_keras3
    from ..serialization import deserialize

    doc = _read_keras_config(spec, where, base_dir, key) if isinstance(spec, str) else spec
    try:
        doc = from_keras3(doc)  # a config Keras 3 wrote: its spellings, as tapeflow's
    except ValueError as e:
        raise ConfigError(f"{where}: {key}: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("class_name"), str) \
            or not isinstance(doc.get("config"), dict):
        raise ConfigError(f"{where}: {key}: a model config is a mapping {{class_name: ..., "
                          f"config: {{...}}}} as get_config() and a .keras file's config.json "
                          f"hold it")
    try:
        return deserialize({"class_name": doc["class_name"], "config": doc["config"]},
                           layer_classes(), None, kind="layer")
    except (TypeError, ValueError, KeyError, LookupError) as e:
        raise ConfigError(f"{where}: {key}: cannot build the model it describes: {e}") from None


# a model config is kilobytes; this refuses a file (or a .keras member) that would fill memory
MAX_CONFIG_BYTES = 16 * 2 ** 20


def _read_keras_config(path, where, base_dir, key):
    from .safe_yaml import read_yaml

    full = os.path.join(base_dir, os.path.expanduser(path))
    if not os.path.isfile(full):
        raise ConfigError(f"{where}: {key}: no such file {full}")
    too_big = f"{where}: {key}: {path}: a model config past {MAX_CONFIG_BYTES // 2 ** 20} MiB"
    try:
        if zipfile.is_zipfile(full):  # a .keras file: its config.json
            with zipfile.ZipFile(full) as archive:
                if archive.getinfo("config.json").file_size > MAX_CONFIG_BYTES:
                    raise ConfigError(too_big)
                return json.loads(archive.read("config.json"))
        if full.endswith(".json"):
            if os.path.getsize(full) > MAX_CONFIG_BYTES:
                raise ConfigError(too_big)
            with open(full, encoding="utf-8") as f:
                return json.load(f)
    except ConfigError:
        raise
    except (OSError, KeyError, ValueError, RecursionError, zipfile.BadZipFile) as e:
        raise ConfigError(f"{where}: {key}: cannot read {path} ({type(e).__name__}: "
                          f"{e})") from None
    return read_yaml(full, path)


def build_functional(model_config, dataset, where, base_dir):
    """The model a ``graph`` or ``keras_config`` describes, checked on one training example,
    and its output's shape; on named data (dicts by input and output name), the names checked
    and ``{output name: shape}``."""
    from ..layers.weight_budget import weight_budget

    key = "model.graph" if model_config.graph is not None else "model.keras_config"
    with weight_budget():
        if model_config.graph is not None:
            model = build_graph(model_config.graph, where)
        else:
            model = build_keras_config(model_config.keras_config, where, base_dir)
        if isinstance(dataset.x_train, dict):  # named data (named_sources): by name
            return model, _named_outputs(model, dataset, where, key)
        inputs, outputs = getattr(model, "inputs", None), getattr(model, "outputs", None)
        if inputs is not None and len(inputs) != 1 or outputs is not None and len(outputs) != 1:
            raise ConfigError(f"{where}: {key}: the model has {len(inputs)} input(s) and "
                              f"{len(outputs)} output(s); feed them with data.inputs and "
                              f"data.targets mappings by name (source npz or csv)")
        example = dataset.x_train.shape[1:]
        try:
            return model, model(dataset.x_train[:1], training=False).shape
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {key}: on the data's examples of shape {example} "
                              f"({dataset.x_train.dtype.name}): {e}") from None


def _named_outputs(model, dataset, where, key):
    """{output name: its shape for one example}, the data's names checked to be the model's."""
    check_names(model, dataset, where, key)
    example = {name: a[:1] for name, a in dataset.x_train.items()}
    try:
        outputs = model(example, training=False)
    except (TypeError, ValueError) as e:
        shapes = ", ".join(f"{n} {a.shape[1:]}" for n, a in example.items())
        raise ConfigError(f"{where}: {key}: on the data's examples ({shapes}): {e}") from None
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return {name: tuple(out.shape) for name, out in zip(model.output_names, outputs)}
