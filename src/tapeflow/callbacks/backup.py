"""``BackupAndRestore``: a ``fit`` that was interrupted goes on from its last backup (Keras's).

After each epoch (or every ``save_freq`` batches) the callback writes ``checkpoint.h5`` in
``backup_dir``: the trainer's checkpoint file (``saving.training_checkpoint``), holding the
model, the optimizer's state, the data position (epochs done, and mid-epoch the steps done
into the next one, its shuffle order's seed and its metrics' running state), the random
state (the next shuffle and dropout draws) and this callback's counters.  The file is written
to a temporary and renamed over the old one: a process killed at any moment leaves a backup
that reads back whole.

A ``fit`` given the callback again (in a new process: build and compile the same model
first) restores that state as training begins and goes on where the backup was taken: at the
next epoch, or mid-epoch at the next batch, so the finished run is the one that was never
interrupted, bit for bit.  (Keras reruns the epoch in progress from its start; this file
keeps the position, so nothing is run twice.)  A backup due at an epoch's last batch is
written at that epoch's end, after its validation.  Other callbacks' state (EarlyStopping's
counts) is not backed up, as in Keras.  A fit that ends normally deletes the backup
(``delete_checkpoint=True``).  A backup of the earlier format (``state.json`` and a weights
file) is refused, naming its format.

Under ``tf.distribute.MPIStrategy`` rank 0 alone writes (and deletes) the backup; every rank
restores from it, so ``backup_dir`` must be a directory all ranks see (a shared file system
across machines).  The ranks check they restored the same backup; one that found another (or
none) stops every rank with a message, rather than training a different number of steps.
"""
import glob
import numbers
import os

from .. import replication
from ..saving import training_checkpoint as one_checkpoint
from ..saving.atomic import clean_temporaries
from .base import Callback

__all__ = ["BackupAndRestore"]

CHECKPOINT_NAME = "checkpoint.h5"
# the first format's files (format version 1): refused with a message, never read
_FORMAT_1 = ("state.json", "weights-*.weights.h5")


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
        self._resumed = None  # (epoch, its metrics' running state) of a mid-epoch backup

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
    def _path(self):
        return os.path.join(self.backup_dir, CHECKPOINT_NAME)

    @property
    def needs_built_model(self):
        """True when there is a backup to restore: ``fit`` then builds an unbuilt model first."""
        return os.path.exists(self._path)

    @property
    def _writes(self):
        """False on MPI ranks other than 0: rank 0 alone writes the backup."""
        return replication.rank(self.model) == 0

    # --- restoring -------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._batches_seen = 0
        self._epoch = 0
        self._resumed = None
        _refuse_format_1(self.backup_dir)
        ckpt = self._read()
        _same_backup_on_every_rank(self.model, ckpt, self.backup_dir)
        if self._writes and os.path.isdir(self.backup_dir):
            clean_temporaries(self.backup_dir)
        if ckpt is None:
            return
        if not self.model.built:
            raise ValueError(f"BackupAndRestore: model '{self.model.name}' is not built, so the "
                             f"backup in {self.backup_dir} cannot be loaded into it; build it "
                             f"first (call it on a batch, or start it with tf.keras.Input)")
        one_checkpoint.restore_model(self.model, ckpt)
        one_checkpoint.restore_random_state(ckpt)
        one_checkpoint.restore_callback(ckpt, self.state_key, self)
        position = ckpt.position
        self.model._initial_epoch = position.epoch  # fit goes on where the backup was taken
        if position.step:
            self.model._initial_step = (position.step, position.order_seed)
            self._resumed = (position.epoch, ckpt.metric_state)

    def _read(self):
        if not os.path.exists(self._path):
            return None
        try:
            return one_checkpoint.read(self._path, what="a backup")
        except ValueError as e:
            raise ValueError(f"BackupAndRestore: {e}; delete {self.backup_dir} to start "
                             f"training afresh") from None

    # --- backing up ------------------------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if self._resumed is not None and self._resumed[0] == epoch:  # after fit reset them
            one_checkpoint.restore_metrics(self.model, self._resumed[1], self._path)
            self._resumed = None

    def on_train_batch_end(self, batch, logs=None):
        if isinstance(self.save_freq, bool) or not isinstance(self.save_freq, numbers.Integral):
            return
        self._batches_seen += 1
        if self._batches_seen % self.save_freq == 0 and batch + 1 != self.params.get("steps"):
            self._backup(one_checkpoint.Position(self._epoch, batch + 1,
                                                 self.model._epoch_order_seed))

    def on_epoch_end(self, epoch, logs=None):
        # a batch count due at the epoch's last batch is this backup (after the validation)
        due_at_last = not isinstance(self.save_freq, bool) \
            and isinstance(self.save_freq, numbers.Integral) \
            and self._batches_seen % self.save_freq == 0
        if self.save_freq == "epoch" or due_at_last:
            self._epoch = epoch + 1
            self._backup(one_checkpoint.Position(epoch + 1))

    def _backup(self, position):
        if not self._writes:
            return
        os.makedirs(self.backup_dir, exist_ok=True)
        one_checkpoint.write(self._path, self.model, position, {self.state_key: self})

    def on_train_end(self, logs=None):
        if not self.delete_checkpoint or not self._writes or not os.path.isdir(self.backup_dir):
            return
        if os.path.exists(self._path):
            os.remove(self._path)
        clean_temporaries(self.backup_dir)
        try:
            os.rmdir(self.backup_dir)  # only when nothing else was put there
        except OSError:
            pass


def _refuse_format_1(backup_dir):
    for pattern in _FORMAT_1:
        found = glob.glob(os.path.join(glob.escape(backup_dir), pattern))
        if found:
            raise ValueError(f"BackupAndRestore: {found[0]} is a backup of format version 1 "
                             f"(state.json and a weights file), which this tapeflow no longer "
                             f"reads; delete {backup_dir} to start training afresh")


def _same_backup_on_every_rank(model, ckpt, backup_dir):
    """Under an MPIStrategy: raise on every rank when the ranks found different backups (or
    some found none): they would start at different epochs and wait for each other forever."""
    mine = None if ckpt is None else tuple(ckpt.position)
    found = replication.gather(model, mine)  # [mine] on one process
    differing = [rank for rank, seen in enumerate(found) if seen != found[0]]
    if differing:
        raise ValueError(f"BackupAndRestore: MPI rank {differing[0]} found another backup in "
                         f"{backup_dir} than rank 0 ({found[differing[0]]} against {found[0]}; "
                         f"None: no backup); every rank restores rank 0's backup, so backup_dir "
                         f"must be a directory all ranks see")
