"""numba's ``MaxPool`` and ``MaxPoolGrad`` on NHWC float32 arrays without leading axes (imported
by ``jit.kernels`` only where numba is), for any windows, overlapping ones included (issue 22:
a ResNet stem's 3x3/2 pool).  Every loop runs over channels, which are contiguous.

Both give numpy's route's bits (``pooling._max_pool_forward`` / ``_max_pool_grad_forward``):

* the maximum is folded in numpy's order with numpy's ``maximum``: a NaN sticks (the earlier
  one's payload), and between equal values (-0 and +0) the later is kept;
* the first maximum in the window's row-major order gets the cotangent (TensorFlow's and torch's
  pick among ties), and a window holding NaN sends nothing (its maximum equals nothing);
* each input's gradient is summed from zero in numpy's col2im order, by window element
  k = i * kw + j ascending, every window holding it adding ``dy * (k is its first maximum)``
  (so a non-finite ``dy`` spreads NaN over its window, as numpy's product with zero does).

Positions in the padding are not candidates (TensorFlow ignores them; numpy's route pads with
-inf: the same unless a window holds nothing above -inf, whose cotangent goes to its first
input here, and nowhere in numpy's route if the padding comes first).  Where windows tile the
input numpy's route transposes instead of adding, so its zeros keep dy's sign there (+0 here).
"""
import numba
import numpy as np

_ZERO, _ONE = np.float32(0.0), np.float32(1.0)
_FLAGS = dict(cache=True, error_model="numpy")


@numba.njit(**_FLAGS)
def _nan_max(earlier, later):
    """numpy's ``maximum``: NaN sticks, and equal values give the later one."""
    return earlier if earlier != earlier or earlier > later else later


@numba.njit(**_FLAGS)
def max_pool(x, kh, kw, sh, sw, pad_top, pad_left, out):
    """``out`` (N, Ho, Wo, C) gets each window's maximum of ``x`` (N, H, W, C)."""
    _, height, width, channels = x.shape
    batch, out_h, out_w, _ = out.shape
    # the running maximum goes back and forth between two rows: a select stored where it was
    # loaded becomes a masked store, slow on AMD's cores (3.3 against 8.6 ms on a 3x3/2 pool
    # of (32, 56, 56, 64)); indices, not row views, which made its cold compile 2.5x longer
    best = np.empty((2, channels), x.dtype)
    for n in range(batch):
        for oh in range(out_h):
            h0 = oh * sh - pad_top
            h_lo, h_hi = max(h0, 0), min(h0 + kh, height)
            for ow in range(out_w):
                w0 = ow * sw - pad_left
                w_lo, w_hi = max(w0, 0), min(w0 + kw, width)
                for c in range(channels):
                    best[0, c] = x[n, h_lo, w_lo, c]
                s = 0
                for h in range(h_lo, h_hi):
                    for w in range(w_lo, w_hi):
                        if h == h_lo and w == w_lo:
                            continue
                        t = 1 - s
                        for c in range(channels):
                            best[t, c] = _nan_max(best[s, c], x[n, h, w, c])
                        s = t
                for c in range(channels):
                    out[n, oh, ow, c] = best[s, c]


@numba.njit(**_FLAGS)
def _first_maxima(x, n, kh, kw, sh, sw, pad_top, pad_left, index):
    """``index`` (Ho, Wo, C) int32 gets, for image n, each window's first maximum as its window
    element k = i * kw + j, or -1 where the window holds NaN."""
    _, height, width, channels = x.shape
    out_h, out_w, _ = index.shape
    best = np.empty((2, channels), x.dtype)  # two rows each, back and forth as in max_pool
    first = np.empty((2, channels), np.int32)
    for oh in range(out_h):
        h0 = oh * sh - pad_top
        h_lo, h_hi = max(h0, 0), min(h0 + kh, height)
        for ow in range(out_w):
            w0 = ow * sw - pad_left
            w_lo, w_hi = max(w0, 0), min(w0 + kw, width)
            k = np.int32((h_lo - h0) * kw + (w_lo - w0))  # int32: compared without widening
            for c in range(channels):
                best[0, c] = x[n, h_lo, w_lo, c]
                first[0, c] = k
            s = 0
            for h in range(h_lo, h_hi):
                for w in range(w_lo, w_hi):
                    if h == h_lo and w == w_lo:
                        continue
                    k, t = np.int32((h - h0) * kw + (w - w0)), 1 - s
                    for c in range(channels):
                        b, v, f = best[s, c], x[n, h, w, c], first[s, c]
                        first[t, c] = k if v > b else f  # strictly above: the first keeps it
                        best[t, c] = _nan_max(b, v)
                    s = t
            for c in range(channels):
                b, f = best[s, c], first[s, c]
                index[oh, ow, c] = f if b == b else np.int32(-1)


def _windows_holding(size, k, stride, pad_before, out_size):
    """Along one axis, (size, k): for input position p and window element i, the window whose
    element i is p, or -1 (numpy here: compiled, it added 0.75 s to the kernels' cold
    compile)."""
    start = np.arange(size)[:, None] + pad_before - np.arange(k)  # where that window starts
    window = start // stride
    return np.where((start >= 0) & (start % stride == 0) & (window < out_size), window, -1)


def max_pool_grad(x, dy, kh, kw, sh, sw, pad_top, pad_left, out):
    """``out`` (x's shape; every element written) gets ``dy`` (N, Ho, Wo, C) added at each
    window's first maximum."""
    rows = _windows_holding(x.shape[1], kh, sh, pad_top, dy.shape[1])
    columns = _windows_holding(x.shape[2], kw, sw, pad_left, dy.shape[2])
    _max_pool_grad(x, dy, kh, kw, sh, sw, pad_top, pad_left, rows, columns, out)


@numba.njit(**_FLAGS)
def _max_pool_grad(x, dy, kh, kw, sh, sw, pad_top, pad_left, rows, columns, out):
    """Per image, the windows' first maxima, then each input's sum in col2im's order: window
    element k = i * kw + j ascending."""
    batch, height, width, channels = x.shape
    _, out_h, out_w, _ = dy.shape
    index = np.empty((out_h, out_w, channels), np.int32)
    for n in range(batch):
        _first_maxima(x, n, kh, kw, sh, sw, pad_top, pad_left, index)
        for h in range(height):
            for w in range(width):
                for c in range(channels):
                    out[n, h, w, c] = _ZERO
                for i in range(kh):
                    oh = rows[h, i]
                    if oh < 0:
                        continue
                    for j in range(kw):
                        ow = columns[w, j]
                        if ow < 0:
                            continue
                        k = np.int32(i * kw + j)
                        for c in range(channels):
                            # dy read whatever the test: a conditional read is a masked load
                            g = dy[n, oh, ow, c]
                            out[n, h, w, c] += g * (_ONE if index[oh, ow, c] == k else _ZERO)
