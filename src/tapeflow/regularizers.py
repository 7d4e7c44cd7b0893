"""Weight regularizers (L1, L2), as Keras's ``kernel_regularizer="l2"``.

``InputGradient`` (a penalty on the loss's gradient with respect to the
model's input) lives in ``input_gradient.py`` and is re-exported here.

``get`` takes a name ("l2", "L1L2"), a regularizer or its class, a config dict or a
function ``fn(weights)``, by the rules of ``tapeflow.serialization``; None gives None.
"""
from .input_gradient import InputGradient  # noqa: F401 - tf.regularizers.InputGradient
from .ops.reduce import reduce_sum
from .serialization import Registry

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "InputGradient", "get",
           "serialize", "deserialize"]


class Regularizer:
    def __call__(self, x):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1(Regularizer):
    def __init__(self, l1=0.01):
        self.l1 = float(l1)

    def __call__(self, x):
        return self.l1 * reduce_sum(abs(x))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    def __init__(self, l2=0.01):
        self.l2 = float(l2)

    def __call__(self, x):
        return self.l2 * reduce_sum(x * x)

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        return self.l1 * reduce_sum(abs(x)) + self.l2 * reduce_sum(x * x)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


# Keras 3's lowercase names are the classes themselves (keras.regularizers.l2 is L2), so
# ``l2(1e-4)`` is an L2, and its config names it as one.  (Keras 2's function l1_l2 defaulted
# both factors to 0.01; Keras 3's, as L1L2's, to 0.)
l1, l2, l1_l2 = L1, L2, L1L2

# Keras's names; "L1", "L1L2", "l1l2" ... are the same names folded (tapeflow.serialization).
REGISTRY = Registry("regularizer", {"l1": L1, "l2": L2, "l1_l2": L1L2}, base=Regularizer)
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
