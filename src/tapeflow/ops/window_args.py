"""TensorFlow's arguments for convolution and pooling (strides, dilations, ksize, padding,
data_format) turned into the primitives' attributes, shared by ``conv.py`` and ``pooling.py``:
one clear ValueError for each argument that cannot be one."""
import math

import numpy as np

from .shape import reshape, transpose
from .windows import out_size

__all__ = ["spatial_arg", "explicit_pads", "conv_output_length", "to_nhwc", "from_nhwc",
           "check_format", "fold_batch", "check_output"]


def spatial_arg(value, n, what, data_format):
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


def explicit_pads(padding, in_hw, kernel, strides, dilations, data_format, opname):
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
    pads = explicit_pads(padding, (length,), (kernel,), (stride,), (dilation,), "NWC",
                          "conv_output_length")
    return out_size(length, kernel, stride, dilation, pads[0])


def to_nhwc(x, data_format, rank):
    if data_format is None or not data_format.startswith("NC"):
        return x
    return transpose(x, [0] + list(range(2, rank)) + [1])


def from_nhwc(y, data_format, rank):
    if data_format is None or not data_format.startswith("NC"):
        return y
    return transpose(y, [0, rank - 1] + list(range(1, rank - 1)))


def check_format(data_format, allowed, opname):
    if data_format not in allowed:
        raise ValueError(f"{opname}: data_format must be one of {list(allowed)}, got {data_format!r}")


def fold_batch(x, opname):
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


def check_output(hw, opname, in_hw, kernel):
    if min(hw) < 1:
        raise ValueError(f"{opname}: the window {list(kernel)} does not fit the input "
                         f"{list(in_hw)} with this padding (the output would be empty)")
