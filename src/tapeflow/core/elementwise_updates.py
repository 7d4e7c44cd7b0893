"""Update ops that work element by element: several Variables' updates may run as one.

An optimizer's update op (``ApplyAdam``) on a small Variable spends its time in the calls, not
in the arithmetic: a dozen numpy calls on a bias of 64 elements.  Where an op's forward computes
each element of its results from the same element of its first ``per_variable`` operands (the
Variable, its slots and its gradient, all of one shape) and from its other operands (a learning
rate, a step count) alone, a compiled step may run the updates of several Variables that share
those other operands as one call on their operands laid end to end, with the same bits
(``tracing/update_groups.py``).  An op declares that here, beside its forward.
"""

__all__ = ["elementwise_operands", "register_elementwise_update"]

_PER_VARIABLE = {}  # op name -> how many leading operands are per-variable arrays


def register_elementwise_update(name, per_variable):
    """Op ``name``'s results are element by element in its first ``per_variable`` operands
    (arrays of its first result's shape), given the rest, which are shared scalars."""
    _PER_VARIABLE[name] = int(per_variable)


def elementwise_operands(name):
    """How many leading operands op ``name`` works on element by element, or None."""
    return _PER_VARIABLE.get(name)
