"""A cap on the bytes of weights a model may create, for models built from what a user or a
file declares (a config's layers; later, a saved model's config).

A typo'd or crafted ``units: 1000000000`` would otherwise allocate tens of GiB before any check
could look at it. Inside ``with weight_budget(n):`` every ``Layer.add_weight`` is charged its
bytes before its initializer runs, and the weight that would pass the cap is refused with a
ValueError naming it. Outside such a block nothing is counted (Keras's own behaviour).
"""
import contextlib
import contextvars
import math

import numpy as np

__all__ = ["DEFAULT_BYTES", "weight_budget", "charge"]

DEFAULT_BYTES = 4 << 30
_remaining = contextvars.ContextVar("weight_budget", default=None)


@contextlib.contextmanager
def weight_budget(nbytes=DEFAULT_BYTES):
    token = _remaining.set([int(nbytes)])
    try:
        yield
    finally:
        _remaining.reset(token)


def charge(where, shape, dtype):
    """Count a weight of ``shape`` and ``dtype`` against the current budget, if any."""
    budget = _remaining.get()
    if budget is None:
        return
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > budget[0]:
        raise ValueError(f"{where}: a weight of shape {tuple(shape)} needs {nbytes / 2**30:.1f} "
                         f"GiB, past the {budget[0] / 2**30:.1f} GiB left of the cap on a "
                         f"model's weights")
    budget[0] -= nbytes
