"""Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms"): Keras 3's."""
from .. import backend
from ..core.registry import def_primitive
from .base import Optimizer

__all__ = ["Lion"]


def _apply_lion(var, m, grad, lr, *, beta_1, beta_2):
    """(new var, new m)."""
    direction = backend.array_module(var).sign(m * beta_1 + grad * (1.0 - beta_1))
    return var - direction * float(lr), m * beta_2 + grad * (1.0 - beta_2)


class Lion(Optimizer):
    """Steps by the sign of an interpolation of the momentum and the gradient, so every
    element moves by exactly ``learning_rate`` (use a smaller rate than Adam's).  Slot
    ``momentum``; one ``ApplyLion`` op per variable::

        w -= lr * sign(beta_1 * m + (1 - beta_1) * g)
        m = beta_2 * m + (1 - beta_2) * g
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, *, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        if not 0 < beta_1 <= 1:
            raise ValueError("Argument `beta_1` must be in the (0, 1] range (at 0 Lion is "
                             f"signSGD), got beta_1={beta_1!r}")
        self.beta_1 = beta_1
        self.beta_2 = beta_2

    def build(self, var_list):
        super().build(var_list)
        for var in var_list:
            self.add_slot(var, "momentum")

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_LION = def_primitive("ApplyLion", _apply_lion, num_outputs=2, not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        self._apply_update(self.APPLY_LION, (variable, m, gradient, learning_rate),
                           {"beta_1": self.beta_1, "beta_2": self.beta_2}, (variable, m))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2)
        return config
