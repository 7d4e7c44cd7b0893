"""Small helpers shared by the op families."""
import numpy as np

from ..backend import array_module, module_of, on_device_of
from ..core.backprop import lead_shape
from ..core.tensor import Tensor, convert_to_tensor, lift
from ..dtypes import is_float_dtype

__all__ = ["array_module", "binary_operands", "as_tensor", "norm_axes", "one_axis", "lead_shape",
           "dtype_mismatch", "static_shape", "on_device_of", "module_of", "half_in_float32",
           "trailing_sum", "BLAS_ROW_SUM_MAX"]


def as_tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def binary_operands(opname, x, y):
    """Both operands as tensors of one dtype: non-tensors take the tensor's dtype."""
    if not isinstance(x, Tensor):
        if not isinstance(y, Tensor):
            y = convert_to_tensor(y)
        x = lift(x, y)
    elif not isinstance(y, Tensor):
        y = lift(y, x)
    if x._value.dtype != y._value.dtype:
        raise dtype_mismatch(opname, x, y)
    return x, y


def dtype_mismatch(opname, x, y):
    return TypeError(
        f"{opname}: cannot combine a {x._value.dtype.name} tensor with a {y._value.dtype.name} "
        f"tensor (tapeflow, like TensorFlow, does not convert dtypes implicitly; use tf.cast)")


def norm_axes(axis, ndim):
    """``axis`` (None, int or sequence) as a sorted tuple of negative axes, or None for all."""
    if axis is None:
        return None
    if axis.__class__ is int and -ndim <= axis < ndim:
        return (axis - ndim if axis >= 0 else axis,)
    if isinstance(axis, Tensor):
        axis = axis.numpy().tolist()
    axes = (axis,) if isinstance(axis, int) or not hasattr(axis, "__iter__") else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of range for a tensor of rank {ndim}")
        out.append(a - ndim if a >= 0 else a)
    return tuple(sorted(set(out)))


def static_shape(shape):
    """A shape given as an int, a sequence, a TensorShape or an int tensor, as a tuple of ints."""
    if shape.__class__ is tuple and all(d.__class__ is int for d in shape):
        return shape
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


def one_axis(axis, ndim, opname):
    """A single ``axis`` as a negative integer; a list of axes is an error naming ``opname``."""
    axes = norm_axes(axis, ndim)
    if axes is None or len(axes) != 1:
        raise ValueError(f"{opname} takes one axis, got {axis!r}")
    return axes[0]


def half_in_float32(product, *arrays):
    """``product(*arrays)`` (a matmul or einsum), where numpy's float16 and ml_dtypes' bfloat16
    (on any device) are multiplied in float32 and rounded once to their own dtype: numpy
    has no float16 BLAS (its loop is ~100x slower than float32's), and ml_dtypes' bfloat16
    matmul returns float32 while its einsum refuses bfloat16.  A GPU's half-precision units
    also accumulate in float32."""
    dtype = arrays[0].dtype
    if dtype.itemsize != 2 or not is_float_dtype(dtype) or (
            dtype.kind == "f" and array_module(*arrays) is not np):  # a GPU's float16 BLAS
        return product(*arrays)
    return product(*(a.astype(np.float32) for a in arrays)).astype(dtype)


BLAS_ROW_SUM_MAX = 1024


def trailing_sum(a, axes_count=1):
    """``a`` summed over its last ``axes_count`` axes, kept as 1s.  Short float32/float64 rows
    are one BLAS matrix-vector product with ones: numpy's sum over a short last axis reduces
    row by row (softmax's rows of 64: 5x slower, issue 22).  Rows longer than
    ``BLAS_ROW_SUM_MAX`` go to numpy's pairwise sum, whose rounding error grows as log n
    where a BLAS dot's grows with n / its lanes (and the per-row overhead is paid off there)."""
    xp = array_module(a)
    axes = tuple(range(-axes_count, 0))
    count = int(np.prod(a.shape[-axes_count:]))
    if a.dtype not in (np.float32, np.float64) or a.ndim <= axes_count or \
            not 0 < count <= BLAS_ROW_SUM_MAX:
        return xp.sum(a, axis=axes, keepdims=True)
    ones = xp.ones((count, 1), dtype=a.dtype)
    return (a.reshape(-1, count) @ ones).reshape(a.shape[:-axes_count] + (1,) * axes_count)
