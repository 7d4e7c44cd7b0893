"""Ops that move elements around: reshape, transpose, indexing, concat, pad, where, cast.

Their gradients move the cotangent back; every rule keeps the cotangent's
leading (jacobian) axes in front, using negative axes and ``...`` indices.
"""
import math

import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.backprop import unbroadcast
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor, convert_to_tensor, lift
from ..dtypes import numpy_dtype
from ._util import (
    array_module, as_tensor, binary_operands, dtype_mismatch, lead_shape, norm_axes, one_axis,
    module_of, on_device_of, static_shape,
)
from ..dtypes import is_inexact_dtype
# The op families stack one way: shape < elementwise < arithmetic < reduce; a family's
# ops and rules use only the families below it (tests/test_import_graph.py checks).

__all__ = [
    "reshape", "transpose", "matrix_transpose", "moveaxis", "expand_dims", "squeeze",
    "concat", "stack", "unstack", "split", "getitem", "gather", "boolean_mask", "pad", "tile",
    "broadcast_to", "where", "cast", "reverse", "shape", "size", "rank",
]


# --- reshape ----------------------------------------------------------------------------------
def _reshape_grad(op, g):
    return reshape(g, lead_shape(g, len(op.get_attr("shape"))) + tuple(op.input_shape()))


RESHAPE = def_primitive("Reshape", lambda x, shape: x.reshape(shape), grad=_reshape_grad)


@dispatches_symbols("reshape")
def reshape(tensor, shape, name=None):
    tensor = as_tensor(tensor)
    shape = requested = static_shape(shape)
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = tensor._value.size
        if known == 0 or total % known:
            raise ValueError(f"Cannot reshape a tensor of shape {tuple(tensor._value.shape)} to {shape}")
        shape = tuple(total // known if d == -1 else d for d in shape)
    if math.prod(shape) != tensor._value.size:
        raise ValueError(f"Cannot reshape a tensor with {tensor._value.size} elements to shape "
                         f"{list(shape)}")
    if shape == tensor._value.shape:
        return tensor
    # A leading -1 stays in the op (a batch of any size: a traced graph then fits every batch,
    # as Flatten's does); any other -1 is resolved here.
    if requested[:1] == (-1,) and requested.count(-1) == 1 and math.prod(requested[1:]) > 0:
        shape = requested
    return apply(RESHAPE, (tensor,), {"shape": shape})


# --- transpose --------------------------------------------------------------------------------
def _transpose_grad(op, g):
    perm = op.get_attr("perm")
    nb = len(lead_shape(g, len(perm)))
    inverse = tuple(int(i) for i in np.argsort(perm))
    return transpose(g, tuple(range(nb)) + tuple(nb + i for i in inverse))


TRANSPOSE = def_primitive("Transpose", lambda x, perm: array_module(x).transpose(x, perm),
                          grad=_transpose_grad)


@dispatches_symbols("transpose")
def transpose(a, perm=None, conjugate=False, name=None):
    a = as_tensor(a)
    n = a._value.ndim
    if perm is not None and any(not -n <= int(p) < n for p in perm):
        raise ValueError(f"transpose: perm {list(perm)} has an axis out of range for rank {n}")
    perm = tuple(reversed(range(n))) if perm is None else tuple(int(p) % max(n, 1) for p in perm)
    if sorted(perm) != list(range(n)):
        raise ValueError(f"transpose: perm {list(perm)} is not a permutation of {n} axes")
    if perm == tuple(range(n)):
        return a
    return apply(TRANSPOSE, (a,), {"perm": perm})


def matrix_transpose(a, name=None):
    a = as_tensor(a)
    n = a._value.ndim
    if n < 2:
        raise ValueError("matrix_transpose needs a tensor of rank >= 2")
    return transpose(a, tuple(range(n - 2)) + (n - 1, n - 2))


def moveaxis(a, source, destination):
    a = as_tensor(a)
    n = a._value.ndim
    perm = [i for i in range(n) if i != source % n]
    perm.insert(destination % n, source % n)
    return transpose(a, perm)


@dispatches_symbols("expand_dims")
def expand_dims(input, axis, name=None):  # noqa: A002 - TensorFlow's name
    input = as_tensor(input)
    shape = list(input._value.shape)
    axis = int(axis)
    if not -len(shape) - 1 <= axis <= len(shape):
        raise ValueError(f"expand_dims: axis {axis} is out of range for a tensor of rank {len(shape)}")
    if axis < 0:
        axis += len(shape) + 1
    shape.insert(axis, 1)
    return reshape(input, shape)


@dispatches_symbols("squeeze")
def squeeze(input, axis=None, name=None):  # noqa: A002
    input = as_tensor(input)
    shape = input._value.shape
    if axis is None:
        keep = [d for d in shape if d != 1]
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        for a in axes:
            if not -len(shape) <= a < len(shape):
                raise ValueError(f"squeeze: axis {a} is out of range for a tensor of rank {len(shape)}")
        axes = {a % len(shape) for a in axes}
        for a in axes:
            if shape[a] != 1:
                raise ValueError(f"Cannot squeeze axis {a} of size {shape[a]}")
        keep = [d for i, d in enumerate(shape) if i not in axes]
    return reshape(input, keep)


# --- concat, stack, split ----------------------------------------------------------------------
def _concat_grad(op, g):
    axis = op.get_attr("axis")  # negative
    tail = (slice(None),) * (-axis - 1)
    grads, start = [], 0
    for shape in op.in_shapes:
        stop = start + shape[axis]
        grads.append(g[(Ellipsis, slice(start, stop)) + tail])
        start = stop
    return grads


CONCAT = def_primitive("ConcatV2", lambda *xs, axis: array_module(*xs).concatenate(xs, axis=axis),
                       grad=_concat_grad)


@dispatches_symbols("concat")
def concat(values, axis, name=None):
    values = _same_dtype("concat", values)
    if len(values) == 1:
        return values[0]
    ndim = values[0]._value.ndim
    axis = one_axis(axis, ndim, "concat")
    first = values[0]._value.shape
    for v in values[1:]:
        shape = v._value.shape
        if len(shape) != ndim or any(a != b for i, (a, b) in enumerate(zip(first, shape))
                                     if i - ndim != axis):
            raise ValueError(f"concat: shapes {tuple(first)} and {tuple(shape)} must match "
                             f"except along axis {axis + ndim}")
    return apply(CONCAT, tuple(values), {"axis": axis})


def _same_dtype(opname, values):
    values = [v for v in values]
    if not values:
        raise ValueError(f"{opname} needs at least one tensor")
    first = next((v for v in values if isinstance(v, Tensor)), None)
    if first is None:
        first = convert_to_tensor(values[0])
    out = [lift(v, first) for v in values]
    for v in out:
        if v._value.dtype != first._value.dtype:
            raise dtype_mismatch(opname, first, v)
    return out


@dispatches_symbols("stack")
def stack(values, axis=0, name=None):
    values = _same_dtype("stack", values)
    shape = values[0]._value.shape
    for v in values:
        if v._value.shape != shape:
            raise ValueError(f"stack: all tensors need one shape; got {tuple(shape)} and "
                             f"{tuple(v._value.shape)}")
    axis = int(axis)
    if axis < 0:
        axis += len(shape) + 1
    return concat([expand_dims(v, axis) for v in values], axis)


# --- unstack: one op, one output per slice -------------------------------------------------------
# Unpack(x; axis, num) gives the slices along ``axis`` (counted from the right) as views; its
# gradient stacks the slices' cotangents (the backward pass gives zeros for unused ones).  One op
# instead of one StridedSlice per slice, whose gradients would each scatter into a zeros array
# of the whole input: a loop over a sequence's T steps (an RNN's) costs O(T) backwards, not O(T^2).
def _unpack_forward(x, axis, num):
    tail = (slice(None),) * (-axis - 1)
    return tuple(x[(Ellipsis, i) + tail] for i in range(num))


def _unpack_grad(op, *grads):
    axis = op.get_attr("axis")
    tail = (slice(None),) * (-axis - 1)
    return concat([g[(Ellipsis, None) + tail] for g in grads], axis)


UNPACK = def_primitive("Unpack", _unpack_forward, num_outputs=None,  # num outputs
                       grad=_unpack_grad)


@dispatches_symbols("unstack")
def unstack(value, num=None, axis=0, name=None):
    """The slices of ``value`` along ``axis``, as a list (``tf.unstack``)."""
    value = as_tensor(value)
    ndim = value._value.ndim
    if ndim == 0:
        raise ValueError("unstack: the input must have at least one axis, got a scalar")
    axis = one_axis(axis, ndim, "unstack")
    n = value._value.shape[axis]
    if num is not None and int(num) != n:
        raise ValueError(f"unstack: num={num} does not match the {n} slices along axis {axis}")
    if n == 0:
        return []
    return list(apply(UNPACK, (value,), {"axis": axis, "num": n}))


@dispatches_symbols("split")
def split(value, num_or_size_splits, axis=0, num=None, name=None):
    value = as_tensor(value)
    axis = int(axis) % value._value.ndim
    n = value._value.shape[axis]
    if isinstance(num_or_size_splits, (int, np.integer)):
        k = int(num_or_size_splits)
        if n % k:
            raise ValueError(f"split: dimension {axis} of size {n} does not divide into {k} parts")
        sizes = [n // k] * k
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} do not add up to {n}")
    parts, start = [], 0
    for s in sizes:
        parts.append(value[(slice(None),) * axis + (slice(start, start + s),)])
        start += s
    return parts


# --- indexing ----------------------------------------------------------------------------------
# GetItem(x; index, nb) is ``x[(:,) * nb + index]`` with the nb leading (jacobian) axes kept in
# front; its gradient Scatter puts a cotangent back into zeros, and Scatter's gradient is GetItem.
def _advanced(item):
    return hasattr(item, "ndim") and item.ndim > 0


def _take(x, index, nb):
    out = x[(slice(None),) * nb + index]
    adv = [i for i, it in enumerate(index) if _advanced(it)]
    if nb and adv and adv[-1] - adv[0] + 1 != len(adv):
        # numpy moves non-adjacent advanced indices in front of everything: put the batch back
        k = _advanced_ndim(index)
        out = array_module(out).moveaxis(out, tuple(range(k)), tuple(range(nb, nb + k)))
    return out


def _advanced_ndim(index):
    return len(np.broadcast_shapes(*[it.shape for it in index if _advanced(it)]))


def _scatter(g, index, shape, nb):
    xp = array_module(g)
    out = xp.zeros(g.shape[:nb] + tuple(shape), dtype=g.dtype)
    full = (slice(None),) * nb + index
    adv = [i for i, it in enumerate(index) if _advanced(it)]
    if not adv:
        out[full] = g
        return out
    if nb and adv[-1] - adv[0] + 1 != len(adv):
        k = _advanced_ndim(index)
        g = xp.moveaxis(g, tuple(range(nb, nb + k)), tuple(range(k)))
    xp.add.at(out, full, g)  # repeated indices add up
    return out


def _getitem_grad(op, g):
    nb0 = op.get_attr("nb")
    nb = len(lead_shape(g, len(op.out_shapes[0]))) + nb0
    return apply(SCATTER, (g,), {"index": op.get_attr("index"),
                                 "shape": tuple(op.in_shapes[0][nb0:]), "nb": nb})


GETITEM = def_primitive("StridedSlice", _take, grad=_getitem_grad)


def _scatter_grad(op, g):
    nb0 = op.get_attr("nb")
    nb = len(lead_shape(g, len(op.out_shapes[0]))) + nb0
    return apply(GETITEM, (g,), {"index": op.get_attr("index"), "nb": nb})


SCATTER = def_primitive("StridedSliceGrad", _scatter, grad=_scatter_grad)


def getitem(tensor, index):
    """``tensor[index]``: basic and advanced (integer-array, boolean) indexing."""
    tensor = as_tensor(tensor)
    index = _array_index(index, tensor._value)
    return apply(GETITEM, (tensor,), {"index": index, "nb": 0})


def _array_index(index, like):
    """Tensors inside an index become arrays; a boolean mask becomes integer arrays.  Array items
    (host arrays, lists, tensors on another device) are put on ``like``'s device once, here,
    where the op is built: the forward and its gradient (Scatter) then index on the device."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for item in items:
        if isinstance(item, Tensor):
            item = item._value
        elif isinstance(item, list):
            item = np.asarray(item)
        if _advanced(item):
            item = on_device_of(like, item)
        if _advanced(item) and item.dtype.kind == "b":
            out.extend(item.nonzero())  # as numpy does, explicit so that the gradient can scatter
            continue
        if hasattr(item, "dtype") and getattr(item, "ndim", 1) == 0:
            item = int(item)
        out.append(item)
    return tuple(out)


# --- gather: the indices are an input ------------------------------------------------------------
# GatherV2(params, indices; axis) is ``take(params, indices, axis)`` with ``axis`` counted from the
# right, so params may carry leading (jacobian) axes.  Its gradient ScatterAdd adds each slice of
# the cotangent into zeros at its index (repeated indices add up); ScatterAdd's gradient is
# GatherV2, so gathers differentiate to any order.  The indices are data, an input of both ops,
# never an attribute: a traced graph (an Embedding's) then takes new ids at every call.
def _check_indices(indices, size):
    """TensorFlow's CPU kernel refuses an index outside [0, size) (numpy would wrap a negative one
    or fail deep inside): one error naming the first bad index, eagerly or when a graph runs."""
    if not indices.size:
        return
    xp = array_module(indices)
    bad = (indices < 0) | (indices >= size)
    if bool(bad.any()):
        where = tuple(int(i) for i in xp.argwhere(bad)[0])
        value = int(indices[where])
        index = "[" + ",".join(str(i) for i in where) + "]" if where else ""
        raise ValueError(f"gather: indices{index} = {value} is not in [0, {size})")


def _gather_forward(params, indices, axis):
    _check_indices(indices, params.shape[axis])
    return array_module(params).take(params, indices, axis=axis)


def _scatter_add_forward(updates, indices, axis, size):
    """Zeros of the gathered-from shape (``size`` along ``axis``, counted from the right), with
    each slice of ``updates`` added at its index."""
    xp = array_module(updates)
    post = -axis - 1
    shape = updates.shape
    lead = shape[:len(shape) - post - indices.ndim]
    tail = shape[len(shape) - post:]
    out = xp.zeros(lead + (size,) + tail, dtype=updates.dtype)
    rows = updates.reshape(lead + (indices.size,) + tail)
    flat = indices.reshape(-1)
    tail_index = (slice(None),) * post
    if xp is not np or not flat.size:
        xp.add.at(out, (Ellipsis, flat) + tail_index, rows)
        return out
    width = int(np.prod(tail, dtype=np.int64))
    if not lead and updates.dtype.kind == "f" and size * width <= 4 * rows.size:
        # An embedding table's gradient (rows of a small table, each added many times): one
        # bincount over (index, column) keys, summed in float64 (2.5x faster than the sort
        # below on W3's; its float64 sums are only taken where the table is no larger than
        # a few times the updates)
        keys = (flat[:, None] * width + np.arange(width)).reshape(-1)
        sums = np.bincount(keys, weights=rows.reshape(-1), minlength=size * width)
        out[...] = sums.reshape(out.shape)
        return out
    # The rows sorted by index, then one reduceat per run of equal indices: about 2x faster
    # than add.at for an embedding table's gradient (the same sums, perhaps rounded in
    # another order).
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    axis = len(lead)
    sums = np.add.reduceat(np.take(rows, order, axis=axis), starts, axis=axis)
    out[(slice(None),) * axis + (ordered[starts],)] = sums
    return out


def _gather_grad(op, g):
    axis = op.get_attr("axis")
    return apply(SCATTER_ADD, (g, op.inputs[1]), {"axis": axis, "size": op.in_shapes[0][axis]}), \
        None


GATHER = def_primitive("GatherV2", _gather_forward, grad=_gather_grad, saves="inputs")


def _scatter_add_grad(op, g):
    return apply(GATHER, (g, op.inputs[1]), {"axis": op.get_attr("axis")}), None


SCATTER_ADD = def_primitive("ScatterAdd", _scatter_add_forward,
                            grad=_scatter_add_grad, saves="inputs")


@dispatches_symbols("gather")
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """``params[..., indices, ...]`` along ``axis`` (0 by default), as ``tf.gather``: the result
    has shape ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``.  Indices are
    integers in [0, params.shape[axis]) (others raise ValueError); a tensor of them stays an
    input of the op (a traced graph gathers the ids it is called with).  The gradient adds each
    gathered slice's cotangent back at its index."""
    params = as_tensor(params)
    if batch_dims:
        raise NotImplementedError("gather with batch_dims is not supported yet")
    if not isinstance(indices, Tensor):
        indices = convert_to_tensor(np.asarray(indices))
    if indices._value.dtype.kind not in "iu":
        raise TypeError(f"gather: indices must be integers, not {indices._value.dtype.name}")
    ndim = params._value.ndim
    if ndim == 0:
        raise ValueError("gather: params must have at least one axis, got a scalar")
    axis = one_axis(0 if axis is None else axis, ndim, "gather")
    return apply(GATHER, (params, indices), {"axis": axis})


def boolean_mask(tensor, mask, axis=0, name=None):
    tensor = as_tensor(tensor)
    mask = mask._value if isinstance(mask, Tensor) else np.asarray(mask)
    mask = on_device_of(tensor._value, mask)
    axis = one_axis(axis, tensor._value.ndim, "boolean_mask")
    return getitem(tensor, (slice(None),) * (axis + tensor._value.ndim) + (mask,))


# --- pad, tile, broadcast_to, reverse -------------------------------------------------------------
def _pad_grad(op, g):
    shape = op.in_shapes[0]
    index = tuple(slice(a, a + d) for (a, _), d in zip(op.get_attr("paddings"), shape))
    return g[(Ellipsis,) + index]


PAD = def_primitive("PadV2", lambda x, paddings, constant_values: array_module(x).pad(
    x, paddings, mode="constant", constant_values=constant_values), grad=_pad_grad)


@dispatches_symbols("pad")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    tensor = as_tensor(tensor)
    if str(mode).upper() != "CONSTANT":
        raise NotImplementedError(f"pad mode {mode!r}: only 'CONSTANT' is supported")
    paddings = tuple((int(a), int(b)) for a, b in np.asarray(paddings).tolist())
    if len(paddings) != tensor._value.ndim:
        raise ValueError(f"pad: {len(paddings)} paddings for a tensor of rank {tensor._value.ndim}")
    value = constant_values.numpy() if isinstance(constant_values, Tensor) else constant_values
    return apply(PAD, (tensor,), {"paddings": paddings,
                                  "constant_values": tensor._value.dtype.type(value)})


def _tile_grad(op, g):
    shape = op.in_shapes[0]
    multiples = op.get_attr("multiples")
    lead = lead_shape(g, len(shape))
    split_shape = lead + tuple(x for m, d in zip(multiples, shape) for x in (m, d))
    # each tiled axis is split into (multiple, size); summing the multiples is the core's
    # unbroadcast to size-1 axes there (a sum in shape's family would need reduce's)
    ones_between = tuple(x for d in shape for x in (1, d))
    summed = unbroadcast(reshape(g, split_shape), ones_between, batch_ndim=len(lead))
    return reshape(summed, lead + tuple(shape))


TILE = def_primitive("Tile", lambda x, multiples: array_module(x).tile(x, multiples),
                     grad=_tile_grad)


@dispatches_symbols("tile")
def tile(input, multiples, name=None):  # noqa: A002
    input = as_tensor(input)
    multiples = tuple(int(m) for m in np.asarray(multiples).tolist())
    return apply(TILE, (input,), {"multiples": multiples})


def _broadcast_to_forward(x, shape):
    xp = array_module(x)
    if math.prod(shape) > 4096:
        return xp.broadcast_to(x, shape)  # a view: no copy of a large cotangent
    out = xp.empty(shape, dtype=x.dtype)  # small: a copy is cheaper than numpy's view machinery
    out[...] = x
    return out


def _broadcast_to_grad(op, g):
    return g  # the tape sums a cotangent back to the input's shape


BROADCAST_TO = def_primitive("BroadcastTo", _broadcast_to_forward, grad=_broadcast_to_grad)


@dispatches_symbols("broadcast_to")
def broadcast_to(input, shape, name=None):  # noqa: A002
    input = as_tensor(input)
    shape = static_shape(shape)
    if input._value.shape == shape:
        return input
    return apply(BROADCAST_TO, (input,), {"shape": shape})


def _reverse_grad(op, g):
    return apply(REVERSE, (g,), {"axes": op.get_attr("axes")})


REVERSE = def_primitive("ReverseV2", lambda x, axes: array_module(x).flip(x, axes),
                        grad=_reverse_grad)


@dispatches_symbols("reverse")
def reverse(tensor, axis, name=None):
    tensor = as_tensor(tensor)
    return apply(REVERSE, (tensor,), {"axes": norm_axes(axis, tensor._value.ndim)})


# --- where (select) -------------------------------------------------------------------------------
def _select_grad(op, g):
    c = op.inputs[0]
    needs = op.needs_input_grad
    zero = Tensor(g._value.dtype.type(0))  # a scalar: any array module takes it
    return (None,
            where(c, g, zero) if needs[1] else None,
            where(c, zero, g) if needs[2] else None)


def _select_kernel(in_types, attrs):
    """Three scalars of one dtype (a metric's result, a guarded division): a Python choice."""
    (c_shape, _), (x_shape, x_dtype), (y_shape, y_dtype) = in_types
    if c_shape or x_shape or y_shape or x_dtype != y_dtype:
        return None
    return lambda c, x, y: x if c else y


# the module of any operand: a branch may be a numpy scalar (the gradient's zero) beside device data
SELECT = def_primitive("SelectV2", lambda c, x, y: array_module(c, x, y).where(c, x, y),
                       grad=_select_grad, saves="inputs", specialize=_select_kernel)


@dispatches_symbols("where")
def where(condition, x=None, y=None, name=None):
    """Elementwise ``x if condition else y`` (broadcasting); with one argument, the
    coordinates of the true elements."""
    condition = as_tensor(condition)
    if x is None and y is None:
        xp = module_of(condition._value)
        return Tensor(xp.stack(xp.nonzero(condition._value), axis=-1).astype(np.int64))
    if x is None or y is None:
        raise ValueError("where needs both x and y, or neither")
    x, y = binary_operands("where", x, y)
    if condition._value.dtype.kind != "b":
        raise TypeError(f"where: condition must be bool, not {condition._value.dtype.name}")
    return apply(SELECT, (condition, x, y))


# --- cast ---------------------------------------------------------------------------------------------
def _cast_grad(op, g):
    if not is_inexact_dtype(op.in_dtypes[0]):
        return None
    return cast(g, op.in_dtypes[0])


CAST = def_primitive("Cast", lambda x, dtype: x.astype(dtype), grad=_cast_grad)


@dispatches_symbols("cast")
def cast(x, dtype, name=None):
    x = as_tensor(x)
    dtype = numpy_dtype(dtype)
    if x._value.dtype == dtype:
        return x
    return apply(CAST, (x,), {"dtype": dtype})


# --- shape queries (plain int32 tensors) --------------------------------------------------------------
def shape(input, out_type=np.int32, name=None):  # noqa: A002
    return Tensor(np.asarray(as_tensor(input)._value.shape, dtype=numpy_dtype(out_type)))


def size(input, out_type=np.int32, name=None):  # noqa: A002
    return Tensor(numpy_dtype(out_type).type(as_tensor(input)._value.size))


def rank(input, name=None):  # noqa: A002
    return Tensor(np.int32(as_tensor(input)._value.ndim))
