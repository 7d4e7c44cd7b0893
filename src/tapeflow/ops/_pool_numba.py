"""numba's ``MaxPoolGrad`` on NHWC float32 arrays without leading axes (imported by
``jit.kernels`` only where numba is): each window's first maximum found in place and ``dy``
added there, where numpy stacks the windows' elements (one copy each), finds the first maxima
with a few boolean passes and adds back by col2im (issue 22: 17% of W2's step).

The same choices as ``pooling._max_pool_grad_forward``: the first maximum in the window's
row-major order gets the cotangent (TensorFlow's and torch's pick among ties), and a window
holding NaN sends nothing (its maximum is NaN, which equals nothing).  Positions in the padding
are not candidates (TensorFlow ignores them; numpy's route pads with -inf: the same unless a
window holds nothing above -inf)."""
import numba
import numpy as np

_ZERO = np.float32(0.0)


@numba.njit(cache=True, error_model="numpy")
def max_pool_grad(x, dy, kh, kw, sh, sw, pad_top, pad_left, out, best, claimed):
    """``out`` (x's shape, zeros) gets ``dy``; ``best`` (C,) of x's dtype and ``claimed`` (C,)
    booleans are scratch: each channel's window maximum, and whether its first is found."""
    _, height, width, channels = x.shape
    batch, out_h, out_w, _ = dy.shape
    for n in range(batch):
        for oh in range(out_h):
            for ow in range(out_w):
                h0, w0 = oh * sh - pad_top, ow * sw - pad_left
                for c in range(channels):
                    best[c] = -np.inf
                    claimed[c] = False
                for i in range(kh):  # the maximum; a NaN sticks, as in numpy's maximum
                    h = h0 + i
                    if h < 0 or h >= height:
                        continue
                    for j in range(kw):
                        w = w0 + j
                        if w < 0 or w >= width:
                            continue
                        for c in range(channels):
                            v, b = x[n, h, w, c], best[c]
                            best[c] = v if not v <= b and b == b else b
                for i in range(kh):  # the first element equal to it
                    h = h0 + i
                    if h < 0 or h >= height:
                        continue
                    for j in range(kw):
                        w = w0 + j
                        if w < 0 or w >= width:
                            continue
                        for c in range(channels):
                            hit = not claimed[c] and x[n, h, w, c] == best[c]
                            out[n, h, w, c] += dy[n, oh, ow, c] if hit else _ZERO
                            claimed[c] = claimed[c] or hit
