"""``tf.train.Checkpoint``: the values of the Variables reachable from some objects, keyed by
the attribute path that reaches them, as TensorFlow's object-based checkpoints are.

``Checkpoint(model=model, optimizer=opt)`` keys ``model.dense.kernel`` as
``model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE`` (each Variable once, under its
shortest path, breadth first, attributes in sorted order; list items by index,
dict items by key; an optimizer's state under its own keys).  A checkpoint is
one file, ``<prefix>.h5``, written atomically in the saved format of
``format.py`` (a JSON document and checksummed HDF5 arrays: no pickle, no
code) and read back with all of its checks.  ``restore`` assigns every value
whose key the objects have now and returns a status: ``assert_consumed()``
checks that nothing was left over on either side, ``expect_partial()`` says a
partial restore is intended (otherwise the unused values draw a warning).
"""
import collections
import os
import re
import warnings

import numpy as np

from ..core.tensor import Variable
from ..dtypes import numpy_dtype
from . import format as fmt
from .checkpoint_directory import checkpoint_file, record_checkpoint
from .format import LoadError
from .object_graph import is_tracked_object, tracked_attributes

__all__ = ["Checkpoint", "CheckpointLoadStatus"]

VARIABLE_SUFFIX = ".ATTRIBUTES/VARIABLE_VALUE"
CHECKPOINT_VERSION = 1
_KEY = re.compile(r"[^\x00-\x1f\x7f]{1,1024}")


def _escape(name):
    # TensorFlow's escaping of a name inside a key: '.' and '/' cannot be confused with the
    # separators (".ATTRIBUTES", '/')
    return str(name).replace(".", "..").replace("/", ".S")


class Checkpoint:
    """Groups objects (Modules, layers, models, optimizers, Variables, lists and dicts of
    them) to save and restore their Variables together."""

    def __init__(self, root=None, **kwargs):
        for name, value in kwargs.items():
            if name == "save_counter" or name.startswith("_"):
                raise ValueError(f"Checkpoint: '{name}' is not an attribute a Checkpoint can "
                                 f"track (save_counter is its own; names start with a letter)")
            if value is None or not _holds_variables(value):
                raise ValueError(f"Checkpoint was expecting trackable objects (Modules, layers, "
                                 f"optimizers, Variables), got {name}={value!r}")
        self._root = root
        self.save_counter = Variable(0, trainable=False, name="save_counter", dtype="int64")
        for name, value in kwargs.items():
            setattr(self, name, value)

    # --- what is saved -------------------------------------------------------------------------
    def _top_level(self):
        items = [(name, value) for name, value in sorted(vars(self).items())
                 if not name.startswith("_")]
        if self._root is not None:
            items += [(n, v) for n, v in tracked_attributes(self._root) if n not in vars(self)]
        return items

    def _keyed_variables(self):
        """``{key: Variable}``, each Variable under its shortest attribute path."""
        return self._walk()[0]

    def _walk(self):
        """``({key: Variable}, [(path, optimizer)])`` of the objects."""
        out, seen, held, optimizers = {}, set(), [], []
        queue = collections.deque((_escape(n), v) for n, v in self._top_level())
        while queue:
            path, value = queue.popleft()
            if id(value) in seen:
                continue
            seen.add(id(value))
            held.append(value)  # (ids stay unique while the walk runs)
            if isinstance(value, Variable):
                out[f"{path}/{VARIABLE_SUFFIX}"] = value
            elif isinstance(value, (list, tuple)):
                queue.extend((f"{path}/{i}", v) for i, v in enumerate(value))
            elif isinstance(value, dict):
                queue.extend((f"{path}/{_escape(k)}", v) for k, v in value.items())
            elif _is_optimizer(value):
                optimizers.append((path, value))
                slots = {id(v) for per_var in value._slots.values() for v in per_var.values()}
                queue.extend((f"{path}/{_escape(k)}", v) for k, v in value._state.items()
                             if id(v) not in slots)
            elif isinstance(value, Checkpoint):
                queue.extend((f"{path}/{_escape(n)}", v) for n, v in value._top_level())
            elif is_tracked_object(value):
                queue.extend((f"{path}/{_escape(n)}", v) for n, v in tracked_attributes(value))
        for path, optimizer in optimizers:
            out.update(_slot_keys(path, optimizer, out))
        return out, optimizers

    def _build_optimizers_for(self, values):
        """Make the slots the checkpoint holds values for and an optimizer has not made yet
        (it has not trained those variables): TensorFlow restores a slot when it is
        created; here the optimizer builds them now, for the variables in the order the
        objects' ``trainable_variables`` list them.  Whether any was made."""
        keyed, optimizers = self._walk()
        made = False
        for path, optimizer in optimizers:
            marker = f"/.OPTIMIZER_SLOT/{path}/"
            wanted = {}
            for key in values:
                if marker in key:
                    variable = keyed.get(f"{key.split(marker)[0]}/{VARIABLE_SUFFIX}")
                    if variable is not None and variable._id not in optimizer._slots:
                        wanted[variable._id] = variable
            if wanted:
                optimizer.build(self._in_training_order(wanted))
                made = True
        return made

    def _in_training_order(self, by_id):
        order = []
        for _, value in self._top_level():
            for v in getattr(value, "trainable_variables", ()) or ():
                if isinstance(v, Variable) and v._id in by_id and v not in order:
                    order.append(by_id.pop(v._id))
        return order + list(by_id.values())

    # --- writing -------------------------------------------------------------------------------
    def write(self, file_prefix, options=None):
        """Write the checkpoint at ``file_prefix`` (one file, ``<prefix>.h5``); the prefix."""
        arrays = fmt.ArrayWriter()
        entries = []
        for key, variable in self._keyed_variables().items():
            value = np.asarray(variable.numpy())
            entries.append({"key": key, "shape": list(value.shape), "dtype": value.dtype.name,
                            "value": {"$array": arrays.add(value)}})
        fmt.write(checkpoint_file(file_prefix), {"kind": "checkpoint",
                                                 "checkpoint_version": CHECKPOINT_VERSION,
                                                 "values": entries}, arrays)
        return os.fspath(file_prefix)

    def save(self, file_prefix, options=None):
        """Count a save, write ``<file_prefix>-<count>`` and record it as the directory's
        latest checkpoint (``tf.train.latest_checkpoint``); the path written."""
        self.save_counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter.numpy())}")
        record_checkpoint(os.path.dirname(os.path.abspath(path)), path)
        return path

    # --- reading -------------------------------------------------------------------------------
    def read(self, save_path, options=None):
        """Restore from ``save_path`` (as ``restore``)."""
        return self.restore(save_path, options)

    def restore(self, save_path, options=None):
        """Assign the saved values to the Variables with the same keys; a status.  With
        ``save_path=None`` (no checkpoint yet) nothing is restored."""
        targets = self._keyed_variables()
        if save_path is None:
            return CheckpointLoadStatus({}, targets, set(), expect_any=False)
        values = read_values(save_path)
        if self._build_optimizers_for(values):
            targets = self._keyed_variables()
        restored = set()
        for key, value in values.items():
            variable = targets.get(key)
            if variable is None:
                continue
            expected = (tuple(variable.shape), np.dtype(numpy_dtype(variable.dtype)))
            if (value.shape, value.dtype) != expected:
                raise ValueError(f"checkpoint {save_path}: '{key}' is {value.dtype.name}"
                                 f"{list(value.shape)}, the Variable it restores "
                                 f"{expected[1].name}{list(expected[0])}")
            variable.assign(value)
            restored.add(key)
        return CheckpointLoadStatus(values, targets, restored, expect_any=True)


def _slot_keys(optimizer_path, optimizer, keyed):
    """An optimizer's slots keyed, as TensorFlow keys them, after the variable they belong to
    (``model/dense/kernel/.OPTIMIZER_SLOT/optimizer/momentum``): the same in any process,
    whatever names the layers were given; a slot of a variable the checkpoint does not hold
    goes under the optimizer with its state key."""
    variable_path = {v._id: key[:-len(VARIABLE_SUFFIX) - 1] for key, v in keyed.items()}
    state_key = {id(v): k for k, v in optimizer._state.items()}
    out = {}
    for var_id, slots in optimizer._slots.items():
        for slot_name, slot in slots.items():
            base = variable_path.get(var_id)
            key = f"{optimizer_path}/{_escape(state_key.get(id(slot), slot_name))}" \
                if base is None else f"{base}/.OPTIMIZER_SLOT/{optimizer_path}/{_escape(slot_name)}"
            out[f"{key}/{VARIABLE_SUFFIX}"] = slot
    return out


def _holds_variables(value):
    return isinstance(value, (Variable, Checkpoint, list, tuple, dict)) or \
        is_tracked_object(value) or _is_optimizer(value)


def _is_optimizer(value):
    from ..optimizers.base import Optimizer
    return isinstance(value, Optimizer)


def read_values(save_path):
    """``{key: numpy array}`` of the checkpoint at ``save_path``, checked."""
    path = checkpoint_file(save_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {save_path} (its file {path} does not exist)")
    document, arrays = fmt.read(path)
    try:
        if document.get("kind") != "checkpoint":
            raise LoadError(f"{path} is a tapeflow save of kind "
                            f"{fmt._short(document.get('kind'))}, not a checkpoint")
        if document.get("checkpoint_version") != CHECKPOINT_VERSION:
            raise LoadError(f"{path} is a checkpoint of version "
                            f"{fmt._short(document.get('checkpoint_version'))}; this tapeflow "
                            f"reads version {CHECKPOINT_VERSION}")
        entries = document.get("values")
        if not isinstance(entries, list) or len(entries) > fmt.LIMITS["arrays"]:
            raise LoadError(f"{path}: the checkpoint's values are not a list")
        out = {}
        for i, e in enumerate(entries):
            if not (isinstance(e, dict) and set(e) == {"key", "shape", "dtype", "value"}
                    and isinstance(e["key"], str) and _KEY.fullmatch(e["key"])
                    and e["key"] not in out and isinstance(e["value"], dict)
                    and set(e["value"]) == {"$array"}):
                raise LoadError(f"{path}: value {i} is not {{key, shape, dtype, value}} with a "
                                f"new, printable key")
            shape = fmt._shape(e["shape"], path, f"'{e['key']}'")
            if None in shape:
                raise LoadError(f"{path}: '{e['key']}' has an unknown dimension")
            dtype = fmt._dtype(e["dtype"], path)
            out[e["key"]] = arrays.get(e["value"]["$array"], f"'{e['key']}'",
                                       expect=(shape, dtype))
        return out
    finally:
        arrays.close()


class CheckpointLoadStatus:
    """What a restore matched: TensorFlow's status object."""

    def __init__(self, values, targets, restored, expect_any):
        self._unused = sorted(set(values) - restored)
        self._missing = sorted(set(targets) - restored)
        self._expect_any = expect_any
        self._restored = len(restored)
        self._partial_ok = False

    def assert_consumed(self):
        """Every saved value restored a Variable and every Variable was restored."""
        if self._unused:
            raise AssertionError(f"Unresolved object in checkpoint: {self._unused[:10]} "
                                 f"({len(self._unused)} saved values match no Variable)")
        self.assert_existing_objects_matched()
        return self

    def assert_existing_objects_matched(self):
        """Every Variable of the objects was restored."""
        if self._missing:
            raise AssertionError(f"Some objects had attributes which were not restored: "
                                 f"{self._missing[:10]} ({len(self._missing)} in all)")
        return self

    def assert_nontrivial_match(self):
        if not self._restored:
            raise AssertionError("No checkpoint value was matched to the objects")
        return self

    def expect_partial(self):
        """A partial restore is intended: no warning about the values left unused."""
        self._partial_ok = True
        return self

    def run_restore_ops(self, session=None):
        """Restoring is eager: nothing left to run (TensorFlow 1's graph-mode step)."""

    def __del__(self):
        if self._unused and self._expect_any and not self._partial_ok:
            warnings.warn(f"A checkpoint was restored but {len(self._unused)} of its values "
                          f"were not used (e.g. {self._unused[:3]}); call expect_partial() on "
                          f"the status if that is intended", stacklevel=1)
