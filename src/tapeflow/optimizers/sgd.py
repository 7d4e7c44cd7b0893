"""Stochastic gradient descent, with optional (Nesterov) momentum: Keras 3's formulas."""
from ..core.in_place import register_in_place
from ..core.registry import Inline, def_primitive
from .base import Optimizer

__all__ = ["SGD"]


# The learning rate is a 0-d array (a variable's value): cast to the gradient's dtype it rounds
# as a Python float would, and on a GPU it stays there (``float(lr)`` would sync every step).
def _apply_gradient_descent(var, grad, lr):
    return var - grad * lr.astype(grad.dtype, copy=False)


def _apply_momentum(var, m, grad, lr, *, momentum, nesterov):
    """(new var, new m): m = momentum * m - lr * g; var + m (+ Nesterov's look-ahead)."""
    step = grad * lr.astype(grad.dtype, copy=False)
    m = m * momentum
    m -= step
    if nesterov:
        return var + (m * momentum - step), m
    return var + m, m


def _gradient_descent_kernel(in_types, attrs):
    return Inline("{0} - {1} * float({2})")


def _apply_gradient_descent_in_place(var, grad, lr):
    """``_apply_gradient_descent`` written into var (``core/in_place.py``)."""
    var -= grad * lr.astype(grad.dtype, copy=False)
    return var


register_in_place("ApplyGradientDescent", _apply_gradient_descent_in_place, targets=1)


class SGD(Optimizer):
    """Gradient descent with momentum.

    Without momentum: ``w -= learning_rate * g`` (one ``ApplyGradientDescent`` op).
    With momentum, the slot ``momentum`` holds the velocity
    ``m = momentum * m - learning_rate * g``; then ``w += m``, or with ``nesterov``
    ``w += momentum * m - learning_rate * g`` (one ``ApplyMomentum`` op).
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, *, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        if not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be a float between [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def build(self, var_list):
        super().build(var_list)
        if self.momentum != 0:
            for var in var_list:
                self.add_slot(var, "momentum")

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_GRADIENT_DESCENT = def_primitive("ApplyGradientDescent", _apply_gradient_descent,
                                           not_differentiable=True,
                                           specialize=_gradient_descent_kernel)
    APPLY_MOMENTUM = def_primitive("ApplyMomentum", _apply_momentum, num_outputs=2,
                                   not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        if self.momentum == 0:
            self._apply_update(self.APPLY_GRADIENT_DESCENT, (variable, gradient, learning_rate),
                               {}, (variable,))
            return
        m = self.get_slot(variable, "momentum")
        self._apply_update(self.APPLY_MOMENTUM, (variable, m, gradient, learning_rate),
                           {"momentum": self.momentum, "nesterov": self.nesterov}, (variable, m))

    def get_config(self):
        config = super().get_config()
        config.update(momentum=self.momentum, nesterov=self.nesterov)
        return config
