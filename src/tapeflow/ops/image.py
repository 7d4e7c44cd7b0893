"""Image ops.  ``adjust_contrast`` is registered with no gradient, as in TensorFlow,
so differentiating through it raises LookupError (the seed's example)."""
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ._util import as_tensor, binary_operands

__all__ = ["adjust_contrast"]


def _adjust_contrast_forward(images, contrast_factor):
    mean = images.mean(axis=(-3, -2), keepdims=True, dtype=images.dtype)
    return ((images - mean) * contrast_factor + mean).astype(images.dtype)


ADJUST_CONTRAST = def_primitive("AdjustContrastv2", _adjust_contrast_forward,
                                no_gradient="TensorFlow registers none either")


def adjust_contrast(images, contrast_factor):
    """(x - mean) * contrast_factor + mean, the mean taken per channel over height and width."""
    images = as_tensor(images)
    if images._value.ndim < 3:
        raise ValueError(f"adjust_contrast needs images of rank >= 3 ([..., height, width, "
                         f"channels]), got shape {tuple(images._value.shape)}")
    images, factor = binary_operands("adjust_contrast", images, contrast_factor)
    return apply(ADJUST_CONTRAST, (images, factor))
