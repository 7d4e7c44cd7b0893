"""A trainer checkpoint's training state, field by field, checked whole when read.

``check`` verifies every field a resumed run or ``inspect`` reads (types, ranges, lengths,
the arrays it refers to) and raises one ``CheckpointError`` naming the file and the field,
so that ``--resume`` can pass over a damaged checkpoint to an older one.
"""
import numpy as np

from ..dtypes import is_float_dtype
from .run_config import RunConfig
from .errors import CheckpointError

__all__ = ["check", "FIXED_KEYS", "class_of", "fixed_keys_of", "as_current", "state_of"]

# Checkpoints written before the callbacks' states were keyed by their ``state_key`` kept the
# trainer's two under fixed keys: {fixed key: the class whose state it is}.  They still resume.
FIXED_KEYS = {"early_stopping": "EarlyStopping", "best": "RunCheckpoints"}


class _Field:
    """Where a problem is: the file and the field's path in the training state."""

    def __init__(self, path):
        self.path = path

    def fail(self, field, problem):
        raise CheckpointError(f"{self.path}: the training state's '{field}' {problem}; the file "
                              f"is damaged or not a checkpoint of this tapeflow")

    def integer(self, value, field, low=0, high=None, optional=False):
        if optional and value is None:
            return
        if type(value) is not int or value < low or high is not None and value > high:
            bound = f"from {low} to {high}" if high is not None else f"of at least {low}"
            self.fail(field, f"is {_short(value)}, not an integer {bound}"
                      + (" or null" if optional else ""))

    def number(self, value, field, optional=True):
        if optional and value is None:
            return
        if type(value) not in (int, float):
            self.fail(field, f"is {_short(value)}, not a number" + (" or null" if optional else ""))

    def kind(self, value, kind, field):
        if type(value) is not kind:
            self.fail(field, f"is {_short(value)}, not a {kind.__name__}")

    def strings(self, value, field):
        if not (isinstance(value, list) and all(type(s) is str for s in value)):
            self.fail(field, f"is {_short(value)}, not a list of strings")


def check(training, arrays, path):
    """Check every field of the decoded ``training`` state (``arrays``: its named arrays)."""
    at = _Field(path)
    epoch = training.get("epoch")
    at.integer(epoch, "epoch")
    at.integer(training.get("step", 0), "step")
    at.integer(training.get("order_seed"), "order_seed", high=2 ** 64 - 1, optional=True)
    for flag in ("finished", "stopped"):
        at.kind(training.get(flag), bool, flag)
    at.kind(training.get("data_fingerprint"), str, "data_fingerprint")
    if "data_dir" in training:
        at.kind(training["data_dir"], str, "data_dir")
    for names in ("feature_names", "target_names"):
        if names in training:
            at.strings(training[names], names)
    _check_history(at, training.get("history"), epoch)
    _check_config(at, training.get("config"))
    _check_random(at, training.get("random"))
    _check_callbacks(at, training.get("callbacks"), arrays, epoch)


def _check_history(at, history, epoch):
    at.kind(history, dict, "history")
    for name, values in history.items():
        field = f"history.{name}"
        if not isinstance(values, list):
            at.fail(field, f"is {_short(values)}, not a list of numbers")
        if len(values) > epoch:
            at.fail(field, f"has {len(values)} values, more than the {epoch} epochs done")
        for i, v in enumerate(values):
            at.number(v, f"{field}[{i}]", optional=False)


def _check_config(at, config):
    at.kind(config, dict, "config")
    try:
        RunConfig.model_validate(config)
    except ValueError as e:
        at.fail("config", f"is not a valid run config ({_first_line(e)})")


def _check_random(at, random):
    at.kind(random, dict, "random")
    if random.get("bit_generator") != "PCG64":
        at.fail("random.bit_generator", f"is {_short(random.get('bit_generator'))}, not PCG64")
    at.integer(random.get("seed"), "random.seed", low=-2 ** 63, optional=True)
    for word in ("state", "inc"):
        text = random.get(word)
        if not (type(text) is str and text.isdigit() and int(text) < 2 ** 128):
            at.fail(f"random.{word}", f"is {_short(text)}, not a 128-bit unsigned integer")
    if int(random["inc"]) % 2 != 1:
        at.fail("random.inc", "is even (a PCG64 increment is odd)")
    at.integer(random.get("has_uint32"), "random.has_uint32", high=1)
    at.integer(random.get("uinteger"), "random.uinteger", high=2 ** 32 - 1)
    counts = random.get("op_counts")
    if not isinstance(counts, list):
        at.fail("random.op_counts", f"is {_short(counts)}, not a list")
    for i, entry in enumerate(counts):
        field = f"random.op_counts[{i}]"
        if not (isinstance(entry, list) and len(entry) == 3):
            at.fail(field, f"is {_short(entry)}, not [global seed, op seed, count]")
        at.integer(entry[0], field + "[0]", low=0, optional=True)
        at.integer(entry[1], field + "[1]")
        at.integer(entry[2], field + "[2]")


def class_of(key):
    """The callback class whose state a checkpoint keeps under ``key`` (``state_key``'s form:
    the class's name, then the arguments that tell two of them apart)."""
    return FIXED_KEYS.get(key, key.partition("{")[0])


def fixed_keys_of(class_name):
    """The fixed keys an older checkpoint kept ``class_name``'s state under."""
    return [key for key, name in FIXED_KEYS.items() if name == class_name]


def as_current(key, state):
    """A state kept under ``key`` in its class's current fields (an older checkpoint's best
    checkpoint score was ``value`` and ``epoch``)."""
    if key == "best":
        return {"best": state.get("value"), "best_epoch": state.get("epoch")}
    return state


def state_of(callbacks, class_name):
    """The state a checkpoint's ``callbacks`` keep for the trainer's one ``class_name``
    callback (under its ``state_key``, or an older fixed key), or None."""
    for key, state in callbacks.items():
        if class_of(key) == class_name:
            return as_current(key, state)
    return None


def _check_callbacks(at, callbacks, arrays, epoch):
    at.kind(callbacks, dict, "callbacks")
    for key, state in callbacks.items():
        where = f"callbacks.{key}"
        kind = class_of(key)
        if kind == "EarlyStopping":
            _check_early_stopping(at, state, arrays, epoch, key)
        elif kind == "RunCheckpoints":
            at.kind(state, dict, where)
            # an older checkpoint's fields were value and epoch: named as the file names them
            value, index = ("value", "epoch") if key == "best" else ("best", "best_epoch")
            at.number(state.get(value), f"{where}.{value}")
            at.integer(state.get(index), f"{where}.{index}", high=max(epoch - 1, 0),
                       optional=True)
        else:
            at.fail(where, "is not a callback the trainer keeps")


def _check_early_stopping(at, state, arrays, epoch, key):
    where = f"callbacks.{key}"
    at.kind(state, dict, where)
    at.integer(state.get("wait"), f"{where}.wait", high=epoch)
    at.number(state.get("best"), f"{where}.best")
    at.integer(state.get("best_epoch"), f"{where}.best_epoch", high=max(epoch - 1, 0))
    at.integer(state.get("stopped_epoch"), f"{where}.stopped_epoch", high=epoch)
    weights = state.get("best_weights")
    if type(weights) is int:  # checkpoints before {"$arrays": n}
        weights = {"$arrays": weights} if weights else None
    if weights is None:
        return
    if not (isinstance(weights, dict) and set(weights) == {"$arrays"}):
        at.fail(f"{where}.best_weights", f"is {_short(weights)}, not an array list")
    n = weights["$arrays"]
    at.integer(n, f"{where}.best_weights", low=1, high=len(arrays))
    for i in range(n):
        value = arrays.get(f"{key}/best_weights/{i}")
        if not (isinstance(value, np.ndarray) and is_float_dtype(value.dtype)):
            at.fail(f"{where}.best_weights[{i}]", "is missing or not a float array")


def _first_line(error):
    if hasattr(error, "errors"):  # pydantic's: where, then what
        first = error.errors()[0]
        return f"{'.'.join(map(str, first.get('loc', ())))}: {first.get('msg')}"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
