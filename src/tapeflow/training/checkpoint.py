"""Trainer checkpoints: where a run's files lie, and the trainer's reading of them.

A checkpoint is the one file ``saving.training_checkpoint`` writes (what ``BackupAndRestore``
writes too): a Keras save of the model plus the training entry: the data position, the
random state, each stateful callback's state and the metrics' running state mid-epoch.  The
trainer adds its run config, history, data fingerprint and whether the run finished or early
stopping ended it; ``read_checkpoint`` checks all of those (``checkpoint_state.check``) and
raises one ``CheckpointError`` naming the file and the field.  So
``tf.keras.models.load_model`` reads a checkpoint, and a run resumed from one goes on exactly
as if it had never stopped.

Files are written to a temporary file in the same directory, flushed and synced, then renamed
over the old name, so a crash mid-write leaves the previous checkpoint whole; temporaries
left by a crash are never read and are removed by ``clean_temporaries``.
"""
import glob
import os
import re
import warnings

from ..saving import training_checkpoint as one_checkpoint
from ..saving.atomic import clean_temporaries
from . import checkpoint_state as training_state
from .errors import CheckpointError

__all__ = ["write_checkpoint", "read_checkpoint", "Checkpoint", "restore_model", "kept_state",
           "last_good_checkpoint", "resolve_checkpoint", "clean_temporaries", "epoch_path",
           "step_path", "prune_steps",
           "CHECKPOINT_DIR", "FINAL_NAME", "BEST_NAME"]

TRAINING_VERSION = one_checkpoint.VERSION
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


# --- writing and reading -------------------------------------------------------------------------
Checkpoint = one_checkpoint.Checkpoint


def write_checkpoint(path, model, training, arrays_by_name=None):
    """Write ``model`` and the trainer's ``training`` state (a JSON-ready dict: the position
    ``epoch``/``step``/``order_seed``, ``callbacks`` as ``{key: state}`` and its own fields)
    to ``path``, atomically; ``arrays_by_name``: arrays the callbacks' states refer to."""
    training = dict(training)
    position = one_checkpoint.Position(training.pop("epoch"), training.pop("step", 0),
                                       training.pop("order_seed", None))
    for generic in ("version", "random", "arrays"):  # the writer's own
        training.pop(generic, None)
    one_checkpoint.write(path, model, position, extra=dict(training, arrays=arrays_by_name))


def read_checkpoint(path):
    """The ``Checkpoint`` at ``path``; a ``CheckpointError`` saying why when it is not one."""
    path = os.fspath(path)
    ckpt = one_checkpoint.read(path, CheckpointError, what="a trainer checkpoint")
    training_state.check(ckpt.training, ckpt.arrays, path)
    return ckpt


restore_model = one_checkpoint.restore_model


def kept_state(ckpt, callback):
    """The state ``ckpt`` keeps for ``callback``: under its ``state_key``, or in a checkpoint
    written before the keying, under the fixed key the trainer kept its class's state under."""
    state = ckpt.callback_state(callback.state_key)
    if state is not None:
        return state
    for key in training_state.fixed_keys_of(type(callback).__name__):
        state = ckpt.callback_state(key)
        if state is not None:
            return training_state.as_current(key, state)
    return None


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
