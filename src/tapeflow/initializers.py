"""Weight initializers, as Keras's (``"glorot_uniform"``, ``HeNormal(seed=1)`` ...).

Initial values are born on the current device (``tf.device``).  Draws come from ``tapeflow.random``, so ``tf.random.set_seed`` makes model
initialization reproducible; a ``seed`` gives an initializer its own stream.

``get`` takes a name ("he_normal" or "HeNormal"), an initializer or its class, a
config dict or a function ``fn(shape, dtype)``, by the rules of
``tapeflow.serialization``; None gives None.
"""
import math

import numpy as np

from . import backend, random
from .core.tensor import Tensor
from .dtypes import numpy_dtype
from .serialization import Registry

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "RandomUniform",
           "TruncatedNormal", "GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal",
           "LecunNormal", "LecunUniform", "Orthogonal", "get", "serialize", "deserialize"]


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def __call__(self, shape, dtype="float32"):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Zeros(Initializer):
    def __call__(self, shape, dtype="float32"):
        return Tensor(backend.device_module().zeros(tuple(shape), numpy_dtype(dtype)))


class Ones(Initializer):
    def __call__(self, shape, dtype="float32"):
        return Tensor(backend.device_module().ones(tuple(shape), numpy_dtype(dtype)))


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype="float32"):
        value = np.asarray(backend.to_host(self.value))  # a host scalar (or array): moved once
        return Tensor(backend.to_device(np.full(tuple(shape), value, numpy_dtype(dtype))))

    def get_config(self):
        return {"value": self.value}


class _Random(Initializer):
    def __init__(self, seed=None):
        self.seed = seed

    def get_config(self):
        return {"seed": self.seed}


class RandomNormal(_Random):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype="float32"):
        return random.normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(_Random):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype="float32"):
        return random.uniform(shape, self.minval, self.maxval, dtype=dtype, seed=self.seed)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    def __call__(self, shape, dtype="float32"):
        return random.truncated_normal(shape, self.mean, self.stddev, dtype=dtype, seed=self.seed)


class _VarianceScaling(_Random):
    """Keras's variance scaling: ``scale / fan`` as the variance of the draws."""

    scale = 1.0
    mode = "fan_in"
    distribution = "truncated_normal"

    def __call__(self, shape, dtype="float32"):
        fan_in, fan_out = _fans(tuple(shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, fan)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return random.uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)
        if self.distribution == "normal":
            return random.normal(shape, 0.0, math.sqrt(variance), dtype=dtype, seed=self.seed)
        # truncated at two standard deviations; 0.879... restores the variance
        stddev = math.sqrt(variance) / 0.87962566103423978
        return random.truncated_normal(shape, 0.0, stddev, dtype=dtype, seed=self.seed)


class GlorotUniform(_VarianceScaling):
    mode, distribution = "fan_avg", "uniform"


class GlorotNormal(_VarianceScaling):
    mode = "fan_avg"


class HeUniform(_VarianceScaling):
    scale, distribution = 2.0, "uniform"


class HeNormal(_VarianceScaling):
    scale = 2.0


class LecunNormal(_VarianceScaling):
    pass


class LecunUniform(_VarianceScaling):
    distribution = "uniform"


class Orthogonal(_Random):
    """Keras's: ``gain`` times a random orthogonal matrix (QR of normal draws, signs fixed by R's
    diagonal) of shape ``(prod(shape[:-1]), shape[-1])``; recurrent kernels start with it."""

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype="float32"):
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank 2 or more, got {shape}")
        rows, cols = int(np.prod(shape[:-1])), shape[-1]
        draws = random.normal((max(rows, cols), min(rows, cols)), dtype="float64",
                              seed=self.seed).numpy()
        q, r = np.linalg.qr(draws)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        # the QR is made on the host, as the draws (tapeflow.random); the result moves once
        return Tensor(backend.to_device((self.gain * q).reshape(shape).astype(numpy_dtype(dtype))))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed}


# Keras's names; "HeNormal", "GlorotUniform" ... are the same names folded (tapeflow.serialization).
REGISTRY = Registry("initializer", {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "truncated_normal": TruncatedNormal,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal, "he_uniform": HeUniform,
    "he_normal": HeNormal, "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform,
    "orthogonal": Orthogonal, "uniform": RandomUniform, "normal": RandomNormal,
}, base=Initializer)
get, serialize, deserialize = REGISTRY.get, REGISTRY.serialize, REGISTRY.deserialize
