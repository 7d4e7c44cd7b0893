"""``tf.train.CheckpointManager``: numbered checkpoints in a directory, the oldest deleted past
``max_to_keep``, recorded in the directory's ``checkpoint`` file (``checkpoint_directory.py``).
"""
import os

from .checkpoint import Checkpoint
from .checkpoint_directory import (  # noqa: F401  (tf.train's names, imported from here too)
    CheckpointState, checkpoint_exists, checkpoint_file, get_checkpoint_state, latest_checkpoint,
    read_state, record_checkpoint, write_state,
)

__all__ = ["CheckpointManager", "CheckpointState", "latest_checkpoint", "get_checkpoint_state",
           "checkpoint_exists", "record_checkpoint"]


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
        latest, every = read_state(self._directory)
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
        write_state(self._directory, path, self._checkpoints)
        return path
