"""Nadam: Adam with Nesterov momentum and Keras 3's momentum-cache schedule."""
import numpy  # the host-side momentum product and the in-place kernel

from .. import backend
from ..core.dispatch import apply
from ..core.elementwise_updates import register_elementwise_update
from ..core.in_place import register_in_place
from ..core.registry import def_primitive
from .adam import moments, moments_in_place
from .base import Optimizer
from .step_scalars import factor, number, on_host, step_number

__all__ = ["Nadam"]


def _momentum_cache(beta_1, step):
    return beta_1 * (1.0 - 0.5 * 0.96 ** step)


def _momentum_product(u_product, iterations, *, beta_1):
    """u_product * u_t at step t = iterations + 1, rounded to u_product's dtype."""
    host = on_host(u_product)
    u_t = _momentum_cache(beta_1, step_number(iterations, host))
    # kept in the variables' dtype, so a restored checkpoint continues exactly
    if host:
        return numpy.asarray(u_product.dtype.type(float(u_product) * u_t))
    return (u_product.astype(numpy.float64) * u_t).astype(u_product.dtype)


def _nadam_weights(lr, u_product, iterations, beta_1, beta_2):
    """The step's scalars: (m's weight, g's weight, v's bias correction), on the host or not."""
    host = on_host(lr)
    step = step_number(iterations, host)
    u_t = _momentum_cache(beta_1, step)
    u_next = _momentum_cache(beta_1, step + 1)
    u_product = number(u_product, host)
    m_weight = u_next / (1.0 - u_product * u_next)
    g_weight = (1.0 - u_t) / (1.0 - u_product)
    return m_weight, g_weight, 1.0 - beta_2 ** step


def _apply_nadam(var, m, v, grad, lr, u_product, iterations, *, beta_1, beta_2, epsilon):
    """(new var, m, v) at step t = iterations + 1; ``u_product`` already includes u_t."""
    host = on_host(lr)
    m_weight, g_weight, v_correction = _nadam_weights(lr, u_product, iterations, beta_1, beta_2)
    m, v = moments(m, v, grad, beta_1, beta_2)
    m_hat = m * factor(m_weight, m)
    m_hat += grad * factor(g_weight, grad)
    denominator = backend.array_module(v).sqrt(v / factor(v_correction, v))
    denominator += epsilon
    m_hat *= factor(number(lr, host), m_hat)
    m_hat /= denominator
    return var - m_hat, m, v


def _apply_nadam_in_place(var, m, v, grad, lr, u_product, iterations, *, beta_1, beta_2,
                          epsilon):
    """``_apply_nadam`` written into var, m and v (numpy; ``core/in_place.py``), with its
    operations in its order."""
    m_weight, g_weight, v_correction = _nadam_weights(lr, u_product, iterations, beta_1, beta_2)
    scratch = moments_in_place(m, v, grad, beta_1, beta_2)
    m_hat = m * factor(m_weight, m)
    m_hat += numpy.multiply(grad, factor(g_weight, grad), out=scratch)
    denominator = numpy.sqrt(numpy.divide(v, factor(v_correction, v), out=scratch), out=scratch)
    denominator += epsilon
    m_hat *= factor(float(lr), m_hat)
    m_hat /= denominator
    var -= m_hat
    return var, m, v


register_in_place("ApplyNadam", _apply_nadam_in_place, targets=3)
register_elementwise_update("ApplyNadam", per_variable=4)  # small ones as one call


class Nadam(Optimizer):
    """Nadam (Dozat), as Keras 3 writes it.

    Slots ``momentum`` (m) and ``velocity`` (v); the optimizer-wide variable
    ``u_product`` is the running product of the momentum schedule
    ``u_t = beta_1 * (1 - 0.5 * 0.96**t)``.  At step t (from 1)::

        u_product *= u_t                      # once per step, before the variables
        m += (g - m) * (1 - beta_1)
        v += (g**2 - v) * (1 - beta_2)
        m_hat = u_{t+1} * m / (1 - u_product * u_{t+1}) + (1 - u_t) * g / (1 - u_product)
        v_hat = v / (1 - beta_2**t)
        w -= lr * m_hat / (sqrt(v_hat) + epsilon)

    Ops: ``NadamMomentumProduct`` once per step, then one ``ApplyNadam`` per variable;
    both are given ``iterations`` (t - 1) and compute the step's scalars in their kernels.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, *,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._u_product = None
        self._product = None  # this step's u_product (a tensor), between _begin_step and the updates

    def build(self, var_list):
        super().build(var_list)
        if self._u_product is None:  # the first variables' dtype, as Keras
            dtype = var_list[0]._value.dtype if var_list else "float32"
            self._u_product = self.add_variable("u_product", 1.0, dtype=dtype)
        for var in var_list:
            self.add_slot(var, "momentum")
            self.add_slot(var, "velocity")

    # The step's ops, their kernels above the class: the momentum product once per step, then
    # one ApplyNadam per variable; state, never differentiated.
    NADAM_MOMENTUM_PRODUCT = def_primitive("NadamMomentumProduct", _momentum_product,
                                           not_differentiable=True)
    APPLY_NADAM = def_primitive("ApplyNadam", _apply_nadam, num_outputs=3, not_differentiable=True)

    def _begin_step(self, iterations):
        product = apply(self.NADAM_MOMENTUM_PRODUCT, (self._u_product, iterations),
                        {"beta_1": self.beta_1})
        self._store(self._u_product, product)
        self._product = product

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        v = self.get_slot(variable, "velocity")
        self._apply_update(
            self.APPLY_NADAM,
            (variable, m, v, gradient, learning_rate, self._product, self._iterations),
            {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}, (variable, m, v))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon)
        return config
