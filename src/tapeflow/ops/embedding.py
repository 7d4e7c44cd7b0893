"""``nn.embedding_lookup``: rows of an embedding table, as a gather on axis 0.

The ids are an input of the gather (``GatherV2``), so a traced graph looks up
the ids it is called with.  The gradient is the gather's (``ScatterAdd``): each
looked-up row's cotangent is added back into its row of the table, repeated ids
adding up.
"""
import numpy as np

from .. import backend
from ..core.tensor import Tensor, convert_to_tensor
from ._util import as_tensor
from .clip import clip_by_norm
from .shape import concat, gather

__all__ = ["embedding_lookup"]


def embedding_lookup(params, ids, max_norm=None, name=None):
    """``params[ids]`` for integer ``ids`` of any shape: the result has shape
    ``ids.shape + params.shape[1:]``.

    ``params`` may be a list of tables sharded by TensorFlow's 'div' strategy
    (consecutive id ranges), which is the table the shards concatenate to.  With
    ``max_norm``, rows whose L2 norm is above it are scaled down to it.
    """
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup: params must not be empty")
        params = concat([as_tensor(p) for p in params], axis=0) if len(params) > 1 \
            else as_tensor(params[0])
    params = as_tensor(params)
    ids = ids if isinstance(ids, Tensor) else convert_to_tensor(np.asarray(ids))
    if ids._value.dtype.kind not in "iu":
        raise TypeError(f"embedding_lookup: ids must be integers, not {ids._value.dtype.name}")
    rows = params._value.shape[0] if params._value.ndim else 0
    value = ids._value
    if backend.is_array(value) and value.size:  # known ids (not traced): name the bad one here
        low, high = int(value.min()), int(value.max())
        if low < 0 or high >= rows:
            raise ValueError(f"embedding_lookup: id {low if low < 0 else high} is not in "
                             f"[0, {rows})")
    out = gather(params, ids)
    if max_norm is not None:
        axes = list(range(value.ndim, out._value.ndim))
        out = clip_by_norm(out, max_norm, axes=axes)
    return out
