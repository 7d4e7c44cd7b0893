"""Adagrad: per-element learning rates from the sum of squared gradients (Keras 3's formulas)."""
import numpy as np

from .. import backend
from ..core.elementwise_updates import register_elementwise_update
from ..core.in_place import register_in_place
from ..core.registry import def_primitive
from .base import Optimizer
from .step_scalars import factor, number, on_host

__all__ = ["Adagrad"]


def _apply_adagrad(var, accumulator, grad, lr, *, epsilon):
    """(new var, new accumulator)."""
    squares = grad * grad
    squares += accumulator
    accumulator = squares
    denominator = accumulator + epsilon
    step = factor(number(lr, on_host(lr)), grad) * grad
    sqrt = backend.array_module(grad).sqrt
    # in place for arrays; a scalar variable's arithmetic gives numpy scalars, which have no buffer
    step /= sqrt(denominator, out=denominator) if getattr(denominator, "ndim", 0) else \
        sqrt(denominator)
    return var - step, accumulator


def _apply_adagrad_in_place(var, accumulator, grad, lr, *, epsilon):
    """``_apply_adagrad`` written into var and accumulator (numpy; ``core/in_place.py``): the
    same operations on the same operands (a sum and a product commute bit for bit)."""
    scratch = grad * grad
    accumulator += scratch
    np.add(accumulator, epsilon, out=scratch)
    step = grad * factor(number(lr, True), grad)
    step /= np.sqrt(scratch, out=scratch)
    var -= step
    return var, accumulator


register_in_place("ApplyAdagrad", _apply_adagrad_in_place, targets=2)
register_elementwise_update("ApplyAdagrad", per_variable=3)  # small ones as one call


class Adagrad(Optimizer):
    """Slot ``accumulator`` (starts at ``initial_accumulator_value``); one ``ApplyAdagrad``
    op per variable::

        accumulator += g**2
        w -= lr * g / sqrt(accumulator + epsilon)
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, *,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def build(self, var_list):
        super().build(var_list)
        for var in var_list:
            self.add_slot(var, "accumulator", self.initial_accumulator_value)

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_ADAGRAD = def_primitive("ApplyAdagrad", _apply_adagrad, num_outputs=2,
                                  not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        accumulator = self.get_slot(variable, "accumulator")
        self._apply_update(self.APPLY_ADAGRAD, (variable, accumulator, gradient, learning_rate),
                           {"epsilon": self.epsilon}, (variable, accumulator))

    def get_config(self):
        config = super().get_config()
        config.update(initial_accumulator_value=self.initial_accumulator_value, epsilon=self.epsilon)
        return config
