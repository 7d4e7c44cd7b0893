"""ONNX converters for the ops that move elements rather than compute them: reshapes,
transposes, tiling, concatenation, gathers, unstacking, reversal and static slicing
(``x[..., None, 1:3]``).  Same contract as ``onnx_ops``: ``convert(emit, eqn, inputs)`` returns
the output names."""
import numpy as np

__all__ = ["ARRAY_CONVERTERS"]

_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def _int64(values):
    return np.array(values, dtype=np.int64)


def convert_reshape(emit, eqn, inputs):
    return [emit.node("Reshape", [inputs[0], emit.constant(_int64(eqn.attrs["shape"]))])]


def convert_transpose(emit, eqn, inputs):
    return [emit.node("Transpose", inputs, perm=[int(p) for p in eqn.attrs["perm"]])]


def convert_tile(emit, eqn, inputs):
    return [emit.node("Tile", [inputs[0], emit.constant(_int64(eqn.attrs["multiples"]))])]


def convert_concat(emit, eqn, inputs):
    return [emit.node("Concat", inputs, axis=int(eqn.attrs["axis"]))]


def convert_gather(emit, eqn, inputs):
    if eqn.attrs.get("batch_dims", 0):
        raise emit.refuse(eqn, "a gather with batch_dims is not exported")
    return [emit.node("Gather", inputs, axis=int(eqn.attrs.get("axis", 0)))]


def convert_unpack(emit, eqn, inputs):
    """tf.unstack: ONNX Split into ``num`` equal parts (opset 13-17 infers the sizes from the
    outputs' count), each squeezed on the split axis."""
    axis = int(eqn.attrs["axis"])
    parts = emit.node("Split", inputs, outputs=int(eqn.attrs["num"]), axis=axis)
    axes = emit.constant(_int64([axis]))
    return [emit.node("Squeeze", [part, axes]) for part in parts]


def convert_pack(emit, eqn, inputs):
    axis = int(eqn.attrs["axis"])
    axes = emit.constant(_int64([axis]))
    return [emit.node("Concat", [emit.node("Unsqueeze", [x, axes]) for x in inputs], axis=axis)]


def convert_expand_dims(emit, eqn, inputs):
    axis = int(eqn.attrs["axis"])
    return [emit.node("Unsqueeze", [inputs[0], emit.constant(_int64([axis]))])]


def convert_squeeze(emit, eqn, inputs):
    axes = eqn.attrs.get("axis", eqn.attrs.get("axes"))
    if axes is None:
        return [emit.node("Squeeze", inputs)]
    axes = [axes] if isinstance(axes, int) else list(axes)
    return [emit.node("Squeeze", [inputs[0], emit.constant(_int64(axes))])]


def convert_reverse(emit, eqn, inputs):
    """ReverseV2: a Slice with step -1 on each axis (ONNX has no Reverse op)."""
    axes = [int(a) for a in eqn.attrs["axes"]]
    n = len(axes)
    return [emit.node("Slice", [inputs[0], emit.constant(_int64([-1] * n)),
                                emit.constant(_int64([_INT64_MIN] * n)),
                                emit.constant(_int64(axes)), emit.constant(_int64([-1] * n))])]


def convert_strided_slice(emit, eqn, inputs):
    """``x[index]`` for a static index of ints, slices, ``None`` and one ``...``: a Slice on
    the sliced axes, a Squeeze of the integer-indexed ones, an Unsqueeze for each ``None``."""
    index = eqn.attrs["index"]
    if eqn.attrs.get("nb", 0) or len(inputs) != 1:
        raise emit.refuse(eqn, "an index holding tensors is not exported")
    rank = len(emit.shape_of(eqn.inputs[0]))
    index = index if isinstance(index, tuple) else (index,)
    named = sum(1 for i in index if i is not None and i is not Ellipsis)
    if any(i is Ellipsis for i in index):
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (rank - named) + index[at + 1:]
    else:
        index = index + (slice(None),) * (rank - named)
    starts, ends, axes, steps, squeezed, inserted = [], [], [], [], [], []
    axis = out = 0
    for item in index:
        if item is None:
            inserted.append(out)
            out += 1
            continue
        if isinstance(item, slice):
            step = 1 if item.step is None else int(item.step)
            if item != slice(None):
                start = item.start if item.start is not None else (0 if step > 0 else _INT64_MAX)
                stop = item.stop if item.stop is not None else \
                    (_INT64_MAX if step > 0 else _INT64_MIN)
                starts.append(int(start)), ends.append(int(stop)), axes.append(axis)
                steps.append(step)
            out += 1
        elif isinstance(item, (int, np.integer)):
            item = int(item)
            starts.append(item), ends.append(item + 1 if item != -1 else _INT64_MAX)
            axes.append(axis), steps.append(1)
            squeezed.append(axis)
        else:
            raise emit.refuse(eqn, f"an index element {item!r} is not exported")
        axis += 1
    x = inputs[0]
    if axes:
        x = emit.node("Slice", [x, emit.constant(_int64(starts)), emit.constant(_int64(ends)),
                                emit.constant(_int64(axes)), emit.constant(_int64(steps))])
    if squeezed:
        x = emit.node("Squeeze", [x, emit.constant(_int64(squeezed))])
    if inserted:
        x = emit.node("Unsqueeze", [x, emit.constant(_int64(inserted))])
    if x is inputs[0]:
        x = emit.node("Identity", [x])
    return [x]


ARRAY_CONVERTERS = {
    "Reshape": convert_reshape, "Transpose": convert_transpose, "Tile": convert_tile,
    "ConcatV2": convert_concat, "GatherV2": convert_gather, "Unpack": convert_unpack,
    "Pack": convert_pack, "ExpandDims": convert_expand_dims, "Squeeze": convert_squeeze,
    "ReverseV2": convert_reverse, "StridedSlice": convert_strided_slice,
}
