"""Adamax: Adam with the infinity norm of past gradients in place of their RMS (Keras 3's)."""
import numpy as np

from .. import backend
from ..core.elementwise_updates import register_elementwise_update
from ..core.in_place import register_in_place
from ..core.registry import def_primitive
from .base import Optimizer
from .step_scalars import factor, number, on_host, step_number

__all__ = ["Adamax"]


def _apply_adamax(var, m, u, grad, lr, iterations, *, beta_1, beta_2, epsilon):
    """(new var, m, u) at step ``iterations + 1``; the bias correction in host floats."""
    xp = backend.array_module(var)
    host = on_host(lr)
    t = step_number(iterations, host)
    m = m + (grad - m) * (1.0 - beta_1)
    u = xp.maximum(u * beta_2, xp.abs(grad))
    step = m * factor(number(lr, host) / (1.0 - beta_1 ** t), m)
    step /= u + epsilon
    return var - step, m, u


def _apply_adamax_in_place(var, m, u, grad, lr, iterations, *, beta_1, beta_2, epsilon):
    """``_apply_adamax`` written into var, m and u (numpy; ``core/in_place.py``), with its
    operations in its order."""
    t = step_number(iterations, True)
    scratch = grad - m
    scratch *= 1.0 - beta_1
    m += scratch
    u *= beta_2
    np.maximum(u, np.abs(grad, out=scratch), out=u)
    step = m * factor(number(lr, True) / (1.0 - beta_1 ** t), m)
    step /= np.add(u, epsilon, out=scratch)
    var -= step
    return var, m, u


register_in_place("ApplyAdaMax", _apply_adamax_in_place, targets=3)
register_elementwise_update("ApplyAdaMax", per_variable=4)  # small ones as one call


class Adamax(Optimizer):
    """Slots ``momentum`` (m) and ``norm`` (u, an exponentially weighted infinity norm).
    At step t (from 1), one ``ApplyAdaMax`` op per variable::

        m += (g - m) * (1 - beta_1)
        u = maximum(beta_2 * u, |g|)
        w -= lr * m / ((1 - beta_1**t) * (u + epsilon))
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, *,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def build(self, var_list):
        super().build(var_list)
        for var in var_list:
            self.add_slot(var, "momentum")
            self.add_slot(var, "norm")

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_ADAMAX = def_primitive("ApplyAdaMax", _apply_adamax, num_outputs=3,
                                 not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        u = self.get_slot(variable, "norm")
        attrs = {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
        self._apply_update(self.APPLY_ADAMAX,
                           (variable, m, u, gradient, learning_rate, self._iterations), attrs,
                           (variable, m, u))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config
