"""Matrix decompositions and the solves built on them, each with a gradient rule in tapeflow ops.

Primitives (TensorFlow's op names): ``Cholesky``, ``MatrixTriangularSolve``, ``SelfAdjointEigV2``,
``Svd``, ``Qr``, ``LogMatrixDeterminant`` and ``MatrixPinv``; ``cholesky_solve`` and ``lstsq``
are composed from them.  Every rule is written with matmul, triangular solves and elementwise
ops on the last two axes, so it holds for any number of leading (batch or jacobian) axes and
can be differentiated again.

Conventions follow TensorFlow's ``linalg_grad.py``: the forwards of ``cholesky`` and ``eigh``
read only the lower triangle; ``cholesky``'s gradient is symmetric, ``eigh``'s is lower
triangular.  ``eigh`` and ``svd`` gradients assume distinct eigen/singular values (a tie
contributes zero through a guarded reciprocal, as in TensorFlow).  With ``full_matrices=True``,
``svd`` differentiates square inputs only and ``qr`` M <= N only (the extra columns are arbitrary).
"""
import numpy as np

from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from ._util import array_module, as_tensor, binary_operands, module_of
from .linalg import inv, matmul
from .shape import concat, expand_dims, matrix_transpose

__all__ = ["cholesky", "triangular_solve", "cholesky_solve", "lstsq", "eigh", "eigvalsh", "svd",
           "qr", "slogdet", "logdet", "pinv"]

_t = matrix_transpose


def _square(name, a):
    shape = a._value.shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name} needs square matrices [..., M, M]; got shape {tuple(shape)}")


def _const(x, array):
    """``array`` as a constant on ``x``'s device, in ``x``'s dtype."""
    xp = module_of(x._value)
    return Tensor(xp.asarray(array, dtype=x._value.dtype))


def _lower_half_diagonal(x, n):
    """The mask that keeps the strict lower triangle and halves the diagonal (Murray's Phi)."""
    return _const(x, np.tril(np.ones((n, n))) - 0.5 * np.eye(n))


def _band(x, n, lower):
    ones = np.ones((n, n))
    return _const(x, np.tril(ones) if lower else np.triu(ones))


def _diag(v):
    """A diagonal matrix from the last axis of ``v``."""
    n = v._value.shape[-1]
    return expand_dims(v, -1) * _const(v, np.eye(n))


def _safe_reciprocal(x, eps=1e-20):
    """1/x, and 0 where x is 0 (TensorFlow's ``_SafeReciprocal``): smooth, so differentiable."""
    return x / (x * x + eps)


def _gap_reciprocal(w):
    """F_ij = 1/(w_j - w_i) off the diagonal, 0 on it and on ties.

    The diagonal is masked after an identity is added, not left to the guarded reciprocal:
    that one's derivative at 0 is 1/eps, and the second derivative would sum ±1e20 terms."""
    n = w._value.shape[-1]
    eye = _const(w, np.eye(n))
    return _safe_reciprocal(expand_dims(w, -2) - expand_dims(w, -1) + eye) * (1.0 - eye)


# --- Cholesky ---------------------------------------------------------------------------------------
def _cholesky_grad(op, g):
    """Murray (2016): Ā = sym(L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹), Φ = lower triangle with the diagonal halved."""
    (chol,) = op.outputs
    n = op.output_shape()[-1]
    middle = matmul(chol, g, transpose_a=True) * _lower_half_diagonal(g, n)
    left = triangular_solve(chol, middle, lower=True, adjoint=True)          # L⁻ᵀ Φ
    s = _t(triangular_solve(chol, _t(left), lower=True, adjoint=True))      # (L⁻ᵀ Φ) L⁻¹
    return 0.5 * (s + _t(s))


CHOLESKY = def_primitive("Cholesky", lambda a: array_module(a).linalg.cholesky(a),
                         grad=_cholesky_grad, saves="outputs")


def cholesky(input, name=None):  # noqa: A002 - TensorFlow's name
    """The lower-triangular L with L Lᵀ = input, for symmetric positive-definite [..., M, M].

    Reads the lower triangle only; a matrix that is not positive definite raises LinAlgError."""
    a = as_tensor(input)
    _square("linalg.cholesky", a)
    return apply(CHOLESKY, (a,))


# --- triangular solve -------------------------------------------------------------------------------
def _triangular_solve_forward(matrix, rhs, lower, adjoint):
    xp = array_module(matrix, rhs)
    if xp is np and matrix.ndim == 2 and rhs.ndim == 2:  # one LAPACK trtrs, O(n²k)
        import scipy.linalg
        out = scipy.linalg.solve_triangular(matrix, rhs, lower=lower, trans=int(adjoint),
                                            check_finite=False)
        return out.astype(np.result_type(matrix, rhs), copy=False)
    if matrix.ndim == 2 and rhs.ndim > 2:  # a jacobian's rows: one solve, their columns side by side
        n, k = rhs.shape[-2:]
        columns = xp.moveaxis(rhs, -2, 0).reshape(n, -1)
        out = _triangular_solve_forward(matrix, columns, lower, adjoint)
        return xp.moveaxis(out.reshape((n,) + rhs.shape[:-2] + (k,)), 0, -2)
    t = xp.tril(matrix) if lower else xp.triu(matrix)
    if adjoint:
        t = xp.swapaxes(t, -1, -2)
    return xp.linalg.solve(t, rhs)


def _triangular_solve_grad(op, g):
    """B̄ = T⁻ᵀ Ḡ; T̄ = -B̄ Xᵀ (adjoint: -X B̄ᵀ), kept to the triangle the forward read."""
    matrix, _ = op.inputs
    (x,) = op.outputs
    lower, adjoint = op.get_attr("lower"), op.get_attr("adjoint")
    gb = triangular_solve(matrix, g, lower=lower, adjoint=not adjoint)
    if not op.needs_input_grad[0]:
        return None, gb
    if adjoint:
        ga = -matmul(x, gb, transpose_b=True)
    else:
        ga = -matmul(gb, x, transpose_b=True)
    return ga * _band(ga, op.in_shapes[0][-1], lower), gb


TRIANGULAR_SOLVE = def_primitive("MatrixTriangularSolve", _triangular_solve_forward,
                                 grad=_triangular_solve_grad, saves=("inputs", "outputs"))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """x with ``T @ x == rhs`` (``Tᵀ @ x`` if ``adjoint``), T the lower (or upper) triangle of
    ``matrix`` [..., M, M]; rhs [..., M, K]; batch axes broadcast."""
    matrix, rhs = binary_operands("linalg.triangular_solve", matrix, rhs)
    _square("linalg.triangular_solve", matrix)
    if rhs._value.ndim < 2 or rhs._value.shape[-2] != matrix._value.shape[-1]:
        raise ValueError(f"linalg.triangular_solve: rhs must have shape [..., M, K] with M = "
                         f"{matrix._value.shape[-1]}; got {tuple(rhs._value.shape)}")
    return apply(TRIANGULAR_SOLVE, (matrix, rhs), {"lower": bool(lower), "adjoint": bool(adjoint)})


# --- symmetric eigendecomposition ---------------------------------------------------------------------
def _eigh_forward(a):
    e, v = array_module(a).linalg.eigh(a)
    return e, v


def _eigh_grad(op, ge, gv):
    """Ā = V (diag(ē) + F ∘ (Vᵀ V̄)) Vᵀ, F_ij = 1/(e_j - e_i) (0 on ties), folded onto the lower
    triangle that the forward reads."""
    e, v = op.outputs
    f = _gap_reciprocal(e)
    inner = _diag(ge) + f * matmul(v, gv, transpose_a=True)
    ga = matmul(v, matmul(inner, v, transpose_b=True))
    return (ga + _t(ga)) * _lower_half_diagonal(ga, op.output_shape(0)[-1])


EIGH = def_primitive("SelfAdjointEigV2", _eigh_forward, num_outputs=2,
                     grad=_eigh_grad, saves="outputs")


def eigh(tensor, name=None):
    """(e, v): the eigenvalues (ascending) and eigenvectors (columns) of symmetric [..., M, M].

    Reads the lower triangle only.  The eigenvectors' signs are arbitrary: differentiate
    functions that do not depend on them (|v|, v vᵀ, v diag(e) vᵀ)."""
    a = as_tensor(tensor)
    _square("linalg.eigh", a)
    return apply(EIGH, (a,))


def eigvalsh(tensor, name=None):
    """The eigenvalues of symmetric [..., M, M], ascending."""
    return eigh(tensor)[0]


# --- singular value decomposition -------------------------------------------------------------------
def _svd_forward(a, full_matrices):
    xp = array_module(a)
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return s, u, xp.swapaxes(vh, -1, -2)


def _svd_grad(op, gs, gu, gv):
    """Townsend (2016) / Seeger et al.: with F_ij = 1/(s_j² - s_i²) (0 on ties),
    Ā = U [(F∘(UᵀŪ - ŪᵀU)) S + diag(s̄) + S (F∘(VᵀV̄ - V̄ᵀV))] Vᵀ
        + (I - UUᵀ) Ū S⁻¹ Vᵀ + U S⁻¹ V̄ᵀ (I - VVᵀ)."""
    s, u, v = op.outputs
    m, n = op.input_shape()[-2:]
    k = min(m, n)
    if op.get_attr("full_matrices") and m != n:
        raise NotImplementedError(
            f"The gradient of linalg.svd with full_matrices=True is defined for square matrices "
            f"only (got {m}x{n}): the extra singular vectors are arbitrary. Use full_matrices=False.")
    f = _gap_reciprocal(s * s)
    utgu = matmul(u, gu, transpose_a=True)
    vtgv = matmul(v, gv, transpose_a=True)
    inner = (f * (utgu - _t(utgu))) * expand_dims(s, -2) + _diag(gs) \
        + expand_dims(s, -1) * (f * (vtgv - _t(vtgv)))
    ga = matmul(matmul(u, inner), v, transpose_b=True)
    s_inv = _safe_reciprocal(s)
    if m > k:  # U spans only part of the rows' space
        ga = ga + matmul((gu - matmul(u, utgu)) * expand_dims(s_inv, -2), v, transpose_b=True)
    if n > k:
        ga = ga + matmul(u, expand_dims(s_inv, -1) * _t(gv - matmul(v, vtgv)))
    return ga


SVD = def_primitive("Svd", _svd_forward, num_outputs=3, grad=_svd_grad, saves="outputs")


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """``s, u, v`` with tensor = u diag(s) vᵀ (TensorFlow's order; v, not vᵀ); ``s`` alone
    when ``compute_uv`` is False.  s descending, shape [..., min(M, N)]."""
    a = as_tensor(tensor)
    if a._value.ndim < 2:
        raise ValueError(f"linalg.svd needs a tensor of rank >= 2; got shape {tuple(a._value.shape)}")
    s, u, v = apply(SVD, (a,), {"full_matrices": bool(full_matrices and compute_uv)})
    return (s, u, v) if compute_uv else s


# --- QR -----------------------------------------------------------------------------------------------
def _qr_forward(a, full_matrices):
    q, r = array_module(a).linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return q, r


def _qr_grad(op, gq, gr):
    """Square and deep: Ā = Q(R̄ + tril(QᵀQ̄ - Q̄ᵀQ + RR̄ᵀ - R̄Rᵀ) R⁻ᵀ) + (Q̄ - QQᵀQ̄) R⁻ᵀ;
    wide [X | Y] = Q [U | V]: X's gradient from the square rule with Q̄ + Y V̄ᵀ, Y's Q V̄."""
    q, r = op.outputs
    m, n = op.input_shape()[-2:]
    if m >= n:
        if op.get_attr("full_matrices") and m > n:
            raise NotImplementedError(
                f"The gradient of linalg.qr with full_matrices=True is defined for M <= N only "
                f"(got {m}x{n}): Q's extra columns are arbitrary. Use full_matrices=False.")
        return _qr_grad_deep(q, r, gq, gr)
    (a,) = op.inputs
    y = a[..., :, m:]
    gu, gvv = gr[..., :, :m], gr[..., :, m:]
    gx = _qr_grad_deep(q, r[..., :, :m], gq + matmul(y, gvv, transpose_b=True), gu)
    return concat([gx, matmul(q, gvv)], axis=-1)


QR = def_primitive("Qr", _qr_forward, num_outputs=2, grad=_qr_grad, saves=("inputs", "outputs"))


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with input = q r, q orthonormal columns and r upper triangular (LAPACK's signs)."""
    a = as_tensor(input)
    if a._value.ndim < 2:
        raise ValueError(f"linalg.qr needs a tensor of rank >= 2; got shape {tuple(a._value.shape)}")
    return apply(QR, (a,), {"full_matrices": bool(full_matrices)})


def _qr_grad_deep(q, r, gq, gr):
    """A = QR with M >= N (TensorFlow's ``_QrGradSquareAndDeepMatrices``)."""
    qgq = matmul(q, gq, transpose_a=True)
    rgr = matmul(r, gr, transpose_b=True)
    n = r._value.shape[-1]
    low = (qgq - _t(qgq) + rgr - _t(rgr)) * _band(qgq, n, lower=True)
    # X R⁻ᵀ as (R⁻¹ Xᵀ)ᵀ, R upper triangular
    part_a = matmul(q, gr + _t(triangular_solve(r, _t(low), lower=False)))
    part_b = _t(triangular_solve(r, _t(gq - matmul(q, qgq)), lower=False))
    return part_a + part_b


# --- log-determinant with its sign --------------------------------------------------------------------
def _slogdet_forward(a):
    sign, logabs = array_module(a).linalg.slogdet(a)
    return sign, logabs


def _slogdet_grad(op, gsign, glog):
    """d log|det A| = tr(A⁻¹ dA): Ā = ḡ A⁻ᵀ; the sign is piecewise constant (no gradient)."""
    (a,) = op.inputs
    return expand_dims(expand_dims(glog, -1), -1) * _t(inv(a))


SLOGDET = def_primitive("LogMatrixDeterminant", _slogdet_forward, num_outputs=2,
                        grad=_slogdet_grad, saves="inputs")


def slogdet(input, name=None):  # noqa: A002
    """(sign, log|det|) of square [..., M, M], from an LU factorization (no overflow)."""
    a = as_tensor(input)
    _square("linalg.slogdet", a)
    return apply(SLOGDET, (a,))


def logdet(matrix, name=None):
    """log(det(matrix)) of a positive-definite matrix, as log|det| from ``slogdet``: no overflow
    where det itself does (a 400x400 10 I), and the gradient A⁻ᵀ."""
    return slogdet(matrix)[1]


# --- pseudo-inverse -----------------------------------------------------------------------------------
def _pinv_forward(a, rcond):
    return array_module(a).linalg.pinv(a, rcond=rcond)


def _pinv_grad(op, g):
    """Golub & Pereyra (1973), at constant rank, X = A⁺:
    Ā = -Xᵀ Ḡ Xᵀ + (I - A X) Ḡᵀ X Xᵀ + Xᵀ X Ḡᵀ (I - X A).
    Exact also for repeated singular values (a route through svd's rule is not)."""
    (a,) = op.inputs
    (x,) = op.outputs
    gt = _t(g)
    term1 = -matmul(matmul(x, g, transpose_a=True), x, transpose_b=True)
    term2 = matmul(gt - matmul(a, matmul(x, gt)), matmul(x, x, transpose_b=True))
    term3 = matmul(matmul(x, x, transpose_a=True), gt - matmul(matmul(gt, x), a))
    return term1 + term2 + term3


PINV = def_primitive("MatrixPinv", _pinv_forward, grad=_pinv_grad, saves=("inputs", "outputs"))


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse of [..., M, N]: singular values below ``rcond`` times
    the largest count as zero (default 10 max(M, N) eps, as TensorFlow)."""
    a = as_tensor(a)
    if a._value.ndim < 2:
        raise ValueError(f"linalg.pinv needs a tensor of rank >= 2; got shape {tuple(a._value.shape)}")
    if rcond is None:
        rcond = 10.0 * max(a._value.shape[-2:]) * float(np.finfo(a._value.dtype).eps)
    return apply(PINV, (a,), {"rcond": float(rcond)})


# --- solves composed from the primitives above ---------------------------------------------------
def cholesky_solve(chol, rhs, name=None):
    """x with ``A @ x == rhs``, given ``chol = cholesky(A)`` [..., M, M]; rhs [..., M, K]."""
    y = triangular_solve(chol, rhs, lower=True, adjoint=False)
    return triangular_solve(chol, y, lower=True, adjoint=True)


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """argmin_x |matrix x - rhs|² + l2_regularizer |x|², matrix [..., M, N], rhs [..., M, K].

    ``fast`` (TensorFlow's default): the normal equations by Cholesky, (AᵀA + λI) x = Aᵀ rhs for
    M >= N and x = Aᵀ (AAᵀ + λI)⁻¹ rhs for M < N (the minimum-norm solution); full rank needed
    when λ = 0.  ``fast=False``: pinv(matrix) @ rhs (rank-deficient matrices too; λ ignored)."""
    matrix, rhs = binary_operands("linalg.lstsq", matrix, rhs)
    sa, sb = matrix._value.shape, rhs._value.shape
    if len(sa) < 2 or len(sb) < 2 or sa[-2] != sb[-2]:
        raise ValueError(f"linalg.lstsq: matrix [..., M, N] and rhs [..., M, K] must share M; got "
                         f"{tuple(sa)} and {tuple(sb)}")
    if not fast:
        return matmul(pinv(matrix), rhs)
    m, n = sa[-2:]
    xp = module_of(matrix._value)
    reg = Tensor(xp.asarray(float(l2_regularizer) * np.eye(min(m, n)), dtype=matrix._value.dtype))
    if m >= n:
        gram = matmul(matrix, matrix, transpose_a=True)
        if l2_regularizer:
            gram = gram + reg
        return cholesky_solve(cholesky(gram), matmul(matrix, rhs, transpose_a=True))
    gram = matmul(matrix, matrix, transpose_b=True)
    if l2_regularizer:
        gram = gram + reg
    return matmul(matrix, cholesky_solve(cholesky(gram), rhs), transpose_a=True)
