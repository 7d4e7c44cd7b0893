"""``keras.backend``: the session and numeric settings Keras code asks for.

Keras's name; not ``tapeflow.backend``, which chooses the array module (numpy or CuPy).
"""
from ..backend import EPSILON
from ..dtype_policy import floatx, set_floatx
from ..layers.base import clear_session

__all__ = ["clear_session", "epsilon", "floatx", "set_floatx"]


def epsilon():
    """The fuzz factor losses and metrics add to avoid dividing by zero, as Keras's (1e-7)."""
    return EPSILON
