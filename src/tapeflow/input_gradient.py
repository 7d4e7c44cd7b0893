"""Input-gradient regularization: penalize how fast the loss changes with the input.

The seed's three steps, as one object: (1) an inner tape takes the gradient of
the loss with respect to the input batch, (2) its size is measured per
example, (3) the outer tape (the caller's) differentiates that size with
respect to the model's weights, so the penalty trains the model.

The per-example gradient is ``batch_size * dL/dx_i`` (the loss is a batch
mean), so the penalty does not change with the batch size.  On first use it
checks that the penalty really depends on the weights: a penalty silently cut
off from them (a stop_gradient, a numpy detour) would train nothing.
"""
from .core.tape import GradientTape, paused_tapes
from .core.tensor import Tensor, convert_to_tensor
from .losses import sum_of_losses
from .ops.elementwise import sqrt
from .ops.reduce import reduce_mean, reduce_sum

__all__ = ["InputGradient"]


class InputGradient:
    """``weight * mean_i ||d loss_i / d x_i||`` (``squared=True``: the squared norm)."""

    def __init__(self, weight=0.01, squared=False):
        if float(weight) < 0:
            raise ValueError(f"InputGradient weight must be >= 0, got {weight}")
        self.weight = float(weight)
        self.squared = bool(squared)
        self._checked = False

    def __call__(self, input_gradient):
        """The penalty for a gradient already taken (``dL/dx`` of a batch-mean loss)."""
        g = convert_to_tensor(input_gradient)
        per_example = g * float(g.shape[0]) if g.ndim > 0 else g
        axes = list(range(1, per_example.ndim))
        sq = per_example * per_example
        if axes:  # a 1-D input has one feature per example: nothing to sum
            sq = reduce_sum(sq, axis=axes)
        size = sq if self.squared else sqrt(sq + 1e-24)  # finite gradient at a zero gradient
        return self.weight * reduce_mean(size)

    def loss_and_penalty(self, model, x, y=None, sample_weight=None, loss_fn=None):
        """(loss + penalty, predictions) for one batch; call it inside the caller's tape."""
        x = x if isinstance(x, Tensor) else convert_to_tensor(x, dtype_hint=model.dtype)
        if loss_fn is None:
            def loss_fn(y_true, y_pred):
                return model.compute_loss(x, y_true, y_pred, sample_weight)
        with GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(x)
            y_pred = model(x, training=True)
            loss = loss_fn(y, y_pred)
        grad_x = inner.gradient(loss, x)
        if grad_x is None:
            raise ValueError("InputGradient: the loss does not depend on the input x")
        penalty = self(grad_x)
        if not self._checked:
            with paused_tapes():  # the check is not part of the caller's step
                self._check_reaches_weights(model, x, y, loss_fn)
        return sum_of_losses([loss, penalty]), y_pred  # a float32 loss, a float64 model's penalty

    def _check_reaches_weights(self, model, x, y, loss_fn):
        variables = model.trainable_variables
        with GradientTape(watch_accessed_variables=False) as outer:
            outer.watch(variables)
            with GradientTape(watch_accessed_variables=False) as inner:
                inner.watch(x)
                loss = loss_fn(y, model(x, training=False))
            penalty = self(inner.gradient(loss, x))
        grads = outer.gradient(penalty, variables)
        if all(g is None for g in grads):
            raise ValueError(
                "InputGradient: the penalty does not reach the model's weights (every gradient "
                "of it is None); the input gradient was probably cut off by stop_gradient, "
                "a numpy computation, or an op without a second derivative")
        self._checked = True

    def get_config(self):
        return {"weight": self.weight, "squared": self.squared}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
