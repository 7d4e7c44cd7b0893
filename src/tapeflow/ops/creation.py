"""Tensors made from a shape or a range: zeros, ones, fill, eye, linspace, range, one_hot.

Tensors made from nothing are born on the current device (``tf.device``); ``*_like``
follow their input.  None of these has a differentiable input except ``*_like`` (whose result does
not depend on its input's values), so nothing here is recorded.  ``one_hot`` is
an op (``OneHot``, not differentiable), so that a traced graph computes it from
the indices it is given.
"""
import numpy as np

from .. import backend
from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor, convert_to_tensor
from ..dtypes import numpy_dtype
from ._util import as_tensor, static_shape
from ..dtypes import is_float_dtype

__all__ = ["zeros", "ones", "zeros_like", "ones_like", "fill", "eye", "linspace", "range_",
           "one_hot"]


def zeros(shape, dtype=np.float32, name=None):
    return Tensor(backend.device_module().zeros(static_shape(shape), dtype=numpy_dtype(dtype)))


def zeros_on(shape, dtype, like):
    """Zeros on the device of array ``like`` (the autodiff core's zeros follow the data)."""
    return Tensor(backend.module_of(like).zeros(static_shape(shape), dtype=numpy_dtype(dtype)))


def ones(shape, dtype=np.float32, name=None):
    return Tensor(backend.device_module().ones(static_shape(shape), dtype=numpy_dtype(dtype)))


@dispatches_symbols("zeros_like")
def zeros_like(input, dtype=None, name=None):  # noqa: A002 - TensorFlow's name
    value = as_tensor(input)._value
    xp = backend.module_of(value)
    return Tensor(xp.zeros(value.shape, dtype=numpy_dtype(dtype) or value.dtype))


@dispatches_symbols("ones_like")
def ones_like(input, dtype=None, name=None):  # noqa: A002
    value = as_tensor(input)._value
    xp = backend.module_of(value)
    return Tensor(xp.ones(value.shape, dtype=numpy_dtype(dtype) or value.dtype))


def fill(dims, value, name=None):
    value = backend.to_host(convert_to_tensor(value)._value)  # a scalar: fills on the device
    return Tensor(backend.device_module().full(static_shape(dims), value[()], dtype=value.dtype))


def eye(num_rows, num_columns=None, batch_shape=None, dtype=np.float32, name=None):
    m = np.eye(int(num_rows), None if num_columns is None else int(num_columns),
               dtype=numpy_dtype(dtype))
    if batch_shape is not None:
        m = np.broadcast_to(m, static_shape(batch_shape) + m.shape).copy()
    return Tensor(backend.to_device(m))


def linspace(start, stop, num, name=None, axis=0):
    start, stop = convert_to_tensor(start), convert_to_tensor(stop)
    dtype = start._value.dtype if is_float_dtype(start._value.dtype) else np.float32
    host = np.linspace(backend.to_host(start._value), backend.to_host(stop._value), int(num), axis=axis)
    return Tensor(backend.to_device(host.astype(dtype)))  # made on the host, moved once


def range_(start, limit=None, delta=1, dtype=None, name=None):
    """``tf.range``: int32 for integer arguments, float32 for Python floats."""
    if limit is None:
        start, limit = 0, start
    args = [a.numpy() if isinstance(a, Tensor) else a for a in (start, limit, delta)]
    if dtype is None:
        dtype = np.float32 if any(isinstance(a, (float, np.floating)) for a in args) else np.int32
    return Tensor(backend.to_device(np.arange(*args).astype(numpy_dtype(dtype))))


@dispatches_symbols("one_hot")
def one_hot(indices, depth, on_value=1.0, off_value=0.0, axis=-1, dtype=np.float32, name=None):
    indices = as_tensor(indices)
    if indices._value.dtype.kind not in "iu":
        raise TypeError(f"one_hot indices must be integers, not {indices._value.dtype.name}")
    # an op, so that a traced graph computes it from the indices it is given
    return apply(ONE_HOT, (indices,), {"depth": int(depth), "on_value": on_value,
                                       "off_value": off_value, "axis": axis,
                                       "dtype": numpy_dtype(dtype)})


def _one_hot_kernel(idx, *, depth, on_value, off_value, axis, dtype):
    xp = backend.array_module(idx)  # on the indices' device
    hot = idx[..., None] == xp.arange(depth)
    out = xp.where(hot, on_value, off_value).astype(dtype)
    if axis != -1:
        out = xp.moveaxis(out, -1, axis)
    return out


# of integer indices: nothing to differentiate (TensorFlow's too)
ONE_HOT = def_primitive("OneHot", _one_hot_kernel, not_differentiable=True)
