"""``keras.optimizers``: tapeflow's optimizers, the same objects, with
``keras.optimizers.schedules`` as a module of its own.

Written out rather than ``import *``: a * import would bind ``schedules`` to
``tapeflow.optimizers.schedules`` and keep this package's submodule from loading here.
"""
from ...optimizers import (
    SGD, Adagrad, Adam, Adamax, AdamW, CosineDecay, ExponentialDecay, LearningRateSchedule,
    LevenbergMarquardt, Lion, LossScaleOptimizer, Nadam, Newton, Objective, Optimizer, OutputLoss,
    PiecewiseConstantDecay, RMSprop, check_supported_loss, deserialize, get, serialize,
)
from . import schedules

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "Nadam", "RMSprop", "Adagrad", "Adamax", "Lion",
    "LossScaleOptimizer", "Newton", "LevenbergMarquardt", "Objective", "OutputLoss",
    "check_supported_loss", "schedules",
    "LearningRateSchedule", "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay", "get",
    "serialize", "deserialize",
]
