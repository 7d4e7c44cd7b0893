"""numba kernels of a Dense layer's elementwise passes, float32 (imported by ``jit.kernels``
only where numba is): ``BiasActivation`` with relu and its gradient on ``(rows, units)``
C-contiguous arrays and a ``(units,)`` bias, one pass each where numpy makes two or three (the add
and the maximum; the mask, the product and the bias's sum), and the outer product a one-unit
layer's input gradient is.  NaN propagates as numpy's: ``maximum(nan, 0)`` is NaN, and a NaN
cotangent times relu's zero slope is NaN."""
import numba
import numpy as np

_ZERO, _ONE = np.float32(0.0), np.float32(1.0)
_FLAGS = dict(cache=True, error_model="numpy", fastmath={"contract"})


@numba.njit(**_FLAGS)
def relu_bias(y, bias, out):
    """``out = maximum(y + bias, 0)``."""
    rows, units = y.shape
    for r in range(rows):
        for j in range(units):
            v = y[r, j] + bias[j]
            out[r, j] = _ZERO if v < _ZERO else v


@numba.njit(**_FLAGS)
def relu_bias_grad(g, out, d, d_bias):
    """``d = g * (out > 0)`` and ``d_bias`` its sum over the rows (accumulated row by row)."""
    rows, units = g.shape
    for j in range(units):
        d_bias[j] = _ZERO
    for r in range(rows):
        for j in range(units):
            v = g[r, j] * (_ONE if out[r, j] > _ZERO else _ZERO)
            d[r, j] = v
            d_bias[j] += v


@numba.njit(**_FLAGS)
def outer(a, b, out):
    """``out = a * b`` for ``a`` (rows, 1) and ``b`` (1, columns): numpy's bits (one product
    each), 6x faster on (8192, 1) x (1, 64), where numpy runs its inner loop once per row."""
    rows, columns = out.shape
    for r in range(rows):
        x = a[r, 0]
        for j in range(columns):
            out[r, j] = x * b[0, j]
