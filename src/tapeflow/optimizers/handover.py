"""Levenberg-Marquardt's hand-over to Adam, once its damping keeps growing without progress.

LM's early lead on a small network is its Gauss-Newton steps; near a local minimum of a
ReLU network its quadratic model stops predicting the loss, the damping climbs, and each
step costs a Jacobian for a tiny gain, while a first-order method, cheaper per step and
noisier, goes on.  ``Handover`` counts LM's *stalled* steps: a step is stalled when the
loss fell by less than ``tolerance`` of itself (or the step was rejected) and the damping
did not fall to less than half (Nielsen's rule halves it or more only where the quadratic
model predicted the reduction to within about 10%, gain > 0.9: a model still worth its
Jacobian).  After ``after`` stalled steps in a row the optimizer hands over, for good, to
``Adam(learning_rate)`` started from LM's point with fresh moments.  (Requiring the damping
not to fall at all missed the plateaus measured on the housing MLP, where LM's damping
hovers, gain about 0.5, while the loss moves by 1e-4 of itself a step.)

The count, the switch and Adam's moments and step count are the LM optimizer's own state
(``handover_stalled_steps``, ``handed_over``, ``<variable>/handover_momentum``,
``<variable>/handover_velocity``, ``handover_iteration``), so a checkpoint taken after the
hand-over resumes with Adam.
"""
import math

import numpy as np

from ..core.context import context
from ..core.tape import GradientTape
from .adam import Adam

__all__ = ["Handover"]


class Handover:
    """The stall counter and the Adam that ``owner`` (a ``LevenbergMarquardt``) hands over to."""

    def __init__(self, owner, after, learning_rate, tolerance):
        if int(after) < 1 or not learning_rate > 0 or not tolerance >= 0:
            raise ValueError(f"LevenbergMarquardt's hand-over needs handover_after >= 1, "
                             f"handover_learning_rate > 0 and handover_tolerance >= 0; got "
                             f"{after!r}, {learning_rate!r}, {tolerance!r}")
        self.after, self.learning_rate, self.tolerance = int(after), float(learning_rate), \
            float(tolerance)
        self.adam = Adam(self.learning_rate, name="handover_adam")
        self._stalled = owner.add_variable("handover_stalled_steps", 0.0, dtype="float64")
        self._done = owner.add_variable("handed_over", 0.0, dtype="float64")
        owner._state["handover_iteration"] = self.adam.iterations

    @property
    def done(self):
        """Whether the optimizer has handed over (it never hands back)."""
        return bool(self._done._value)

    @property
    def stalled_steps(self):
        return int(self._stalled._value)

    def record(self, loss, new_loss, damping, new_damping):
        """Count one LM step (``new_loss`` None: rejected); True if it hands over now."""
        progress = new_loss is not None and math.isfinite(new_loss) and \
            loss - new_loss >= self.tolerance * abs(loss)
        stalled = not progress and new_damping >= 0.5 * damping
        count = self.stalled_steps + 1 if stalled else 0
        self._stalled._replace_value(np.asarray(count, dtype=np.float64))
        if count >= self.after:
            self._done._replace_value(np.asarray(1.0))
            return True
        return False

    def build(self, owner, var_list):
        """Adam's moments for ``var_list``, kept as ``owner``'s slots ``handover_<name>``
        (named by ``owner``'s keys, so that they follow the model's structure)."""
        self.adam.build(var_list)
        for v in var_list:
            own = owner._slots.setdefault(v._id, {})
            for name, slot in self.adam._slots.get(v._id, {}).items():
                slot_name = f"handover_{name}"
                if slot_name in own:
                    continue
                slot._name = f"{owner._key_of(v)}/{slot_name}"
                own[slot_name] = slot
                owner._state[slot._name] = slot
                if slot_name not in owner._slot_names:
                    owner._slot_names.append(slot_name)

    def apply_gradients(self, owner, grads_and_vars):
        """Adam's update (eager or traced); counts the step in ``owner``'s iterations."""
        pairs = list(grads_and_vars)
        owner.build([v for _, v in pairs if v._id not in owner._keys])
        self.adam.apply_gradients(pairs)
        if context().trace is None:
            owner._iterations._replace_value(np.asarray(int(owner._iterations._value) + 1,
                                                        np.int64))
        else:
            owner._iterations.assign_add(1)
        return owner._iterations

    def step(self, owner, problem, variables):
        """One Adam step on ``problem``'s loss (an ``OutputLoss``); returns its value."""
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(variables)
            loss = problem.loss_tensor()
        grads = tape.gradient(loss, variables, unconnected_gradients="zero")
        self.apply_gradients(owner, zip(grads, variables))
        return float(loss)
