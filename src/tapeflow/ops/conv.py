"""Convolution and pooling: ``conv1d``, ``conv2d``, ``conv2d_transpose``, ``max_pool1d/2d`` and
``avg_pool1d/2d``, with TensorFlow's arguments (strides, dilations, "SAME"/"VALID"/explicit
padding, NHWC or NCHW).

Eight primitives, in TensorFlow's design (``nn_grad.py``), all on NHWC arrays:

* ``Conv2D(x, w)``: im2col (one strided view of the padded input, copied once by a reshape)
  and one BLAS matmul with the (kh*kw*Ci, Co) filter;
* ``Conv2DBackpropInput(dy, w)``: conv2d's input gradient, a transposed convolution: at
  stride 1 a convolution with the flipped filter (im2col and one matmul), otherwise
  ``dy @ w[k]^T`` for every window element k (one batched matmul) added back by col2im;
* ``Conv2DBackpropFilter(x, dy)``: conv2d's filter gradient, ``im2col(x)^T @ dy``, one matmul.

The three are closed under differentiation: each one's gradient is two of the others
(a bilinear op's rule is the op with one operand swapped for the cotangent), so a
convolution differentiates to any order.

* ``MaxPool(x)``, ``MaxPoolGrad(x, dy)`` (dy sent to each window's first maximum) and
  ``MaxPoolGradGrad(x, g)`` (g read at each window's maximum): the last two are each
  other's gradient in their second operand, and piecewise constant in x (no gradient);
* ``AvgPool(x)`` and ``AvgPoolGrad(dy)``, linear, each other's gradient.  "SAME" windows
  average only the elements inside the input, as TensorFlow's.

Leading (jacobian) axes: the axes before (N, H, W, C) of a primitive's operands broadcast
against each other (the matmuls broadcast them), so a cotangent with extra leading axes
flows through every rule, and a filter may carry them too (it does in the rules).
Attributes never hold the batch size, so one traced graph fits every batch.
"""
import math

import numpy as np

from ..core.dispatch import apply
from ..core.registry import def_primitive, register_gradient
from ._util import array_module, as_tensor, binary_operands
from .shape import concat, reshape, split, transpose

__all__ = ["conv1d", "conv2d", "conv2d_transpose", "convolution", "max_pool1d", "max_pool2d",
           "max_pool", "avg_pool1d", "avg_pool2d", "avg_pool", "conv_output_length"]


# =================================================================================================
# Array code: geometry, im2col, col2im
# =================================================================================================
def _out_size(n, k, stride, dilation, pad):
    return (n + pad[0] + pad[1] - (k - 1) * dilation - 1) // stride + 1


def _pad_hw(x, pads, value=0):
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


def _windows(xpad, kernel, strides, dilations, out_hw):
    """The (..., Ho, Wo, kh, kw, C) view of the windows of padded ``xpad`` (..., Hp, Wp, C)."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    *lead, s_h, s_w, s_c = xpad.strides
    shape = xpad.shape[:-3] + (ho, wo, kh, kw, xpad.shape[-1])
    return _as_strided(xpad, shape, tuple(lead) + (s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))


def _out_hw(hw, kernel, strides, dilations, pads):
    return tuple(_out_size(n, k, s, d, p) for n, k, s, d, p in zip(hw, kernel, strides, dilations, pads))


def _im2col(x, kernel, strides, dilations, pads):
    """x (..., N, H, W, C) -> patches (..., N*Ho*Wo, kh*kw*C) (one copy), and (Ho, Wo)."""
    out_hw = _out_hw(x.shape[-3:-1], kernel, strides, dilations, pads)
    win = _windows(_pad_hw(x, pads), kernel, strides, dilations, out_hw)
    rows = x.shape[-4] * out_hw[0] * out_hw[1]
    return win.reshape(x.shape[:-4] + (rows, kernel[0] * kernel[1] * x.shape[-1])), out_hw


def _offsets(kernel, strides, dilations, out_hw):
    """For each kernel offset (i, j): the slices of the padded input its window elements read."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    for i in range(kh):
        for j in range(kw):
            yield (i, j, slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                   slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))


def _flat_filter(w):
    """(..., kh, kw, Ci, Co) -> (..., kh*kw*Ci, Co)."""
    return w.reshape(w.shape[:-4] + (w.shape[-4] * w.shape[-3] * w.shape[-2], w.shape[-1]))


# =================================================================================================
# The convolution primitives
# =================================================================================================
def _conv2d_forward(x, w, strides, dilations, pads):
    cols, (ho, wo) = _im2col(x, w.shape[-4:-2], strides, dilations, pads)
    out = cols @ _flat_filter(w)
    return out.reshape(out.shape[:-2] + (x.shape[-4], ho, wo, w.shape[-1]))


def _conv2d_backprop_input_forward(dy, w, input_hw, strides, dilations, pads):
    xp = array_module(dy)
    kh, kw = w.shape[-4:-2]
    reach = ((kh - 1) * dilations[0], (kw - 1) * dilations[1])
    if strides == (1, 1) and all(max(p) <= r for p, r in zip(pads, reach)):
        # stride 1: a convolution of dy with the flipped, transposed filter (im2col and one
        # matmul are faster than col2im's kh*kw strided adds)
        flipped = xp.swapaxes(w[..., ::-1, ::-1, :, :], -1, -2)
        full = tuple((r - p[0], r - p[1]) for p, r in zip(pads, reach))
        return _conv2d_forward(dy, flipped, (1, 1), dilations, full)
    ci, co = w.shape[-2:]
    n, ho, wo = dy.shape[-4:-1]
    # window element k's share of every output position: dy @ w[k]^T, K matmuls in one call
    w_t = xp.swapaxes(w.reshape(w.shape[:-4] + (kh * kw, ci, co)), -1, -2)
    parts = dy.reshape(dy.shape[:-4] + (1, n * ho * wo, co)) @ w_t
    parts = xp.moveaxis(parts.reshape(parts.shape[:-2] + (n, ho, wo, ci)), -5, 0)
    return _unstack_windows(parts, input_hw, (kh, kw), strides, dilations, pads)


def _conv2d_backprop_filter_forward(x, dy, filter_hw, strides, dilations, pads):
    xp = array_module(x)
    cols, _ = _im2col(x, filter_hw, strides, dilations, pads)
    n, ho, wo, co = dy.shape[-4:]
    out = xp.swapaxes(cols, -1, -2) @ dy.reshape(dy.shape[:-4] + (n * ho * wo, co))
    return out.reshape(out.shape[:-2] + (filter_hw[0], filter_hw[1], x.shape[-1], co))


CONV2D = def_primitive("Conv2D", _conv2d_forward)
CONV2D_BACKPROP_INPUT = def_primitive("Conv2DBackpropInput", _conv2d_backprop_input_forward)
CONV2D_BACKPROP_FILTER = def_primitive("Conv2DBackpropFilter", _conv2d_backprop_filter_forward)


def _geometry(op):
    return {k: op.get_attr(k) for k in ("strides", "dilations", "pads")}


def _conv(x, w, geometry):
    return apply(CONV2D, (x, w), geometry)


def _backprop_input(dy, w, input_hw, geometry):
    return apply(CONV2D_BACKPROP_INPUT, (dy, w), {"input_hw": tuple(input_hw), **geometry})


def _backprop_filter(x, dy, filter_hw, geometry):
    return apply(CONV2D_BACKPROP_FILTER, (x, dy), {"filter_hw": tuple(filter_hw), **geometry})


@register_gradient("Conv2D", saves="inputs")
def _conv2d_grad(op, g):
    x, w = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    dx = _backprop_input(g, w, x._value.shape[-3:-1], geometry) if needs[0] else None
    dw = _backprop_filter(x, g, w._value.shape[-4:-2], geometry) if needs[1] else None
    return dx, dw


@register_gradient("Conv2DBackpropInput", saves="inputs")
def _conv2d_backprop_input_grad(op, g):
    dy, w = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    d_dy = _conv(g, w, geometry) if needs[0] else None
    dw = _backprop_filter(g, dy, w._value.shape[-4:-2], geometry) if needs[1] else None
    return d_dy, dw


@register_gradient("Conv2DBackpropFilter", saves="inputs")
def _conv2d_backprop_filter_grad(op, g):
    x, dy = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    dx = _backprop_input(dy, g, x._value.shape[-3:-1], geometry) if needs[0] else None
    d_dy = _conv(x, g, geometry) if needs[1] else None
    return dx, d_dy


# =================================================================================================
# The pooling primitives
# =================================================================================================
def _window_slices(x_hw, ksize, strides, pads):
    out_hw = _out_hw(x_hw, ksize, strides, (1, 1), pads)
    return out_hw, list(_offsets(ksize, strides, (1, 1), out_hw))


def _reduce_windows(x, ksize, strides, pads, ufunc, fill):
    """``ufunc`` (maximum, add) over each window, padding with ``fill``: kh*kw strided passes."""
    _, offsets = _window_slices(x.shape[-3:-1], ksize, strides, pads)
    xpad = _pad_hw(x, pads, fill)
    out = None
    for _, _, rows, columns in offsets:
        v = xpad[..., rows, columns, :]
        out = v.copy() if out is None else ufunc(out, v, out=out)
    return out


def _max_pool_forward(x, ksize, strides, pads):
    return _reduce_windows(x, ksize, strides, pads, array_module(x).maximum, -np.inf)


def _stack_windows(x, ksize, strides, pads, fill):
    """(K, ..., Ho, Wo, C): element k = i * kw + j of every window, contiguous (one copy per k)."""
    _, offsets = _window_slices(x.shape[-3:-1], ksize, strides, pads)
    xpad = _pad_hw(x, pads, fill)
    return array_module(x).stack([xpad[..., rows, columns, :] for _, _, rows, columns in offsets])


def _unstack_windows(parts, in_hw, ksize, strides, dilations, pads):
    """The adjoint of ``_stack_windows`` (col2im): parts (K, ..., Ho, Wo, C), window element
    k = i * kw + j of each output position, added back into (..., H, W, C)."""
    xp = array_module(parts)
    (kh, kw), (h, w) = ksize, in_hw
    ho, wo, c = parts.shape[-3:]
    lead = parts.shape[1:-3]
    if tuple(strides) == tuple(ksize) and tuple(dilations) == (1, 1) and \
            pads == ((0, 0), (0, 0)) and (ho * kh, wo * kw) == (h, w):
        # windows tile the input: (kh, kw, ..., Ho, Wo, C) -> (..., Ho, kh, Wo, kw, C), a transpose
        n = parts.ndim + 1
        tiles = parts.reshape((kh, kw) + parts.shape[1:])
        perm = tuple(range(2, n - 3)) + (n - 3, 0, n - 2, 1, n - 1)
        return xp.ascontiguousarray(tiles.transpose(perm)).reshape(lead + (h, w, c))
    (pt, pb), (pl, pr) = pads
    out = xp.zeros(lead + (h + pt + pb, w + pl + pr, c), dtype=parts.dtype)
    for k, (_, _, rows, columns) in enumerate(_offsets(ksize, strides, dilations, (ho, wo))):
        out[..., rows, columns, :] += parts[k]
    if pt or pb or pl or pr:
        out = xp.ascontiguousarray(out[..., pt:pt + h, pl:pl + w, :])
    return out


def _first_max_one_hot(x, ksize, strides, pads, lead_ndim):
    """(K, 1 * lead_ndim, ..., Ho, Wo, C) booleans: True at each window's first maximum."""
    xp = array_module(x)
    stacked = _stack_windows(x, ksize, strides, pads, -np.inf)
    best = stacked.max(axis=0)
    idx = xp.zeros(best.shape, dtype=np.int32)
    for k in range(len(stacked) - 1, 0, -1):  # backwards: the first maximum is written last
        xp.copyto(idx, k, where=stacked[k] == best)
    ks = xp.arange(len(stacked), dtype=np.int32).reshape((-1,) + (1,) * (lead_ndim + idx.ndim))
    return ks == idx


def _max_pool_grad_forward(x, dy, ksize, strides, pads):
    """dy added at each window's first maximum, in x's shape (dy may have leading axes)."""
    hot = _first_max_one_hot(x, ksize, strides, pads, dy.ndim - x.ndim)
    parts = array_module(dy).where(hot, dy, dy.dtype.type(0))
    return _unstack_windows(parts, x.shape[-3:-1], ksize, strides, (1, 1), pads)


def _max_pool_grad_grad_forward(x, g, ksize, strides, pads):
    """g (x's shape, maybe with leading axes) read at each window's first maximum."""
    hot = _first_max_one_hot(x, ksize, strides, pads, g.ndim - x.ndim)
    parts = _stack_windows(g, ksize, strides, pads, 0)
    return array_module(g).where(hot, parts, g.dtype.type(0)).sum(axis=0)


def _window_counts(x_hw, ksize, strides, pads, xp, dtype):
    """How many input (not padding) elements each window holds, as (Ho, Wo, 1)."""
    ones = xp.ones(tuple(x_hw) + (1,), dtype=dtype)
    return _reduce_windows(ones, ksize, strides, pads, xp.add, 0)


def _avg_pool_forward(x, ksize, strides, pads):
    xp = array_module(x)
    sums = _reduce_windows(x, ksize, strides, pads, xp.add, 0)
    if pads == ((0, 0), (0, 0)):
        return sums / x.dtype.type(ksize[0] * ksize[1])
    return sums / _window_counts(x.shape[-3:-1], ksize, strides, pads, xp, x.dtype)


def _avg_pool_grad_forward(dy, input_hw, ksize, strides, pads):
    xp = array_module(dy)
    if pads == ((0, 0), (0, 0)):
        share = dy / dy.dtype.type(ksize[0] * ksize[1])
    else:
        share = dy / _window_counts(input_hw, ksize, strides, pads, xp, dy.dtype)
    parts = xp.broadcast_to(share, (ksize[0] * ksize[1],) + share.shape)
    return _unstack_windows(parts, input_hw, ksize, strides, (1, 1), pads)


MAX_POOL = def_primitive("MaxPool", _max_pool_forward)
MAX_POOL_GRAD = def_primitive("MaxPoolGrad", _max_pool_grad_forward)
MAX_POOL_GRAD_GRAD = def_primitive("MaxPoolGradGrad", _max_pool_grad_grad_forward)
AVG_POOL = def_primitive("AvgPool", _avg_pool_forward)
AVG_POOL_GRAD = def_primitive("AvgPoolGrad", _avg_pool_grad_forward)


def _pool_attrs(op):
    return {k: op.get_attr(k) for k in ("ksize", "strides", "pads")}


@register_gradient("MaxPool", saves="inputs")
def _max_pool_grad(op, g):
    (x,) = op.inputs
    return apply(MAX_POOL_GRAD, (x, g), _pool_attrs(op))


@register_gradient("MaxPoolGrad", saves="inputs")
def _max_pool_grad_grad(op, g):
    x, _ = op.inputs  # piecewise constant in x: which element is each window's maximum
    return None, apply(MAX_POOL_GRAD_GRAD, (x, g), _pool_attrs(op))


@register_gradient("MaxPoolGradGrad", saves="inputs")
def _max_pool_grad_grad_grad(op, g):
    x, _ = op.inputs
    return None, apply(MAX_POOL_GRAD, (x, g), _pool_attrs(op))


@register_gradient("AvgPool")
def _avg_pool_grad(op, g):
    input_hw = tuple(op.input_shape(0)[-3:-1])
    return apply(AVG_POOL_GRAD, (g,), {"input_hw": input_hw, **_pool_attrs(op)})


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, g):
    return apply(AVG_POOL, (g,), _pool_attrs(op))


# =================================================================================================
# The public functions: TensorFlow's arguments to the primitives' attributes
# =================================================================================================
def _spatial(value, n, what, data_format):
    """strides / dilations / ksize as TensorFlow takes them (an int, n ints, or n + 2 ints with
    1 for the batch and channel axes) -> a tuple of n ints."""
    if hasattr(value, "numpy"):
        value = value.numpy().tolist()
    if isinstance(value, (int, np.integer)):
        out = (int(value),) * n
    else:
        value = [int(v) for v in value]
        if len(value) == 1:
            out = (value[0],) * n
        elif len(value) == n:
            out = tuple(value)
        elif len(value) == n + 2:
            channels_last = not data_format.startswith("NC")
            outer = (value[0], value[-1]) if channels_last else (value[0], value[1])
            if outer != (1, 1):
                raise ValueError(f"{what}: a {what} other than 1 on the batch or channel axis is "
                                 f"not supported, got {value}")
            out = tuple(value[1:-1]) if channels_last else tuple(value[2:])
        else:
            raise ValueError(f"{what} must be an int or a list of 1, {n} or {n + 2} ints, "
                             f"got {value}")
    if any(v < 1 for v in out):
        raise ValueError(f"{what} must be positive, got {list(out)}")
    return out


def _explicit_pads(padding, in_hw, kernel, strides, dilations, data_format, opname):
    """padding ("SAME", "VALID" or TensorFlow's explicit list) -> ((top, bottom), (left, right))."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return tuple((0, 0) for _ in in_hw)
        if mode == "SAME":
            pads = []
            for n, k, s, d in zip(in_hw, kernel, strides, dilations):
                total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise ValueError(f"{opname}: padding must be 'SAME', 'VALID' or a list of pairs, "
                         f"got {padding!r}")
    pairs = [tuple(int(p) for p in pair) for pair in padding]
    n = len(in_hw)
    if len(pairs) == n + 2:
        channels_last = not data_format.startswith("NC")
        outer = [pairs[0], pairs[-1]] if channels_last else pairs[:2]
        if any(p != (0, 0) for p in outer):
            raise ValueError(f"{opname}: explicit padding of the batch or channel axis must be 0, "
                             f"got {padding}")
        pairs = pairs[1:-1] if channels_last else pairs[2:]
    if len(pairs) != n or any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ValueError(f"{opname}: explicit padding must be {n + 2} (or {n}) pairs of "
                         f"non-negative ints, got {padding}")
    return tuple(pairs)


def conv_output_length(length, kernel, padding, stride, dilation=1):
    """The output length of a convolution or pooling window along one axis (Keras's helper)."""
    if length is None:
        return None
    pads = _explicit_pads(padding, (length,), (kernel,), (stride,), (dilation,), "NWC",
                          "conv_output_length")
    return _out_size(length, kernel, stride, dilation, pads[0])


def _to_nhwc(x, data_format, rank):
    if data_format is None or not data_format.startswith("NC"):
        return x
    return transpose(x, [0] + list(range(2, rank)) + [1])


def _from_nhwc(y, data_format, rank):
    if data_format is None or not data_format.startswith("NC"):
        return y
    return transpose(y, [0, rank - 1] + list(range(1, rank - 1)))


def _check_format(data_format, allowed, opname):
    if data_format not in allowed:
        raise ValueError(f"{opname}: data_format must be one of {list(allowed)}, got {data_format!r}")


def _fold_batch(x, opname):
    """A rank > 4 NHWC input (batch_shape + [H, W, C]) as rank 4, and how to unfold the result."""
    shape = tuple(x._value.shape)
    if len(shape) < 4:
        raise ValueError(f"{opname}: the input must have rank 4 (or more: batch_shape + [H, W, C]), "
                         f"got shape {list(shape)}")
    if len(shape) == 4:
        return x, lambda y: y
    batch = shape[:-3]
    folded = reshape(x, (math.prod(batch),) + shape[-3:])
    return folded, lambda y: reshape(y, batch + tuple(y._value.shape[-3:]))


def _check_output(out_hw, opname, in_hw, kernel):
    if min(out_hw) < 1:
        raise ValueError(f"{opname}: the window {list(kernel)} does not fit the input "
                         f"{list(in_hw)} with this padding (the output would be empty)")


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """2-D convolution (cross-correlation, as TensorFlow's) of ``input`` [batch, H, W, Ci] with
    ``filters`` [kh, kw, Ci / groups, Co]; grouped when ``Ci`` is a multiple of the filters'
    input channels (each group of channels has its own Co / groups filters)."""
    _check_format(data_format, ("NHWC", "NCHW"), "conv2d")
    input, filters = binary_operands("conv2d", input, filters)
    x = _to_nhwc(input, data_format, 4)
    if filters._value.ndim != 4:
        raise ValueError(f"conv2d: filters must have rank 4 [kh, kw, in, out], got shape "
                         f"{list(filters._value.shape)}")
    x, unfold = _fold_batch(x, "conv2d")
    kh, kw, fi, co = filters._value.shape
    ci = x._value.shape[-1]
    if fi == 0 or ci % fi or co % (ci // fi):
        raise ValueError(f"conv2d: the input has {ci} channels, which the filters' {fi} input "
                         f"channels and {co} output channels cannot split into groups")
    strides = _spatial(strides, 2, "strides", data_format)
    dilations = _spatial(1 if dilations is None else dilations, 2, "dilations", data_format)
    in_hw = tuple(x._value.shape[1:3])
    pads = _explicit_pads(padding, in_hw, (kh, kw), strides, dilations, data_format, "conv2d")
    _check_output(_out_hw(in_hw, (kh, kw), strides, dilations, pads), "conv2d", in_hw, (kh, kw))
    geometry = {"strides": strides, "dilations": dilations, "pads": pads}
    groups = ci // fi
    if groups == 1:
        y = _conv(x, filters, geometry)
    else:
        xs = split(x, groups, axis=-1)
        ws = split(filters, groups, axis=-1)
        y = concat([_conv(a, b, geometry) for a, b in zip(xs, ws)], axis=-1)
    return _from_nhwc(unfold(y), data_format, 4)


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None,  # noqa: A002
                name=None):
    """``tf.nn.convolution`` for 1-D and 2-D: the rank of ``filters`` picks the op."""
    rank = as_tensor(filters)._value.ndim
    strides = 1 if strides is None else strides
    if rank == 3:
        return conv1d(input, filters, strides, padding, data_format=data_format or "NWC",
                      dilations=dilations)
    if rank == 4:
        return conv2d(input, filters, strides, padding, data_format=data_format or "NHWC",
                      dilations=dilations)
    raise ValueError(f"convolution: filters of rank {rank} (only 1-D and 2-D are supported)")


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):  # noqa: A002
    """1-D convolution of ``input`` [batch, W, Ci] with ``filters`` [k, Ci / groups, Co]: conv2d
    on a height-1 image."""
    _check_format(data_format, ("NWC", "NCW"), "conv1d")
    input, filters = binary_operands("conv1d", input, filters)
    if filters._value.ndim != 3:
        raise ValueError(f"conv1d: filters must have rank 3 [k, in, out], got shape "
                         f"{list(filters._value.shape)}")
    x = _to_nhwc(input, data_format, 3)
    shape = tuple(x._value.shape)
    if len(shape) < 3:
        raise ValueError(f"conv1d: the input must have rank 3 [batch, W, C], got shape {list(shape)}")
    x4 = reshape(x, shape[:-2] + (1,) + shape[-2:])
    w4 = reshape(filters, (1,) + tuple(filters._value.shape))
    stride = _spatial(stride, 1, "stride", data_format)[0]
    dilation = _spatial(1 if dilations is None else dilations, 1, "dilations", data_format)[0]
    pad = padding if isinstance(padding, str) else [(0, 0)] + [
        tuple(p) for p in _explicit_pads(padding, shape[-2:-1], (1,), (1,), (1,), data_format,
                                         "conv1d")]
    y = conv2d(x4, w4, (1, stride), pad, dilations=(1, dilation))
    y = reshape(y, shape[:-2] + tuple(y._value.shape[-2:]))
    return _from_nhwc(y, data_format, 3)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",  # noqa: A002
                     dilations=None, name=None):
    """The transpose (gradient) of conv2d: ``input`` [N, Ho, Wo, Co] and ``filters``
    [kh, kw, Ci, Co] give [N, H, W, Ci], ``output_shape``'s shape."""
    _check_format(data_format, ("NHWC", "NCHW"), "conv2d_transpose")
    input, filters = binary_operands("conv2d_transpose", input, filters)
    dy = _to_nhwc(input, data_format, 4)
    out = [int(d) for d in (output_shape.numpy() if hasattr(output_shape, "numpy")
                            else output_shape)]
    if data_format == "NCHW":
        out = [out[0]] + out[2:] + [out[1]]
    kh, kw, ci, co = filters._value.shape
    if len(out) != 4 or out[-1] != ci or dy._value.shape[-1] != co:
        raise ValueError(f"conv2d_transpose: output_shape {out} (NHWC), filters "
                         f"{list(filters._value.shape)} and input {list(dy._value.shape)} disagree")
    strides = _spatial(strides, 2, "strides", data_format)
    dilations = _spatial(1 if dilations is None else dilations, 2, "dilations", data_format)
    in_hw = tuple(out[1:3])
    pads = _explicit_pads(padding, in_hw, (kh, kw), strides, dilations, data_format,
                          "conv2d_transpose")
    want = _out_hw(in_hw, (kh, kw), strides, dilations, pads)
    if tuple(dy._value.shape[1:3]) != want:
        raise ValueError(f"conv2d_transpose: an output of spatial shape {list(in_hw)} convolves to "
                         f"{list(want)}, but the input has {list(dy._value.shape[1:3])}")
    y = _backprop_input(dy, filters, in_hw, {"strides": strides, "dilations": dilations,
                                             "pads": pads})
    return _from_nhwc(y, data_format, 4)


def _pool2d(op, opname, input, ksize, strides, padding, data_format):  # noqa: A002
    _check_format(data_format, ("NHWC", "NCHW"), opname)
    x = _to_nhwc(as_tensor(input), data_format, 4)
    x, unfold = _fold_batch(x, opname)
    ksize = _spatial(ksize, 2, "ksize", data_format)
    strides = _spatial(strides, 2, "strides", data_format)
    in_hw = tuple(x._value.shape[1:3])
    pads = _explicit_pads(padding, in_hw, ksize, strides, (1, 1), data_format, opname)
    if any(p >= k for pair, k in zip(pads, ksize) for p in pair):
        raise ValueError(f"{opname}: padding {list(pads)} must be smaller than the window {list(ksize)}")
    _check_output(_out_hw(in_hw, ksize, strides, (1, 1), pads), opname, in_hw, ksize)
    y = apply(op, (x,), {"ksize": ksize, "strides": strides, "pads": pads})
    return _from_nhwc(unfold(y), data_format, 4)


def _pool1d(pool2d, input, ksize, strides, padding, data_format, opname):  # noqa: A002
    _check_format(data_format, ("NWC", "NCW"), opname)
    x = _to_nhwc(as_tensor(input), data_format, 3)
    shape = tuple(x._value.shape)
    if len(shape) != 3:
        raise ValueError(f"{opname}: the input must have rank 3 [batch, W, C], got {list(shape)}")
    k = _spatial(ksize, 1, "ksize", data_format)[0]
    s = _spatial(strides, 1, "strides", data_format)[0]
    pad = padding if isinstance(padding, str) else [(0, 0)] + [
        tuple(p) for p in _explicit_pads(padding, shape[1:2], (k,), (s,), (1,), data_format, opname)]
    y = pool2d(reshape(x, (shape[0], 1) + shape[1:]), (1, k), (1, s), pad)
    y = reshape(y, (shape[0],) + tuple(y._value.shape[2:]))
    return _from_nhwc(y, data_format, 3)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The maximum of each ksize window (padding never wins: it is -inf)."""
    return _pool2d(MAX_POOL, "max_pool2d", input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """The mean of each ksize window; a "SAME" window averages only the input elements it holds."""
    return _pool2d(AVG_POOL, "avg_pool2d", input, ksize, strides, padding, data_format)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format, "max_pool1d")


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format, "avg_pool1d")


def _pool_by_rank(pool1d, pool2d, input, ksize, strides, padding, data_format):  # noqa: A002
    rank = as_tensor(input)._value.ndim
    if rank == 3:
        return pool1d(input, ksize, strides, padding, data_format=data_format or "NWC")
    if rank == 4:
        return pool2d(input, ksize, strides, padding, data_format=data_format or "NHWC")
    raise ValueError(f"pooling of a rank-{rank} input (only 1-D and 2-D are supported)")


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """``tf.nn.max_pool``: 1-D or 2-D by the input's rank."""
    return _pool_by_rank(max_pool1d, max_pool2d, input, ksize, strides, padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """``tf.nn.avg_pool``: 1-D or 2-D by the input's rank."""
    return _pool_by_rank(avg_pool1d, avg_pool2d, input, ksize, strides, padding, data_format)
