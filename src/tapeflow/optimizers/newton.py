"""``Newton``: damped Newton steps over ALL of a model's variables together.

Each step takes the loss's gradient g and Hessian H with respect to every
variable at once (the full block Hessian, flattened and concatenated across
variables, which TensorFlow makes hard) and solves ``(H + lambda I) d = g``
with Levenberg-Marquardt damping:

* lambda is relative to the curvature: it multiplies the mean |diagonal| of H (or, without
  H, the curvature along the gradient);
* a step that does not lower the loss is rejected, the variables are put back
  and lambda grows (x ``damping_increase``, doubling the factor on each
  further rejection); an accepted step shrinks it by Nielsen's rule, more
  the better the quadratic model predicted the loss;
* a Hessian that is not positive definite is handled as saddle-free Newton
  does: each eigenvalue by its absolute value, so negative curvature is
  followed downhill (conjugate gradients, which cannot see eigenvalues, add
  damping until the curvature it meets is positive);
* with ``gauss_newton_fallback=True``, an indefinite Hessian is replaced by the
  Gauss-Newton matrix ``J^T H_loss J`` of the model's outputs (``gauss_newton.py``,
  shared with ``LevenbergMarquardt``), positive semi-definite for losses convex in
  the outputs: ReLU networks, whose Hessian is indefinite, stop stalling;
* a loss that is nan or inf restores the last good point;
* above ``matrix_free_above`` parameters, H is never formed: conjugate
  gradients on Hessian-vector products (one reverse-over-reverse pass each,
  on one recorded graph) solve the damped system.

The step needs the loss itself, so this optimizer's entry point is
``minimize(objective)``: an ``optimizers.Objective`` (``objective.py``), which ``model.fit``
builds per batch and which replays the batch's random draws at every evaluation, or
``minimize(loss_fn, var_list)`` for a function of no arguments.  With
``hessian_batch_size``, fit takes the curvature from a random subsample of each batch
(the gradient still from the whole batch): a subsampled Hessian.
"""
import math

import numpy as np

from .. import backend
from ..core.context import context
from ..core.functional import flatten
from ..core.tape import GradientTape
from ..core.tensor import Tensor
from ..ops.shape import concat, reshape
from .base import Optimizer
from .gauss_newton import gauss_newton as gauss_newton_matrix
from .objective import FunctionObjective, ObjectiveBase

__all__ = ["Newton", "DampedStepOptimizer"]


class DampedStepOptimizer(Optimizer):
    """What the damped second-order optimizers share (``Newton``, ``LevenbergMarquardt``):
    they run eagerly and read loss values as numbers, take the whole step over all
    variables as one flat vector, put the variables back on a rejected step or a
    non-finite loss, and keep their damping as float64 optimizer state.

    ``needs_loss_fn``: ``model.fit`` hands them the batch's ``Objective``
    (``minimize(objective)``), not gradients, and runs their train step eagerly."""

    needs_loss_fn = True

    def __init__(self, learning_rate, name, unsupported):
        unsupported = sorted(k for k, v in unsupported.items() if v is not None)
        if unsupported:
            raise ValueError(f"{type(self).__name__} does not apply {unsupported}: its step is a "
                             f"solve, not a gradient update (clip or decay the loss instead)")
        super().__init__(learning_rate, name=name)
        self._last_good = None
        self.last_step_info = {}

    def apply_gradients(self, grads_and_vars):
        raise TypeError(f"{type(self).__name__} needs the loss, not just its gradient: call "
                        "optimizer.minimize(optimizers.Objective(model, x, y)) or "
                        "optimizer.minimize(loss_fn, var_list) (model.fit does this for you)")

    def _objective(self, loss, var_list, make, **extras):
        """``loss`` itself where it is an objective (the entry point ``minimize(objective)``;
        it brings its variables, so no ``var_list`` or extra argument goes with it), else
        ``make(variables)`` of the function form ``minimize(loss_fn, var_list)``."""
        name = type(self).__name__
        if isinstance(loss, ObjectiveBase):
            given = sorted(k for k, v in dict(extras, var_list=var_list).items() if v is not None)
            if given:
                raise TypeError(f"{name}.minimize(objective) takes the objective alone (it "
                                f"brings its variables and data); got {', '.join(given)} too")
            return loss
        if var_list is None:
            raise TypeError(f"{name}.minimize(loss_fn, var_list): var_list is missing (or pass "
                            "an optimizers.Objective)")
        return make(list(var_list() if callable(var_list) else var_list))

    def _begin(self, objective):
        """Refuse a traced step; build the slots of ``objective``'s variables."""
        name = type(self).__name__
        if context().trace is not None:
            raise RuntimeError(
                f"{name} runs eagerly: its step accepts or rejects trial points and adapts its "
                "damping from loss values it reads as numbers, which a traced graph cannot do. "
                f"Call optimizer.minimize outside tf.function (model.fit with {name} already "
                "runs its steps eagerly).")
        if not objective.variables:
            raise ValueError(f"{name}.minimize: no variables to optimize")
        self.build([v for v in objective.variables if v._id not in self._keys])

    def _restore_last_good(self, objective):
        if self._last_good is not None and len(self._last_good) == len(objective.variables):
            objective.restore(self._last_good)

    def _finish(self, **state):
        """Store the float64 state variables ``state`` names and count the step."""
        for name, value in state.items():
            self._state[name]._replace_value(np.asarray(value, dtype=np.float64))
        self._iterations._replace_value(np.asarray(int(self._iterations._value) + 1, np.int64))


class Newton(DampedStepOptimizer):
    """Damped Newton steps on the full Hessian (see the module docstring).

    ``gauss_newton_fallback=True``: where the Hessian is indefinite (an eigenvalue below
    ``-1e-10`` times the largest magnitude), the step is taken on the Gauss-Newton
    matrix instead (``optimizers.gauss_newton``), which is positive semi-definite for a
    loss convex in the model's outputs.  Needs the loss as an ``OutputLoss``
    (``minimize(..., gauss_newton=problem)``; ``fit`` passes one).  The dense path only:
    the matrix-free path keeps conjugate gradients on the Hessian.
    """

    def __init__(self, learning_rate=1.0, damping=1e-8, damping_increase=2.0,
                 damping_decrease=1 / 3, min_damping=1e-12, max_damping=1e12, max_tries=20,
                 matrix_free_above=1000, cg_max_iterations=200, cg_tolerance=1e-6,
                 hessian_batch_size=None, gauss_newton_fallback=False, name=None, **kwargs):
        super().__init__(learning_rate, name, kwargs)
        if damping < 0 or damping_increase <= 1 or not 0 < damping_decrease <= 1:
            raise ValueError("Newton needs damping >= 0, damping_increase > 1 and "
                             "0 < damping_decrease <= 1")
        self.initial_damping = float(damping)
        self.damping_increase = float(damping_increase)
        self.damping_decrease = float(damping_decrease)
        self.min_damping = float(min_damping)
        self.max_damping = float(max_damping)
        self.max_tries = int(max_tries)
        self.matrix_free_above = int(matrix_free_above)
        self.cg_max_iterations = int(cg_max_iterations)
        self.cg_tolerance = float(cg_tolerance)
        self.hessian_batch_size = None if hessian_batch_size is None else int(hessian_batch_size)
        self.gauss_newton_fallback = bool(gauss_newton_fallback)
        self._damping = self.add_variable("damping", float(damping), dtype="float64")

    @property
    def needs_gauss_newton(self):
        """Whether the step may take its matrix from the loss of the outputs
        (``objective.output_loss``): the compiled loss must be one Gauss-Newton supports."""
        return self.gauss_newton_fallback

    @property
    def damping(self):
        return float(self._damping._value)

    def minimize(self, loss, var_list=None, tape=None, hessian_loss=None, gauss_newton=None):
        """One damped Newton step; returns ``iterations``, as every optimizer's ``minimize``
        does (the loss before and after the step, the damping and the tries are in
        ``last_step_info``).

        ``loss`` is an ``optimizers.Objective`` (``model.fit`` passes one per batch: it takes
        the curvature from a subsample of ``hessian_batch_size`` rows, and the Gauss-Newton
        fallback's outputs from the model), or a function of no arguments over ``var_list``.
        With a function:

        ``hessian_loss``, if given, is the same loss on a subsample of the data: the gradient
        comes from ``loss`` and the curvature from ``hessian_loss`` (a subsampled Hessian,
        much cheaper on a large batch).

        ``gauss_newton``, an ``OutputLoss`` of the same loss, is what the
        ``gauss_newton_fallback`` takes its positive semi-definite matrix from.
        """
        if not isinstance(loss, ObjectiveBase):
            if tape is not None or not callable(loss):
                raise TypeError("Newton.minimize(loss_fn, var_list): loss_fn must be a function "
                                "of no arguments (the step evaluates it again to accept or "
                                "reject)")
            if self.gauss_newton_fallback and gauss_newton is None:
                raise ValueError("Newton(gauss_newton_fallback=True).minimize needs the loss as "
                                 "a function of outputs too: gauss_newton=OutputLoss(outputs_fn, "
                                 "loss_of_outputs) (model.fit passes one)")
        objective = self._objective(
            loss, var_list, lambda variables: FunctionObjective(loss, variables, hessian_loss,
                                                                gauss_newton),
            tape=tape, hessian_loss=hessian_loss, gauss_newton=gauss_newton)
        return self._step(objective)

    def _step(self, objective):
        gauss_newton = objective.output_loss(type(self).__name__) if self.gauss_newton_fallback \
            else None
        hessian_loss = objective.curvature_loss(self.hessian_batch_size)
        self._begin(objective)
        variables = objective.variables
        start = objective.values()
        n = sum(int(v._value.size) for v in variables)
        matrix_free = n > self.matrix_free_above

        if hessian_loss is not None:
            with GradientTape(watch_accessed_variables=False) as tape:
                tape.watch(variables)
                loss0 = objective.loss()
            full_grad = flatten(tape.gradient(loss0, variables, unconnected_gradients="zero"))
        with GradientTape(persistent=matrix_free, watch_accessed_variables=False) as outer:
            outer.watch(variables)
            with GradientTape(watch_accessed_variables=False) as inner:
                inner.watch(variables)
                curvature_loss = objective.loss() if hessian_loss is None else hessian_loss()
            flat_grad = flatten(inner.gradient(curvature_loss, variables,
                                               unconnected_gradients="zero"))
        if hessian_loss is None:
            loss0, full_grad = curvature_loss, flat_grad
        l0 = float(loss0)
        lam = self.damping
        if not math.isfinite(l0):
            self._restore_last_good(objective)
            self._finish(damping=min(max(lam, 1e-3) * self.damping_increase, self.max_damping))
            self.last_step_info = {"accepted": False, "reason": "non-finite loss", "loss": l0}
            return self._iterations
        self._last_good = start
        g = _to_float64(full_grad._value)
        if matrix_free:
            def hvp(v):
                like = flat_grad._value
                # CG runs on the host in float64: its vector goes to the device once per product
                seed = Tensor(backend.to_device(v.astype(like.dtype), like=like))
                out = outer.gradient(flat_grad, variables, output_gradients=seed,
                                     unconnected_gradients="zero")
                return _to_float64(flatten(out)._value)
            # lambda is relative to the curvature here too: the Rayleigh quotient along g
            # stands in for the mean |diagonal| the dense path uses
            gg = float(g @ g)
            scale = max(abs(float(g @ hvp(g))) / gg, 1e-12) if gg > 0 else 1.0
        else:
            blocks = outer.jacobian(flat_grad, variables, unconnected_gradients="zero")
            hessian = _to_float64(concat([reshape(b, (n, -1)) for b in blocks], axis=1)._value)
            solver = _DampedSolver(0.5 * (hessian + hessian.T))
            if self.gauss_newton_fallback and solver.indefinite:
                solver = _DampedSolver(gauss_newton_matrix(gauss_newton, variables).matrix)
                curvature = "gauss-newton"
            else:
                curvature = "hessian"

        lr = self._current_learning_rate(int(self._iterations._value))
        info = {"accepted": False, "loss": l0, "tries": 0,
                "curvature": "hessian-vector products" if matrix_free else curvature}
        grow = self.damping_increase
        for attempt in range(self.max_tries):
            info["tries"] = attempt + 1
            if not matrix_free:
                step = solver.solve(g, lam)
                h_step = solver.apply(step)
            else:
                step = _conjugate_gradient(hvp, g, lam * scale, self.cg_max_iterations,
                                           self.cg_tolerance)
                h_step = None if step is None else hvp(step)
            if step is None:  # negative curvature met by CG: more damping
                lam = min(max(lam, 1e-8) * grow, self.max_damping)
                continue
            step = step * lr
            objective.move(start, step)
            trial = float(objective.loss())
            # the reduction the quadratic model predicts for this step
            predicted = float(g @ step) - 0.5 * float(step @ (h_step * lr))
            if math.isfinite(trial) and trial < l0:
                gain = (l0 - trial) / predicted if predicted > 0 else 0.0
                info.update(accepted=True, new_loss=trial, damping=lam, gain=gain)
                # Nielsen's rule: a step the model predicted well lets the damping fall fast
                lam = max(lam * max(self.damping_decrease, 1 - (2 * gain - 1) ** 3),
                          self.min_damping)
                break
            lam = min(max(lam, 1e-8) * grow, self.max_damping)
            grow *= 2
        else:
            objective.restore(start)
            info["reason"] = "no damping lowered the loss"
        self.last_step_info = info
        self._finish(damping=lam)
        return self._iterations

    def get_config(self):
        return {**super().get_config(), "damping": self.initial_damping,
                "damping_increase": self.damping_increase,
                "damping_decrease": self.damping_decrease, "min_damping": self.min_damping,
                "max_damping": self.max_damping, "max_tries": self.max_tries,
                "matrix_free_above": self.matrix_free_above,
                "cg_max_iterations": self.cg_max_iterations, "cg_tolerance": self.cg_tolerance,
                "hessian_batch_size": self.hessian_batch_size,
                "gauss_newton_fallback": self.gauss_newton_fallback}


def _to_float64(value):
    return np.asarray(backend.to_host(value), dtype=np.float64)


class _DampedSolver:
    """Solves (|H| + lam s I) d = g from one eigendecomposition of H.

    ``|H|`` takes the absolute value of each eigenvalue (saddle-free Newton,
    Dauphin et al. 2014): on a positive-definite H it is plain damped Newton,
    and along directions of negative curvature the step goes downhill instead
    of toward the saddle.  ``s`` is the mean |diagonal| of H, so lam is
    relative to the curvature.  Each damping value costs one O(n^2) solve.
    """

    def __init__(self, hessian):
        self.scale = max(float(np.mean(np.abs(np.diag(hessian)))), 1e-12)
        eigenvalues, self.vectors = np.linalg.eigh(hessian)
        self.magnitudes = np.abs(eigenvalues)
        largest = float(self.magnitudes.max()) if eigenvalues.size else 0.0
        self.indefinite = bool(eigenvalues.size) and float(eigenvalues.min()) < -1e-10 * largest

    def solve(self, g, lam):
        coefficients = (self.vectors.T @ g) / (self.magnitudes + lam * self.scale)
        return self.vectors @ coefficients

    def apply(self, step):
        """|H| @ step: the curvature the step was taken with."""
        return self.vectors @ (self.magnitudes * (self.vectors.T @ step))


def _conjugate_gradient(hvp, g, lam, max_iterations, tolerance):
    """Solve (H + lam I) x = g with H known only through ``hvp``; None on negative curvature."""
    x = np.zeros_like(g)
    r = g.copy()
    p = r.copy()
    rs = float(r @ r)
    target = tolerance * max(math.sqrt(float(g @ g)), 1e-30)
    for _ in range(max_iterations):
        ap = hvp(p) + lam * p
        curvature = float(p @ ap)
        if curvature <= 0:
            return None
        alpha = rs / curvature
        x += alpha * p
        r -= alpha * ap
        rs_new = float(r @ r)
        if math.sqrt(rs_new) < target:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


