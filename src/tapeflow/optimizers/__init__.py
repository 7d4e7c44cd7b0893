"""Optimizers and learning-rate schedules, with Keras 3's names, defaults and formulas.

``get`` turns a name ("adam", any case), a config dict, an optimizer or an
optimizer class into an optimizer, by the rules of ``tapeflow.serialization``.  A
new optimizer adds itself to ``REGISTRY`` below.
"""
from ..serialization import REFUSE, Registry
from . import schedules
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .base import Optimizer
from .gauss_newton import OutputLoss, check_supported_loss
from .levenberg_marquardt import LevenbergMarquardt
from .lion import Lion
from .loss_scale_optimizer import LossScaleOptimizer
from .nadam import Nadam
from .newton import Newton
from .objective import Objective
from .rmsprop import RMSprop
from .schedules import CosineDecay, ExponentialDecay, LearningRateSchedule, PiecewiseConstantDecay
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "Nadam", "Newton", "LevenbergMarquardt", "OutputLoss", "check_supported_loss",
    "Objective",
    "RMSprop", "Adagrad", "Adamax", "Lion", "LossScaleOptimizer", "schedules", "LearningRateSchedule",
    "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay", "get", "serialize", "deserialize",
]

# Keras's names; "Adam", "RMSprop" ... are the same names folded (tapeflow.serialization).
# None and functions are not optimizers.
REGISTRY = Registry("optimizer", {
    "sgd": SGD, "adam": Adam, "adamw": AdamW, "nadam": Nadam, "rmsprop": RMSprop, "adagrad": Adagrad,
    "newton": Newton, "levenberg_marquardt": LevenbergMarquardt, "adamax": Adamax, "lion": Lion,
    "loss_scale_optimizer": LossScaleOptimizer,
}, base=Optimizer, functions=False, none=REFUSE,
    config_only=(LossScaleOptimizer,))  # it wraps an optimizer: only a config dict builds one
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
LossScaleOptimizer.registry = REGISTRY  # its config holds the inner optimizer's
