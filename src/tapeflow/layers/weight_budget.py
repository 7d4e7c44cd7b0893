"""A cap on the bytes of weights a model may create, for models built from what a user or a
file declares (a config's layers; a saved model's config).

A typo'd or crafted ``units: 1000000000`` would otherwise allocate tens of GiB before any check
could look at it. Inside ``with weight_budget(n):`` every ``Layer.add_weight`` is charged its
bytes before its initializer runs, and the weight that would pass the cap is refused with a
``WeightBudgetError`` (a ValueError) naming it. Outside such a block nothing is counted (Keras's
own behaviour).

``weight_budget(n, expected=[(shape, dtype), ...])`` also says which weights may be made: a
model rebuilt from a save may make only weights of the shapes its stored arrays have, so a
config that disagrees with its arrays is refused before the weight that disagrees is allocated.
"""
import contextlib
import contextvars
import math

import numpy as np

__all__ = ["DEFAULT_BYTES", "WeightBudgetError", "weight_budget", "charge"]

DEFAULT_BYTES = 4 << 30
_remaining = contextvars.ContextVar("weight_budget", default=None)


class WeightBudgetError(ValueError):
    """A weight past the cap, or (with ``expected``) one the save does not hold."""


class _Budget:
    def __init__(self, nbytes, expected):
        self.left = int(nbytes)
        self.expected = None
        if expected is not None:  # a multiset: (shape, dtype) -> how many may still be made
            self.expected = {}
            for shape, dtype in expected:
                key = (tuple(int(d) for d in shape), np.dtype(dtype).name)
                self.expected[key] = self.expected.get(key, 0) + 1


@contextlib.contextmanager
def weight_budget(nbytes=None, expected=None):
    """``nbytes`` defaults to ``DEFAULT_BYTES`` as it is when the block starts (settable)."""
    token = _remaining.set(_Budget(DEFAULT_BYTES if nbytes is None else nbytes, expected))
    try:
        yield
    finally:
        _remaining.reset(token)


def charge(where, shape, dtype, what="a weight"):
    """Count ``what`` of ``shape`` and ``dtype`` against the current budget, if any, before it
    is allocated."""
    budget = _remaining.get()
    if budget is None:
        return
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > budget.left:
        raise WeightBudgetError(
            f"{where}: {what} of shape {tuple(shape)} needs {nbytes / 2**30:.1f} GiB, past the "
            f"{budget.left / 2**30:.1f} GiB left of the cap on a model's weights")
    if budget.expected is not None and what == "a weight":
        key = (tuple(int(d) for d in shape), np.dtype(dtype).name)
        if not budget.expected.get(key):
            held = sorted(f"{n}{list(s)}" for (s, n), c in budget.expected.items() if c)
            raise WeightBudgetError(
                f"{where}: the config makes a weight {key[1]}{list(key[0])}, which is not among "
                f"the saved arrays left ({', '.join(held) or 'none'})")
        budget.expected[key] -= 1
    budget.left -= nbytes
