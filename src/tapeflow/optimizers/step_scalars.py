"""An update's scalars (learning rate, step number, bias corrections) where the update runs.

On the host they are Python numbers, ``float(lr)`` and ``int(iterations)``, and NumPy
multiplies an array by a Python float in the array's own dtype.  On a GPU ``float()`` would
stall the device's queue at every variable of every step, so there the same formulas run on
0-d float64 arrays on the device, cast to an array's dtype where they meet one (what NumPy does
to a Python float).  A device's ``pow`` may round the last float64 bit otherwise than the
host's; cast to float32 that almost never shows.
"""
import math

import numpy as np

from .. import backend

__all__ = ["on_host", "number", "step_number", "sqrt", "factor"]


def on_host(array):
    """True when ``array`` (an update's operand) is a numpy array."""
    return backend.array_module(array) is np


def number(value, host):
    """A 0-d array's value: a Python float on the host, a float64 0-d array on a device."""
    return float(value) if host else value.astype(np.float64)


def step_number(iterations, host):
    """t = iterations + 1, the step being taken (an int on the host, float64 on a device)."""
    return int(iterations) + 1 if host else iterations.astype(np.float64) + 1.0


def sqrt(value, host):
    return math.sqrt(value) if host else backend.array_module(value).sqrt(value)


def factor(value, like):
    """``value`` ready to multiply ``like``: a Python float as it is, a device scalar cast to
    ``like``'s dtype (as NumPy casts a Python float), so the product keeps that dtype."""
    return value if value.__class__ is float else value.astype(like.dtype)
