"""``tf.train.CheckpointManager`` and ``tf.train.latest_checkpoint``: numbered checkpoints in a
directory, the oldest deleted past ``max_to_keep``, and the directory's ``checkpoint`` file
naming the latest, in TensorFlow's text format::

    model_checkpoint_path: "ckpt-3"
    all_model_checkpoint_paths: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-3"

Paths in it are relative to the directory.  It is written atomically; read, any
line it does not expect is ignored, and a path leading out of the directory is
not followed.
"""
import json
import os
import re

from .atomic import write_text_atomically
from .checkpoint import Checkpoint, checkpoint_file

__all__ = ["CheckpointManager", "CheckpointState", "latest_checkpoint", "get_checkpoint_state",
           "checkpoint_exists", "record_checkpoint"]

STATE_FILE = "checkpoint"
_LINE = re.compile(r'(model_checkpoint_path|all_model_checkpoint_paths): ("(?:[^"\\]|\\.)*")')
_STATE_BYTES = 1 << 20


def _read_state(directory, filename=STATE_FILE):
    """``(latest, [all])`` of the directory's state file (prefixes, joined to the directory),
    or ``(None, [])``."""
    path = os.path.join(directory, filename)
    if not os.path.isfile(path):
        return None, []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        text = f.read(_STATE_BYTES)
    latest, every = None, []
    for line in text.splitlines():
        m = _LINE.fullmatch(line.strip())
        if not m:
            continue
        try:
            name = json.loads(m.group(2))
        except ValueError:
            continue
        if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
            continue  # only checkpoints in this directory
        if m.group(1) == "model_checkpoint_path":
            latest = os.path.join(directory, name)
        else:
            every.append(os.path.join(directory, name))
    return latest, every


def _write_state(directory, latest, every):
    def rel(p):
        return os.path.relpath(p, directory)
    lines = [f"model_checkpoint_path: {json.dumps(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(rel(p))}" for p in every]
    write_text_atomically(os.path.join(directory, STATE_FILE), "\n".join(lines) + "\n")


def record_checkpoint(directory, path):
    """Note ``path`` as the latest checkpoint of ``directory`` (``Checkpoint.save``).  As in
    TensorFlow, a checkpoint saved without a manager is no manager's to delete: the list of
    managed checkpoints is left empty."""
    _write_state(directory, path, [])


def checkpoint_exists(prefix):
    return os.path.isfile(checkpoint_file(prefix))


class CheckpointState:
    """The directory's ``checkpoint`` file: TensorFlow's CheckpointState fields."""

    def __init__(self, latest, every):
        self.model_checkpoint_path = latest
        self.all_model_checkpoint_paths = list(every)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's CheckpointState, or None where it has no ``checkpoint`` file."""
    latest, every = _read_state(os.fspath(checkpoint_dir), latest_filename or STATE_FILE)
    return None if latest is None and not every else CheckpointState(latest, every)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the directory's latest checkpoint, or None if it has none."""
    latest, _ = _read_state(os.fspath(checkpoint_dir), latest_filename or STATE_FILE)
    if latest is None or not os.path.isfile(checkpoint_file(latest)):
        return None
    return latest


class CheckpointManager:
    """Saves ``checkpoint`` as ``<directory>/<checkpoint_name>-<n>``, keeping the newest
    ``max_to_keep`` (None: all)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
                 checkpoint_name="ckpt", step_counter=None, checkpoint_interval=None,
                 init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager manages a tf.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}")
        if max_to_keep is not None and (type(max_to_keep) is not int or max_to_keep <= 0):
            raise ValueError(f"max_to_keep must be a positive integer or None, got "
                             f"{max_to_keep!r}")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._init_fn = init_fn
        latest, every = _read_state(self._directory)
        # the latest checkpoint, managed or not; the ones a previous manager kept, still there
        self._latest = latest if latest is not None and checkpoint_exists(latest) else None
        self._checkpoints = [p for p in every if checkpoint_exists(p)]

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoints(self):
        """The kept checkpoints' prefixes, oldest first."""
        return list(self._checkpoints)

    @property
    def latest_checkpoint(self):
        return self._latest

    def restore_or_initialize(self):
        """Restore the latest checkpoint, or run ``init_fn`` where there is none."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Write a new checkpoint, delete the oldest past ``max_to_keep``; its prefix."""
        self._checkpoint.save_counter.assign_add(1)
        number = int(self._checkpoint.save_counter.numpy()) if checkpoint_number is None \
            else int(checkpoint_number)
        os.makedirs(self._directory, exist_ok=True)
        path = self._checkpoint.write(f"{self._prefix}-{number}")
        self._latest = path
        self._checkpoints = [p for p in self._checkpoints if p != path] + [path]
        if self._max_to_keep is not None:
            while len(self._checkpoints) > self._max_to_keep:
                old = self._checkpoints.pop(0)
                if checkpoint_exists(old):
                    os.remove(checkpoint_file(old))
        _write_state(self._directory, path, self._checkpoints)
        return path
