"""Activation functions by name, as Keras's ``activation="relu"``.

``get`` takes a name ("relu", "leaky_relu" or "LeakyReLU") or a function, by the
rules of ``tapeflow.serialization``; None gives ``linear``.  Activations have no
classes, so a config names one by its name.
"""
from .core.tensor import convert_to_tensor
from .ops import elementwise, nn
from .serialization import Registry

__all__ = ["get", "serialize", "deserialize", "linear", "hard_sigmoid", "hard_silu"]


def linear(x):
    return x


def hard_sigmoid(x):
    """Keras 3's piecewise-linear sigmoid: ``relu6(x + 3) / 6`` (0 below -3, 1 above 3).
    (Keras 2's was ``clip(0.2 * x + 0.5, 0, 1)``.)  Its gradient is relu6's."""
    return elementwise.relu6(convert_to_tensor(x) + 3.0) / 6.0


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (Keras 3's hard_silu, also named hard_swish)."""
    x = convert_to_tensor(x)
    return x * hard_sigmoid(x)


REGISTRY = Registry("activation", {
    "linear": linear, "relu": elementwise.relu, "relu6": elementwise.relu6,
    "sigmoid": elementwise.sigmoid, "tanh": elementwise.tanh, "elu": elementwise.elu,
    "selu": elementwise.selu, "softplus": elementwise.softplus, "softsign": elementwise.softsign,
    "softmax": nn.softmax, "log_softmax": nn.log_softmax, "gelu": nn.gelu, "silu": nn.silu,
    "swish": nn.silu, "leaky_relu": elementwise.leaky_relu, "exponential": elementwise.exp,
    "hard_sigmoid": hard_sigmoid, "hard_silu": hard_silu, "hard_swish": hard_silu,
}, none=linear)
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
