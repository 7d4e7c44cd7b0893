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
