"""numba's row kernels, float32: ``LayerNorm``, ``LayerNormGrad`` and softmax (imported by
``jit.kernels`` only where numba is): each row read once, its statistics and terms kept while
it is in cache, where numpy makes some seven passes forward and ten back, each over the whole
array (issue 22: W4's two LayerNorms).  ``x`` is ``(rows, count)``; ``gamma`` and ``beta``
``(count,)``; the statistics ``(rows,)``.  The mean and variance are each one pass over the row
(the variance of the centred values, as numpy's), accumulated in float32."""
import numba
import numpy as np

from ._rnn_numba import _exp

# reassociation lets the row sums run as vector partial sums (a serial float sum is not vectorized)
_FLAGS = dict(cache=True, error_model="numpy", fastmath={"contract", "reassoc"})
_ZERO, _ONE = np.float32(0.0), np.float32(1.0)


@numba.njit(**_FLAGS)
def layer_norm(x, gamma, beta, epsilon, y, mean, rstd):
    rows, count = x.shape
    n = np.float32(count)
    for r in range(rows):
        total = _ZERO
        for j in range(count):
            total += x[r, j]
        m = total / n
        squares = _ZERO
        for j in range(count):
            d = x[r, j] - m
            squares += d * d
        s = _ONE / np.sqrt(squares / n + epsilon)
        mean[r] = m
        rstd[r] = s
        for j in range(count):
            y[r, j] = (x[r, j] - m) * s * gamma[j] + beta[j]


@numba.njit(**_FLAGS)
def layer_norm_grad(x, gamma, mean, rstd, dy, dmean, drstd, dx, dgamma, dbeta):
    """With ``xhat = (x - mean) rstd`` and ``g = dy gamma``: ``dx = rstd (g - mean(g) - xhat
    mean(g xhat))`` plus the statistics' own cotangents (``layer_norm._layer_norm_grad_ops``);
    ``dgamma``, ``dbeta`` the sums of ``dy xhat`` and ``dy`` over the rows."""
    rows, count = x.shape
    n = np.float32(count)
    for j in range(count):
        dgamma[j] = _ZERO
        dbeta[j] = _ZERO
    for r in range(rows):
        m, s = mean[r], rstd[r]
        sum_g = _ZERO
        sum_g_xhat = _ZERO
        for j in range(count):
            xhat = (x[r, j] - m) * s
            g = dy[r, j] * gamma[j]
            sum_g += g
            sum_g_xhat += g * xhat
            dgamma[j] += dy[r, j] * xhat
            dbeta[j] += dy[r, j]
        centre = (sum_g - dmean[r] / s) / n
        shift = (sum_g_xhat + drstd[r] * s) / n
        for j in range(count):
            xhat = (x[r, j] - m) * s
            dx[r, j] = s * (dy[r, j] * gamma[j] - centre - xhat * shift)


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"})
def softmax_rows(x, out, largest_unshifted):
    """``out = exp(x - s) / sum(exp(x - s))`` along each row of ``(rows, n)``, with
    ``_rnn_numba``'s vectorized exp.  ``s`` is 0 where the row's maximum lies in
    ``[0, largest_unshifted]`` (no rounding of ``x - max``, as ``nn._softmax_unshifted``: at
    least as accurate, and the sum cannot overflow), else the maximum.  No reassociation (it
    would fold the exp's rounding step): the sum runs as eight interleaved partial sums.  A row
    holding NaN is NaN, as numpy's (its maximum skips NaN, then ``exp(nan)`` joins the sum)."""
    rows, n = x.shape
    for r in range(rows):
        m = x[r, 0]
        for j in range(1, n):
            v = x[r, j]
            m = v if v > m else m
        shift = _ZERO if _ZERO <= m <= largest_unshifted else m
        for j in range(n):
            out[r, j] = _exp(x[r, j] - shift)
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = _ZERO
        j = 0
        while j + 8 <= n:
            s0 += out[r, j]
            s1 += out[r, j + 1]
            s2 += out[r, j + 2]
            s3 += out[r, j + 3]
            s4 += out[r, j + 4]
            s5 += out[r, j + 5]
            s6 += out[r, j + 6]
            s7 += out[r, j + 7]
            j += 8
        while j < n:
            s0 += out[r, j]
            j += 1
        scale = _ONE / (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
        for j in range(n):
            out[r, j] *= scale
