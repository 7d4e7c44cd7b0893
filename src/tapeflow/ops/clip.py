"""Clipping by value and by norm, built from differentiable ops (as TensorFlow's are)."""
from ..core.symbolic_dispatch import dispatches_symbols
from ._util import as_tensor
from .arithmetic import add_n, maximum, minimum
from .creation import ones_like
from .elementwise import sqrt
from .reduce import reduce_sum
from .shape import where

__all__ = ["clip_by_value", "clip_by_norm", "clip_by_global_norm", "global_norm"]


@dispatches_symbols("clip_by_value")
def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Elementwise clamp; the gradient passes where ``t`` is inside the range."""
    t = as_tensor(t)
    return minimum(maximum(t, clip_value_min), clip_value_max)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Rescale ``t`` so its L2 norm over ``axes`` is at most ``clip_norm``."""
    t = as_tensor(t)
    l2sum = reduce_sum(t * t, axis=axes, keepdims=True)
    positive = l2sum > 0
    # sqrt only where the sum is positive, so a zero tensor has a zero (not nan) gradient
    l2norm = where(positive, sqrt(where(positive, l2sum, ones_like(l2sum))), l2sum)
    return t * clip_norm / maximum(l2norm, clip_norm)


def global_norm(t_list, name=None):
    parts = [reduce_sum(as_tensor(t) * t) for t in t_list if t is not None]
    return sqrt(add_n(parts))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scale all tensors by clip_norm / max(global_norm, clip_norm); returns (list, norm)."""
    norm = global_norm(t_list) if use_norm is None else as_tensor(use_norm)
    scale = clip_norm / maximum(norm, clip_norm)
    return [None if t is None else as_tensor(t) * scale for t in t_list], norm
