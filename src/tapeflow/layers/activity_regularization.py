"""``ActivityRegularization``: Keras's layer that adds an L1/L2 penalty on its input to the loss."""
from .. import regularizers
from .base import Layer

__all__ = ["ActivityRegularization"]


class ActivityRegularization(Layer):
    """Passes its input through and adds ``l1 * sum|x| + l2 * sum x^2`` (divided by the batch
    size, as every activity regularizer's penalty) to the layer's ``losses``."""

    supports_masking = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        kwargs.pop("activity_regularizer", None)  # made from l1 and l2
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = float(l1), float(l2)
        self.built = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        return {**config, "l1": self.l1, "l2": self.l2}
