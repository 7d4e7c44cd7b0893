"""``LevenbergMarquardt``: damped Gauss-Newton steps over ALL of a model's variables together.

``minimize(residual_fn, var_list)`` minimizes ``F = 1/2 ||r||^2`` of the residual vector
``r = residual_fn()`` (scipy's ``least_squares`` cost, so numbers compare directly).
Each step forms the Jacobian ``J = dr/dtheta`` over every variable at once, flattened
in ``core.functional.flatten``'s order, in one vectorized pass, and solves::

    (J^T J + lambda D) delta = J^T r          theta_trial = theta - learning_rate * delta

by Cholesky (a least-squares solve where the matrix is not positive definite), with
``D = I``, or with ``scale=True`` Marquardt's ``D = diag(J^T J)`` (each parameter damped
in its own units).  The trial is judged by the gain ratio::

    rho = (F(theta) - F(theta_trial)) / (1/2 delta^T (lambda D delta + J^T r))

(the actual over the reduction the quadratic model predicts; the denominator as written
is for ``learning_rate=1``, the default, and follows the step taken otherwise).  ``rho > 0`` accepts it
and Nielsen's rule sets ``lambda *= max(1/3, 1 - (2 rho - 1)^3)``, ``nu = 2``; otherwise
the variables are put back exactly, ``lambda *= nu``, ``nu *= 2``, and the step is tried
again, at most ``max_rejections`` times.  A non-finite loss at the start of a step puts
back the last good point.  ``damping`` (lambda) and ``nu`` are optimizer state (float64
variables ``"damping"`` and ``"damping_factor"``), carried over from step to step and
batch to batch, and saved with the optimizer.

``minimize(objective)`` takes an ``optimizers.Objective`` (``objective.py``) instead:
``model.fit`` (``compile(optimizer="levenberg_marquardt", loss=...)``) builds one per batch,
which replays the batch's random draws at every evaluation and gives the outputs of a chunk
of examples at a time.  Then the loss is the compiled loss as a function of the model's
outputs ``z``, and the matrix is the
generalized Gauss-Newton ``sum_i J_i^T H_i J_i`` (``gauss_newton.py``, shared with
``Newton``'s fallback), ``H_i`` the loss's Hessian in example ``i``'s outputs from
tapeflow's autodiff: for mean squared error ``2 I / (batch * outputs)``, the
least-squares case scaled so that ``1/2 ||r||^2`` is the compiled loss; for
cross-entropy ``diag(p) - p p^T`` on logits.  Losses whose Hessian in the outputs is
positive semi-definite are accepted (``gauss_newton.SUPPORTED_LOSSES``); fit runs the
step eagerly, full batch or mini-batch with the damping carried over.

**Matrix-free mode** (``solver="cg"``, or ``"auto"`` above ``matrix_free_above`` parameters):
J and G are never formed.  Each ``G v = J^T (H (J v))`` is one JVP and one VJP through the
outputs recorded once per step (``gauss_newton.GaussNewtonProducts``), and the damped system
is solved by truncated conjugate gradients (``conjugate_gradient.py``: at most
``cg_max_iterations`` products, or a residual below ``cg_tolerance ||g||``) with the Jacobi
preconditioner ``diag(G) + lambda D``.  ``diag(G)`` is estimated from 8 VJPs (an unbiased,
nonnegative sampling estimate, ``GaussNewtonProducts.diagonal_estimate``; the exact one needs
every example's own gradient, the cost this mode avoids), and with ``scale=True`` that
estimate is Marquardt's D.  On the 4,801-parameter housing MLP (11,610 rows, one BLAS
thread, a loaded 2-core machine) forming J^T J alone took 15-23 s a step, a whole CG step
of 50 products 2.3-2.8 s; on the 301-parameter one the dense step is the faster (CG: about
17 ms a product).
"""
import math
import time

import numpy as np

from .conjugate_gradient import conjugate_gradient
from .gauss_newton import GaussNewtonProducts, OutputLoss
from .gauss_newton import gauss_newton as gauss_newton_matrix
from .handover import Handover
from .newton import DampedStepOptimizer
from .objective import FunctionObjective

__all__ = ["LevenbergMarquardt"]

_LAMBDA_FLOOR = 1e-10   # relative to the mean curvature: where a rejection restarts a zero lambda
_LAMBDA_CEILING = 1e16  # relative likewise: beyond it a step is too short to matter
_DIAGONAL_SAMPLES = 8   # VJPs estimating diag(G) for CG's preconditioner (relative error ~ 1/2)
SOLVERS = ("auto", "cholesky", "cg")


class LevenbergMarquardt(DampedStepOptimizer):
    """Levenberg-Marquardt with Nielsen's damping update (see the module docstring).

    Args:
        learning_rate: multiplies the solved step (1.0: the Levenberg-Marquardt step).
        damping: the initial lambda (>= 0; 0 is an undamped Gauss-Newton first step).
        scale: Marquardt's ``D = diag(J^T J)`` instead of ``I``.
        max_rejections: trial points one step may reject before it gives up and leaves
            the variables as they were (the damping stays raised for the next step).
        solver: ``"cholesky"`` forms ``G = J^T H J`` and solves densely; ``"cg"`` never forms
            J or G and runs truncated conjugate gradients on Gauss-Newton-vector products
            (matrix-free mode); ``"auto"`` (default) takes CG above ``matrix_free_above``
            parameters, as ``Newton`` does.
        matrix_free_above: the parameter count above which ``"auto"`` goes matrix-free.
        cg_max_iterations, cg_tolerance: CG stops after that many products, or once its
            residual is below ``cg_tolerance`` times ``||g||``.
        handover_after: hand over to ``Adam(handover_learning_rate)`` for good after this
            many stalled steps in a row (the loss fell by less than ``handover_tolerance``
            of itself and the damping did not halve: ``handover.py``); None never does.
    """

    def __init__(self, learning_rate=1.0, damping=1e-3, scale=False, max_rejections=10,
                 solver="auto", matrix_free_above=1000, cg_max_iterations=50, cg_tolerance=1e-3,
                 handover_after=None, handover_learning_rate=1e-2, handover_tolerance=2e-3,
                 name=None, **kwargs):
        super().__init__(learning_rate, name, kwargs)
        if not damping >= 0 or int(max_rejections) < 0:
            raise ValueError(f"LevenbergMarquardt needs damping >= 0 and max_rejections >= 0, "
                             f"got damping={damping!r}, max_rejections={max_rejections!r}")
        if solver not in SOLVERS:
            raise ValueError(f"LevenbergMarquardt: solver must be one of {', '.join(SOLVERS)}; "
                             f"got {solver!r}")
        if int(matrix_free_above) < 0 or int(cg_max_iterations) < 1 or not cg_tolerance >= 0:
            raise ValueError(f"LevenbergMarquardt needs matrix_free_above >= 0, "
                             f"cg_max_iterations >= 1 and cg_tolerance >= 0; got "
                             f"{matrix_free_above!r}, {cg_max_iterations!r}, {cg_tolerance!r}")
        self.initial_damping = float(damping)
        self.scale = bool(scale)
        self.max_rejections = int(max_rejections)
        self.solver = solver
        self.matrix_free_above = int(matrix_free_above)
        self.cg_max_iterations = int(cg_max_iterations)
        self.cg_tolerance = float(cg_tolerance)
        self._damping = self.add_variable("damping", float(damping), dtype="float64")
        self._factor = self.add_variable("damping_factor", 2.0, dtype="float64")
        self.handover_learning_rate = float(handover_learning_rate)
        self.handover_tolerance = float(handover_tolerance)
        self._handover = None if handover_after is None else Handover(
            self, handover_after, handover_learning_rate, handover_tolerance)

    @property
    def handover_after(self):
        return None if self._handover is None else self._handover.after

    @property
    def handed_over(self):
        """Whether the steps are Adam's now (``handover_after``)."""
        return self._handover is not None and self._handover.done

    # fit takes LM steps from the loss as a function of the outputs; Adam's from gradients
    @property
    def needs_loss_fn(self):
        return not self.handed_over

    @property
    def needs_gauss_newton(self):
        return not self.handed_over

    def build(self, var_list):
        super().build(var_list)
        if self._handover is not None:
            self._handover.build(self, var_list)

    def apply_gradients(self, grads_and_vars):
        if self.handed_over:
            return self._handover.apply_gradients(self, grads_and_vars)
        return super().apply_gradients(grads_and_vars)

    @property
    def damping(self):
        """lambda, as the next step starts with it."""
        return float(self._damping._value)

    @property
    def damping_factor(self):
        """Nielsen's nu: what lambda is multiplied by on the next rejection."""
        return float(self._factor._value)

    def minimize(self, residual_fn, var_list=None, tape=None, gauss_newton=None):
        """One Levenberg-Marquardt step; returns ``iterations``.

        ``residual_fn`` is an ``optimizers.Objective`` (``model.fit`` passes one per batch:
        the step is on its compiled loss as a function of the outputs, its J formed a chunk
        of examples at a time), or a function of no arguments returning the residuals ``r``
        of the variables in ``var_list``: a step on ``1/2 ||r||^2``.  With a function,
        ``gauss_newton``, an ``OutputLoss``, replaces ``residual_fn`` with a loss of outputs
        (``residual_fn`` is then unused).  ``last_step_info`` has the losses before and after,
        the damping, the gain ratio, the trials, the solver and the seconds spent forming the
        curvature and solving.
        """
        def function_objective(variables):
            problem = gauss_newton
            if problem is None:
                if tape is not None or not callable(residual_fn):
                    raise TypeError("LevenbergMarquardt.minimize(residual_fn, var_list): "
                                    "residual_fn must be a function of no arguments returning "
                                    "the residual vector (the step evaluates it again at trial "
                                    "points)")
                problem = OutputLoss(residual_fn)
            return FunctionObjective(problem.loss_tensor, variables, output_loss=problem)
        return self._step(self._objective(residual_fn, var_list, function_objective, tape=tape,
                                          gauss_newton=gauss_newton))

    def _step(self, objective):
        problem = objective.output_loss(type(self).__name__)
        self._begin(objective)
        variables = objective.variables
        if self.handed_over:
            loss = self._handover.step(self, problem, variables)
            self.last_step_info = {"accepted": True, "loss": loss, "handed_over": True}
            return self._iterations
        start = objective.values()
        lam, nu = self.damping, self.damping_factor
        system = self._system(problem, variables)
        loss0, g = system.loss, system.gradient
        info = {"accepted": False, "loss": loss0, "trials": 0, "damping": lam,
                "solver": system.name, "seconds": dict(system.seconds)}
        if not (math.isfinite(loss0) and np.all(np.isfinite(g))):
            self._restore_last_good(objective)
            self.last_step_info = {**info, "reason": "non-finite loss"}
            self._finish(damping=max(lam, 1e-3) * nu, damping_factor=2 * nu)
            return self._iterations
        diagonal = system.diagonal
        mean_curvature = max(float(np.mean(np.abs(diagonal))), 1e-300) if diagonal.size else 1.0
        if self.scale:  # Marquardt's: each parameter's own curvature; a dead one gets a floor
            d = np.maximum(diagonal, 1e-12 * mean_curvature)
        else:
            d = np.ones_like(diagonal)
        unit = mean_curvature / float(np.mean(d)) if d.size else 1.0
        lr = self._current_learning_rate(int(self._iterations._value))
        solve_seconds = 0.0
        for trial in range(self.max_rejections + 1):
            info["trials"] = trial + 1
            clock = time.perf_counter()
            delta = system.solve(d * lam, g)
            solve_seconds += time.perf_counter() - clock
            objective.move(start, lr * delta)
            new_loss = problem.loss()
            # the quadratic model's reduction for the step taken, lr * delta, where
            # G delta = g - lam D delta (1/2 delta^T (lam D delta + g) at lr = 1).  Truncated
            # CG's delta keeps delta^T G delta = delta^T (g - lam D delta): started from zero,
            # its residual is orthogonal to the space its delta lies in (Galerkin)
            g_delta, d_delta = float(g @ delta), float(delta @ (d * delta))
            predicted = lr * g_delta * (1 - 0.5 * lr) + 0.5 * lr * lr * lam * d_delta
            gain = (loss0 - new_loss) / predicted if predicted > 0 else -math.inf
            if math.isfinite(new_loss) and gain > 0:
                info.update(accepted=True, new_loss=new_loss, damping=lam, gain=gain)
                lam *= max(1 / 3, 1 - (2 * gain - 1) ** 3)
                nu = 2.0
                self._last_good = objective.values()  # its loss is known finite
                break
            lam = min(max(lam, _LAMBDA_FLOOR * unit) * nu, _LAMBDA_CEILING * unit)
            nu *= 2
        else:
            objective.restore(start)
            info["reason"] = f"{self.max_rejections + 1} trials did not lower the loss"
        info["seconds"]["solve"] = solve_seconds
        if system.name == "cg":
            info["cg_iterations"] = list(system.iterations)
        if self._handover is not None and self._handover.record(
                loss0, info.get("new_loss"), self.damping, lam):
            info["handing_over"] = True
        self.last_step_info = info
        self._finish(damping=lam, damping_factor=nu)
        return self._iterations

    def _system(self, problem, variables):
        """The damped system of this step: dense (J^T H J formed, Cholesky) or matrix-free
        (conjugate gradients on Gauss-Newton-vector products), as ``solver`` says."""
        n = sum(int(v._value.size) for v in variables)
        if self.solver == "cg" or (self.solver == "auto" and n > self.matrix_free_above):
            return _MatrixFreeSystem(GaussNewtonProducts(problem, variables),
                                     self.cg_max_iterations, self.cg_tolerance)
        return _DenseSystem(gauss_newton_matrix(problem, variables))

    def get_config(self):
        return {**super().get_config(), "damping": self.initial_damping, "scale": self.scale,
                "max_rejections": self.max_rejections, "solver": self.solver,
                "matrix_free_above": self.matrix_free_above,
                "cg_max_iterations": self.cg_max_iterations, "cg_tolerance": self.cg_tolerance,
                "handover_after": self.handover_after,
                "handover_learning_rate": self.handover_learning_rate,
                "handover_tolerance": self.handover_tolerance}


class _DenseSystem:
    """``(G + diag(damping)) delta = g`` with G formed: Cholesky (``damped_solve``)."""

    name = "cholesky"

    def __init__(self, curvature):
        self.loss, self.gradient, self.matrix = curvature.loss, curvature.gradient, curvature.matrix
        self.seconds = dict(curvature.seconds)
        self.diagonal = np.diag(self.matrix)

    def solve(self, damping_diagonal, g):
        return damped_solve(self.matrix, damping_diagonal, g)


class _MatrixFreeSystem:
    """``(G + diag(damping)) delta = g`` by truncated conjugate gradients on ``G v``
    products (``GaussNewtonProducts``), preconditioned by ``diag(G) + damping``, with
    ``diag(G)`` estimated from ``_DIAGONAL_SAMPLES`` VJPs (it also serves as Marquardt's D)."""

    name = "cg"

    def __init__(self, products, max_iterations, tolerance):
        self.products, self.max_iterations, self.tolerance = products, max_iterations, tolerance
        self.loss, self.gradient = products.loss, products.gradient
        self.seconds = dict(products.seconds)
        clock = time.perf_counter()
        self.diagonal = products.diagonal_estimate(_DIAGONAL_SAMPLES)
        self.seconds["diagonal"] = time.perf_counter() - clock
        self.iterations = []

    def solve(self, damping_diagonal, g):
        def apply(v):
            return self.products.product(v) + damping_diagonal * v
        preconditioner = self.diagonal + damping_diagonal
        floor = 1e-12 * max(float(np.max(preconditioner)), 1e-300)
        result = conjugate_gradient(apply, g, 1.0 / np.maximum(preconditioner, floor),
                                    self.max_iterations, self.tolerance)
        self.iterations.append(result.iterations)
        return result.x


def damped_solve(matrix, damping_diagonal, g):
    """``delta`` with ``(matrix + diag(damping_diagonal)) delta = g``: Cholesky, or a
    least-squares solve where the damped matrix is not positive definite."""
    import scipy.linalg  # here, not at the top: it is a fifth of ``import tapeflow``'s time

    damped = matrix + np.diag(damping_diagonal)
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(damped, check_finite=False), g,
                                      check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError, ValueError):
        return np.linalg.lstsq(damped, g, rcond=None)[0]
