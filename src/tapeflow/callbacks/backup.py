"""``BackupAndRestore``: a ``fit`` that was interrupted goes on from its last backup (Keras's).

After each epoch (or every ``save_freq`` batches) the callback writes, in
``backup_dir``, the model's weights and optimizer state with ``save_weights``'s
file, then ``state.json``: the epochs done, the name of that weights file and
the random state (the next epoch's shuffle and dropout draws).  ``state.json``
is written to a temporary file and renamed over the old one, and a weights file
is removed only once a newer ``state.json`` names another: a process killed at
any moment leaves a backup that reads back whole.

A ``fit`` given the callback again (in a new process: build and compile the
same model first) restores that state as training begins and starts at the
next epoch, so with ``save_freq="epoch"`` the finished run is the one that was
never interrupted, bit for bit.  With ``save_freq=N`` the epoch in progress is
run again from its start with the weights of the last backup (as in Keras).
Other callbacks' state (EarlyStopping's counts) is not backed up, as in Keras.
A fit that ends normally deletes the backup (``delete_checkpoint=True``).

Under ``tf.distribute.MPIStrategy`` rank 0 alone writes (and deletes) the backup; every rank
restores from it, so ``backup_dir`` must be a directory all ranks see (a shared file system
across machines).  The ranks check they restored the same backup; one that found another (or
none) stops every rank with a message, rather than training a different number of steps.
"""
import glob
import json
import numbers
import os

from .. import replication
from ..core.context import context
from ..saving import format as fmt
from ..saving.atomic import write_atomically
from .base import Callback

__all__ = ["BackupAndRestore"]

STATE_NAME = "state.json"
STATE_VERSION = 1


class BackupAndRestore(Callback):
    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: backup_dir is required (a directory for the "
                             "backup files)")
        if not (save_freq == "epoch" or save_freq is False or (
                isinstance(save_freq, numbers.Integral) and not isinstance(save_freq, bool)
                and save_freq > 0)):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch', a positive number of "
                             f"batches or False, got {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = bool(delete_checkpoint)
        self._epoch = 0
        self._batches_seen = 0

    def get_state(self):
        """Its counters: the epoch in progress and the batches seen (``save_freq``'s count)."""
        return {"epoch": self._epoch, "batches_seen": self._batches_seen}

    def set_state(self, state):
        epoch, seen = state["epoch"], state["batches_seen"]
        if type(epoch) is not int or type(seen) is not int or epoch < 0 or seen < 0:
            raise ValueError(f"BackupAndRestore: the state {state!r} is not two counts "
                             f"(integers of at least 0)")
        self._epoch, self._batches_seen = epoch, seen

    @property
    def _state_path(self):
        return os.path.join(self.backup_dir, STATE_NAME)

    @property
    def needs_built_model(self):
        """True when there is a backup to restore: ``fit`` then builds an unbuilt model first."""
        return os.path.exists(self._state_path)

    @property
    def _writes(self):
        """False on MPI ranks other than 0: rank 0 alone writes the backup."""
        return replication.rank(self.model) == 0

    # --- restoring -------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._batches_seen = 0
        self._epoch = 0
        state = self._read_state()
        _same_backup_on_every_rank(self.model, state, self.backup_dir)
        if self._writes:
            _remove_stray_files(self.backup_dir, keep=None if state is None else state["weights"])
        if state is None:
            return
        if not self.model.built:
            raise ValueError(f"BackupAndRestore: model '{self.model.name}' is not built, so the "
                             f"backup in {self.backup_dir} cannot be loaded into it; build it "
                             f"first (call it on a batch, or start it with tf.keras.Input)")
        self.model.load_weights(os.path.join(self.backup_dir, state["weights"]))
        context().random.restore(_decode_random(state["random"], self._state_path))
        self._epoch = state["epoch"]
        self.model._initial_epoch = self._epoch  # fit starts at the epoch after the backup

    def _read_state(self):
        path = self._state_path
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
            if state.get("version") != STATE_VERSION or type(state.get("epoch")) is not int \
                    or not isinstance(state.get("weights"), str) \
                    or os.path.basename(state["weights"]) != state["weights"]:
                raise ValueError("not a backup state of this version")
        except (OSError, ValueError, AttributeError) as e:
            raise ValueError(f"BackupAndRestore: {path} is damaged ({e}); delete {self.backup_dir} "
                             f"to start training afresh") from None
        return state

    # --- backing up ------------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, bool) or not isinstance(self.save_freq, numbers.Integral):
            return
        self._batches_seen += 1
        if self._batches_seen % self.save_freq == 0:
            # the epoch in progress is run again from its start on resuming (Keras's rule)
            self._backup(self._epoch, batch)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._backup(epoch + 1, None)

    def _backup(self, epochs_done, batch):
        if not self._writes:
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        name = f"weights-{epochs_done:05d}" + ("" if batch is None else f"-{batch:06d}") \
            + ".weights.h5"
        self.model.save_weights(os.path.join(self.backup_dir, name))
        state = {"version": STATE_VERSION, "epoch": epochs_done, "batch": batch,
                 "weights": name, "random": _encode_random(context().random.snapshot())}
        text = json.dumps(state, allow_nan=False).encode("utf-8")
        # the commit point: until this rename, state.json names the previous (whole) weights
        write_atomically(self._state_path, lambda tmp: fmt._write_bytes(tmp, text))
        _remove_stray_files(self.backup_dir, keep=name)

    def on_train_end(self, logs=None):
        if not self.delete_checkpoint or not self._writes or not os.path.isdir(self.backup_dir):
            return
        if os.path.exists(self._state_path):
            os.remove(self._state_path)
        _remove_stray_files(self.backup_dir, keep=None)
        try:
            os.rmdir(self.backup_dir)  # only when nothing else was put there
        except OSError:
            pass


def _same_backup_on_every_rank(model, state, backup_dir):
    """Under an MPIStrategy: raise on every rank when the ranks found different backups (or
    some found none): they would start at different epochs and wait for each other forever."""
    mine = None if state is None else (state["epoch"], state.get("batch"), state["weights"])
    found = replication.gather(model, mine)  # [mine] on one process
    differing = [rank for rank, seen in enumerate(found) if seen != found[0]]
    if differing:
        raise ValueError(f"BackupAndRestore: MPI rank {differing[0]} found another backup in "
                         f"{backup_dir} than rank 0 ({found[differing[0]]} against {found[0]}; "
                         f"None: no backup); every rank restores rank 0's backup, so backup_dir "
                         f"must be a directory all ranks see")


def _remove_stray_files(directory, keep):
    """Remove this callback's weights files other than ``keep``, and temporaries a kill left."""
    patterns = ("weights-*.weights.h5", "weights-*.weights.h5.*.tmp", ".tmp-*.part")
    for pattern in patterns:
        for path in glob.glob(os.path.join(glob.escape(directory), pattern)):
            if os.path.basename(path) != keep:
                os.remove(path)


def _encode_random(snapshot):
    """The context's random state as JSON (Python's json keeps the generator's 128-bit ints)."""
    seed, bit_state, counts = snapshot
    return {"seed": seed, "bit_state": bit_state,
            "op_counts": [[key[0], key[1], n] for key, n in counts.items()]}


def _decode_random(doc, where):
    try:
        counts = {(a, b): int(n) for a, b, n in doc["op_counts"]}
        return doc["seed"], dict(doc["bit_state"]), counts
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"BackupAndRestore: the random state in {where} is damaged ({e})") \
            from None
