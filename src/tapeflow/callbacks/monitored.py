"""Callbacks that watch one logged quantity: EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
(Keras 3's rules).

EarlyStopping with ``restore_best_weights=True`` restores the best weights at the
end of training however it ended (patience ran out, the epochs ran out, or
another callback stopped it).
"""
import math
import os

import numpy as np

from .base import Callback

__all__ = ["EarlyStopping", "ModelCheckpoint", "ReduceLROnPlateau"]


class _Monitor(Callback):
    """Shared by the callbacks that watch one logged quantity."""

    def __init__(self, monitor, mode, min_delta=0.0):
        super().__init__()
        self.monitor = monitor
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"mode must be 'auto', 'min' or 'max', not {mode!r}")
        if mode == "auto":
            mode = "max" if "acc" in monitor or "auc" in monitor else "min"
        self.mode = mode
        self.min_delta = abs(min_delta)
        self._restored = False

    @property
    def state_key(self):
        return self._state_key_of(monitor=self.monitor, mode=self.mode)

    def _starts_afresh(self):
        """False once, at the ``fit`` after ``set_state``: its counts go on (a resumed run)."""
        fresh, self._restored = not self._restored, False
        return fresh

    def improves(self, value, best):
        """Better than ``best`` by more than ``min_delta``; NaN never is."""
        if math.isnan(value):
            return False
        if best is None:
            return True
        if self.mode == "min":
            return value < best - self.min_delta
        return value > best + self.min_delta

    def _value(self, logs):
        """The monitored value, or None in an epoch without validation (``validation_freq``)."""
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            if self.monitor.startswith("val_") and self.params.get("do_validation") \
                    and not any(k.startswith("val_") for k in logs):
                return None
            raise ValueError(f"{type(self).__name__} monitors '{self.monitor}', which is not "
                             f"among the logged values {sorted(logs)}"
                             + (" (pass validation_data or validation_split to fit)"
                                if self.monitor.startswith("val_") else ""))
        return float(value)


class EarlyStopping(_Monitor):
    """Stop when ``monitor`` has not improved for ``patience`` epochs (Keras's rules).

    ``baseline``: training also stops after ``patience`` epochs that do not beat
    it.  ``restore_best_weights``: at the end of training, however it ended,
    the weights of the best epoch seen are restored.
    """

    def __init__(self, monitor="val_loss", min_delta=0.0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch

    def on_train_begin(self, logs=None):
        if not self._starts_afresh():
            return
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def get_state(self):
        """The counts, and the best weights (a list of arrays, or None): what a resumed run
        needs to stop where the uninterrupted one would."""
        return {"wait": self.wait, "best": self.best, "best_epoch": self.best_epoch,
                "stopped_epoch": self.stopped_epoch,
                "best_weights": None if self.best_weights is None
                else [np.asarray(w) for w in self.best_weights]}

    def set_state(self, state):
        self.wait, self.best = int(state["wait"]), state["best"]
        self.best_epoch, self.stopped_epoch = int(state["best_epoch"]), int(state["stopped_epoch"])
        weights = state["best_weights"]
        self.best_weights = None if weights is None else list(weights)
        self._restored = True

    def on_epoch_end(self, epoch, logs=None):
        if epoch < self.start_from_epoch:
            return
        value = self._value(logs)
        if value is None:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()  # something to restore, whatever happens
        self.wait += 1
        if self.improves(value, self.best):
            self.best, self.best_epoch = value, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            # the count restarts only on beating both the previous best and the baseline
            if self.baseline is None or self.improves(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.restore_best_weights and self.best_weights is not None:
            self.model.set_weights(self.best_weights)
        if self.stopped_epoch and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping (best epoch "
                  f"{self.best_epoch + 1})")


class ModelCheckpoint(_Monitor):
    """Save the model after each epoch, or only when ``monitor`` improves (Keras 3's rules).

    By default the whole model: its architecture, every variable, the optimizer's state and
    its call traced with any custom gradients (``model.save``), in one file whose name ends
    in ``.keras`` (or ``.h5``); ``tf.keras.models.load_model`` and ``load_weights`` read it.
    ``save_weights_only=True`` writes ``save_weights``'s file (weights and optimizer state),
    whose name must end in ``.weights.h5``: a file's name says what it holds.
    ``filepath`` may hold ``{epoch:02d}`` and any logged value (``{val_loss:.3f}``).
    A save that fails leaves any earlier file at that path as it was.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__(monitor, mode)
        if save_freq != "epoch":
            raise ValueError("ModelCheckpoint supports save_freq='epoch'")
        self.filepath = os.fspath(filepath)
        if save_weights_only and not self.filepath.endswith(".weights.h5"):
            raise ValueError(f"ModelCheckpoint: with save_weights_only=True the filepath must "
                             f"end in .weights.h5 (the file holds weights only), got "
                             f"{self.filepath!r}")
        if not save_weights_only and (self.filepath.endswith(".weights.h5")
                                      or not self.filepath.endswith((".keras", ".h5"))):
            raise ValueError(f"ModelCheckpoint: the whole model is saved (the default), so the "
                             f"filepath must end in .keras (or .h5), got {self.filepath!r}; "
                             f"for weights only pass save_weights_only=True and a name ending "
                             f"in .weights.h5")
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.best = initial_value_threshold

    def get_state(self):
        """The best value so far (``save_best_only`` saves only what beats it)."""
        return {"best": self.best}

    def set_state(self, state):
        self.best = state["best"]

    def _path(self, epoch, logs):
        try:
            return self.filepath.format(epoch=epoch + 1, **logs)
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"ModelCheckpoint: cannot format the filepath {self.filepath!r} "
                             f"with epoch and the logged values {sorted(logs)}: {e!r}") from None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.save_best_only:
            value = self._value(logs)
            if value is None or not self.improves(value, self.best):
                return
            self.best = value
        path = self._path(epoch, logs)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saved to {path}")


class ReduceLROnPlateau(_Monitor):
    """Multiply the learning rate by ``factor`` when ``monitor`` has not improved (by more
    than ``min_delta``) for ``patience`` epochs, then wait ``cooldown`` epochs before counting
    again; never below ``min_lr`` (Keras 3's rules).  The rate is logged as ``learning_rate``.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0, **kwargs):
        super().__init__(monitor, mode, min_delta)
        if not 0 <= factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be in [0, 1), got {factor}")
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = verbose
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)
        self.wait = self.cooldown_counter = 0
        self.best = None

    def on_train_begin(self, logs=None):
        if self._starts_afresh():
            self.wait = self.cooldown_counter = 0
            self.best = None

    def get_state(self):
        """The counts (the learning rate itself is the optimizer's state)."""
        return {"wait": self.wait, "cooldown_counter": self.cooldown_counter, "best": self.best}

    def set_state(self, state):
        self.wait, self.cooldown_counter = int(state["wait"]), int(state["cooldown_counter"])
        self.best = state["best"]
        self._restored = True

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(optimizer.learning_rate)
        value = self._value(logs)
        if value is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.improves(value, self.best):
            self.best, self.wait = value, 0
        elif self.cooldown_counter == 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(optimizer.learning_rate)
                if old > self.min_lr:
                    optimizer.learning_rate = max(old * self.factor, self.min_lr)
                    if self.verbose:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {float(optimizer.learning_rate):.6g}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
