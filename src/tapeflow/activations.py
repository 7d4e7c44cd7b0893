"""Activation functions by name, as Keras's ``activation="relu"``.

``get`` takes a name ("relu", "leaky_relu" or "LeakyReLU") or a function, by the
rules of ``tapeflow.serialization``; None gives ``linear``.  Activations have no
classes, so a config names one by its name.
"""
from .ops import elementwise, nn
from .serialization import Registry

__all__ = ["get", "serialize", "deserialize", "linear"]


def linear(x):
    return x


REGISTRY = Registry("activation", {
    "linear": linear, "relu": elementwise.relu, "relu6": elementwise.relu6,
    "sigmoid": elementwise.sigmoid, "tanh": elementwise.tanh, "elu": elementwise.elu,
    "selu": elementwise.selu, "softplus": elementwise.softplus, "softsign": elementwise.softsign,
    "softmax": nn.softmax, "log_softmax": nn.log_softmax, "gelu": nn.gelu, "silu": nn.silu,
    "swish": nn.silu, "leaky_relu": elementwise.leaky_relu, "exponential": elementwise.exp,
}, none=linear)
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
