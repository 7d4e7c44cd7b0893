"""A checkpoint directory's ``checkpoint`` file, in TensorFlow's text format, naming its latest
checkpoint (``tf.train.latest_checkpoint``, ``get_checkpoint_state``)::

    model_checkpoint_path: "ckpt-3"
    all_model_checkpoint_paths: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-3"

Paths in it are relative to the directory.  It is written atomically; read, any
line it does not expect is ignored, and a path leading out of the directory is
not followed.  ``Checkpoint.save`` and ``CheckpointManager`` both write it, so it sits below them.
"""
import json
import os
import re

from .atomic import write_text_atomically


__all__ = ["CheckpointState", "checkpoint_exists", "checkpoint_file", "get_checkpoint_state",
           "latest_checkpoint", "read_state", "record_checkpoint", "write_state"]

STATE_FILE = "checkpoint"
_LINE = re.compile(r'(model_checkpoint_path|all_model_checkpoint_paths): ("(?:[^"\\]|\\.)*")')
_STATE_BYTES = 1 << 20


def read_state(directory, filename=STATE_FILE):
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


def write_state(directory, latest, every):
    def rel(p):
        return os.path.relpath(p, directory)
    lines = [f"model_checkpoint_path: {json.dumps(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(rel(p))}" for p in every]
    write_text_atomically(os.path.join(directory, STATE_FILE), "\n".join(lines) + "\n")


def record_checkpoint(directory, path):
    """Note ``path`` as the latest checkpoint of ``directory`` (``Checkpoint.save``).  As in
    TensorFlow, a checkpoint saved without a manager is no manager's to delete: the list of
    managed checkpoints is left empty."""
    write_state(directory, path, [])


def checkpoint_file(prefix):
    """The file of the checkpoint at ``prefix`` (``ckpt-3`` is ``ckpt-3.h5``)."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(".h5") else prefix + ".h5"


def checkpoint_exists(prefix):
    return os.path.isfile(checkpoint_file(prefix))


class CheckpointState:
    """The directory's ``checkpoint`` file: TensorFlow's CheckpointState fields."""

    def __init__(self, latest, every):
        self.model_checkpoint_path = latest
        self.all_model_checkpoint_paths = list(every)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's CheckpointState, or None where it has no ``checkpoint`` file."""
    latest, every = read_state(os.fspath(checkpoint_dir), latest_filename or STATE_FILE)
    return None if latest is None and not every else CheckpointState(latest, every)


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the directory's latest checkpoint, or None if it has none."""
    latest, _ = read_state(os.fspath(checkpoint_dir), latest_filename or STATE_FILE)
    if latest is None or not os.path.isfile(checkpoint_file(latest)):
        return None
    return latest
