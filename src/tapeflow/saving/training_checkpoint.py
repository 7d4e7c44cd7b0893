"""The one checkpoint of a training run, written by the YAML trainer and by ``BackupAndRestore``.

One HDF5 file (``saving.format``): a Keras save of the model (``keras_saving.model_document``:
its config, every variable, the optimizer's config and state, the call traced as a graph), so
``load_model`` reads it, plus a ``training`` entry holding what the loop needs to go on:

- ``epoch``, ``step``, ``order_seed``: the data position (the epochs done; mid-epoch, the steps
  done into the next one and the seed of its shuffle order), and then the metrics' running
  state as the named arrays ``metrics/NAME/i``;
- ``random``: the context's random state (``encode_random_state``: the one codec);
- ``callbacks``: ``{key: callback.get_state()}``, the key a callback's ``state_key``; a list of
  arrays in a state is kept as the named arrays ``KEY/NAME/i`` and ``{"$arrays": n}``;
- ``arrays``: the named arrays' references; and whatever else a writer adds (the trainer: its
  run config, history and data fingerprint).

Non-finite floats (a NaN loss in a history, an infinite best) are kept as ``{"$float": ...}``,
the saved format's own tag.  The file is written to a temporary and renamed (``fmt.write``),
so a kill mid-write leaves the previous checkpoint whole; ``read`` checks the checksums and
the fields every resume reads, and never imports or evaluates anything from the file.
"""
import math
from typing import NamedTuple

import numpy as np

from ..core.context import context
from . import format as fmt
from .damaged import raised_in_h5py
from .keras_saving import assign_saved_weights, model_document
from .saved_model import read_contents

__all__ = ["VERSION", "Position", "Checkpoint", "write", "read", "restore_model",
           "restore_random_state", "encode_random_state", "decode_random_state",
           "encode_floats", "decode_floats", "callback_state", "restore_callback",
           "metric_arrays", "metric_state", "restore_metrics"]

VERSION = 1  # of the training entry; a file of another version is refused, naming it


class Position(NamedTuple):
    """Where in the data a run stands: ``epoch`` epochs done, and ``step`` steps of the next
    one in the shuffle order of seed ``order_seed`` (None: not shuffled)."""
    epoch: int
    step: int = 0
    order_seed: object = None


# --- writing ----------------------------------------------------------------------------------------
def write(path, model, position, callbacks=None, extra=None):
    """Write ``model`` (weights, optimizer), ``position``, the random state and the state of
    ``callbacks`` (``{key: callback}``) to ``path``, atomically.  ``extra``: more JSON fields
    for the training entry (a writer's own); ``extra["arrays"]``: named arrays they use;
    ``extra["callbacks"]``: states already encoded (``callback_state``)."""
    extra = dict(extra or {})
    named = dict(extra.pop("arrays", None) or {})
    if position.step:  # mid-epoch: the epoch's logs go on from the steps done
        named.update(metric_arrays(model))
    states = dict(extra.pop("callbacks", None) or {})  # states a writer encoded itself
    for key, callback in (callbacks or {}).items():
        states[key], arrays = callback_state(key, callback)
        named.update(arrays)
    writer = fmt.ArrayWriter()
    document = model_document(model, writer)
    references = {name: {"$array": writer.add(np.asarray(a))} for name, a in named.items()}
    document["training"] = encode_floats(dict(
        extra, version=VERSION, epoch=position.epoch, step=position.step,
        order_seed=position.order_seed, random=encode_random_state(context().random.snapshot()),
        callbacks=states, arrays=references))
    fmt.write(path, document, writer)


def encode_random_state(snapshot):
    """The context's random state as JSON (the generator's 128-bit words as decimal strings)."""
    seed, bit_state, counts = snapshot
    if bit_state.get("bit_generator") != "PCG64":
        raise ValueError(f"cannot checkpoint a {bit_state.get('bit_generator')} random state")
    inner = bit_state["state"]
    return {"seed": seed, "bit_generator": "PCG64", "state": str(inner["state"]),
            "inc": str(inner["inc"]), "has_uint32": int(bit_state["has_uint32"]),
            "uinteger": int(bit_state["uinteger"]),
            "op_counts": [[k[0], k[1], n] for k, n in counts.items()]}


def decode_random_state(doc, where, error=ValueError):
    """``encode_random_state``'s inverse; ``error`` (naming ``where``) when it is damaged."""
    try:
        if doc["bit_generator"] != "PCG64":
            raise ValueError("not a PCG64 state")
        bit_state = {"bit_generator": "PCG64",
                     "state": {"state": int(doc["state"]), "inc": int(doc["inc"])},
                     "has_uint32": int(doc["has_uint32"]), "uinteger": int(doc["uinteger"])}
        seed = doc["seed"]
        if seed is not None and type(seed) is not int:
            raise ValueError("the seed is not an integer")
        counts = {(a, b): int(n) for a, b, n in doc["op_counts"]}
    except (KeyError, TypeError, ValueError) as e:
        raise error(f"{where}: the random state is damaged ({e})") from None
    return seed, bit_state, counts


_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def encode_floats(value):
    """``value`` (JSON-ready) with its non-finite floats tagged."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {k: encode_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_floats(v) for v in value]
    return value


def decode_floats(value):
    """``encode_floats``'s inverse."""
    if isinstance(value, dict):
        if set(value) == {"$float"} and value["$float"] in _NON_FINITE:
            return _NON_FINITE[value["$float"]]
        return {k: decode_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_floats(v) for v in value]
    return value


def callback_state(key, callback):
    """``(JSON dict, {array name: array})`` of ``callback.get_state()``."""
    doc, arrays = {}, {}
    for name, value in callback.get_state().items():
        if isinstance(value, (list, tuple)) and value and \
                all(isinstance(a, np.ndarray) for a in value):
            arrays.update({f"{key}/{name}/{i}": a for i, a in enumerate(value)})
            value = {"$arrays": len(value)}
        doc[name] = value
    return doc, arrays


def metric_arrays(model):
    """The metrics' running state (the loss tracker's included) as named arrays."""
    return {f"metrics/{name}/{i}": v.numpy()
            for name, m in zip(model.metrics_names, model.metrics)
            for i, v in enumerate(m.variables)}


# --- reading ----------------------------------------------------------------------------------------
class Checkpoint:
    """A checkpoint read whole and checked: its variables, optimizer state and training entry."""

    def __init__(self, path, document, variables, n_tracked, input_shape, optimizer_state,
                 training, arrays, error):
        self.path = path
        self.document = document
        self.variables = variables
        self.n_tracked = n_tracked
        self.input_shape = input_shape
        self.optimizer_state = optimizer_state
        self.training = training
        self.arrays = arrays          # the training entry's named arrays
        self._error = error

    @property
    def epoch(self):
        return self.training["epoch"]

    @property
    def position(self):
        return Position(self.training["epoch"], self.training.get("step", 0),
                        self.training.get("order_seed"))

    @property
    def config(self):
        return self.training["config"]

    @property
    def random_state(self):
        return decode_random_state(self.training["random"], self.path, self._error)

    @property
    def metric_state(self):
        """``{metric name: [arrays]}``: the running state of a mid-epoch checkpoint's metrics."""
        return metric_state(self.arrays, self.path, self._error)

    def callback_state(self, key):
        """The state kept under ``key``, its arrays put back (None: none was kept)."""
        doc = self.training["callbacks"].get(key)
        if doc is None:
            return None
        try:
            state = {}
            for name, value in doc.items():
                if name == "best_weights" and type(value) is int:  # checkpoints before $arrays
                    value = {"$arrays": value} if value else None
                if isinstance(value, dict) and set(value) == {"$arrays"}:
                    value = [self.arrays[f"{key}/{name}/{i}"]
                             for i in range(int(value["$arrays"]))]
                state[name] = value
        except (KeyError, TypeError, ValueError) as e:
            raise self._error(f"{self.path}: the state of {key} is damaged ({e})") from None
        return state


def read(path, error=ValueError, what="a training checkpoint"):
    """The ``Checkpoint`` at ``path``; ``error`` saying why when it is not ``what``."""
    try:
        document, reader = fmt.read(path)
    except FileNotFoundError:
        raise error(f"{path}: no such checkpoint") from None
    except (fmt.LoadError, OSError) as e:
        raise error(_as_damaged(path, e)) from None
    try:
        variables, n_tracked, _ = read_contents(document, reader, path, "keras_model",
                                                "tf.saved_model.load", min_tracked=1)
        input_shape = fmt._shape(document.get("input_shape"), path, "the input")
        training = document.get("training")
        if not isinstance(training, dict):
            raise error(f"{path} is a saved model, not {what} (it has no training state)")
        if training.get("version") != VERSION:
            raise error(f"{path} holds a training state of format version "
                        f"{_short(training.get('version'))}; this tapeflow reads version "
                        f"{VERSION} only")
        training = decode_floats(training)
        if not isinstance(training.get("arrays"), dict):
            raise error(f"{path}: the training state's 'arrays' is missing or not a dict; the "
                        f"file is damaged or not a checkpoint")
        optimizer_state = _optimizer_state(document, reader, path)
        arrays = {}
        for name, ref in training["arrays"].items():
            if not isinstance(ref, dict) or set(ref) != {"$array"}:
                raise fmt.LoadError(f"{path}: training array '{name}' is not an array reference")
            arrays[fmt.check_name(name, f"{path}: training arrays")] = reader.get(
                ref["$array"], f"training array '{name}'")
        _check_position(training, path, error)
        metric_state(arrays, path, error)
        decode_random_state(training.get("random"), path, error)
    except fmt.LoadError as e:
        raise error(_as_damaged(path, e)) from None
    except Exception as e:  # noqa: BLE001 - libhdf5's checks of a damaged file, else re-raised
        if not raised_in_h5py(e):
            raise
        raise error(_as_damaged(path, e)) from None
    finally:
        reader.close()
    return Checkpoint(path, document, variables, n_tracked, input_shape, optimizer_state,
                      training, arrays, error)


def _optimizer_state(document, reader, path):
    state = {}
    for pair in (document.get("optimizer") or {}).get("state") or []:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict)):
            raise fmt.LoadError(f"{path}: an optimizer state entry is not [name, array]")
        key = fmt.check_name(pair[0], f"{path}: optimizer state")
        state[key] = reader.get(pair[1].get("$array"), f"optimizer state '{key}'")
    return state


def _check_position(training, path, error):
    """The fields every reader of the position needs, with their types (a writer checks the
    rest of its own entry)."""
    for field, low, high in (("epoch", 0, None), ("step", 0, None), ("order_seed", 0, 2 ** 64 - 1)):
        value = training.get(field, 0 if field == "step" else None)
        if field == "order_seed" and value is None:
            continue
        if type(value) is not int or value < low or high is not None and value > high:
            raise error(f"{path}: the training state's '{field}' is {_short(value)}, not an "
                        f"integer from {low}{'' if high is None else f' to {high}'}; the "
                        f"file is damaged or not a checkpoint of this tapeflow")
    if not isinstance(training.get("callbacks"), dict) or not all(
            isinstance(state, dict) for state in training["callbacks"].values()):
        raise error(f"{path}: the training state's 'callbacks' is "
                    f"{_short(training.get('callbacks'))}, not a dict of states; the file is "
                    f"damaged or not a checkpoint of this tapeflow")


def metric_state(arrays, where, error=ValueError):
    """``{metric name: [arrays]}`` from a checkpoint's named arrays."""
    state = {}
    for key in (k for k in arrays if k.startswith("metrics/")):
        name, _, index = key[len("metrics/"):].rpartition("/")
        if not (name and index.isdigit()):
            raise error(f"{where}: the metrics' state is damaged ('{key}')")
        state.setdefault(name, {})[int(index)] = arrays[key]
    return {name: [values[i] for i in sorted(values)] for name, values in state.items()}


def _as_damaged(path, error):
    text = str(error)
    if text.startswith(str(path)):
        text = text[len(str(path)):].lstrip(": ")
    return f"{path} is not a usable checkpoint ({text})"


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- restoring --------------------------------------------------------------------------------------
def restore_model(model, ckpt):
    """Assign ``ckpt``'s weights and optimizer state to ``model`` (built from the same config);
    everything is checked before anything is assigned."""
    try:
        plan = model.optimizer._checked_state(ckpt.optimizer_state) \
            if ckpt.optimizer_state else []
        assign_saved_weights(model, ckpt.variables, ckpt.n_tracked, ckpt.input_shape)
    except ValueError as e:
        raise ckpt._error(f"{ckpt.path} does not fit this model (a checkpoint of another "
                          f"architecture or optimizer?): {e}") from None
    for target, value in plan:
        target._replace_value(value)


def restore_random_state(ckpt):
    """The random state as the checkpoint's next step starts from it (shuffle, dropout)."""
    context().random.restore(ckpt.random_state)


def restore_callback(ckpt, key, callback, state=None):
    """``callback.set_state`` with the state ``ckpt`` keeps under ``key`` (when it keeps one);
    ``state``: that state, when the caller found it itself (under an older key)."""
    state = ckpt.callback_state(key) if state is None else state
    if state is None:
        return
    try:
        callback.set_state(state)
    except (KeyError, TypeError, ValueError) as e:
        raise ckpt._error(f"{ckpt.path}: the state of {key} is damaged ({e})") from None


def restore_metrics(model, state, where, error=ValueError):
    """Assign ``metric_state``'s values to the model's metrics (after fit reset them)."""
    metrics = dict(zip(model.metrics_names, model.metrics))
    if set(metrics) != set(state):
        raise error(f"{where}: the mid-epoch checkpoint's metrics "
                    f"({', '.join(sorted(state))}) are not the model's "
                    f"({', '.join(sorted(metrics))})")
    for name, values in state.items():
        for variable, value in zip(metrics[name].variables, values):
            variable.assign(value)
