"""``RunCheckpoints``: the checkpoints of a run directory, written by an ordinary callback.

Every ``checkpoint.every`` epochs (and at the last, and when early stopping ends the run) it
writes ``checkpoints/epoch-NNNN.h5``, keeping the newest ``keep_last``; with
``checkpoint.every_steps: N`` one every N steps as well (the newest alone kept), holding the
steps done into the epoch and that epoch's shuffle order; ``checkpoints/best.h5`` when the
best monitor improves.  A SIGTERM (``stop``) finishes the step, writes a checkpoint and raises
``Preempted``.  Each file is the one checkpoint (``saving.training_checkpoint``) with the
run's fields added: its config, data fingerprint, history, and whether it finished or early
stopping ended it.

A resumed run hands it the checkpoint (``restore``): it restores the model, the random
state, the history and the state of the callbacks it keeps, and at ``on_train_begin`` tells
``fit`` where to go on (the epoch, and mid-epoch the step and the shuffle order); at that
epoch's start it puts the metrics' running state back.  Under MPI every rank runs it (the
ranks agree on a stop) and rank 0 alone writes.
"""
import os

from ..callbacks.base import Callback
from ..callbacks.monitored import EarlyStopping
from ..saving import training_checkpoint as one_checkpoint
from . import checkpoint as ckpt_io
from . import preemption
from .errors import CheckpointError, Preempted

__all__ = ["RunCheckpoints"]


class RunCheckpoints(Callback):
    """``settings``: the config's ``checkpoint`` section; ``run_fields``: the run's own fields
    for every checkpoint (config, data fingerprint, ...); ``keep``: the callbacks whose state
    each checkpoint holds, each under its ``state_key`` (this one's own state, the best
    checkpoint's score, too); ``history``: the ``History`` it holds; ``watch``: the
    ``NanWatch`` (no checkpoint once the loss turned NaN)."""

    def __init__(self, run_dir, settings, epochs, best_monitor, run_fields, keep, history,
                 watch, stop=None, strategy=None):
        super().__init__()
        self.run_dir, self.settings, self.epochs = run_dir, settings, epochs
        self.run_fields, self.history, self.watch = run_fields, history, watch
        self.stop = stop if stop is not None else preemption.StopRequest()  # SIGTERM's flag
        self.strategy = strategy
        self.writes = strategy is None or strategy.rank == 0  # under MPI, rank 0 alone
        self.best = _Best(best_monitor, settings.mode) if settings.keep_best else None
        self.keep = list(keep) + ([self] if self.best is not None else [])
        self.epoch = 0              # epochs done
        self.step = 0               # steps done into the next epoch (a mid-epoch resume)
        self.order_seed = None      # and that epoch's shuffle order
        self.metric_state = {}      # and its metrics' running state, by metric name
        self.stopped = False        # early stopping ended the run
        self._current = 0           # the epoch in progress

    @property
    def finished(self):
        """Nothing left to train: the epochs are done, or early stopping ended the run."""
        return self.stopped or self.epoch >= self.epochs

    # --- state in and out of checkpoints ---------------------------------------------------------
    @property
    def state_key(self):
        if self.best is None:
            return super().state_key
        return self._state_key_of(monitor=self.best.monitor.monitor, mode=self.best.monitor.mode)

    def get_state(self):
        """The best checkpoint's score and epoch (None before the first)."""
        return {} if self.best is None else {"best": self.best.value,
                                             "best_epoch": self.best.epoch}

    def set_state(self, state):
        value, epoch = state["best"], state["best_epoch"]
        if value is not None and type(value) not in (int, float) or \
                epoch is not None and type(epoch) is not int:
            raise ValueError(f"RunCheckpoints: the state {state!r} is not a score and an epoch")
        self.best.value, self.best.epoch = value, epoch

    def restore(self, model, ckpt):
        """Go on from ``ckpt`` (read by ``checkpoint.read_checkpoint``) with ``model``."""
        self.set_model(model)  # a run with no epoch left writes its final model without fit
        ckpt_io.restore_model(model, ckpt)
        one_checkpoint.restore_random_state(ckpt)
        self.epoch, self.step, self.order_seed = ckpt.position
        self.metric_state = ckpt.metric_state
        self.stopped = ckpt.training["stopped"]
        history = ckpt.training["history"]
        self.history.set_state({"epoch": list(range(self.epoch)),
                                "history": {k: list(v) for k, v in history.items()}})
        for callback in self.keep:
            one_checkpoint.restore_callback(ckpt, callback.state_key, callback,
                                            ckpt_io.kept_state(ckpt, callback))

    def write(self, path, finished=False, step=0, order_seed=None):
        if not self.writes:
            return
        fields = dict(self.run_fields, finished=finished, stopped=self.stopped,
                      history=self.history.get_state()["history"])
        one_checkpoint.write(path, self.model, one_checkpoint.Position(self.epoch, step,
                                                                       order_seed),
                             {callback.state_key: callback for callback in self.keep}, fields)

    # --- where fit goes on -----------------------------------------------------------------------
    @property
    def needs_built_model(self):
        # fit builds the model (and chooses an "accuracy" metric's kind) before on_train_begin,
        # so that every metric whose running state a mid-epoch resume restores exists
        return bool(self.step)

    def on_train_begin(self, logs=None):
        if self.step:
            self.model._initial_step = (self.step, self.order_seed)

    def on_epoch_begin(self, epoch, logs=None):
        self._current = epoch
        if self.step and epoch == self.epoch:  # after fit reset the metrics
            one_checkpoint.restore_metrics(self.model, self.metric_state, self.run_dir,
                                           CheckpointError)
            self.step, self.metric_state = 0, {}

    # --- writing ---------------------------------------------------------------------------------
    def on_train_batch_end(self, batch, logs=None):
        if self.watch.nan_at is None:
            self.end_of_step(self._current, batch + 1, self.params["steps"])

    def step_checkpoint_due(self, epoch, done, steps):
        """``checkpoint.every_steps`` counts steps across epochs (``done`` of ``epoch``)."""
        every = self.settings.every_steps
        return every is not None and (epoch * steps + done) % every == 0

    def end_of_step(self, epoch, done, steps):
        """Mid-epoch (``done`` < ``steps``): a checkpoint when one is due or a stop was asked
        for, and then the stop.  Under MPI the ranks agree on a stop only where a checkpoint
        is due (no collective at other steps); the epoch's last step is left to its end."""
        if done == steps:
            return
        due = self.step_checkpoint_due(epoch, done, steps)
        if self.strategy is None:
            stop = self.stop.requested
        else:
            stop = due and preemption.agreed(self.strategy, self.stop)
        if not (due or stop):
            return
        path = ckpt_io.step_path(self.run_dir, epoch, done)
        if self.writes:
            # fit keeps the seed of the epoch's shuffle order for a checkpoint like this one
            self.write(path, step=done, order_seed=self.model._epoch_order_seed)
            ckpt_io.prune_steps(self.run_dir)
        if stop:
            self.preempted(path, f"epoch {epoch + 1}, step {done}")

    def on_epoch_end(self, epoch, logs=None):
        if self.watch.nan_at is not None:
            return
        logs = logs or {}
        steps = self.params["steps"]
        self.epoch = epoch + 1
        if self.model.stop_training:  # early stopping (a NaN loss wrote nothing)
            self.stopped = True
        last = self.epoch == self.epochs or self.stopped
        # a step checkpoint due at the epoch's last step is this epoch checkpoint
        due = self.step_checkpoint_due(epoch, steps, steps)
        stop = preemption.agreed(self.strategy, self.stop)
        path = ckpt_io.epoch_path(self.run_dir, self.epoch)
        # the best so far before the epoch checkpoint, which a resume takes it from
        improved = self.best is not None and self.best.improves(logs, epoch)
        if (self.epoch % self.settings.every == 0 or last or due or stop) and self.writes:
            self.write(path)
            ckpt_io.prune(self.run_dir, self.settings.keep_last)
        if improved:
            self.write(os.path.join(self.run_dir, ckpt_io.CHECKPOINT_DIR, ckpt_io.BEST_NAME))
        if stop:
            self.preempted(path, f"epoch {self.epoch}")

    def preempted(self, path, where):
        asked = "SIGTERM" if self.stop.requested else "SIGTERM to another rank"
        error = Preempted(f"stopped by {asked} after {where}; checkpoint {path}; the same "
                          f"command with --resume goes on from it", path)
        error.quiet = not self.writes  # under MPI, rank 0 alone says so
        raise error


class _Best:
    """The best checkpoint's monitor (EarlyStopping's rule of what improves)."""

    def __init__(self, monitor, mode):
        self.monitor = EarlyStopping(monitor=monitor, mode=mode)
        self.value = None
        self.epoch = None

    def improves(self, logs, epoch):
        value = logs.get(self.monitor.monitor)
        if value is None or not self.monitor.improves(float(value), self.value):
            return False
        self.value, self.epoch = float(value), epoch
        return True
