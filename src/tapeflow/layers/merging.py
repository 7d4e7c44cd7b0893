"""Merging layers, Keras's: ``Concatenate``, ``Add``, ``Subtract``, ``Multiply``, ``Average``,
``Maximum``, ``Minimum`` and ``Dot``, each called on a list of tensors.

The elementwise merges take inputs of one shape, or shapes that broadcast
(sizes equal or 1, the batch axis included); ``Subtract`` and ``Dot`` take
exactly two.  Shapes are checked when the layer is built (on its first call,
symbolic or not) and on every call, with one error naming the shapes.  The
lower-case functions (``concatenate([a, b])``, ``add``...) make the layer and
call it, as Keras's.  Inputs' Keras masks combine as Keras 3's do (``merging_masks.py``).
"""
import functools
import math

from ..ops import arithmetic
from ..ops.nn import l2_normalize
from ..ops.shape import concat, reshape, transpose
from .base import Layer
from .merging_masks import (
    checked_masks, concatenated_mask, elementwise_mask, masked_extremum, masked_product, masks_of,
)

__all__ = ["Concatenate", "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Dot",
           "concatenate", "add", "subtract", "multiply", "average", "maximum", "minimum", "dot"]


def _shapes(layer, inputs_or_shapes, count=None):
    """The list of input shapes (tuples), refused unless it is a list of ``count`` (or >= 1)."""
    value = inputs_or_shapes
    if not isinstance(value, (list, tuple)) or not value or \
            not all(isinstance(s, (list, tuple)) or hasattr(s, "shape") for s in value) or \
            all(isinstance(d, int) or d is None for d in value):
        raise ValueError(f"{layer.name}: {type(layer).__name__} is called on a list of tensors "
                         f"({'two' if count == 2 else 'one or more'}), e.g. "
                         f"{type(layer).__name__}()([a, b]); got {_describe(value)}")
    shapes = [tuple(s.shape) if hasattr(s, "shape") else tuple(s) for s in value]
    if count is not None and len(shapes) != count:
        raise ValueError(f"{layer.name}: {type(layer).__name__} takes exactly {count} inputs, "
                         f"got {len(shapes)}")
    return shapes


def _describe(value):
    if hasattr(value, "shape"):
        return f"one tensor of shape {tuple(value.shape)}"
    if isinstance(value, tuple) and all(isinstance(d, int) or d is None for d in value):
        return f"one tensor of shape {value}"
    return type(value).__name__


def _sum(xs):
    """add_n where the shapes agree, else broadcasting adds."""
    if len({tuple(x.shape) for x in xs}) == 1:
        return arithmetic.add_n(xs)
    return functools.reduce(arithmetic.add, xs)


def _broadcast(layer, shapes):
    """The elementwise result's shape; an error where two sizes are neither equal nor 1."""
    rank = max(len(s) for s in shapes)
    out = []
    for axis in range(-rank, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        known = sizes - {None}
        if len(known) > 1:
            raise ValueError(f"{layer.name}: {type(layer).__name__} needs inputs of one shape "
                             f"(or sizes of 1 that broadcast); got shapes "
                             f"{', '.join(map(str, shapes))}")
        out.append(known.pop() if known else (None if None in sizes else 1))
    return tuple(out)


class _Elementwise(Layer):
    """A merge of one or more tensors, element by element (``_merge`` of the list)."""

    _count = None

    def build(self, input_shape):
        _broadcast(self, _shapes(self, input_shape, self._count))
        self.built = True

    def call(self, inputs):
        _broadcast(self, _shapes(self, inputs, self._count))
        masks = masks_of(inputs)
        if masks is None:
            return self._merge(list(inputs))
        return _masked(self._merge_masked(list(inputs), masks), inputs,
                       elementwise_mask(masks))

    def _merge_masked(self, xs, masks):
        """The merge of inputs some of which carry masks (most merges ignore them)."""
        return self._merge(xs)

    def compute_mask(self, inputs, mask=None):
        return elementwise_mask(checked_masks(self, inputs, mask))

    def compute_output_shape(self, input_shape):
        return _broadcast(self, _shapes(self, input_shape, self._count))


def _masked(output, inputs, mask):
    """``output`` carrying ``mask`` (not when it is one of the inputs, whose mask stays)."""
    if mask is not None and not any(output is x for x in inputs):
        output._keras_mask = mask
    return output


class Add(_Elementwise):
    """The sum of the inputs."""

    def _merge(self, xs):
        return _sum(xs)


class Subtract(_Elementwise):
    """``inputs[0] - inputs[1]``."""

    _count = 2

    def _merge(self, xs):
        return arithmetic.subtract(xs[0], xs[1])


class Multiply(_Elementwise):
    """The product of the inputs."""

    def _merge(self, xs):
        return functools.reduce(arithmetic.multiply, xs)

    def _merge_masked(self, xs, masks):
        return masked_product(xs, masks)


class Average(_Elementwise):
    """The mean of the inputs."""

    def _merge(self, xs):
        return _sum(xs) * (1.0 / len(xs))


class Maximum(_Elementwise):
    """The elementwise maximum of the inputs."""

    def _merge(self, xs):
        return functools.reduce(arithmetic.maximum, xs)

    def _merge_masked(self, xs, masks):
        return masked_extremum(arithmetic.maximum, xs, masks)


class Minimum(_Elementwise):
    """The elementwise minimum of the inputs."""

    def _merge(self, xs):
        return functools.reduce(arithmetic.minimum, xs)

    def _merge_masked(self, xs, masks):
        return masked_extremum(arithmetic.minimum, xs, masks)


class Concatenate(Layer):
    """The inputs joined along ``axis``; every other size must agree."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"Concatenate: axis must be an integer, got {axis!r}")
        self.axis = axis

    def build(self, input_shape):
        self.compute_output_shape(input_shape)
        self.built = True

    def call(self, inputs):
        self.compute_output_shape(inputs)
        output = concat(list(inputs), axis=self.axis)
        masks = masks_of(inputs)
        return output if masks is None else \
            _masked(output, inputs, concatenated_mask(inputs, masks, self.axis))

    def compute_mask(self, inputs, mask=None):
        masks = checked_masks(self, inputs, mask)
        return None if masks is None else concatenated_mask(inputs, masks, self.axis)

    def compute_output_shape(self, input_shape):
        shapes = _shapes(self, input_shape)
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes) or not -rank <= self.axis < rank:
            raise ValueError(f"{self.name}: Concatenate(axis={self.axis}) needs inputs of one "
                             f"rank with that axis; got shapes {', '.join(map(str, shapes))}")
        axis = self.axis % rank
        out = []
        for i in range(rank):
            sizes = [s[i] for s in shapes]
            if i == axis:
                out.append(None if None in sizes else sum(sizes))
                continue
            known = set(sizes) - {None}
            if len(known) > 1:
                raise ValueError(f"{self.name}: Concatenate(axis={self.axis}) needs the inputs' "
                                 f"sizes to agree on every other axis; got shapes "
                                 f"{', '.join(map(str, shapes))}")
            out.append(known.pop() if known else None)
        return tuple(out)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Dot(Layer):
    """The dot product of two batches of tensors over ``axes`` (Keras's ``batch_dot``): for
    ``(batch, n)`` and ``(batch, n)`` with ``axes=1``, ``(batch, 1)``; ``normalize=True`` takes
    the cosine (each input L2-normalized over its axis first)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        pair = axes if isinstance(axes, (list, tuple)) else (axes, axes)
        if len(pair) != 2 or not all(isinstance(a, int) and not isinstance(a, bool)
                                     for a in pair):
            raise ValueError(f"Dot: axes must be an integer or a pair of integers, got {axes!r}")
        self.axes = axes if isinstance(axes, int) else tuple(axes)
        self.normalize = bool(normalize)

    def _axes(self, shapes):
        pair = self.axes if isinstance(self.axes, tuple) else (self.axes, self.axes)
        out = []
        for a, s in zip(pair, shapes):
            if len(s) < 2 or not -len(s) < a < len(s) or a % len(s) == 0:
                raise ValueError(f"{self.name}: Dot(axes={self.axes}) needs axes after the "
                                 f"batch axis of inputs with one; got shapes {shapes[0]}, "
                                 f"{shapes[1]}")
            out.append(a % len(s))
        a, b = out
        if shapes[0][a] is not None and shapes[1][b] is not None and shapes[0][a] != shapes[1][b]:
            raise ValueError(f"{self.name}: Dot(axes={self.axes}) multiplies axis {a} of "
                             f"{shapes[0]} with axis {b} of {shapes[1]}: their sizes differ")
        return a, b

    def build(self, input_shape):
        self._axes(_shapes(self, input_shape, 2))
        self.built = True

    def call(self, inputs):
        shapes = _shapes(self, inputs, 2)
        a, b = self._axes(shapes)
        x, y = inputs
        if self.normalize:
            x, y = l2_normalize(x, axis=a), l2_normalize(y, axis=b)
        # x with its summed axis last, y with it first after the batch: one batched matmul
        x = transpose(x, [i for i in range(x.ndim) if i != a] + [a])
        y = transpose(y, [0, b] + [i for i in range(1, y.ndim) if i != b])
        x_rest, y_rest = tuple(x.shape[1:-1]), tuple(y.shape[2:])
        z = reshape(x, (-1, math.prod(x_rest), x.shape[-1])) @ \
            reshape(y, (-1, y.shape[1], math.prod(y_rest)))
        return reshape(z, (-1,) + (x_rest + y_rest or (1,)))

    def compute_output_shape(self, input_shape):
        shapes = _shapes(self, input_shape, 2)
        a, b = self._axes(shapes)
        rest = tuple(d for i, d in enumerate(shapes[0]) if i not in (0, a)) + \
            tuple(d for i, d in enumerate(shapes[1]) if i not in (0, b))
        return (shapes[0][0],) + (rest or (1,))

    def get_config(self):
        axes = self.axes if isinstance(self.axes, int) else list(self.axes)
        return {**super().get_config(), "axes": axes, "normalize": self.normalize}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("axes"), list):
            config["axes"] = tuple(config["axes"])
        return cls(**config)


# --- Keras's functional forms: make the layer and call it ---------------------------------------
def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def dot(inputs, axes, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
