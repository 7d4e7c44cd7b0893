"""More ways to move elements around: ``roll``, ``repeat``, ``meshgrid``, and building or
reading matrix diagonals (``linalg.diag``, ``linalg.diag_part``) on the last two axes.

``roll`` is a primitive (``Roll``; its gradient rolls back); the others are made
of indexing, reshapes and broadcasts, whose rules are checked with theirs.
"""
import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor
from ._util import array_module, as_tensor, module_of, norm_axes, on_device_of
from .shape import SCATTER, broadcast_to, gather, getitem, reshape, where

__all__ = ["roll", "repeat", "meshgrid", "matrix_diag", "matrix_diag_part"]


# --- roll -----------------------------------------------------------------------------------------
def _roll_grad(op, g):
    return apply(ROLL, (g,), {"shift": tuple(-s for s in op.get_attr("shift")),
                              "axes": op.get_attr("axes")})


ROLL = def_primitive("Roll", lambda x, shift, axes: array_module(x).roll(x, shift, axes),
                     grad=_roll_grad)


@dispatches_symbols("roll")
def roll(input, shift, axis, name=None):  # noqa: A002 - TensorFlow's name
    """Shift elements along ``axis`` by ``shift`` (both an int or lists of one length), with
    wrap-around; shifts of a repeated axis add up."""
    input = as_tensor(input)
    shifts = [int(s) for s in np.atleast_1d(_host(shift))]
    axes = [int(a) for a in np.atleast_1d(_host(axis))]
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift and axis must have the same size, got {len(shifts)} "
                         f"and {len(axes)}")
    ndim = input._value.ndim
    axes = [norm_axes(a, ndim)[0] for a in axes]
    return apply(ROLL, (input,), {"shift": tuple(shifts), "axes": tuple(axes)})


def _host(value):
    return value.numpy() if isinstance(value, Tensor) else value


# --- repeat ---------------------------------------------------------------------------------------
@dispatches_symbols("repeat")
def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Repeat each element (``axis=None``: of the flattened input) ``repeats`` times; ``repeats``
    is an int or one count per element along ``axis``."""
    input = as_tensor(input)
    if axis is None:
        input = reshape(input, [-1])
        axis = 0
    ndim = input._value.ndim
    axis = norm_axes(int(axis), ndim)[0] + ndim
    n = input._value.shape[axis]
    counts = np.asarray(_host(repeats)).astype(np.int64)
    if counts.ndim > 1 or (counts.ndim == 1 and counts.size not in (1, n)):
        raise ValueError(f"repeat: repeats must be a scalar or have {n} elements (the size of "
                         f"axis {axis}), got shape {counts.shape}")
    if np.any(counts < 0):
        raise ValueError("repeat: repeats must be non-negative")
    flat = counts.reshape(-1)
    index = np.repeat(np.arange(n), flat if flat.size != 1 else int(flat[0]))
    return gather(input, index, axis=axis)


# --- meshgrid -------------------------------------------------------------------------------------
def meshgrid(*args, **kwargs):
    """N-D coordinate grids from N 1-D tensors; ``indexing='xy'`` (the default) swaps the first
    two output axes (Cartesian), ``'ij'`` keeps them (matrix)."""
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword argument(s) {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Argument `indexing` parameter must be either 'xy' or 'ij', "
                         f"got '{indexing}'")
    tensors = [reshape(as_tensor(a), [-1]) for a in args]
    sizes = [t._value.shape[0] for t in tensors]
    if indexing == "xy" and len(tensors) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        where_i = (1 - i if i < 2 else i) if indexing == "xy" and len(tensors) > 1 else i
        shape = [1] * len(tensors)
        shape[where_i] = -1
        out.append(broadcast_to(reshape(t, shape), sizes))
    return out


# --- matrix diagonals -----------------------------------------------------------------------------
def _diagonal_index(rows, cols, k, length):
    """(row, col) positions of the first ``length`` elements of diagonal ``k``."""
    i = np.arange(length)
    return i + max(-k, 0), i + max(k, 0)


def _diag_length(rows, cols, k):
    return max(0, min(rows + min(k, 0), cols - max(k, 0)))


def _single_k(k, opname):
    k = _host(k)
    if np.ndim(k) > 0:
        flat = np.asarray(k).reshape(-1)
        if flat.size == 2 and flat[0] == flat[1]:
            return int(flat[0])
        raise NotImplementedError(f"{opname}: a band of diagonals (k={flat.tolist()}) is not "
                                  f"supported; pass one diagonal offset k")
    return int(k)


def matrix_diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
                align="RIGHT_LEFT"):
    """Batched diagonal matrices: ``[..., N]`` to ``[..., rows, cols]`` with ``diagonal`` on
    diagonal ``k`` (0 the main one, > 0 above it) and ``padding_value`` everywhere else."""
    diagonal = as_tensor(diagonal)
    k = _single_k(k, "linalg.diag")
    shape = diagonal._value.shape
    if not shape:
        raise ValueError("linalg.diag: diagonal must have rank >= 1, got a scalar")
    n = shape[-1]
    rows, cols = int(_host(num_rows)), int(_host(num_cols))
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    rows = min_rows if rows == -1 else rows
    cols = min_cols if cols == -1 else cols
    if _diag_length(rows, cols, k) != n:
        raise ValueError(f"linalg.diag: a diagonal of length {n} does not fit diagonal {k} of a "
                         f"{rows} x {cols} matrix")
    r, c = _diagonal_index(rows, cols, k, n)
    r, c = (on_device_of(diagonal._value, i) for i in (r, c))  # once, on the device
    # TensorFlow's MatrixDiag is MatrixDiagPart's adjoint: a scatter of the diagonal into zeros
    out = apply(SCATTER, (diagonal,), {"index": (Ellipsis, r, c),
                                       "shape": shape[:-1] + (rows, cols), "nb": 0})
    padding_value = _host(padding_value)
    if np.any(padding_value != 0):
        xp = module_of(diagonal._value)
        on = xp.zeros((rows, cols), dtype=bool)
        on[r, c] = True
        out = where(Tensor(on), out, padding_value)
    return out


def matrix_diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002
                     align="RIGHT_LEFT"):
    """Diagonal ``k`` of the matrices in the last two axes: ``[..., M, N]`` to ``[..., L]``."""
    input = as_tensor(input)
    k = _single_k(k, "linalg.diag_part")
    shape = input._value.shape
    if len(shape) < 2:
        raise ValueError(f"linalg.diag_part: input must have rank >= 2, got shape {tuple(shape)}")
    rows, cols = shape[-2:]
    if not -rows < k < cols and rows and cols:
        raise ValueError(f"linalg.diag_part: diagonal {k} is outside a {rows} x {cols} matrix")
    r, c = _diagonal_index(rows, cols, k, _diag_length(rows, cols, k))
    return getitem(input, (Ellipsis, r, c))
