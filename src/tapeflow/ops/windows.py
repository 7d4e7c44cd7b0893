"""Array code shared by convolution (``conv.py``) and pooling (``pooling.py``): window geometry,
padding, im2col, a window's elements stacked contiguously, and col2im (their adjoint).

Everything here works on NHWC arrays with any leading axes: (..., H, W, C), where ``...`` is
the batch and, in gradient rules, a jacobian's extra leading axes.  A window element is named
by its kernel offset (i, j), flattened as k = i * kw + j.
"""
import numpy as np

from ._util import array_module

__all__ = ["out_size", "out_hw", "pad_hw", "window_view", "im2col", "im2col_by_offsets",
           "offsets", "inside_offsets", "window_slices", "reduce_windows", "stack_windows",
           "unstack_windows"]


def out_size(n, k, stride, dilation, pad):
    return (n + pad[0] + pad[1] - (k - 1) * dilation - 1) // stride + 1


def out_hw(hw, kernel, strides, dilations, pads):
    return tuple(out_size(n, k, s, d, p) for n, k, s, d, p in zip(hw, kernel, strides, dilations,
                                                                   pads))


def pad_hw(x, pads, value=0):
    """x (..., H, W, C) padded with ``value`` (a fill and one copy: numpy.pad is slower)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    h, w = x.shape[-3:-1]
    out = array_module(x).full(x.shape[:-3] + (h + pt + pb, w + pl + pr, x.shape[-1]), value,
                               dtype=x.dtype)
    out[..., pt:pt + h, pl:pl + w, :] = x
    return out


def _as_strided(a, shape, strides):
    xp = array_module(a)
    if xp is np:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=False)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def window_view(xpad, kernel, strides, dilations, hw):
    """The (..., Ho, Wo, kh, kw, C) view of the windows of padded ``xpad`` (..., Hp, Wp, C)."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, hw
    *lead, s_h, s_w, s_c = xpad.strides
    shape = xpad.shape[:-3] + (ho, wo, kh, kw, xpad.shape[-1])
    return _as_strided(xpad, shape, tuple(lead) + (s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))


def im2col(x, kernel, strides, dilations, pads):
    """x (..., N, H, W, C) -> patches (..., N*Ho*Wo, kh*kw*C) (one copy), and (Ho, Wo)."""
    hw = out_hw(x.shape[-3:-1], kernel, strides, dilations, pads)
    win = window_view(pad_hw(x, pads), kernel, strides, dilations, hw)
    rows = x.shape[-4] * hw[0] * hw[1]
    return win.reshape(x.shape[:-4] + (rows, kernel[0] * kernel[1] * x.shape[-1])), hw


def im2col_by_offsets(x, kernel, strides, dilations, pads):
    """x (..., N, H, W, C) -> patches transposed, (..., kh*kw*C, N*Ho*Wo), and (Ho, Wo): one
    strided copy per kernel offset, whose inner runs are output rows.  For few channels this
    is several times faster than ``im2col``, whose copy moves C elements at a time."""
    xp = array_module(x)
    hw = out_hw(x.shape[-3:-1], kernel, strides, dilations, pads)
    n, c = x.shape[-4], x.shape[-1]
    padded = any(p for pair in pads for p in pair)  # padding's patches stay zero
    cols = (xp.zeros if padded else xp.empty)(
        x.shape[:-4] + tuple(kernel) + (c, n) + hw, dtype=x.dtype)
    channels_first = xp.moveaxis(x, -1, -4)  # (..., C, N, H, W): a view
    for i, j, rows, columns, out_rows, out_columns in inside_offsets(
            x.shape[-3:-1], kernel, strides, dilations, pads, hw):
        cols[..., i, j, :, :, out_rows, out_columns] = channels_first[..., rows, columns]
    return cols.reshape(x.shape[:-4] + (kernel[0] * kernel[1] * c, n * hw[0] * hw[1])), hw


def offsets(kernel, strides, dilations, hw):
    """For each kernel offset (i, j): the slices of the padded input its window elements read."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, hw
    for i in range(kh):
        for j in range(kw):
            yield (i, j, slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                   slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))


def _inside(n, start, stride, pad_before, out_n):
    """Along one axis, for the window element at ``start`` (its offset times the dilation):
    the slice of the input (unpadded) it reads and the slice of the output positions whose
    element lies inside the input, not in the padding; None when no element does."""
    first = start - pad_before  # the input position output 0 reads
    lo = 0 if first >= 0 else (stride - 1 - first) // stride
    hi = min(out_n, (n - 1 - first) // stride + 1) if first <= n - 1 else 0
    if hi <= lo:
        return None
    begin = first + lo * stride
    return slice(begin, begin + (hi - lo - 1) * stride + 1, stride), slice(lo, hi)


def inside_offsets(in_hw, kernel, strides, dilations, pads, hw):
    """For each kernel offset (i, j) that reads the input somewhere: i, j, the slices of the
    input (..., H, W, C) it reads, and the slices of the output (..., Ho, Wo, C) that read
    them.  Padding is never materialized: what falls on it is left out."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, hw
    (h, w), ((pt, _), (pl, _)) = in_hw, pads
    for i in range(kh):
        along_h = _inside(h, i * dh, sh, pt, ho)
        if along_h is None:
            continue
        for j in range(kw):
            along_w = _inside(w, j * dw, sw, pl, wo)
            if along_w is not None:
                yield i, j, along_h[0], along_w[0], along_h[1], along_w[1]


def window_slices(x_hw, ksize, strides, pads):
    hw = out_hw(x_hw, ksize, strides, (1, 1), pads)
    return hw, list(offsets(ksize, strides, (1, 1), hw))


def reduce_windows(x, ksize, strides, pads, ufunc, fill):
    """``ufunc`` (maximum, add) over each window, padding with ``fill``: kh*kw strided passes."""
    _, slices = window_slices(x.shape[-3:-1], ksize, strides, pads)
    xpad = pad_hw(x, pads, fill)
    out = None
    for _, _, rows, columns in slices:
        v = xpad[..., rows, columns, :]
        out = v.copy() if out is None else ufunc(out, v, out=out)
    return out


def stack_windows(x, ksize, strides, pads, fill):
    """(K, ..., Ho, Wo, C): element k = i * kw + j of every window, contiguous (one copy per k)."""
    _, slices = window_slices(x.shape[-3:-1], ksize, strides, pads)
    xpad = pad_hw(x, pads, fill)
    return array_module(x).stack([xpad[..., rows, columns, :] for _, _, rows, columns in slices])


def unstack_windows(parts, in_hw, ksize, strides, dilations, pads):
    """The adjoint of ``stack_windows`` (col2im): parts (K, ..., Ho, Wo, C), window element
    k = i * kw + j of each output position, added back into (..., H, W, C)."""
    xp = array_module(parts)
    (kh, kw), (h, w) = ksize, in_hw
    ho, wo, c = parts.shape[-3:]
    lead = parts.shape[1:-3]
    if tuple(strides) == tuple(ksize) and tuple(dilations) == (1, 1) and \
            pads == ((0, 0), (0, 0)) and (ho * kh, wo * kw) == (h, w):
        # windows tile the input: (kh, kw, ..., Ho, Wo, C) -> (..., Ho, kh, Wo, kw, C), a transpose
        n = parts.ndim + 1
        tiled = parts.reshape((kh, kw) + parts.shape[1:])
        perm = tuple(range(2, n - 3)) + (n - 3, 0, n - 2, 1, n - 1)
        return xp.ascontiguousarray(tiled.transpose(perm)).reshape(lead + (h, w, c))
    out = xp.zeros(lead + (h, w, c), dtype=parts.dtype)
    for i, j, rows, columns, out_rows, out_columns in inside_offsets(
            in_hw, ksize, strides, dilations, pads, (ho, wo)):
        out[..., rows, columns, :] += parts[i * kw + j][..., out_rows, out_columns, :]
    return out
