"""``tapeflow.autodiff``: TensorFlow's ``tf.autodiff`` namespace, and forward-mode helpers.

``ForwardAccumulator`` and ``GradientTape`` are TensorFlow's; ``jvp``, ``hvp`` and
``linearize`` are tapeflow's functional forms of forward mode (``jax.jvp``,
forward-over-reverse Hessian-vector products, ``jax.linearize``).
"""
from .core.forward import ForwardAccumulator, hvp, jvp, linearize
from .core.tape import GradientTape

__all__ = ["ForwardAccumulator", "GradientTape", "jvp", "hvp", "linearize"]
