"""Convolution: ``conv1d``, ``conv2d``, ``conv2d_transpose``, ``conv1d_transpose`` and
``convolution``, with TensorFlow's arguments (strides, dilations, "SAME"/"VALID"/explicit
padding, NHWC or NCHW).  Pooling is in ``pooling.py``; the window arithmetic both share is in
``windows.py``, the argument handling in ``window_args.py``.

Three primitives, in TensorFlow's design (``nn_grad.py``), all on NHWC arrays:

* ``Conv2D(x, w)``: im2col (one strided view of the padded input, copied once by a reshape;
  for few channels one copy per kernel offset) and one BLAS matmul with the (kh*kw*Ci, Co)
  filter;
* ``Conv2DBackpropInput(dy, w)``: conv2d's input gradient, a transposed convolution:
  ``dy @ w[i, j]^T`` for every kernel offset, each added into the input positions it reads
  (col2im by accumulation, padding never materialized);
* ``Conv2DBackpropFilter(x, dy)``: conv2d's filter gradient, ``im2col(x)^T @ dy``, one matmul.

The three are closed under differentiation: each one's gradient is two of the others
(a bilinear op's rule is the op with one operand swapped for the cotangent), so a
convolution differentiates to any order.

Leading (jacobian) axes: the axes before (N, H, W, C) of a primitive's operands broadcast
against each other (the matmuls broadcast them), so a cotangent with extra leading axes
flows through every rule, and a filter may carry them too (it does in the rules).
Attributes never hold the batch size, so one traced graph fits every batch.
"""
import operator

import numpy as np

from ..core.dispatch import apply
from ..core.registry import def_primitive
from ._util import array_module, as_tensor, binary_operands, half_in_float32
from .shape import concat, reshape, split
from .window_args import check_format, check_output, conv_output_length, explicit_pads, \
    fold_batch, from_nhwc, spatial_arg, to_nhwc
from .windows import im2col, im2col_by_offsets, inside_offsets, out_hw

__all__ = ["conv1d", "conv2d", "conv1d_transpose", "conv2d_transpose", "convolution",
           "conv_output_length"]


# =================================================================================================
# The convolution primitives
# =================================================================================================
def _flat_filter(w):
    """(..., kh, kw, Ci, Co) -> (..., kh*kw*Ci, Co)."""
    return w.reshape(w.shape[:-4] + (w.shape[-4] * w.shape[-3] * w.shape[-2], w.shape[-1]))


# Below this many input channels, im2col copies one strided run per kernel offset into the
# patches' transpose (``im2col_by_offsets``); at more, the window view's reshape copies C
# elements at a time fast enough (measured on W2's shapes: 1 channel 0.22 vs 1.57 ms, 32
# channels 4.2 vs 0.55 ms; benchmarks/README.md).
FEW_CHANNELS = 5


def _patches(x, kernel, strides, dilations, pads):
    """im2col of x as (..., rows, kh*kw*C), possibly a transposed view, and (Ho, Wo)."""
    if x.shape[-1] < FEW_CHANNELS:
        cols_t, hw = im2col_by_offsets(x, kernel, strides, dilations, pads)
        return array_module(x).swapaxes(cols_t, -1, -2), hw
    return im2col(x, kernel, strides, dilations, pads)


def _conv2d_forward(x, w, strides, dilations, pads):
    cols, (ho, wo) = _patches(x, w.shape[-4:-2], strides, dilations, pads)
    out = half_in_float32(operator.matmul, cols, _flat_filter(w))
    return out.reshape(out.shape[:-2] + (x.shape[-4], ho, wo, w.shape[-1]))


# The input gradient's kernels (measured, benchmarks/README.md "W2"): per kernel offset, the
# forward's FLOPs in K GEMMs, wins where a convolution of the padded cotangent would do more
# FLOPs (VALID padding: W2's 11x11 -> 13x13 runs 7.6 against 12.4 ms) or where each offset's
# GEMM is large (from about 4M multiply-adds: 16x16x16 <- 32, batch 32, 0.78x); below that
# at stride 1 (digits' 4x4x16 <- 32 SAME) one im2col and one GEMM cost less than K calls.
PER_OFFSET_MIN_MACS = 1 << 22


def _per_offset_pays(dy_shape, filter_shape, input_hw):
    """Whether the input gradient runs per kernel offset rather than as one flipped convolution
    (decided per call: the batch, part of the cost, varies between calls of one graph)."""
    n, ho, wo, co = dy_shape[-4:]
    more_flops = 4 * input_hw[0] * input_hw[1] > 5 * ho * wo  # the padded dy's rows, over 1.25x
    return more_flops or n * ho * wo * filter_shape[-2] * co >= PER_OFFSET_MIN_MACS


def _conv2d_backprop_input_forward(dy, w, input_hw, strides, dilations, pads):
    reach = ((w.shape[-4] - 1) * dilations[0], (w.shape[-3] - 1) * dilations[1])
    if strides == (1, 1) and all(max(p) <= r for p, r in zip(pads, reach)) and \
            not _per_offset_pays(dy.shape, w.shape, input_hw):
        return _input_grad_by_flipped_conv(dy, w, dilations, pads, reach)
    return _input_grad_per_offset(dy, w, input_hw, strides, dilations, pads)


def _input_grad_by_flipped_conv(dy, w, dilations, pads, reach):
    """At stride 1, conv2d's input gradient is a convolution of dy, padded to reach every input
    position, with the flipped, transposed filter: one im2col and one GEMM."""
    flipped = array_module(dy).swapaxes(w[..., ::-1, ::-1, :, :], -1, -2)
    full = tuple((r - p[0], r - p[1]) for p, r in zip(pads, reach))
    return _conv2d_forward(dy, flipped, (1, 1), dilations, full)


def _input_grad_per_offset(dy, w, input_hw, strides, dilations, pads):
    """The forward's GEMM transposed, one kernel offset at a time: ``dy @ w[i, j]^T`` (rows, Ci)
    added into the input positions that offset reads (col2im by accumulation, padding never
    materialized); one offset's product in memory at a time."""
    xp = array_module(dy)
    n, ho, wo, co = dy.shape[-4:]
    dtype = np.result_type(dy.dtype, w.dtype)
    if dtype.itemsize == 2:  # half precision: products and their sum in float32, rounded once
        dy, w = dy.astype(np.float32), w.astype(np.float32)
    rows = dy.reshape(dy.shape[:-4] + (n * ho * wo, co))
    lead = tuple(np.broadcast_shapes(dy.shape[:-4], w.shape[:-4]))
    out = xp.zeros(lead + (n,) + tuple(input_hw) + (w.shape[-2],), dtype=rows.dtype)
    for i, j, in_rows, in_columns, out_rows, out_columns in inside_offsets(
            input_hw, w.shape[-4:-2], strides, dilations, pads, (ho, wo)):
        part = rows @ xp.swapaxes(w[..., i, j, :, :], -1, -2)
        part = part.reshape(part.shape[:-2] + (n, ho, wo, part.shape[-1]))
        out[..., in_rows, in_columns, :] += part[..., out_rows, out_columns, :]
    return out.astype(dtype, copy=False)


def _conv2d_backprop_filter_forward(x, dy, filter_hw, strides, dilations, pads):
    xp = array_module(x)
    cols, _ = _patches(x, filter_hw, strides, dilations, pads)
    n, ho, wo, co = dy.shape[-4:]
    out = half_in_float32(operator.matmul, xp.swapaxes(cols, -1, -2),
                          dy.reshape(dy.shape[:-4] + (n * ho * wo, co)))
    return out.reshape(out.shape[:-2] + (filter_hw[0], filter_hw[1], x.shape[-1], co))


def _geometry(op):
    return {k: op.get_attr(k) for k in ("strides", "dilations", "pads")}


def _conv(x, w, geometry):
    return apply(CONV2D, (x, w), geometry)


def _backprop_input(dy, w, input_hw, geometry):
    return apply(CONV2D_BACKPROP_INPUT, (dy, w), {"input_hw": tuple(input_hw), **geometry})


def _backprop_filter(x, dy, filter_hw, geometry):
    return apply(CONV2D_BACKPROP_FILTER, (x, dy), {"filter_hw": tuple(filter_hw), **geometry})


def _conv2d_grad(op, g):
    x, w = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    dx = _backprop_input(g, w, x._value.shape[-3:-1], geometry) if needs[0] else None
    dw = _backprop_filter(x, g, w._value.shape[-4:-2], geometry) if needs[1] else None
    return dx, dw


CONV2D = def_primitive("Conv2D", _conv2d_forward, grad=_conv2d_grad, saves="inputs")


def _conv2d_backprop_input_grad(op, g):
    dy, w = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    d_dy = _conv(g, w, geometry) if needs[0] else None
    dw = _backprop_filter(g, dy, w._value.shape[-4:-2], geometry) if needs[1] else None
    return d_dy, dw


CONV2D_BACKPROP_INPUT = def_primitive("Conv2DBackpropInput", _conv2d_backprop_input_forward,
                                      grad=_conv2d_backprop_input_grad, saves="inputs")


def _conv2d_backprop_filter_grad(op, g):
    x, dy = op.inputs
    geometry, needs = _geometry(op), op.needs_input_grad
    dx = _backprop_input(dy, g, x._value.shape[-3:-1], geometry) if needs[0] else None
    d_dy = _conv(x, g, geometry) if needs[1] else None
    return dx, d_dy


CONV2D_BACKPROP_FILTER = def_primitive("Conv2DBackpropFilter", _conv2d_backprop_filter_forward,
                                       grad=_conv2d_backprop_filter_grad, saves="inputs")


# =================================================================================================
# The public functions: TensorFlow's arguments to the primitives' attributes
# =================================================================================================
def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """2-D convolution (cross-correlation, as TensorFlow's) of ``input`` [batch, H, W, Ci] with
    ``filters`` [kh, kw, Ci / groups, Co]; grouped when ``Ci`` is a multiple of the filters'
    input channels (each group of channels has its own Co / groups filters)."""
    check_format(data_format, ("NHWC", "NCHW"), "conv2d")
    input, filters = binary_operands("conv2d", input, filters)
    x = to_nhwc(input, data_format, 4)
    if filters._value.ndim != 4:
        raise ValueError(f"conv2d: filters must have rank 4 [kh, kw, in, out], got shape "
                         f"{list(filters._value.shape)}")
    x, unfold = fold_batch(x, "conv2d")
    kh, kw, fi, co = filters._value.shape
    ci = x._value.shape[-1]
    if fi == 0 or ci % fi or co % (ci // fi):
        raise ValueError(f"conv2d: the input has {ci} channels, which the filters' {fi} input "
                         f"channels and {co} output channels cannot split into groups")
    strides = spatial_arg(strides, 2, "strides", data_format)
    dilations = spatial_arg(1 if dilations is None else dilations, 2, "dilations", data_format)
    in_hw = tuple(x._value.shape[1:3])
    pads = explicit_pads(padding, in_hw, (kh, kw), strides, dilations, data_format, "conv2d")
    check_output(out_hw(in_hw, (kh, kw), strides, dilations, pads), "conv2d", in_hw, (kh, kw))
    geometry = {"strides": strides, "dilations": dilations, "pads": pads}
    groups = ci // fi
    if groups == 1:
        y = _conv(x, filters, geometry)
    else:
        xs = split(x, groups, axis=-1)
        ws = split(filters, groups, axis=-1)
        y = concat([_conv(a, b, geometry) for a, b in zip(xs, ws)], axis=-1)
    return from_nhwc(unfold(y), data_format, 4)


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
    check_format(data_format, ("NWC", "NCW"), "conv1d")
    input, filters = binary_operands("conv1d", input, filters)
    if filters._value.ndim != 3:
        raise ValueError(f"conv1d: filters must have rank 3 [k, in, out], got shape "
                         f"{list(filters._value.shape)}")
    x = to_nhwc(input, data_format, 3)
    shape = tuple(x._value.shape)
    if len(shape) < 3:
        raise ValueError(f"conv1d: the input must have rank 3 [batch, W, C], got shape {list(shape)}")
    # a leading -1: the batch stays free, so a traced graph fits every batch size
    x4 = reshape(x, (-1,) + shape[1:-2] + (1,) + shape[-2:])
    w4 = reshape(filters, (1,) + tuple(filters._value.shape))
    stride = spatial_arg(stride, 1, "stride", data_format)[0]
    dilation = spatial_arg(1 if dilations is None else dilations, 1, "dilations", data_format)[0]
    pad = padding if isinstance(padding, str) else [(0, 0)] + [
        tuple(p) for p in explicit_pads(padding, shape[-2:-1], (1,), (1,), (1,), data_format,
                                         "conv1d")]
    y = conv2d(x4, w4, (1, stride), pad, dilations=(1, dilation))
    y = reshape(y, (-1,) + shape[1:-2] + tuple(y._value.shape[-2:]))
    return from_nhwc(y, data_format, 3)


def _output_shape_arg(output_shape, rank, data_format, opname):
    """``output_shape`` (a list, tuple or tensor of rank + 2 sizes) in channels-last order."""
    if hasattr(output_shape, "numpy"):
        output_shape = output_shape.numpy().tolist()
    try:
        if isinstance(output_shape, str):
            raise TypeError
        out = [None if d is None else int(d) for d in output_shape]
    except (TypeError, ValueError):
        raise TypeError(f"{opname}: output_shape must be a list of {rank + 2} ints, got "
                        f"{output_shape!r}") from None
    if len(out) != rank + 2:
        raise ValueError(f"{opname}: output_shape must have {rank + 2} entries (batch, "
                         f"{rank} spatial, channels), got {out}")
    return out if not data_format.startswith("NC") else [out[0]] + out[2:] + [out[1]]


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",  # noqa: A002
                     dilations=None, name=None):
    """The transpose (gradient) of conv2d: ``input`` [N, Ho, Wo, Co] and ``filters``
    [kh, kw, Ci, Co] give [N, H, W, Ci], ``output_shape``'s shape: every input position adds
    its ``filters @ input`` into the output window that position's convolution would read."""
    check_format(data_format, ("NHWC", "NCHW"), "conv2d_transpose")
    input, filters = binary_operands("conv2d_transpose", input, filters)
    dy = to_nhwc(input, data_format, 4)
    out = _output_shape_arg(output_shape, 2, data_format, "conv2d_transpose")
    if filters._value.ndim != 4 or dy._value.ndim != 4:
        raise ValueError(f"conv2d_transpose: input must have rank 4 and filters rank 4 "
                         f"[kh, kw, out, in], got shapes {list(dy._value.shape)} and "
                         f"{list(filters._value.shape)}")
    kh, kw, ci, co = filters._value.shape
    batch = dy._value.shape[0]
    if out[-1] != ci or dy._value.shape[-1] != co or out[0] not in (None, batch):
        raise ValueError(f"conv2d_transpose: output_shape {out} (NHWC), filters "
                         f"{list(filters._value.shape)} and input {list(dy._value.shape)} disagree")
    strides = spatial_arg(strides, 2, "strides", data_format)
    dilations = spatial_arg(1 if dilations is None else dilations, 2, "dilations", data_format)
    in_hw = tuple(out[1:3])
    pads = explicit_pads(padding, in_hw, (kh, kw), strides, dilations, data_format,
                         "conv2d_transpose")
    want = out_hw(in_hw, (kh, kw), strides, dilations, pads)
    if tuple(dy._value.shape[1:3]) != want:
        raise ValueError(f"conv2d_transpose: an output of spatial shape {list(in_hw)} convolves to "
                         f"{list(want)}, but the input has {list(dy._value.shape[1:3])}")
    y = _backprop_input(dy, filters, in_hw, {"strides": strides, "dilations": dilations,
                                             "pads": pads})
    return from_nhwc(y, data_format, 4)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC",  # noqa: A002
                     dilations=None, name=None):
    """The transpose (gradient) of conv1d: ``input`` [N, Wo, Co] and ``filters`` [k, Ci, Co]
    give [N, W, Ci], ``output_shape``'s shape; conv2d_transpose on a height-1 image."""
    check_format(data_format, ("NWC", "NCW"), "conv1d_transpose")
    input, filters = binary_operands("conv1d_transpose", input, filters)
    dy = to_nhwc(input, data_format, 3)
    out = _output_shape_arg(output_shape, 1, data_format, "conv1d_transpose")
    if filters._value.ndim != 3 or dy._value.ndim != 3:
        raise ValueError(f"conv1d_transpose: input must have rank 3 and filters rank 3 "
                         f"[k, out, in], got shapes {list(dy._value.shape)} and "
                         f"{list(filters._value.shape)}")
    stride = spatial_arg(strides, 1, "strides", data_format)[0]
    dilation = spatial_arg(1 if dilations is None else dilations, 1, "dilations", data_format)[0]
    pad = padding if isinstance(padding, str) else [(0, 0)] + [
        tuple(p) for p in explicit_pads(padding, (out[1],), (1,), (1,), (1,), data_format,
                                        "conv1d_transpose")]
    shape = tuple(dy._value.shape)
    y = conv2d_transpose(reshape(dy, (-1, 1) + shape[1:]),  # -1: any batch, when traced
                         reshape(filters, (1,) + tuple(filters._value.shape)),
                         [out[0], 1, out[1], out[2]], (1, stride), pad, dilations=(1, dilation))
    y = reshape(y, (-1,) + tuple(y._value.shape[2:]))
    return from_nhwc(y, data_format, 3)
