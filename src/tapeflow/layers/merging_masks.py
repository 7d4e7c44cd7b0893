"""Keras 3's mask rules for the merging layers (``keras/src/layers/merging``).

A merge's inputs may each carry a Keras mask (one bool per timestep).  The elementwise
merges' output is masked where *any* input is kept (an OR), and only when every input has a
mask; ``Concatenate`` treats an input without one as all kept and joins the masks along its
axis.  ``Multiply``, ``Maximum`` and ``Minimum`` also compute their values from the kept
entries only (a masked entry does not take part), as Keras's do.
"""
import functools

from ..ops.arithmetic import logical_or
from ..ops.creation import ones_like, zeros_like
from ..ops.reduce import reduce_any
from ..ops.shape import broadcast_to, concat, expand_dims, where

__all__ = ["masks_of", "checked_masks", "elementwise_mask", "concatenated_mask",
           "masked_product", "masked_extremum"]


def masks_of(inputs):
    """Each input's Keras mask (None where it has none), or None if none has one."""
    masks = [getattr(x, "_keras_mask", None) for x in inputs]
    return None if all(m is None for m in masks) else masks


def checked_masks(layer, inputs, mask):
    """``compute_mask``'s arguments, refused as Keras refuses them; None: no output mask."""
    if mask is None:
        return None
    if not isinstance(mask, (list, tuple)):
        raise ValueError(f"{layer.name}: `mask` should be a list. Received: mask={mask!r}")
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(f"{layer.name}: `inputs` should be a list. Received: inputs={inputs!r}")
    if len(mask) != len(inputs):
        raise ValueError(f"{layer.name}: The lists `inputs` and `mask` should have the same "
                         f"length, got {len(inputs)} inputs and {len(mask)} masks")
    return None if all(m is None for m in mask) else list(mask)


def elementwise_mask(masks):
    """The OR of the masks, when every input has one (Keras's Merge.compute_mask)."""
    if masks is None or any(m is None for m in masks):
        return None
    return functools.reduce(logical_or, masks)


def concatenated_mask(inputs, masks, axis):
    """Keras's Concatenate.compute_mask: the masks (all-True for an input without one) spread
    over each input's features, joined along ``axis``, kept where any feature is."""
    spread = []
    for x, m in zip(inputs, masks):
        if m is None:
            spread.append(ones_like(x, dtype="bool"))
        elif m.ndim < x.ndim:
            spread.append(logical_or(expand_dims(m, -1), zeros_like(x, dtype="bool")))
        else:
            spread.append(m)
    return reduce_any(concat(spread, axis=axis), axis=-1)


def _spread(mask, x):
    return broadcast_to(expand_dims(mask, -1), tuple(x.shape))


def masked_product(xs, masks):
    """Keras's Multiply with masks: a masked entry counts as 1; with every input masked, the
    entries no input keeps are 0."""
    every = all(m is not None for m in masks)
    output = kept = None
    for x, m in zip(xs, masks):
        if m is not None:
            m = _spread(m, x)
            x = where(m, x, ones_like(x))
            kept = m if kept is None else logical_or(kept, m)
        output = x if output is None else output * x
    return where(kept, output, zeros_like(output)) if every else output


def masked_extremum(op, xs, masks):
    """Keras's ``_apply_merge_op_and_or_mask`` for Maximum and Minimum: a masked entry takes
    the other operand's value, so it never wins."""
    output, kept = xs[0], None if masks[0] is None else _spread(masks[0], xs[0])
    for x, m in zip(xs[1:], masks[1:]):
        m = None if m is None else _spread(m, x)
        if m is not None:
            x = where(m, x, output)
        if kept is not None:
            output = where(kept, output, x)
        kept = logical_or(kept, m) if m is not None and kept is not None else None
        output = op(output, x)
    return output
