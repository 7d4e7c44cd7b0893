"""Keras 3's ``LossScaleOptimizer``: dynamic loss scaling for float16 training.

A float16 gradient underflows to zero below ~6e-8; multiplying the loss by a large scale
(2**15 to start) before differentiating keeps small gradients representable, and dividing
the gradients by it afterwards gives the true ones.  When a step's gradients are not all
finite (the scale was too large), the step is skipped and the scale halved; after
``dynamic_growth_steps`` finite steps in a row it is doubled.  ``Model.compile`` wraps the
optimizer in one for a "mixed_float16" model, and ``Model.train_step`` differentiates
``optimizer.scale_loss(loss)``, as Keras 3's.
"""
from ..core.tensor import Tensor, convert_to_tensor
from ..ops.arithmetic import equal, multiply, add, divide
from ..ops.elementwise import is_finite
from ..ops.reduce import reduce_all
from ..ops.shape import cast, stack, where
from ..tracing.control_flow import cond
from .base import Optimizer

__all__ = ["LossScaleOptimizer"]

_INNER = "inner_optimizer/"  # the prefix of the inner optimizer's keys in get_state()


class LossScaleOptimizer(Optimizer):
    """Wraps ``inner_optimizer``: ``apply`` takes gradients of ``scale_loss(loss)``.

    Args:
        inner_optimizer: the optimizer that takes the (unscaled) steps.
        initial_scale: the first loss scale (Keras's 2**15).
        dynamic_growth_steps: finite steps in a row after which the scale doubles (2000).
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000,
                 name=None, **kwargs):
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"LossScaleOptimizer wraps a tapeflow Optimizer, got "
                            f"{type(inner_optimizer).__name__}: {inner_optimizer!r}")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer")
        if not initial_scale > 0:
            raise ValueError(f"`initial_scale` must be positive, got {initial_scale!r}")
        if int(dynamic_growth_steps) != dynamic_growth_steps or dynamic_growth_steps < 1:
            raise ValueError(f"`dynamic_growth_steps` must be a positive integer, got "
                             f"{dynamic_growth_steps!r}")
        # the rate and the step count are the inner optimizer's (the properties below)
        super().__init__(learning_rate=lambda: inner_optimizer._current_learning_rate(
            int(inner_optimizer.iterations._value)), name=name or "loss_scale_optimizer",
            **kwargs)
        self.inner_optimizer = inner_optimizer
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        self._state = {}  # this wrapper's own: the scale and the finite steps since it changed
        self._step_counter = self.add_variable("step_counter", 0, dtype="int64")
        self._dynamic_scale = self.add_variable("dynamic_scale", self.initial_scale)

    # --- the loss scale ------------------------------------------------------------------------
    @property
    def dynamic_scale(self):
        return self._dynamic_scale

    def scale_loss(self, loss):
        """``loss`` times the current scale (in the loss's dtype)."""
        loss = loss if isinstance(loss, Tensor) else convert_to_tensor(loss, dtype="float32")
        return multiply(loss, cast(self._dynamic_scale, loss.dtype))

    # --- a step ------------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        """Unscale the gradients of a scaled loss and let the inner optimizer step; with a
        non-finite gradient anywhere, skip the step and halve the scale."""
        inner = self.inner_optimizer
        variables = list(inner._trained if trainable_variables is None else trainable_variables)
        grads = [g if g is None or isinstance(g, Tensor) else convert_to_tensor(g)
                 for g in grads]
        present = [g for g in grads if g is not None]
        if not present:
            raise ValueError("LossScaleOptimizer.apply received no gradients")
        # slots made now, outside the branch below: a traced branch makes no variables
        inner.build([v for g, v in zip(grads, variables) if g is not None])
        finite = reduce_all(stack([reduce_all(is_finite(g)) for g in present]))
        cond(finite, lambda: self._finite_step(grads, variables), self._skip_step)
        return inner.iterations

    def _finite_step(self, grads, variables):
        scale = self._dynamic_scale
        unscaled = [None if g is None else divide(g, cast(scale, g.dtype)) for g in grads]
        self.inner_optimizer.apply(unscaled, variables)
        grow = equal(self._step_counter, self.dynamic_growth_steps - 1)
        self._step_counter.assign(where(grow, cast(0, "int64"), add(self._step_counter,
                                                                    cast(1, "int64"))))
        self._dynamic_scale.assign(where(grow, multiply(scale, 2.0), scale))

    def _skip_step(self):
        self._step_counter.assign(cast(0, "int64"))
        self._dynamic_scale.assign(multiply(self._dynamic_scale, 0.5))

    # --- the inner optimizer's -----------------------------------------------------------------
    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if "inner_optimizer" not in vars(self):  # Optimizer.__init__ sets it first
            Optimizer.learning_rate.fset(self, value)
        else:
            self.inner_optimizer.learning_rate = value

    @property
    def variables(self):
        """This wrapper's state (``step_counter``, ``dynamic_scale``), then the inner's."""
        return list(self._state.values()) + self.inner_optimizer.variables

    @property
    def built(self):
        return self.inner_optimizer.built

    def _key_by_structure(self, keyed):
        self.inner_optimizer._key_by_structure(keyed)

    def get_state(self):
        """The scale's state, then the inner optimizer's under ``"inner_optimizer/"``."""
        inner = self.inner_optimizer.get_state()
        return {**super().get_state(), **{_INNER + key: value for key, value in inner.items()}}

    def _checked_state(self, state):  # set_state's (and load_weights') check of both parts
        own = {k: v for k, v in state.items() if not k.startswith(_INNER)}
        inner = {k[len(_INNER):]: v for k, v in state.items() if k.startswith(_INNER)}
        return super()._checked_state(own) + self.inner_optimizer._checked_state(inner)

    # The optimizers' registry, set by the package (optimizers/__init__.py) that registers
    # this class: importing it here would make an import circle.
    registry = None

    def get_config(self):
        return {"name": self.name, "inner_optimizer": self.registry.serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["inner_optimizer"] = cls.registry.deserialize(config["inner_optimizer"],
                                                             custom_objects)
        return cls(**config)
