"""What a second-order optimizer minimizes in one step: an ``Objective``.

``Newton`` and ``LevenbergMarquardt`` evaluate the loss several times in one step (its
curvature, then once per trial point), put the variables back when a trial is rejected,
and LM forms the Jacobian of the model's outputs a chunk of examples at a time.  An
objective holds all of that, so that the optimizers never reach into a model and
``Model.train_step`` only chooses between ``apply_gradients`` and::

    objective = Objective(model, x, y, sample_weight)
    optimizer.minimize(objective)        # Newton or LevenbergMarquardt: one step
    loss, y_pred = objective.finish()    # the step's first evaluation, for the metrics

``Objective(model, x, y, sample_weight)``, one batch of a model's data:

* ``loss()`` the compiled loss (with an input-gradient penalty and the layers' losses, as
  the first-order step takes it), a tensor.  Every evaluation replays the random draws the
  step began with, so Dropout gives the same mask at every trial point and the loss is one
  function of the variables;
* ``outputs()`` the model's outputs on the batch (random draws replayed likewise) and
  ``outputs_on(start, stop)`` those of examples ``start:stop`` computed alone, the chunks
  a per-example Jacobian is formed from (``gauss_newton.output_jacobian``);
  ``output_loss(who)`` the loss as an ``OutputLoss`` of them (refused, with one message,
  where the Gauss-Newton matrix would not be this loss's);
* ``curvature_loss(size)`` the loss on ``size`` examples drawn from the batch, for a
  subsampled Hessian (``Newton(hessian_batch_size=...)``), or None;
* ``values()``, ``move(start, flat_step)``, ``restore(values)``: the variables' point, to
  try a step and put a rejected one back;
* ``finish()`` puts the layers' state (BatchNormalization's moving statistics) back to
  where the step's first evaluation left it, so that it moves once per step, not once per
  trial, and returns that evaluation's ``(loss, outputs)``.

``FunctionObjective(loss_fn, variables, ...)`` is the same for a loss function of no
arguments: what the optimizers' standalone ``minimize(loss_fn, var_list)`` builds.
"""
import numpy as np

from .. import backend
from ..core.context import context
from ..core.tensor import Tensor
from ..ops import random as random_ops
from .gauss_newton import OutputLoss, check_supported_loss

__all__ = ["Objective", "FunctionObjective", "ObjectiveBase"]


class ObjectiveBase:
    """The variables' point, shared by both kinds of objective."""

    def __init__(self, variables):
        self.variables = list(variables)

    def values(self):
        """The variables' current values (to ``restore`` later)."""
        return [v._value for v in self.variables]

    def move(self, start, flat_step):
        """Each variable to its ``start`` value minus its part of ``flat_step`` (float64)."""
        offset = 0
        for v, value in zip(self.variables, start):
            size = int(value.size)
            part = flat_step[offset:offset + size].reshape(value.shape)
            xp = backend.array_module(value)
            v._replace_value(value - xp.asarray(part, dtype=value.dtype))
            offset += size

    def restore(self, values):
        """The variables back to ``values`` (a rejected step, a non-finite loss)."""
        for v, value in zip(self.variables, values):
            v._replace_value(value)


class FunctionObjective(ObjectiveBase):
    """A loss function of no arguments over ``variables``; ``curvature_fn`` the same loss on
    part of the data (a subsampled Hessian), ``output_loss`` it as an ``OutputLoss``."""

    def __init__(self, loss_fn, variables, curvature_fn=None, output_loss=None):
        super().__init__(variables)
        self._loss_fn, self._curvature_fn, self._output_loss = loss_fn, curvature_fn, output_loss

    def loss(self):
        return self._loss_fn()

    def curvature_loss(self, size):
        """The curvature's loss the caller gave (whatever ``size``), or None."""
        return self._curvature_fn

    def output_loss(self, who):
        if self._output_loss is None:
            raise ValueError(f"{who} needs the loss as a function of outputs: pass "
                             "gauss_newton=OutputLoss(outputs_fn, loss_of_outputs)")
        return self._output_loss


class Objective(ObjectiveBase):
    """The loss of ``model`` on one batch ``x``, ``y``, ``sample_weight`` over its trainable
    variables (see the module docstring)."""

    def __init__(self, model, x, y=None, sample_weight=None):
        super().__init__(model.trainable_variables)
        self.model, self.x, self.y, self.sample_weight = model, x, y, sample_weight
        self._random = random_ops.snapshot_state()
        self._first = None  # (loss or None, outputs, the layers' state) of the first evaluation

    def loss(self):
        random_ops.restore_state(self._random)
        loss, outputs = self._loss_and_outputs(self.x, self.y, self.sample_weight)
        self._remember(loss, outputs)
        return loss

    def outputs(self):
        random_ops.restore_state(self._random)
        outputs = self.model(self.x, training=True)
        self._remember(None, outputs)
        return outputs

    def outputs_on(self, start, stop):
        """The outputs of examples ``start:stop`` alone (a per-example Jacobian's chunk)."""
        random_ops.restore_state(self._random)
        return self.model(self.x[start:stop], training=True)

    def output_loss(self, who):
        """The compiled loss as an ``OutputLoss`` of the outputs; refused, with one message,
        where ``who``'s Gauss-Newton matrix would not be this loss's."""
        model = self.model
        if model.input_gradient is not None:
            raise ValueError(f"{who} takes Gauss-Newton steps on the loss of the model's "
                             "outputs; an input-gradient penalty is not one (compile without "
                             "input_gradient, or use Newton or a first-order optimizer)")
        check_supported_loss(model.loss, who)

        def outputs_fn():
            outputs = self.outputs()
            if model.losses:  # known once the model has been called
                raise ValueError(f"{who} takes Gauss-Newton steps on the compiled loss of the "
                                 f"outputs; this model adds {len(model.losses)} regularization "
                                 "loss(es), which it cannot see (remove the regularizers, or "
                                 "use Newton or a first-order optimizer)")
            return outputs

        def loss_of_outputs(outputs):
            return model.loss(self.y, outputs, sample_weight=self.sample_weight)
        return OutputLoss(outputs_fn, loss_of_outputs, self.outputs_on)

    def curvature_loss(self, size):
        """The loss on ``size`` examples of the batch drawn at random (a function of no
        arguments), or None where the batch has no more than ``size``."""
        n = self.x.shape[0] if isinstance(self.x, Tensor) else None
        if not size or n is None or n <= size:
            return None
        seed = int(context().random.rng.integers(2 ** 31))
        rows = np.sort(np.random.default_rng(seed).choice(n, size, replace=False))
        y, weight = self.y, self.sample_weight

        def loss():  # its random draws are its own: a subsample's masks have another shape
            return self._loss_and_outputs(self.x[rows], None if y is None else y[rows],
                                          None if weight is None else weight[rows])[0]
        return loss

    def finish(self):
        """``(loss, outputs)`` of the step's first evaluation, once the layers' state is put
        back to where that evaluation left it."""
        if self._first is None:
            raise RuntimeError("Objective.finish: the optimizer never evaluated the objective")
        loss, outputs, state = self._first
        for v, value in state:
            v._replace_value(value)
        if loss is None:  # only the outputs were asked for (Levenberg-Marquardt)
            loss = self.model.compute_loss(self.x, self.y, outputs, self.sample_weight)
        return loss, outputs

    def _loss_and_outputs(self, x, y, sample_weight):
        """The loss and outputs the first-order step takes (``Model.train_step``)."""
        model = self.model
        if model.input_gradient is not None:
            return model.input_gradient.loss_and_penalty(model, x, y, sample_weight)
        outputs = model(x, training=True)
        return model.compute_loss(x, y, outputs, sample_weight), outputs

    def _remember(self, loss, outputs):
        if self._first is None:
            self._first = (loss, outputs, [(v, v._value) for v in
                                           self.model.non_trainable_variables])
