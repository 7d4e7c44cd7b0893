"""``LearningRateScheduler``: the learning rate as a function of the epoch."""
import inspect
import math

from .base import Callback

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate from ``schedule(epoch, lr)`` (or Keras 2's
    ``schedule(epoch)``) before each epoch; the rate is logged as ``learning_rate``."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose
        self._takes_lr = _positional_count(schedule) != 1
        self.last_epoch = None          # the epoch the rate was last set for, and the rate
        self.last_learning_rate = None
        self._restored_rate = None

    def get_state(self):
        """The last epoch scheduled and its rate: a resumed run's ``schedule(epoch, lr)`` is
        handed that rate, whatever rate the rebuilt optimizer started with."""
        return {"epoch": self.last_epoch, "learning_rate": self.last_learning_rate}

    def set_state(self, state):
        epoch, rate = state["epoch"], state["learning_rate"]
        if epoch is not None and (type(epoch) is not int or epoch < 0) or \
                rate is not None and (type(rate) not in (int, float) or not math.isfinite(rate)
                                      or rate < 0):
            raise ValueError(f"LearningRateScheduler: the state {state!r} is not an epoch (an "
                             f"integer of at least 0) and a learning rate (a number of at "
                             f"least 0), or None for both")
        self.last_epoch, self.last_learning_rate = epoch, rate
        self._restored_rate = None if rate is None else float(rate)

    def on_train_begin(self, logs=None):
        if self._restored_rate is not None:
            self.model.optimizer.learning_rate = self._restored_rate
            self._restored_rate = None

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(self.model.optimizer.learning_rate)
        new = self.schedule(epoch, lr) if self._takes_lr else self.schedule(epoch)
        try:
            new = float(new)
        except (TypeError, ValueError):
            raise ValueError(f"LearningRateScheduler: schedule returned {new!r}, not a number") \
                from None
        if not math.isfinite(new) or new < 0:
            raise ValueError(f"LearningRateScheduler: schedule returned {new!r} at epoch {epoch}")
        self.model.optimizer.learning_rate = new
        self.last_epoch, self.last_learning_rate = epoch, new
        if self.verbose:
            print(f"Epoch {epoch + 1}: learning rate {new:.6g}")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)


def _positional_count(fn):
    """How many positional arguments ``fn`` takes (None: any number, or unknown)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
