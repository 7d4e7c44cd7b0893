"""Matrix products and linear algebra: matmul, einsum, solve, inv, det, matvec, band_part.

Decompositions and the solves built on them are in ``linalg_decompositions``.

``matmul`` broadcasts its leading (batch) axes as numpy does, which is what
lets its rule take jacobian cotangents unchanged.
"""
import string

import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.array_rows import TILE_FROM
from ..core.registry import Inline, def_primitive
from ..core.tensor import Tensor
from . import jit
from ._util import array_module, as_tensor, binary_operands, half_in_float32, lead_shape, module_of
from .reduce import reduce_sum
from .shape import broadcast_to, expand_dims, matrix_transpose, reshape
from ..dtypes import is_inexact_dtype

__all__ = ["matmul", "einsum", "solve", "inv", "det", "tensordot", "trace", "diag_part", "matvec",
           "band_part"]


# --- matmul -------------------------------------------------------------------------------------
# The transposes are attributes of the op, as in TensorFlow's BatchMatMulV2, so that gradient
# rules never build transposed copies: each gradient comes out in its input's own layout.
def _matmul_forward(a, b, transpose_a, transpose_b):
    return half_in_float32(lambda a, b: _matmul_arrays(a, b, transpose_a, transpose_b), a, b)


def _matmul_arrays(a, b, transpose_a, transpose_b):
    xp = array_module(a, b)
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    if a.shape[-1] == 1:  # an outer product: broadcasting is faster than BLAS
        return _outer(a, b)
    if a.ndim > 2 and b.ndim == 2 and not transpose_a:  # one large product, not a batch loop
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[-1],))
    return a @ b


def _outer(a, b):
    """``a * b`` for ``a``'s last axis and ``b``'s first of length 1; two float32 matrices
    through numba's loop (``_dense_numba.outer``: the same bits) from ``TILE_FROM`` elements, or
    any size once numba is loaded (``jit.py``)."""
    if a.ndim == b.ndim == 2 and jit.plain(a, b) and \
            (a.shape[0] * b.shape[1] >= TILE_FROM or jit.loaded()):
        kernels = jit.kernels("tapeflow.ops._dense_numba")
        if kernels is not None:
            out = np.empty((a.shape[0], b.shape[1]), a.dtype)
            kernels.outer(a, b, out)
            return out
    return a * b


def _matmul_grad(op, g):
    a, b = op.inputs
    ta, tb = op.get_attr("transpose_a"), op.get_attr("transpose_b")
    need_a, need_b = op.needs_input_grad
    if need_b and not ta and b._value.ndim == 2 and a._value.ndim > 2 and \
            g._value.ndim == a._value.ndim:
        # A Dense layer on (batch, length, features): the kernel's gradient as one GEMM over
        # every row, not a product per sample summed afterwards (1.5-2x on a transformer's
        # projections, issue 22)
        gb = _mm(_rows(a), _rows(g), True, False) if not tb else _mm(_rows(g), _rows(a), True,
                                                                      False)
        ga = _mm(g, b, False, not tb) if need_a else None
        return ga, gb
    if not ta and not tb:    # C = A B
        ga = _mm(g, b, False, True) if need_a else None
        gb = _mm(a, g, True, False) if need_b else None
    elif not ta and tb:      # C = A B^T
        ga = _mm(g, b, False, False) if need_a else None
        gb = _mm(g, a, True, False) if need_b else None
    elif ta and not tb:      # C = A^T B
        ga = _mm(b, g, False, True) if need_a else None
        gb = _mm(a, g, False, False) if need_b else None
    else:                    # C = A^T B^T
        ga = _mm(b, g, True, True) if need_a else None
        gb = _mm(g, a, True, True) if need_b else None
    return ga, gb


def _matmul_kernel(in_types, attrs):
    """For two numpy matrices of known shape: the one product ``_matmul_forward`` would run."""
    (sa, da), (sb, db) = in_types
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    if len(sa) != 2 or len(sb) != 2 or None in sa or None in sb or not is_inexact_dtype(da) \
            or da.itemsize == 2:  # _matmul_forward's float32 products (half_in_float32)
        return None
    outer = (sa[0] if ta else sa[1]) == 1  # ``_matmul_forward``'s outer product
    if outer and (sa[1] if ta else sa[0]) * (sb[0] if tb else sb[1]) >= TILE_FROM:
        def outer_product(a, b):
            return _outer(a.T if ta else a, b.T if tb else b)
        return outer_product
    product = "*" if outer else "@"
    return Inline(f"{{0}}{'.T' if ta else ''} {product} {{1}}{'.T' if tb else ''}")


MATMUL = def_primitive("BatchMatMulV2", _matmul_forward, grad=_matmul_grad, saves="inputs",
                       specialize=_matmul_kernel)


@dispatches_symbols("linalg.matmul")
def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           name=None):
    """Matrix product of the last two axes, broadcasting any leading axes (rank >= 2)."""
    a, b = binary_operands("matmul", a, b)
    ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    sa, sb = a._value.shape, b._value.shape
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"matmul needs tensors of rank >= 2; got shapes {tuple(sa)} and {tuple(sb)}")
    inner_a = sa[-2] if ta else sa[-1]
    inner_b = sb[-1] if tb else sb[-2]
    if inner_a != inner_b:
        raise ValueError(f"matmul: shapes {tuple(sa)} and {tuple(sb)} do not line up (inner "
                         f"dimensions {inner_a} and {inner_b})")
    return apply(MATMUL, (a, b), {"transpose_a": ta, "transpose_b": tb})


def _mm(x, y, ta, tb):
    return apply(MATMUL, (x, y), {"transpose_a": ta, "transpose_b": tb})


def _rows(t):
    """A stack of matrices as one matrix of all their rows (a view: no copy)."""
    return reshape(t, (-1, t._value.shape[-1]))


@dispatches_symbols("tensordot")
def tensordot(a, b, axes, name=None):
    a, b = binary_operands("tensordot", a, b)
    if isinstance(axes, int):
        axes = (list(range(a._value.ndim - axes, a._value.ndim)), list(range(axes)))
    a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(a._value.ndim)]
    sb = [next(letters) for _ in range(b._value.ndim)]
    for i, j in zip(a_axes, b_axes):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in [x % len(sa) for x in a_axes]] + \
          [c for j, c in enumerate(sb) if j not in [x % len(sb) for x in b_axes]]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


# --- einsum -------------------------------------------------------------------------------------
def _einsum_grad(op, g):
    lhs, rhs = op.get_attr("equation").split("->")
    terms = lhs.split(",")
    inputs = op.inputs
    lead = lead_shape(g, len(rhs))
    free = [c for c in string.ascii_letters if c not in op.get_attr("equation")]
    batch = "".join(free[:len(lead)])
    grads = []
    for i, term in enumerate(terms):
        if not op.needs_input_grad[i]:
            grads.append(None)
            continue
        others = [t for j, t in enumerate(terms) if j != i]
        present = set(rhs).union(*others) if others else set(rhs)
        uniq = "".join(dict.fromkeys(term))  # a repeated index reads a diagonal
        reduced = "".join(c for c in uniq if c in present)
        eq = ",".join([batch + rhs] + others) + "->" + batch + reduced
        gi = einsum(eq, g, *[inputs[j] for j in range(len(terms)) if j != i])
        sizes = dict(zip(term, op.in_shapes[i]))
        if reduced != uniq:  # letters only this operand had were summed away: spread back
            kept = lead + tuple(sizes[c] if c in reduced else 1 for c in uniq)
            gi = broadcast_to(reshape(gi, kept), lead + tuple(sizes[c] for c in uniq))
        if uniq != term:  # put the diagonal back with identity matrices
            gi = _embed_diagonal(gi, batch, uniq, term, sizes, free[len(lead):])
        grads.append(gi)
    return grads


EINSUM = def_primitive("Einsum", lambda *xs, equation: half_in_float32(
    lambda *arrays: array_module(*arrays).einsum(equation, *arrays, optimize=len(xs) > 2), *xs),
    grad=_einsum_grad, saves="inputs")


@dispatches_symbols("einsum")
def einsum(equation, *inputs, **kwargs):
    """Einstein summation; ``...`` is expanded to named axes before recording."""
    tensors = list(inputs)
    first = next((t for t in tensors if isinstance(t, Tensor)), None)
    if first is None:
        from .shape import _same_dtype
        tensors = _same_dtype("einsum", tensors)
    else:
        tensors = [binary_operands("einsum", t, first)[0] for t in tensors]
    equation = _explicit_equation(equation.replace(" ", ""), [t._value.ndim for t in tensors])
    return apply(EINSUM, tuple(tensors), {"equation": equation})


def _explicit_equation(equation, ndims):
    """``equation`` with an output part and no ellipsis."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: equation {equation!r} names {len(terms)} operands, got {len(ndims)}")
    if "->" not in equation:
        letters = "".join(terms).replace(".", "")
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    if "..." in equation:
        free = [c for c in string.ascii_letters if c not in equation]
        widest = max(nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims) if "..." in t)
        ell = "".join(free[:widest])
        terms = [t.replace("...", ell[widest - (nd - len(t.replace("...", ""))):]) if "..." in t
                 else t for t, nd in zip(terms, ndims)]
        rhs = rhs.replace("...", ell)
    return ",".join(terms) + "->" + rhs


def _embed_diagonal(gi, batch, uniq, term, sizes, spare):
    """The cotangent of an operand with repeated indices (``'ii'``), from that of its diagonal."""
    spare = iter(spare)
    renamed, eyes, seen = [], [], set()
    for c in term:
        if c in seen:
            fresh = next(spare)
            eyes.append((c + fresh, sizes[c]))
            renamed.append(fresh)
        else:
            seen.add(c)
            renamed.append(c)
    xp = module_of(gi._value)
    operands = [gi] + [Tensor(xp.eye(n, dtype=gi._value.dtype)) for _, n in eyes]
    eq = ",".join([batch + uniq] + [s for s, _ in eyes]) + "->" + batch + "".join(renamed)
    return einsum(eq, *operands)


# --- solve, inverse, determinant -------------------------------------------------------------------
def _solve_grad(op, g):
    a, _ = op.inputs
    (x,) = op.outputs
    gb = solve(matrix_transpose(a), g)
    ga = -matmul(gb, matrix_transpose(x)) if op.needs_input_grad[0] else None
    return ga, gb


SOLVE = def_primitive("MatrixSolve", lambda a, b: array_module(a, b).linalg.solve(a, b),
                      grad=_solve_grad, saves=("inputs", "outputs"))


def _inv_grad(op, g):
    (ainv,) = op.outputs
    t = matrix_transpose(ainv)
    return -matmul(t, matmul(g, t))


INV = def_primitive("MatrixInverse", lambda a: array_module(a).linalg.inv(a),
                    grad=_inv_grad, saves="outputs")


def _det_grad(op, g):
    (a,) = op.inputs
    (d,) = op.outputs
    scale = expand_dims(expand_dims(g * d, -1), -1)
    return scale * matrix_transpose(inv(a))


DET = def_primitive("MatrixDeterminant", lambda a: array_module(a).linalg.det(a),
                    grad=_det_grad, saves=("inputs", "outputs"))


def solve(matrix, rhs, adjoint=False, name=None):
    """x with ``matrix @ x == rhs`` (rhs of shape [..., M, K])."""
    matrix, rhs = binary_operands("linalg.solve", matrix, rhs)
    if rhs._value.ndim < 2:
        raise ValueError(f"linalg.solve: rhs must have shape [..., M, K] (rank >= 2), got "
                         f"{tuple(rhs._value.shape)}; use tf.reshape(rhs, [-1, 1]) for a vector")
    if adjoint:
        matrix = matrix_transpose(matrix)
    return apply(SOLVE, (matrix, rhs))


def inv(input, adjoint=False, name=None):  # noqa: A002
    from ._util import as_tensor
    a = as_tensor(input)
    out = apply(INV, (a,))
    return matrix_transpose(out) if adjoint else out


def det(input, name=None):  # noqa: A002
    from ._util import as_tensor
    return apply(DET, (as_tensor(input),))


def diag_part(input, name=None):  # noqa: A002
    from ._util import as_tensor
    a = as_tensor(input)
    n = min(a._value.shape[-2:])
    idx = np.arange(n)
    return a[..., idx, idx]


def trace(x, name=None):
    return reduce_sum(diag_part(x), axis=-1)


# --- composed from differentiable ops --------------------------------------------------------------
def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """``a`` [..., M, N] times vector ``b`` [..., N]: [..., M]; batch axes broadcast."""
    a, b = binary_operands("linalg.matvec", a, b)
    if b._value.ndim < 1:
        raise ValueError("linalg.matvec needs a vector b of shape [..., N]")
    product = matmul(a, expand_dims(b, -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return reshape(product, product._value.shape[:-1])


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002
    """``input`` with everything outside the band zeroed (-1: keep that whole triangle)."""
    a = as_tensor(input)
    m, n = a._value.shape[-2:]
    rows, cols = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((num_lower < 0) | (rows - cols <= num_lower)) & ((num_upper < 0) | (cols - rows <= num_upper))
    xp = module_of(a._value)
    return a * Tensor(xp.asarray(keep, dtype=a._value.dtype))
