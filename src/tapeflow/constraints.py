"""Weight constraints (MaxNorm, NonNeg, UnitNorm, MinMaxNorm), as Keras 3's ``keras.constraints``.

A constraint is a projection ``w -> w'`` that the optimizer applies to a variable after each
update (``Optimizer.apply``: ``variable.assign(variable.constraint(variable))``), in eager steps
and traced ones alike.  Layers take them as ``kernel_constraint="max_norm"`` and so on.

``get`` takes a name ("max_norm", "MaxNorm"), a constraint or its class, a config dict or a
function ``fn(w)``, by the rules of ``tapeflow.serialization``; None gives None.
"""
from .backend import EPSILON
from .core.tensor import convert_to_tensor
from .ops.arithmetic import maximum
from .ops.clip import clip_by_value
from .ops.elementwise import sqrt
from .ops.reduce import reduce_sum
from .serialization import Registry

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize", "deserialize"]


class Constraint:
    """The identity projection; subclasses override ``__call__(w)``."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _norms(w, axis):
    """The L2 norm of ``w`` along ``axis`` (an int or a list of ints), kept for broadcasting."""
    axis = list(axis) if isinstance(axis, (list, tuple)) else axis
    return sqrt(reduce_sum(w * w, axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescale each slice along ``axis`` whose norm is above ``max_value`` to that norm."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = clip_by_value(norms, 0.0, float(self.max_value))
        return w * (desired / (EPSILON + norms))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Negative weights become zero."""

    def __call__(self, w):
        w = convert_to_tensor(w)
        return maximum(w, 0.0)


class UnitNorm(Constraint):
    """Each slice along ``axis`` rescaled to norm one."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        return w / (EPSILON + _norms(w, self.axis))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Each slice's norm moved by ``rate`` toward ``[min_value, max_value]`` (rate 1: into it)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        clipped = clip_by_value(norms, float(self.min_value), float(self.max_value))
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (EPSILON + norms))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


# Keras 3's lowercase names are the classes themselves (keras.constraints.max_norm is MaxNorm).
max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm

REGISTRY = Registry("constraint", {"max_norm": MaxNorm, "non_neg": NonNeg,
                                   "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm},
                    base=Constraint)
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
