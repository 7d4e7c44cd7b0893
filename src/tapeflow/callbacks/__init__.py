"""Callbacks for ``fit`` (also ``tf.keras.callbacks``): Keras's names and behaviour.

One family per module: the protocol and what ``fit`` always adds (``base``), the
callbacks that watch a logged quantity (``monitored``), those that record or react
to the logs (``recorders``), the event files for TensorBoard (``tensorboard``), the learning-rate schedule (``schedule``) and the
interrupted-run backup (``backup``).
"""
from .backup import BackupAndRestore
from .base import Callback, CallbackList, History, ProgbarLogger
from .monitored import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from .recorders import CSVLogger, LambdaCallback, TerminateOnNaN
from .schedule import LearningRateScheduler
from .tensorboard import TensorBoard

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "TerminateOnNaN", "CSVLogger", "LearningRateScheduler",
           "ReduceLROnPlateau", "LambdaCallback", "BackupAndRestore", "TensorBoard"]
