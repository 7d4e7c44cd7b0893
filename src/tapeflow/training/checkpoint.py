"""Trainer checkpoints: one HDF5 file holding everything a run needs to go on.

A checkpoint is a Keras save (``saving.keras_saving.model_document``: the
model's config, every variable keyed by the model's structure, the optimizer's
config and state, the call traced as a graph with its custom gradients) plus a
``training`` entry: the epochs done (and, mid-epoch, the steps done into the next one, its
shuffle order's seed and its metrics' running state), the random state, the metric history,
early stopping's and the best checkpoint's state, the resolved run config and
the data's fingerprint.  So ``tf.keras.models.load_model`` reads a checkpoint,
and a run resumed from one goes on exactly as if it had never stopped.

Files are written by ``saving.format.write``: to a temporary file in the same
directory, flushed and synced, then renamed over the old name, so a crash
mid-write leaves the previous checkpoint whole; temporaries left by a crash
are never read and are removed by ``clean_temporaries``.  Every dataset has a
checksum, so a truncated or altered file is refused rather than loaded, and
reading never imports, unpickles or evaluates anything from the file.
"""
import glob
import os
import re
import warnings

import numpy as np

from ..core.context import context
from ..saving import format as fmt
from ..saving.damaged import raised_in_h5py
from ..saving.atomic import clean_temporaries
from ..saving.keras_saving import assign_saved_weights, model_document
from ..saving.saved_model import read_contents
from . import checkpoint_state as training_state
from .errors import CheckpointError
from .loop_state import metric_state

__all__ = ["write_checkpoint", "read_checkpoint", "Checkpoint", "restore_model",
           "last_good_checkpoint", "resolve_checkpoint", "clean_temporaries", "epoch_path",
           "step_path", "prune_steps",
           "CHECKPOINT_DIR", "FINAL_NAME", "BEST_NAME"]

TRAINING_VERSION = 1
CHECKPOINT_DIR = "checkpoints"
FINAL_NAME = "model.h5"     # the trained model, written when a run ends
BEST_NAME = "best.h5"
_EPOCH_FILE = re.compile(r"^epoch-(\d{4,})\.h5$")
_STEP_FILE = re.compile(r"^epoch-(\d{4,})-step-(\d{6,})\.h5$")


def run_directory_holding(path):
    """The run directory that ``path`` lies in (it or an ancestor holds a checkpoints folder or a
    final model), or None."""
    directory = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.isdir(os.path.join(directory, CHECKPOINT_DIR)) or \
                os.path.isfile(os.path.join(directory, FINAL_NAME)):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def epoch_path(run_dir, epoch):
    """The checkpoint written after ``epoch`` epochs."""
    return os.path.join(run_dir, CHECKPOINT_DIR, f"epoch-{epoch:04d}.h5")


def step_path(run_dir, epoch, step):
    """The checkpoint written mid-epoch, after ``epoch`` epochs and ``step`` steps of the next."""
    return os.path.join(run_dir, CHECKPOINT_DIR, f"epoch-{epoch:04d}-step-{step:06d}.h5")


# --- writing ---------------------------------------------------------------------------------------
def write_checkpoint(path, model, training, arrays_by_name=None):
    """Write ``model`` and the ``training`` state (a JSON-ready dict) to ``path``, atomically.

    ``arrays_by_name`` are further arrays the training state needs (early stopping's best
    weights), stored with the model's and referred to from ``training["arrays"]``.
    """
    arrays = fmt.ArrayWriter()
    document = model_document(model, arrays)
    extra = {name: {"$array": arrays.add(np.asarray(a))}
             for name, a in (arrays_by_name or {}).items()}
    document["training"] = training_state.encode(dict(
        training, version=TRAINING_VERSION,
        random=encode_random_state(context().random.snapshot()), arrays=extra))
    fmt.write(path, document, arrays)


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


def decode_random_state(doc, where):
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
        raise CheckpointError(f"{where}: the random state is damaged ({e})") from None
    return seed, bit_state, counts


# --- reading ---------------------------------------------------------------------------------------
class Checkpoint:
    """A checkpoint read whole and checked: its variables, optimizer state and training state."""

    def __init__(self, path, document, variables, n_tracked, input_shape, optimizer_state,
                 training, arrays):
        self.path = path
        self.document = document
        self.variables = variables
        self.n_tracked = n_tracked
        self.input_shape = input_shape
        self.optimizer_state = optimizer_state
        self.training = training
        self.arrays = arrays          # the training state's named arrays

    @property
    def epoch(self):
        return self.training["epoch"]

    @property
    def config(self):
        return self.training["config"]

    @property
    def random_state(self):
        return decode_random_state(self.training["random"], self.path)


def read_checkpoint(path):
    """The ``Checkpoint`` at ``path``; a ``CheckpointError`` saying why when it is not one."""
    path = os.fspath(path)
    try:
        document, reader = fmt.read(path)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except (fmt.LoadError, OSError) as e:
        raise CheckpointError(_as_damaged(path, e)) from None
    try:
        variables, n_tracked, _ = read_contents(document, reader, path, "keras_model",
                                                "tf.saved_model.load", min_tracked=1)
        input_shape = fmt._shape(document.get("input_shape"), path, "the input")
        training = document.get("training")
        if not isinstance(training, dict) or training.get("version") != TRAINING_VERSION:
            raise CheckpointError(f"{path} is a saved model, not a trainer checkpoint (it has "
                                  f"no training state of version {TRAINING_VERSION})")
        training = training_state.decode(training)
        if not isinstance(training.get("arrays"), dict):  # the rest: training_state.check
            raise CheckpointError(f"{path}: the training state's 'arrays' is missing or not "
                                  f"a dict; the file is damaged or not a checkpoint")
        optimizer_state = {}
        opt = document.get("optimizer") or {}
        for pair in opt.get("state") or []:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict)):
                raise fmt.LoadError(f"{path}: an optimizer state entry is not [name, array]")
            key = fmt.check_name(pair[0], f"{path}: optimizer state")
            optimizer_state[key] = reader.get(pair[1].get("$array"), f"optimizer state '{key}'")
        arrays = {}
        for name, ref in training["arrays"].items():
            if not isinstance(ref, dict) or set(ref) != {"$array"}:
                raise fmt.LoadError(f"{path}: training array '{name}' is not an array reference")
            arrays[fmt.check_name(name, f"{path}: training arrays")] = reader.get(
                ref["$array"], f"training array '{name}'")
        training_state.check(training, arrays, path)
        metric_state(arrays, path)
    except fmt.LoadError as e:
        raise CheckpointError(_as_damaged(path, e)) from None
    except Exception as e:  # noqa: BLE001 - libhdf5's checks of a damaged file, else re-raised
        if not raised_in_h5py(e):
            raise
        raise CheckpointError(_as_damaged(path, e)) from None
    finally:
        reader.close()
    return Checkpoint(path, document, variables, n_tracked, input_shape, optimizer_state,
                      training, arrays)


def _as_damaged(path, error):
    text = str(error)
    if text.startswith(str(path)):
        text = text[len(str(path)):].lstrip(": ")
    return f"{path} is not a usable checkpoint ({text})"


def restore_model(model, ckpt):
    """Assign ``ckpt``'s weights and optimizer state to ``model`` (built from the same config);
    everything is checked before anything is assigned."""
    try:
        plan = model.optimizer._checked_state(ckpt.optimizer_state) \
            if ckpt.optimizer_state else []
        assign_saved_weights(model, ckpt.variables, ckpt.n_tracked, ckpt.input_shape)
    except ValueError as e:
        raise CheckpointError(f"{ckpt.path} does not fit this model (a checkpoint of another "
                              f"architecture or optimizer?): {e}") from None
    for target, value in plan:
        target._replace_value(value)


# --- finding checkpoints -----------------------------------------------------------------------------
def epoch_checkpoints(run_dir):
    """``[(epoch, path), ...]`` of a run's epoch checkpoints, newest first."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(run_dir), CHECKPOINT_DIR, "epoch-*.h5")):
        match = _EPOCH_FILE.match(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found, reverse=True)


def step_checkpoints(run_dir):
    """``[((epoch, step), path), ...]`` of a run's mid-epoch checkpoints, newest first."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(run_dir), CHECKPOINT_DIR, "epoch-*-step-*.h5")):
        match = _STEP_FILE.match(os.path.basename(path))
        if match:
            found.append(((int(match.group(1)), int(match.group(2))), path))
    return sorted(found, reverse=True)


def last_good_checkpoint(run_dir, skipped=None):
    """The newest checkpoint of ``run_dir``, epoch or mid-epoch, that reads back whole and
    valid, or None when the run has none.  Each one passed over is appended to the list
    ``skipped`` (its ``CheckpointError``), or without one is a warning."""
    every = [((epoch, 0), path) for epoch, path in epoch_checkpoints(run_dir)]
    for _, path in sorted(every + step_checkpoints(run_dir), reverse=True):
        try:
            return read_checkpoint(path)
        except CheckpointError as e:
            if skipped is None:
                warnings.warn(f"skipping a damaged checkpoint: {e}", stacklevel=2)
            else:
                skipped.append(e)
    return None


def resolve_checkpoint(path):
    """What ``tapeflow evaluate/predict/inspect PATH`` reads: a checkpoint file, or for a run
    directory its final model, else its last good epoch checkpoint."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return read_checkpoint(path)
    final = os.path.join(path, FINAL_NAME)
    if os.path.exists(final):
        return read_checkpoint(final)
    skipped = []
    ckpt = last_good_checkpoint(path, skipped)
    if ckpt is None and skipped:  # one line saying why each is not usable
        raise CheckpointError(f"{path}: no usable checkpoint in this directory ("
                              + "; ".join(map(str, skipped)) + ")")
    if ckpt is None:
        raise CheckpointError(f"{path}: no checkpoint in this directory (a run directory holds "
                              f"{FINAL_NAME} or {CHECKPOINT_DIR}/epoch-NNNN.h5)")
    for error in skipped:
        warnings.warn(f"skipping a damaged checkpoint: {error}", stacklevel=2)
    return ckpt


def prune(run_dir, keep_last):
    """Remove all but the newest ``keep_last`` epoch checkpoints, and the mid-epoch ones: an
    epoch checkpoint was just written after them."""
    for _, path in epoch_checkpoints(run_dir)[keep_last:]:
        os.remove(path)
    prune_steps(run_dir, keep=0)


def prune_steps(run_dir, keep=1):
    """Remove all but the newest ``keep`` mid-epoch checkpoints (an older one is never needed:
    a resume starts from the newest that reads back, and the epoch checkpoints stay)."""
    for _, path in step_checkpoints(run_dir)[keep:]:
        os.remove(path)
