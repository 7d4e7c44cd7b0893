"""Update kernels that write a state op's results into its operands' own arrays.

An optimizer's update op (``ApplyAdam``) returns new arrays for the variable and its slots,
which the step then assigns back.  Where the old arrays can be seen by no one else, a
compiled graph may call the op's in-place kernel instead: the same arithmetic, in the same
order (so the same bits), written into the first ``targets`` operands, which it returns.
The compiled graph decides when that is safe (``tracing/memory_plan.py``); an op registers
its kernel here, beside its forward.  As with TensorFlow's resource variables without
``use_locking``, another thread reading a Variable while a step updates it may see the update
half done (a fresh array is swapped in whole).
"""

__all__ = ["register_in_place", "in_place_kernel"]

_KERNELS = {}  # op name -> (kernel, number of leading operands it overwrites)


def register_in_place(name, kernel, targets):
    """``kernel(*operands, **attrs)`` computes op ``name``'s results into its first
    ``targets`` operands (float numpy arrays) and returns them, as the forward would return
    new ones."""
    _KERNELS[name] = (kernel, int(targets))


def in_place_kernel(name):
    """``(kernel, targets)`` for op ``name``, or None."""
    return _KERNELS.get(name)
