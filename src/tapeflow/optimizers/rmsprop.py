"""RMSprop, plain, centered, and with momentum: Keras 3's formulas."""
from .. import backend
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from .base import Optimizer
from .step_scalars import factor, number, on_host

__all__ = ["RMSprop"]


def _apply_rmsprop(var, velocity, mom, average, grad, lr, *, rho, momentum, epsilon, centered):
    """(new var, velocity, momentum, average); the last two pass through when unused."""
    velocity = velocity * rho
    velocity += (1.0 - rho) * (grad * grad)
    if centered:
        average = average * rho
        average += (1.0 - rho) * grad
        denominator = velocity - average * average
        denominator += epsilon
    else:
        denominator = velocity + epsilon
    increment = factor(number(lr, on_host(lr)), grad) * grad
    increment /= backend.array_module(grad).sqrt(denominator)
    if momentum > 0:
        mom = mom * momentum
        mom += increment
        increment = mom
    return var - increment, velocity, mom, average


class RMSprop(Optimizer):
    """Divides the gradient by a running root mean square of its recent values.

    Slots ``velocity`` (v), ``momentum`` when momentum > 0, and
    ``average_gradient`` (a) when centered; one ``ApplyRMSProp`` op per variable::

        v = rho * v + (1 - rho) * g**2
        a = rho * a + (1 - rho) * g                      # centered only
        increment = lr * g / sqrt(v - a**2 + epsilon)    # v + epsilon when not centered
        mom = momentum * mom + increment; w -= mom       # w -= increment without momentum
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 *, clipnorm=None, clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = bool(centered)

    def build(self, var_list):
        super().build(var_list)
        for var in var_list:
            self.add_slot(var, "velocity")
            if self.momentum > 0:
                self.add_slot(var, "momentum")
            if self.centered:
                self.add_slot(var, "average_gradient")

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_RMSPROP = def_primitive("ApplyRMSProp", _apply_rmsprop, num_outputs=4,
                                  not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        velocity = self.get_slot(variable, "velocity")
        # the op always takes and gives the momentum and average slots; a 0-d placeholder
        # stands for the ones this configuration does not have (its output is never stored)
        unused = None
        momentum = average = None
        if self.momentum > 0:
            momentum = self.get_slot(variable, "momentum")
        if self.centered:
            average = self.get_slot(variable, "average_gradient")
        if momentum is None or average is None:
            unused = Tensor(variable._value.dtype.type(0))
        self._apply_update(
            self.APPLY_RMSPROP, (variable, velocity, unused if momentum is None else momentum,
                            unused if average is None else average, gradient, learning_rate),
            {"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
             "centered": self.centered},
            (variable, velocity, momentum, average))  # None: a slot this configuration lacks

    def get_config(self):
        config = super().get_config()
        config.update(rho=self.rho, momentum=self.momentum, epsilon=self.epsilon,
                      centered=self.centered)
        return config
