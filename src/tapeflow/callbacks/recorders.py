"""Callbacks that record or react to each step's logs: TerminateOnNaN (and NanWatch, its quiet
form), CSVLogger and LambdaCallback (TensorBoard has its own module)."""
import csv
import math
import os

from .base import Callback

_HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))

__all__ = ["TerminateOnNaN", "NanWatch", "CSVLogger", "LambdaCallback"]


class TerminateOnNaN(Callback):
    """Stop training after the first batch whose loss is NaN or infinite; ``nan_at`` then
    says where: ``{"epoch", "batch", "loss"}`` (None while the loss is finite)."""

    def __init__(self):
        super().__init__()
        self.nan_at = None
        self._epoch = 0

    def get_state(self):
        """Where the loss turned non-finite (None: it has not): a resumed run that stopped
        there still knows why."""
        return {"nan_at": None if self.nan_at is None else dict(self.nan_at)}

    def set_state(self, state):
        at = state["nan_at"]
        self.nan_at = None if at is None else {"epoch": int(at["epoch"]),
                                               "batch": int(at["batch"]),
                                               "loss": float(at["loss"])}

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: invalid loss {float(loss)}, terminating training")
            self.nan_at = {"epoch": self._epoch, "batch": batch, "loss": float(loss)}
            self.model.stop_training = True


class NanWatch(TerminateOnNaN):
    """``TerminateOnNaN`` that reads the loss once per ``every`` steps and at each epoch's end
    (the loss is the epoch's running mean, so a NaN step shows at every later read), and says
    nothing: ``nan_at`` tells where, ``exact`` whether that is the very step.  On a GPU every
    read of the loss waits for the device, so reading it every step costs time there."""

    def __init__(self, every=1):
        super().__init__()
        if type(every) is not int or every < 1:
            raise ValueError(f"NanWatch: every must be a positive number of steps, got {every!r}")
        self.every = every
        self._batch = -1

    @property
    def exact(self):
        return self.every == 1

    def on_train_batch_end(self, batch, logs=None):
        self._batch = batch
        if (batch + 1) % self.every == 0:
            self._watch((logs or {}).get("loss"))

    def on_epoch_end(self, epoch, logs=None):
        if self.nan_at is None:
            self._watch((logs or {}).get("loss"))  # the steps since the last read

    def _watch(self, loss):
        if loss is not None and not math.isfinite(loss):
            self.nan_at = {"epoch": self._epoch, "batch": self._batch, "loss": float(loss)}
            self.model.stop_training = True


class CSVLogger(Callback):
    """One CSV row per epoch: epoch and every logged value.

    Its state is its position in the file: the rows written, their columns and the file's
    size after them.  A resumed run (``set_state``) cuts the file back to that size, dropping
    rows of epochs the checkpoint did not get to, and appends after it: each epoch once."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = append
        self._keys = None
        self._file = None
        self._rows = 0
        self._size = 0
        self._resume_at = None  # set_state's position, taken up at the next on_train_begin

    @property
    def state_key(self):
        return self._state_key_of(filename=os.path.basename(self.filename))

    def get_state(self):
        return {"rows": self._rows, "size": self._size, "keys": self._keys}

    def set_state(self, state):
        rows, size, keys = state["rows"], state["size"], state["keys"]
        if type(rows) is not int or type(size) is not int or rows < 0 or size < 0 or not (
                keys is None or isinstance(keys, list) and all(type(k) is str for k in keys)):
            raise ValueError(f"CSVLogger: the state {state!r} is not rows and size (integers "
                             f"of at least 0) and keys (a list of names, or None)")
        self._resume_at = (rows, size, keys)

    def on_train_begin(self, logs=None):
        self._writer = None
        if self._resume_at is not None:
            self._open_where_it_was(*self._resume_at)
            self._resume_at = None
            return
        has_rows = self.append and os.path.exists(self.filename) \
            and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._write_header = not has_rows
        self._keys, self._rows, self._size = None, 0, self._file.tell()

    def _open_where_it_was(self, rows, size, keys):
        held = os.path.getsize(self.filename) if os.path.exists(self.filename) else 0
        if held < size:
            raise ValueError(f"CSVLogger: {self.filename} holds {held} bytes, fewer than the "
                             f"{size} it held at the checkpoint; it was changed or replaced "
                             f"since, so the log cannot go on from its {rows} rows")
        self._file = open(self.filename, "r+" if size else "w", newline="")
        self._file.truncate(size)
        self._file.seek(size)
        self._rows, self._size, self._keys = rows, size, keys
        self._write_header = keys is None
        if keys is not None:
            self._writer = self._dict_writer(keys)

    def _dict_writer(self, keys):
        return csv.DictWriter(self._file, fieldnames=["epoch"] + keys, delimiter=self.separator)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._writer is None:
            self._keys = sorted(logs)
            self._writer = self._dict_writer(self._keys)
            if self._write_header:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}})
        self._file.flush()
        self._rows += 1
        self._size = self._file.tell()

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

