"""Adam, with the AMSGrad variant: Keras 3's formulas."""

import numpy as np

from .. import backend
from ..core.array_rows import TILE_FROM
from ..core.elementwise_updates import register_elementwise_update
from ..core.in_place import register_in_place
from ..ops import jit
from ..core.registry import def_primitive
from .base import Optimizer
from .step_scalars import factor, number, on_host, sqrt, step_number

__all__ = ["Adam", "moments", "moments_in_place"]


def moments(m, v, gradient, beta_1, beta_2):
    """Adam's moving averages, new arrays: m + (g - m)(1 - beta_1), v + (g^2 - v)(1 - beta_2)."""
    new_m = gradient - m
    new_m *= 1.0 - beta_1
    new_m += m                # m + (g - m)(1 - beta_1), in the temporary: no array allocated
    new_v = gradient * gradient
    new_v -= v
    new_v *= 1.0 - beta_2
    new_v += v
    return new_m, new_v


def _adam_step(var, m, v, alpha, epsilon):
    denominator = backend.array_module(v).sqrt(v)
    denominator += epsilon
    step = m * factor(alpha, m)
    step /= denominator
    return var - step


def _alpha(lr, iterations, beta_1, beta_2):
    """lr * sqrt(1 - beta_2**t) / (1 - beta_1**t) at step t = iterations + 1 (``step_scalars``)."""
    host = on_host(lr)
    t = step_number(iterations, host)
    return number(lr, host) * (sqrt(1.0 - beta_2 ** t, host) / (1.0 - beta_1 ** t))


def _apply_adam(var, m, v, grad, lr, iterations, *, beta_1, beta_2, epsilon):
    """(new var, m, v): Adam's update at step ``iterations + 1``."""
    m, v = moments(m, v, grad, beta_1, beta_2)
    return _adam_step(var, m, v, _alpha(lr, iterations, beta_1, beta_2), epsilon), m, v


def _apply_adam_amsgrad(var, m, v, v_hat, grad, lr, iterations, *, beta_1, beta_2, epsilon):
    """(new var, m, v, v_hat): AMSGrad divides by the running maximum of v."""
    m, v = moments(m, v, grad, beta_1, beta_2)
    v_hat = backend.array_module(v).maximum(v_hat, v)
    return _adam_step(var, m, v_hat, _alpha(lr, iterations, beta_1, beta_2), epsilon), m, v, v_hat


def moments_in_place(m, v, gradient, beta_1, beta_2):
    """``moments`` written into m and v (numpy), with its operations in its order; returns
    the scratch array it used (free for the caller's next temporary)."""
    change = gradient - m
    change *= 1.0 - beta_1
    m += change
    np.multiply(gradient, gradient, out=change)
    change -= v
    change *= 1.0 - beta_2
    v += change
    return change


def _compiled_update(var, m, v, grad):
    """numba's one-pass update (``_adam_numba``: numpy's bits, about 4x faster) for float32
    C-contiguous numpy arrays: from ``TILE_FROM`` elements, or any size once numba is loaded
    (``ops/jit.py``); else None."""
    if not jit.plain(var, m, v, grad, contiguous=True) or \
            (var.size < TILE_FROM and not jit.loaded()):
        return None
    module = jit.kernels("tapeflow.optimizers._adam_numba")
    return None if module is None else module.adam_in_place


def _apply_adam_in_place(var, m, v, grad, lr, iterations, *, beta_1, beta_2, epsilon):
    """``_apply_adam`` written into var, m and v (numpy), with its operations in its order:
    what a compiled step runs where no one else sees the old arrays (``core/in_place.py``)."""
    alpha = _alpha(lr, iterations, beta_1, beta_2)
    update = _compiled_update(var, m, v, grad)
    if update is not None:  # the scalars as numpy casts a Python float against float32
        f32 = np.float32
        update(var.reshape(-1), m.reshape(-1), v.reshape(-1), grad.reshape(-1),
               f32(1.0 - beta_1), f32(1.0 - beta_2), f32(alpha), f32(epsilon))
        return var, m, v
    change = moments_in_place(m, v, grad, beta_1, beta_2)
    _adam_step_in_place(var, m, v, change, alpha, epsilon)
    return var, m, v


def _apply_adam_amsgrad_in_place(var, m, v, v_hat, grad, lr, iterations, *, beta_1, beta_2,
                                 epsilon):
    """``_apply_adam_amsgrad`` written into var, m, v and v_hat (numpy), in its order."""
    change = moments_in_place(m, v, grad, beta_1, beta_2)
    np.maximum(v_hat, v, out=v_hat)
    _adam_step_in_place(var, m, v_hat, change, _alpha(lr, iterations, beta_1, beta_2), epsilon)
    return var, m, v, v_hat


def _adam_step_in_place(var, m, v, scratch, alpha, epsilon):
    """``_adam_step`` subtracted from var in place, its denominator in ``scratch``."""
    denominator = np.sqrt(v, out=scratch)
    denominator += epsilon
    step = m * factor(alpha, m)
    step /= denominator
    var -= step


register_in_place("ApplyAdam", _apply_adam_in_place, targets=3)
register_in_place("ApplyAdamWithAmsgrad", _apply_adam_amsgrad_in_place, targets=4)
# element by element in (var, m, v[, v_hat], grad): small Variables' updates run as one call
register_elementwise_update("ApplyAdam", per_variable=4)
register_elementwise_update("ApplyAdamWithAmsgrad", per_variable=5)


class Adam(Optimizer):
    """Adam (Kingma and Ba), bias-corrected through the step size as Keras does.

    Slots ``momentum`` (m) and ``velocity`` (v), and ``velocity_hat`` with
    ``amsgrad``.  At step t (from 1)::

        m += (g - m) * (1 - beta_1)
        v += (g**2 - v) * (1 - beta_2)
        v_hat = max(v_hat, v)                  # amsgrad only; then v_hat is used as v
        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        w -= m * alpha / (sqrt(v) + epsilon)

    One ``ApplyAdam`` (``ApplyAdamWithAmsgrad``) op per variable, given ``iterations``
    (t - 1): ``alpha`` is computed in its kernel, at the step it runs at.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 *, clipnorm=None, clipvalue=None, global_clipnorm=None, weight_decay=None, name=None):
        super().__init__(learning_rate, clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, weight_decay=weight_decay, name=name)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = bool(amsgrad)

    def build(self, var_list):
        super().build(var_list)
        for var in var_list:
            self.add_slot(var, "momentum")
            self.add_slot(var, "velocity")
            if self.amsgrad:
                self.add_slot(var, "velocity_hat")

    # The step as one op per variable, its kernel above the class: state, never differentiated.
    APPLY_ADAM = def_primitive("ApplyAdam", _apply_adam, num_outputs=3, not_differentiable=True)
    APPLY_ADAM_AMSGRAD = def_primitive("ApplyAdamWithAmsgrad", _apply_adam_amsgrad, num_outputs=4,
                                       not_differentiable=True)

    def update_step(self, gradient, variable, learning_rate):
        m = self.get_slot(variable, "momentum")
        v = self.get_slot(variable, "velocity")
        attrs = {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
        iterations = self._iterations
        if self.amsgrad:
            v_hat = self.get_slot(variable, "velocity_hat")
            self._apply_update(self.APPLY_ADAM_AMSGRAD,
                               (variable, m, v, v_hat, gradient, learning_rate, iterations),
                               attrs, (variable, m, v, v_hat))
        else:
            self._apply_update(self.APPLY_ADAM,
                               (variable, m, v, gradient, learning_rate, iterations),
                               attrs, (variable, m, v))

    def get_config(self):
        config = super().get_config()
        config.update(beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                      amsgrad=self.amsgrad)
        return config
