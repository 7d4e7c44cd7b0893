"""``keras.activations``: each activation by its Keras name, the very function
``activation="relu"`` resolves to (``tapeflow.activations.get("relu")``), and ``get``,
``serialize``, ``deserialize``."""
from ..activations import deserialize, get, hard_silu, hard_sigmoid, linear, serialize
from ..activations import hard_silu as hard_swish
from ..ops.elementwise import elu, leaky_relu, relu, relu6, selu, sigmoid, softplus, softsign, tanh
from ..ops.elementwise import exp as exponential
from ..ops.nn import gelu, log_softmax, silu, softmax
from ..ops.nn import silu as swish

__all__ = [
    "get", "serialize", "deserialize", "linear", "relu", "relu6", "sigmoid", "tanh", "elu",
    "selu", "softplus", "softsign", "softmax", "log_softmax", "gelu", "silu", "swish",
    "leaky_relu", "exponential", "hard_sigmoid", "hard_silu", "hard_swish",
]
