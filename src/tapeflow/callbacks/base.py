"""The callback protocol (``Callback``, ``CallbackList``) and what ``fit`` always adds:
``History`` and the progress bar (``ProgbarLogger``).  ``fit`` hands callbacks logs of plain
floats; a step's logs (``BatchLogs``) become floats when a callback reads them."""
import collections.abc
import sys


__all__ = ["BatchLogs", "Callback", "CallbackList", "History", "ProgbarLogger", "python_float"]


class Callback:
    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    # --- state a checkpoint keeps (Lightning's Callback.state_key / state_dict) --------------
    @property
    def state_key(self):
        """The key a checkpoint keeps this callback's state under: its class's name, with
        the arguments that tell two callbacks of the class apart (``_state_key_of``)."""
        return type(self).__qualname__

    def _state_key_of(self, **identity):
        return f"{type(self).__qualname__}{identity!r}"

    def get_state(self):
        """What a resumed run needs to go on as if it never stopped: a dict of JSON values,
        numpy arrays and lists of arrays; ``{}`` for a callback without state."""
        return {}

    def set_state(self, state):
        """Restore ``get_state()``'s dict; the next ``fit`` goes on from it."""

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_batch_begin(self, batch, logs=None): pass  # Keras 2's name for on_train_batch_begin
    def on_batch_end(self, batch, logs=None): pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


class BatchLogs(collections.abc.MutableMapping):
    """A step's logs for ``on_train_batch_end``: each value becomes a Python float when a
    callback reads it.  On a GPU every read waits for the device to finish the step, so a
    callback that reads every 20th step's logs (the progress bar) waits once per 20 steps."""

    def __init__(self, logs):
        self._values = logs      # tensors as the traced step returned them
        self._floats = {}

    def __getitem__(self, key):
        try:
            return self._floats[key]
        except KeyError:
            value = self._floats[key] = python_float(self._values[key])
            return value

    def __setitem__(self, key, value):  # a callback adding to the logs, as Keras's may
        self._values[key] = self._floats[key] = value

    def __delitem__(self, key):
        del self._values[key]
        self._floats.pop(key, None)

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return repr(dict(self))


def python_float(value):
    """A log value as a Python float (a scalar tensor's value), anything else as it is.

    A one-element vector stays a vector, whatever numpy's ``float()`` of it does (numpy 2.0 to
    2.3 convert it with a DeprecationWarning, newer ones refuse)."""
    if len(getattr(value, "shape", ())):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value


class CallbackList:
    """Calls every callback's hook in order."""

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)
        # per-batch hooks cost time: call them only on callbacks that override them
        self._batch_end = [cb for cb in self.callbacks
                           if _overrides(cb, "on_train_batch_end", "on_batch_end")
                           and getattr(cb, "_reads_batches", _always)()]
        self._batch_begin = [cb for cb in self.callbacks
                             if _overrides(cb, "on_train_batch_begin", "on_batch_begin")]

    def __getattr__(self, hook):
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        # (epoch or batch, logs) or (logs), logs always passed, as Keras passes them: a
        # LambdaCallback's on_train_begin=lambda logs: ... needs its argument
        takes = 2 if "epoch" in hook or "batch" in hook else 1

        def call(*args, logs=None):
            args = args + (logs,) if len(args) < takes else args
            for cb in self.callbacks:
                getattr(cb, hook)(*args)
        return call

    def on_train_batch_begin(self, batch, logs=None):
        for cb in self._batch_begin:
            cb.on_train_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        for cb in self._batch_end:
            cb.on_train_batch_end(batch, logs)

    @property
    def wants_batch_logs(self):
        return bool(self._batch_end)


def _always():
    return True


def _overrides(callback, *hooks):
    """Whether ``callback`` has its own version of any of ``hooks`` (in its class, or set on the
    instance as LambdaCallback does)."""
    for hook in hooks:
        method = getattr(callback, hook)
        if getattr(method, "__func__", method) is not getattr(Callback, hook):
            return True
    return False


class History(Callback):
    """``history.history``: each metric's value per epoch."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []
        self._restored = False

    def get_state(self):
        """The epochs recorded and each metric's values (what a resumed run's history
        continues)."""
        return {"epoch": list(self.epoch),
                "history": {k: [python_float(v) for v in values]
                            for k, values in self.history.items()}}

    def set_state(self, state):
        self.epoch = [int(e) for e in state["epoch"]]
        self.history = {str(k): list(v) for k, v in state["history"].items()}
        self._restored = True

    def on_train_begin(self, logs=None):
        if self._restored:  # a resumed run: its epochs go on after those restored
            self._restored = False
            return
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _fmt(value):
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _format_logs(logs):
    return " - ".join(f"{k}: {_fmt(v)}" for k, v in logs.items())


class ProgbarLogger(Callback):
    """A tqdm bar per epoch on a terminal; one line per epoch otherwise (clean logs)."""

    def __init__(self, verbose=1, stream=None):
        super().__init__()
        self.verbose = verbose
        self._stream = stream
        self._bar = None

    @property
    def stream(self):
        """The given stream, else ``sys.stdout`` as it is now (pytest's capture replaces it)."""
        return self._stream if self._stream is not None else sys.stdout

    def _interactive(self):
        return self.verbose == 1 and hasattr(self.stream, "isatty") and self.stream.isatty()

    def _reads_batches(self):
        """Whether this fit's batches move a bar: one line per epoch needs no batch's logs (fit
        then skips computing them, ``CallbackList.wants_batch_logs``)."""
        return self._interactive()

    def on_epoch_begin(self, epoch, logs=None):
        if self._interactive():
            from tqdm.auto import tqdm
            self._bar = tqdm(total=self.params.get("steps"), file=self.stream, leave=True,
                             desc=f"Epoch {epoch + 1}/{self.params.get('epochs')}", unit="step",
                             dynamic_ncols=True, mininterval=0.2)
        else:
            self._bar = None

    def on_train_batch_end(self, batch, logs=None):
        if self._bar is not None:
            # to the batch's index: with steps_per_execution=N it moves N at a time (never past
            # the epoch, which Keras's index for a last, shorter group of batches would)
            total = self._bar.total
            done = batch + 1 if total is None else min(batch + 1, total)
            before = self._bar.n
            self._bar.update(max(done - before, 0))
            if logs and self._bar.n // 20 != before // 20:
                self._bar.set_postfix({k: _fmt(v) for k, v in logs.items()}, refresh=False)

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            self._bar.set_postfix({k: _fmt(v) for k, v in (logs or {}).items()})
            self._bar.close()
            self._bar = None
        elif self.verbose:
            print(f"Epoch {epoch + 1}/{self.params.get('epochs')} - {_format_logs(logs or {})}",
                  file=self.stream, flush=True)
