"""Reshape, Permute and RepeatVector: Keras 3's layers that move values without computing."""
import math

from ..ops.shape import reshape, tile, transpose
from .base import Layer

__all__ = ["Reshape", "Permute", "RepeatVector"]


class Reshape(Layer):
    """Each example to ``target_shape`` (one entry may be -1, as in Keras)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or any(
                d == 0 or d < -1 for d in self.target_shape):
            raise ValueError(f"Reshape: target_shape {self.target_shape} may hold one -1 and "
                             f"otherwise positive sizes")

    def _resolved(self, example_shape):
        size = math.prod(example_shape)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if size % known:
                raise ValueError(f"{self.name}: cannot reshape examples of shape "
                                 f"{tuple(example_shape)} to {self.target_shape}")
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if known != size:
            raise ValueError(f"{self.name}: examples of shape {tuple(example_shape)} ({size} "
                             f"values) cannot take the shape {self.target_shape}")
        return self.target_shape

    def call(self, inputs):
        # -1 for the batch: a traced call then fits any batch size (a saved model too)
        return reshape(inputs, (-1,) + self._resolved(tuple(inputs.shape[1:])))

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        if None in rest:
            return (input_shape[0],) + tuple(None if d == -1 else d for d in self.target_shape)
        return (input_shape[0],) + self._resolved(rest)

    def get_config(self):
        return {**super().get_config(), "target_shape": list(self.target_shape)}


class Permute(Layer):
    """The example axes in the order ``dims`` (1-based: the batch axis stays first)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute: dims must be a permutation of 1..{len(self.dims)}, "
                             f"got {self.dims}")

    def call(self, inputs):
        return transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": list(self.dims)}


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features)."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = int(n)

    def call(self, inputs):
        if inputs.ndim != 2:
            raise ValueError(f"{self.name}: expects (batch, features), got shape "
                             f"{tuple(inputs.shape)}")
        return tile(inputs[:, None, :], (1, self.n, 1))  # indexing keeps the batch size free

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}
