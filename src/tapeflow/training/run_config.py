"""The run config: a YAML file, ``--set`` overrides, validated before any work.

``load_config(path, overrides)`` reads the file with YAML's safe loader (no
tags that build Python objects), applies each ``--set key.path=value`` (the
value parsed as a YAML scalar), and validates the whole with pydantic: unknown
keys are errors with the closest valid key suggested, values are never
coerced across types (``"2"`` is not an int), impossible values are refused.
Every problem is reported as ``file: key.path: message`` in one ``ConfigError``.

``RunConfig.resolved()`` is the config as the run used it, defaults filled in
and the seed chosen: it is written beside the run and into every checkpoint,
so a run is reproducible from it alone.
"""
import difflib
import math
import os
import secrets
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, ValidationError, field_validator

from .errors import ConfigError
from .model_graph import GraphModel, KerasConfig
from .multi_output import logged_names
from .safe_yaml import MAX_DEPTH, dump_yaml, load_yaml, read_yaml
from .section import Section
from .named_sources import SOURCES
from .named_sources import AnyDataConfig as DataConfig  # every source

__all__ = ["RunConfig", "load_config", "parse_config", "parse_override", "dump_yaml"]

PositiveInt = Annotated[int, Field(ge=1)]
Seed = Annotated[int, Field(ge=0, lt=2 ** 32)]  # numpy's seeds
Scalar = Union[bool, int, float, str, None]
Argument = Union[Scalar, list[Scalar], dict[str, Scalar]]


class ModelConfig(Section):
    """One of ``layers`` (a list of ``{LayerName: {argument: value}}``, the arguments checked
    against the layer's own signature when the model is built), a ``builder``, a functional
    ``graph`` or a ``keras_config`` (see model_graph.py)."""

    layers: Optional[list[dict[str, dict[str, Argument]]]] = None
    builder: Optional[str] = Field(
        None, description="'package.module:function' or 'path/to/file.py:function' returning "
                          "a list of layers; run only when allowed (--allow-builder)")
    arguments: dict[str, Argument] = Field(default_factory=dict,
                                           description="keyword arguments for the builder")
    graph: Optional[GraphModel] = Field(None, description="a functional model: inputs, named "
                                        "layers and the edges between them, outputs")
    keras_config: Optional[KerasConfig] = Field(
        None, description="a Keras model config (get_config()), or a .json/.yaml/.keras file")
    normalize: bool = Field(True, description="a Normalization layer adapted on the training "
                                              "split first, so the model takes raw features "
                                              "(layers and builder models only)")

    def model_post_init(self, _):
        given = [self.layers, self.builder, self.graph, self.keras_config]
        if sum(part is not None for part in given) != 1:
            raise ValueError("give exactly one of 'layers' (a list of layers), 'builder', "
                             "'graph' or 'keras_config'")
        if self.arguments and self.builder is None:
            raise ValueError("'arguments' are for a builder; layers take their arguments inline")


class ScheduleConfig(Section):
    name: str = Field(description="a schedule class: ExponentialDecay, CosineDecay, "
                                  "PiecewiseConstantDecay")
    options: dict[str, Argument] = Field(default_factory=dict)

    def model_post_init(self, _):
        learning_rates = {key: value for key, value in self.options.items()
                          if "learning_rate" in key}
        if isinstance(self.options.get("values"), list):  # PiecewiseConstantDecay's rates
            learning_rates.update((f"values.{i}", value)
                                  for i, value in enumerate(self.options["values"]))
        _check_ranges(learning_rates, dict.fromkeys(learning_rates, "(0, inf)"), "options")


class OptimizerConfig(Section):
    name: str = "adam"
    learning_rate: Optional[Annotated[float, Field(gt=0)]] = None
    schedule: Optional[ScheduleConfig] = None
    options: dict[str, Argument] = Field(default_factory=dict,
                                         description="other arguments of the optimizer's class")

    def model_post_init(self, _):
        if self.schedule is not None and self.learning_rate is not None:
            raise ValueError("give 'learning_rate' or a 'schedule' (its options hold the "
                             "initial learning rate), not both")
        _check_ranges(self.options, OPTIMIZER_RANGES, "options")


class RegularizationConfig(Section):
    input_gradient: Annotated[float, Field(ge=0)] = Field(
        0.0, description="weight of the input-gradient penalty (0: none)")


class EarlyStoppingConfig(Section):
    monitor: str = "val_loss"
    patience: Annotated[int, Field(ge=0)] = 5
    min_delta: Annotated[float, Field(ge=0)] = 0.0
    mode: Literal["auto", "min", "max"] = "auto"
    restore_best_weights: bool = True


class ValidationConfig(Section):
    every: PositiveInt = Field(1, description="validate every N epochs")


class TrainingConfig(Section):
    epochs: PositiveInt = 30
    batch_size: Union[PositiveInt, Literal["full"]] = 32
    shuffle: bool = True
    seed: Optional[Seed] = Field(None, description="drives every random draw (initial weights, "
                                                  "shuffling, dropout); null: chosen and recorded")
    early_stopping: Optional[EarlyStoppingConfig] = None
    validation: ValidationConfig = Field(default_factory=ValidationConfig)


class CheckpointConfig(Section):
    every: PositiveInt = Field(1, description="write a checkpoint every N epochs (and at the end)")
    every_steps: Optional[PositiveInt] = Field(
        None, description="also write one every N training steps, counted across epochs (only "
                          "the newest is kept): a resume goes on at the next batch")
    keep_last: PositiveInt = 3
    keep_best: bool = True
    monitor: Optional[str] = Field(None, description="what keep_best watches; null: val_loss, "
                                                     "or loss without a validation split")
    mode: Literal["auto", "min", "max"] = "auto"


class MlflowConfig(Section):
    """Where ``logging.mlflow`` logs (``true`` takes these defaults)."""
    tracking_uri: Optional[Annotated[str, Field(min_length=1)]] = Field(
        None, description="an MLflow tracking URI; null: MLFLOW_TRACKING_URI if set, else an "
                          "SQLite store under mlflow/ in the run directory")
    experiment: Optional[Annotated[str, Field(min_length=1)]] = Field(
        None, description="the MLflow experiment's name; null: MLFLOW_EXPERIMENT_NAME if set, "
                          "else 'tapeflow'")


class LoggingConfig(Section):
    progress: Literal["auto", "bar", "lines", "none"] = Field(
        "auto", description="a tqdm bar on a terminal, one line per epoch otherwise")
    plot: bool = Field(True, description="write learning_curve.png")
    tensorboard: bool = Field(
        False, description="TensorBoard event files under tensorboard/ in the run directory "
        "(epoch scalars, the traced step's graph); needs the tensorboard package")
    mlflow: Optional[MlflowConfig] = Field(
        None, description="log the config (params), each epoch's metrics and, at the end, the "
        "run directory to MLflow: true (the defaults) or {tracking_uri, experiment}; needs "
        "tapeflow[mlflow]")

    @field_validator("mlflow", mode="before")
    @classmethod
    def _mlflow_switch(cls, value):
        """``true`` is the default settings, ``false`` none (one type, so that a typo inside
        the mapping is reported at its own key, not beside 'not a boolean')."""
        if value is True:
            return {}
        if value is False:
            return None
        if value is None or isinstance(value, (dict, MlflowConfig)):
            return value
        raise ValueError(f"true, false or a mapping {{tracking_uri, experiment}}, not "
                         f"{value!r}")


class RunConfig(Section):
    data: DataConfig
    model: ModelConfig
    loss: Union[str, dict[str, Argument]] = Field(
        "mse", description="a loss, or {output name: loss} for a model of several outputs")
    metrics: Union[list[str], dict[str, list[str]]] = Field(
        default_factory=lambda: ["mae"], description="metric names, or {output name: [...]}")
    loss_weights: Optional[Union[list[float], dict[str, float]]] = Field(
        None, description="each output's weight in the total loss (several outputs)")
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    regularization: RegularizationConfig = Field(default_factory=RegularizationConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    device: Literal["cpu", "gpu"] = Field(
        "cpu", description="where the run trains; when not given, the caller's current device "
                           "(the CPU for the command line)")
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    def model_post_init(self, _):
        if isinstance(self.loss, dict):
            _check_ranges(self.loss, LOSS_RANGES, "loss")
        targets = getattr(self.data, "targets", None)
        if isinstance(targets, dict):  # several named outputs: Keras's per-output names too
            logged = logged_names(list(targets), self.metrics)
        elif isinstance(self.metrics, dict):
            raise ValueError("metrics: a mapping by output name is for data whose targets "
                             "map the model's outputs (data.inputs and data.targets)")
        else:
            logged = ["loss"] + list(self.metrics)
        if self.data.split.valid_size > 0:
            logged += [f"val_{name}" for name in logged]
        watched = [("checkpoint.monitor", self.best_monitor, self.checkpoint.keep_best)]
        if self.training.early_stopping is not None:
            watched.append(("training.early_stopping.monitor",
                            self.training.early_stopping.monitor, True))
        for key, name, used in watched:
            if used and name not in logged:
                why = " (data.split.valid_size is 0: there is no validation split)" \
                    if name.startswith("val_") and self.data.split.valid_size == 0 else ""
                raise ValueError(f"{key}: '{name}' is not logged{why}; the run logs "
                                 f"{', '.join(logged)}")

    @property
    def best_monitor(self):
        """The value the best checkpoint is chosen by."""
        if self.checkpoint.monitor is not None:
            return self.checkpoint.monitor
        return "val_loss" if self.data.split.valid_size > 0 else "loss"

    def resolved(self):
        """This config with the seed chosen (when it was null) and the best checkpoint's
        monitor named, as a plain dict."""
        doc = self.model_dump(mode="json")
        doc["checkpoint"]["monitor"] = self.best_monitor
        if doc["training"]["seed"] is None:
            doc["training"]["seed"] = secrets.randbelow(2 ** 31)
        return doc


# --- ranges of numeric options --------------------------------------------------------------------
# The arguments users set most, by name, with the range every class that takes them accepts;
# checked where the config names them (an Adam with epsilon -1 or beta_1 2 would train on nonsense).
OPTIMIZER_RANGES = {"beta_1": "[0, 1)", "beta_2": "[0, 1)", "rho": "[0, 1)",
                    "epsilon": "(0, inf)", "momentum": "[0, inf)", "weight_decay": "[0, inf)",
                    "clipnorm": "(0, inf)", "clipvalue": "(0, inf)", "global_clipnorm": "(0, inf)",
                    "initial_accumulator_value": "[0, inf)", "damping": "(0, inf)"}
LOSS_RANGES = {"delta": "(0, inf)", "label_smoothing": "[0, 1]"}


def _in_range(value, interval):
    low, high = (float(bound) for bound in interval[1:-1].split(","))
    above = value >= low if interval[0] == "[" else value > low
    below = value <= high if interval[-1] == "]" else value < high
    return above and below


def _check_ranges(options, ranges, key):
    for name, value in options.items():
        interval = ranges.get(name)
        if interval is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # not a number: the class's own check names the type
        finite = isinstance(value, int) or math.isfinite(value)  # a huge int has no float
        if not (finite and _in_range(value, interval)):
            raise ValueError(f"{key}.{name}: {value} is not in {interval}")


# --- overrides -----------------------------------------------------------------------------------
def parse_override(text):
    """``"training.epochs=5"`` -> ``(["training", "epochs"], 5)``; the value is a YAML scalar
    (or a flow list/mapping such as ``[64, 64]``)."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {text}: expected key.path=value, e.g. --set training.epochs=5")
    if key.count(".") >= MAX_DEPTH:
        raise ConfigError(f"--set {key[:40]}...: a key path of more than {MAX_DEPTH} parts")
    return key.split("."), load_yaml(value, f"--set {text}")


def _apply_override(doc, path, value, text):
    node = doc
    for i, part in enumerate(path[:-1]):
        where = ".".join(path[:i + 1])
        if isinstance(node, list):
            node = node[_index(part, node, where, text)]
            continue
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
        if not isinstance(node, (dict, list)):
            raise ConfigError(f"--set {text}: {where} is a value, not a section")
    last = path[-1]
    if isinstance(node, list):
        node[_index(last, node, ".".join(path), text)] = value
    else:
        node[last] = value


def _index(part, node, where, text):
    if not part.isdigit() or int(part) >= len(node):
        raise ConfigError(f"--set {text}: {where}: a list of {len(node)} items needs an index "
                          f"0..{len(node) - 1}")
    return int(part)


# --- validation ------------------------------------------------------------------------------------
def load_config(path, overrides=()):
    """The validated ``RunConfig`` of the YAML file at ``path`` with ``--set`` ``overrides``."""
    path = os.fspath(path)
    name = os.path.basename(path)
    doc = read_yaml(path, name)
    if doc is None:
        raise ConfigError(f"{name} is empty: a config needs at least 'data' and 'model' "
                          f"sections (see configs/housing.yaml)")
    return parse_config(doc, name, overrides)


def parse_config(doc, where="config", overrides=()):
    """Validate a config given as a dict (``tapeflow.train({...})``), with overrides."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: a config is a mapping of sections (data, model, "
                          f"training, ...), not a {type(doc).__name__}")
    doc = _deep_copy(doc, where)
    origin = {}
    for text in overrides:
        path, value = parse_override(text)
        _apply_override(doc, path, value, text)
        origin[tuple(path)] = text
    try:
        return RunConfig.model_validate(doc)
    except ValidationError as e:
        raise ConfigError(_describe(e, where, origin, doc)) from None


def _deep_copy(value, where, depth=0):
    """A copy of a config given as Python values, refused past ``MAX_DEPTH`` levels (a dict
    that holds itself would recurse forever)."""
    if depth > MAX_DEPTH and isinstance(value, (dict, list)):
        raise ConfigError(f"{where}: nested more than {MAX_DEPTH} levels deep (or holds itself)")
    if isinstance(value, dict):
        return {k: _deep_copy(v, where, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v, where, depth + 1) for v in value]
    return value


_MAX_SHOWN = 8


def _describe(error, where, origin, doc):
    by_key = {}  # a union's members each report at the same key: one line, their messages joined
    for err in error.errors(include_url=False):
        loc = _user_location(err["loc"])
        key = ".".join(str(p) for p in loc)
        by_key.setdefault(key, (loc, []))[1].append(err)
    lines = []
    for key, (loc, errs) in list(by_key.items())[:_MAX_SHOWN]:
        source = origin.get(tuple(str(p) for p in loc))
        prefix = f"--set {source}" if source else where
        messages = [_message(err, loc, doc, with_input=False) for err in errs]
        got = errs[0].get("input")
        shown = "; or ".join(dict.fromkeys(messages))
        if not isinstance(got, (dict, list)) and errs[0]["type"] not in _NO_INPUT:
            shown += f" (got {got!r})"
        lines.append(f"{prefix}: {key}: {shown}" if key else f"{prefix}: {shown}")
    more = len(by_key) - _MAX_SHOWN
    if more > 0:
        lines.append(f"... and {more} more problems")
    return "\n".join(lines)


_NO_INPUT = ("extra_forbidden", "missing", "value_error")


def _user_location(loc):
    """pydantic's location as the YAML's key path: without its internal steps (union members,
    validators) and without the tag of a union told apart by a field (``data``'s source)."""
    out = []
    for i, p in enumerate(loc):
        if isinstance(p, str) and (p.startswith(_INTERNAL_STEPS) or p in _SOURCE_TAGS
                                   and i > 0 and loc[i - 1] == "data"):
            continue
        out.append(p)
    return out


_INTERNAL_STEPS = ("function-", "int", "float", "str", "bool", "list[", "dict[", "constrained-",
                   "literal[")
_SOURCE_TAGS = set(SOURCES)


def _message(err, loc, doc, with_input=True):
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        valid = _valid_keys(loc[:-1], doc)
        hint = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        known = f" Valid keys here: {', '.join(valid)}." if valid else ""
        return f"unknown key{suggestion}{known}"
    if kind == "missing":
        return "required, but missing"
    if kind == "value_error":
        return str(err.get("ctx", {}).get("error", err["msg"]))
    if with_input and not isinstance(value, (dict, list)):
        return f"{err['msg']} (got {value!r})"
    return err["msg"]


def _valid_keys(loc, doc):
    """The field names of the section at ``loc`` (for suggesting a key), or []."""
    model = RunConfig
    for part in loc:
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        doc = doc.get(part) if isinstance(doc, dict) else None
        model = _section_type(field.annotation, doc)
        if model is None:
            return []
    return list(getattr(model, "model_fields", {}))


def _section_type(annotation, doc):
    """The Section class an annotation holds; of a union told apart by ``source``, the member
    ``doc`` names."""
    if isinstance(annotation, type) and issubclass(annotation, Section):
        return annotation
    members = []
    for arg in getattr(annotation, "__args__", ()):
        found = _section_type(arg, doc)
        if found is not None:
            members.append(found)
    for member in members:
        tag = member.model_fields.get("source")
        if tag is not None and isinstance(doc, dict) and doc.get("source") in getattr(
                tag.annotation, "__args__", ()):
            return member
    return members[0] if members else None


def config_schema():
    """The JSON schema of a run config (for editors and ``tapeflow train --help``)."""
    return RunConfig.model_json_schema()

