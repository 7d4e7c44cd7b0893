"""Callbacks that record or react to each step's logs: TerminateOnNaN, CSVLogger and
LambdaCallback (TensorBoard has its own module)."""
import csv
import math
import os

from .base import Callback

_HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))

__all__ = ["TerminateOnNaN", "CSVLogger", "LambdaCallback"]


class TerminateOnNaN(Callback):
    """Stop training after the first batch whose loss is NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: invalid loss {float(loss)}, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """One CSV row per epoch: epoch and every logged value."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = append
        self._keys = None
        self._file = None

    def on_train_begin(self, logs=None):
        has_rows = self.append and os.path.exists(self.filename) \
            and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._writer = None
        self._write_header = not has_rows

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._writer is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys,
                                          delimiter=self.separator)
            if self._write_header:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None


class LambdaCallback(Callback):
    """A callback made of functions, as Keras's: ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_train_begin(logs)``, ``on_train_end(logs)``,
    ``on_train_batch_begin(batch, logs)`` / ``on_train_batch_end(batch, logs)`` (Keras 2's
    ``on_batch_begin`` / ``on_batch_end`` too), and any other hook by its name."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        unknown = sorted(set(kwargs) - set(_HOOKS))
        if unknown:
            raise TypeError(f"LambdaCallback got {unknown}, which are not callback hooks; "
                            f"the hooks are {list(_HOOKS)}")
        given = dict(kwargs, on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end,
                     on_train_begin=on_train_begin, on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end)
        for hook, fn in given.items():
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {hook} must be a function, got "
                                f"{type(fn).__name__}")
            setattr(self, hook, fn)  # the instance's function replaces the no-op method

