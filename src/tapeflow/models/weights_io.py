"""``save_weights`` / ``load_weights``: HDF5 files keyed by each variable's place in the model.

Keyed by name, not by position (a Keras trap): the key of a variable is its
path down the model's layers, ``sequential/dense_1/kernel``, with each layer
named as a new process would name it (its class, numbered among its
siblings: ``dense``, ``dense_1``), or by the name the user gave it.  So a
model built again in the same process (whose variables are then named
``sequential_1/dense_2/kernel``) loads the file, and in a fresh process the
keys are the variables' own paths.  Each dataset also records the variable's
path as its ``variable_path`` attribute.

A compiled model's optimizer state goes in the same file, in an ``optimizer``
group beside ``weights`` (which is unchanged), keyed as ``optimizer.get_state()``
keys it: ``iteration``, and ``sequential/dense/kernel/momentum`` for a slot.
That is ``weight_keys`` again, the one key function for weights and optimizer
slots: ``Model.compile`` hands it to the optimizer.  The group's ``class_name``
attribute names the optimizer's class.  The group is written once the optimizer
has state for some variable, read into a model compiled with an optimizer of
that class, skipped with a warning for another class, and ignored for a model
not compiled.

Loading into a model whose variables, or whose optimizer's state, have other
names or shapes fails with a message naming them, before anything is assigned.
Writes go to a temporary file renamed into place, so a failed save never leaves
a half-written file where a good one was.
"""
import os
import re
import warnings

import numpy as np

from .. import backend
from ..serialization import snake_case

__all__ = ["save_weights", "load_weights", "weight_keys"]


def _free(name, taken):
    key, n = name, 0
    while key in taken:
        n += 1
        key = f"{name}_{n}"
    taken.add(key)
    return key


def _component(layer):
    """A layer's name in a key: its own name if the user chose it, else its class's."""
    base = snake_case(type(layer).__name__)
    return base if re.fullmatch(re.escape(base) + r"(_\d+)?", layer.name) else layer.name


def weight_keys(model):
    """``[(key, variable), ...]`` in ``model.weights`` order (a shared variable once)."""
    out, seen = [], set()

    def walk(layer, prefix):
        taken = set()
        for v in layer._own_weights:
            key = prefix + "/" + _free(v.path.rsplit("/", 1)[-1], taken)
            if id(v) not in seen:
                seen.add(id(v))
                out.append((key, v))
        for child in layer._tracked_layers:
            walk(child, prefix + "/" + _free(_component(child), taken))
    walk(model, _component(model))
    return out


def _optimizer_with_state(model):
    optimizer = getattr(model, "optimizer", None)
    return optimizer if optimizer is not None and optimizer.built else None


def save_weights(model, filepath):
    import h5py  # imported when a file is written or read, not with the package
    filepath = os.fspath(filepath)
    keyed = weight_keys(model)
    if not keyed:
        raise ValueError(f"save_weights: model '{model.name}' has no weights yet; build it first "
                         f"(call it on a batch, or start a Sequential with Input(shape=...))")
    tmp = f"{filepath}.{os.getpid()}.tmp"  # same directory, so the rename is atomic
    try:
        with h5py.File(tmp, "w") as f:
            group = f.create_group("weights")
            for key, v in keyed:
                dataset = group.create_dataset(key, data=np.asarray(backend.to_host(v._value)))
                dataset.attrs["variable_path"] = v.path
            optimizer = _optimizer_with_state(model)
            if optimizer is not None:
                group = f.create_group("optimizer")
                group.attrs["class_name"] = type(optimizer).__name__
                for key, value in optimizer.get_state().items():
                    group.create_dataset(key, data=value)
        os.replace(tmp, filepath)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_weights(model, filepath):
    import h5py
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"load_weights: no file at {filepath}")
    with h5py.File(filepath, "r") as f:
        whole_model = "weights" not in f and f.attrs.get("format") is not None
        if "weights" not in f and not whole_model:
            raise ValueError(f"load_weights: {filepath} holds no tapeflow weights")
        if not whole_model:
            stored = _datasets(f["weights"])
            saved_optimizer = f["optimizer"].attrs.get("class_name") if "optimizer" in f \
                else None
            optimizer_state = _datasets(f["optimizer"]) if saved_optimizer is not None else None
    if whole_model:  # a model.save / ModelCheckpoint file: its weights (and optimizer state)
        stored, saved_optimizer, optimizer_state = _from_saved_model(filepath)
    keyed = weight_keys(model)
    if not keyed and stored:
        raise ValueError(f"load_weights: model '{model.name}' has no weights yet; build it first "
                         f"(call it on a batch, or start a Sequential with Input(shape=...))")
    missing = [key for key, _ in keyed if key not in stored]
    unexpected = sorted(set(stored) - {key for key, _ in keyed})
    if missing or unexpected:
        raise ValueError(f"load_weights: {filepath} does not match model '{model.name}': "
                         f"the model's {missing} are not in the file, and the file's "
                         f"{unexpected} are not in the model")
    for key, v in keyed:
        value = stored[key]
        if tuple(value.shape) != tuple(v.shape):
            raise ValueError(f"load_weights: {key} has shape {tuple(v.shape)} in the model "
                             f"but {tuple(value.shape)} in {filepath}")
    optimizer_plan = _optimizer_plan(model, optimizer_state, saved_optimizer, filepath)
    for key, v in keyed:
        v.assign(stored[key].astype(v._value.dtype))
    for target, value in optimizer_plan:
        target._replace_value(value)


def _from_saved_model(filepath):
    """``(weights by key, optimizer class name, optimizer state)`` of a whole-model save, read
    through the saved format's checked loader."""
    from ..saving import format as fmt
    from ..saving.saved_model import load_variables
    document, arrays = fmt.read(filepath)
    try:
        if document.get("kind") != "keras_model":
            raise ValueError(f"load_weights: {filepath} is not a saved Keras model")
        variables = load_variables(document, arrays, filepath)
        n = document.get("tracked_variables")
        if type(n) is not int or not 0 <= n <= len(variables):
            raise ValueError(f"load_weights: {filepath}: tracked_variables is not a count")
        stored = {v.path: backend.to_host(v._value) for v in variables[:n]}
        optimizer = document.get("optimizer") or {}
        config = optimizer.get("config") or {}
        class_name = config.get("class_name") if isinstance(config, dict) else None
        state = {}
        for pair in optimizer.get("state") or []:
            key = fmt.check_name(pair[0], f"{filepath}: optimizer state")
            state[key] = arrays.get(pair[1]["$array"], f"optimizer state '{key}'")
    finally:
        arrays.close()
    return stored, class_name, (state if class_name is not None and state else None)


def _datasets(group):
    """``{path in group: array}`` of every dataset under ``group``."""
    import h5py
    found = {}
    group.visititems(lambda name, obj: found.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return found


def _optimizer_plan(model, state, class_name, filepath):
    """What loading the file's optimizer state assigns, checked, for a compiled model."""
    optimizer = getattr(model, "optimizer", None)
    if state is None or optimizer is None:
        return []
    if class_name != type(optimizer).__name__:
        warnings.warn(f"load_weights: {filepath} holds optimizer state of class {class_name}, "
                      f"but model '{model.name}' is compiled with {type(optimizer).__name__}: "
                      f"only the weights were loaded.", stacklevel=4)
        return []
    try:
        return optimizer._checked_state(state)
    except ValueError as err:
        raise ValueError(f"load_weights: {filepath} does not match model '{model.name}': "
                         f"{err}") from None
