"""Truncated, preconditioned conjugate gradients on host float64 vectors.

``conjugate_gradient(apply, b, inverse_diagonal=None, max_iterations=50, tolerance=1e-4)``
solves ``A x = b`` for a symmetric positive (semi-)definite ``A`` known only through
``apply(v) = A v``, as Hestenes and Stiefel's method with a Jacobi preconditioner
``M^-1 = diag(inverse_diagonal)``.  It is *truncated* (Steihaug, and Martens's Hessian-free
optimization): it stops after ``max_iterations`` products, once the residual
``||b - A x||`` is below ``tolerance * ||b||``, or where it meets a direction of zero or
negative curvature (then ``x`` so far is kept: zero if that was the first direction, so
that a damped caller raises its damping), so every ``x`` it returns lowers ``1/2 x^T A x -
b^T x`` from its value at zero, or is zero.  The residual ``b - A x`` comes back with ``x``: a caller that
needs ``x^T A x`` (a trust region's predicted reduction) reads it as ``x . (b - r)``
without one more product.
"""
import math

import numpy as np

__all__ = ["conjugate_gradient", "ConjugateGradientResult"]


class ConjugateGradientResult:
    """``x``, the residual ``b - A x``, the products taken and why CG stopped
    (``"converged"``, ``"max_iterations"`` or ``"negative_curvature"``)."""

    def __init__(self, x, residual, iterations, reason):
        self.x, self.residual, self.iterations, self.reason = x, residual, iterations, reason


def conjugate_gradient(apply, b, inverse_diagonal=None, max_iterations=50, tolerance=1e-4):
    """Truncated preconditioned CG for ``A x = b`` from ``x = 0`` (see the module docstring)."""
    b = np.asarray(b, dtype=np.float64)
    precondition = (lambda r: r) if inverse_diagonal is None else (lambda r: inverse_diagonal * r)
    x = np.zeros_like(b)
    r = b.copy()
    target = tolerance * math.sqrt(float(b @ b))
    if math.sqrt(float(r @ r)) <= target or max_iterations <= 0:
        return ConjugateGradientResult(x, r, 0, "converged")
    y = precondition(r)
    p = y.copy()
    ry = float(r @ y)
    for iteration in range(1, max_iterations + 1):
        ap = apply(p)
        curvature = float(p @ ap)
        if not curvature > 0:  # A is not positive definite along p: keep what we have
            return ConjugateGradientResult(x, r, iteration, "negative_curvature")
        alpha = ry / curvature
        x += alpha * p
        r -= alpha * ap
        if math.sqrt(float(r @ r)) <= target:
            return ConjugateGradientResult(x, r, iteration, "converged")
        y = precondition(r)
        ry_new = float(r @ y)
        p = y + (ry_new / ry) * p
        ry = ry_new
    return ConjugateGradientResult(x, r, max_iterations, "max_iterations")
