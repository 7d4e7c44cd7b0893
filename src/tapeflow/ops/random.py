"""Seedable random tensors, as ``tf.random``.

``set_seed(s)`` makes every later draw reproducible; an op-level ``seed``
alongside it gives that op its own reproducible stream.  Draws are made on
the host by numpy's generator (so a seed gives the same numbers on every device) and moved
once to the current device, or to the device of the tensor ``like`` they take their shape from;
they are plain (non-differentiable) tensors.  The exception is a float ``uniform_like`` of a
tensor on a GPU (dropout's mask, drawn at every step): there the numbers are made on the device
by Philox (``ops/philox.py``) from a key the host's generator draws, reproducible with the same
seed but not the numbers the CPU draws.

``normal``, ``uniform``, ``truncated_normal`` and ``shuffle`` are stateful
primitives (``RandomStandardNormal``, ``RandomUniform``, ``TruncatedNormal``,
``RandomShuffle``, and ``Multinomial`` for ``categorical``) run through ``apply``: each
run draws from the context's random state at that moment, so a traced graph draws new
numbers at every call (never a constant baked at trace time) and, under the same ``set_seed``, the same sequence as the eager program.
An op given a tensor ``like`` instead of a shape (``dropout`` does) draws the
shape of that tensor when it runs, so a graph traced with it fits any batch size.
"""
import numpy as np

from .. import backend
from ..core.context import context, RandomState
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import Tensor, convert_to_tensor
from ..dtypes import numpy_dtype
from . import philox
from ._util import static_shape
from ..dtypes import is_float_dtype

__all__ = ["set_seed", "normal", "uniform", "truncated_normal", "shuffle", "Generator",
           "uniform_like", "categorical"]


def set_seed(seed):
    """Reset this thread's random state: the same seed gives the same sequence of draws."""
    context().random = RandomState(int(seed))


def snapshot_state():
    """The random state, to replay the same draws later (``restore_state``)."""
    return context().random.snapshot()


def restore_state(state):
    context().random.restore(state)


def _rng(seed):
    state = context().random
    if seed is None:
        return state.rng
    # An op seed gives a stream of its own; repeated calls with it move along that stream.
    key = (state.seed, int(seed))
    count = state.op_counts.get(key, 0)
    state.op_counts[key] = count + 1
    return np.random.default_rng([0 if key[0] is None else key[0], key[1], count])


# --- the kernels: one draw from the context's state per run ------------------------------------
def _draw_shape(like, shape):
    return like[0].shape if shape is None else shape


def _on_device(host, like):
    """Host draws moved to the device of ``like``'s tensor, or to the current device."""
    return backend.to_device(host, like[0] if like else None)


def _normal_kernel(*like, shape, mean, stddev, dtype, seed):
    return _on_device(_normal_array(_rng(seed), _draw_shape(like, shape), mean, stddev, dtype), like)


def _uniform_kernel(*like, shape, minval, maxval, dtype, seed):
    if like and is_float_dtype(dtype) and backend.array_module(like[0]) is not np:
        # drawn where the data are, not copied there at every step: a key from the host's state
        xp = backend.array_module(like[0])
        key = tuple(int(k) for k in _rng(seed).integers(0, 2 ** 32, size=2, dtype=np.uint64))
        unit = philox.uniform(xp, like[0].shape, key, dtype)
        return unit if (minval, maxval) == (0, 1) else \
            (unit * (maxval - minval) + minval).astype(dtype, copy=False)
    return _on_device(_uniform_array(_rng(seed), _draw_shape(like, shape), minval, maxval, dtype),
                      like)


def _shuffle_kernel(value, *, seed):
    """``value`` with its first axis in a random order."""
    return value[backend.to_device(_rng(seed).permutation(value.shape[0]), value)]


def _truncated_normal_kernel(*like, shape, mean, stddev, dtype, seed):
    """Normal draws, redrawn until within two standard deviations of the mean."""
    rng = _rng(seed)
    z = rng.standard_normal(_draw_shape(like, shape))
    bad = np.abs(z) > 2
    while bad.any():
        z[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(z) > 2
    return _on_device((z * stddev + mean).astype(dtype), like)


# Draws: nothing to differentiate (TensorFlow's too; for a shuffle, the order is a draw).
NORMAL = def_primitive("RandomStandardNormal", _normal_kernel, stateful=True,
                       not_differentiable=True)
UNIFORM = def_primitive("RandomUniform", _uniform_kernel, stateful=True,
                        not_differentiable=True)
TRUNCATED_NORMAL = def_primitive("TruncatedNormal", _truncated_normal_kernel, stateful=True,
                                 not_differentiable=True)
SHUFFLE = def_primitive("RandomShuffle", _shuffle_kernel, stateful=True,
                        not_differentiable=True)


def _normal_array(rng, shape, mean, stddev, dtype):
    return (rng.standard_normal(shape) * stddev + mean).astype(dtype)


def _uniform_array(rng, shape, minval, maxval, dtype):
    if dtype.kind in "iu":
        return rng.integers(minval, maxval, shape).astype(dtype)
    return rng.uniform(minval, maxval, shape).astype(dtype)


def _uniform_bounds(minval, maxval, dt):
    if dt.kind in "iu":
        if maxval is None:
            raise ValueError("uniform with an integer dtype needs maxval")
        return int(minval), int(maxval)
    return float(minval), 1.0 if maxval is None else float(maxval)


# --- the public functions ------------------------------------------------------------------------
def normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    return apply(NORMAL, (), {"shape": static_shape(shape), "mean": float(mean),
                              "stddev": float(stddev), "dtype": numpy_dtype(dtype), "seed": seed})


def uniform(shape, minval=0, maxval=None, dtype=np.float32, seed=None, name=None):
    dt = numpy_dtype(dtype)
    minval, maxval = _uniform_bounds(minval, maxval, dt)
    return apply(UNIFORM, (), {"shape": static_shape(shape), "minval": minval, "maxval": maxval,
                               "dtype": dt, "seed": seed})


def uniform_like(like, minval=0, maxval=None, dtype=np.float32, seed=None):
    """``uniform(like.shape, ...)`` with the shape taken when the op runs, not when it is
    traced: a graph that draws with it works for every batch size."""
    dt = numpy_dtype(dtype)
    minval, maxval = _uniform_bounds(minval, maxval, dt)
    return apply(UNIFORM, (like,), {"shape": None, "minval": minval, "maxval": maxval,
                                    "dtype": dt, "seed": seed})


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    """Normal draws, redrawn until within two standard deviations of the mean."""
    return apply(TRUNCATED_NORMAL, (), {"shape": static_shape(shape), "mean": float(mean),
                                        "stddev": float(stddev), "dtype": numpy_dtype(dtype),
                                        "seed": seed})


def shuffle(value, seed=None, name=None):
    """``value`` with its first axis in a random order (a new order at every run)."""
    return apply(SHUFFLE, (convert_to_tensor(value),), {"seed": seed})


class Generator:
    """An explicit random stream: ``tf.random.Generator.from_seed(1).normal([2, 3])``.

    Its draws are made eagerly, as data: inside a traced function they would be constants
    (the stream is not part of the context's random state that tracing gives back).
    """

    def __init__(self, seed=None):
        self._rng = np.random.default_rng(seed)

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(int(seed))

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=np.float32, name=None):
        return Tensor(backend.to_device(_normal_array(self._rng, static_shape(shape), float(mean),
                                                      float(stddev), numpy_dtype(dtype))))

    def uniform(self, shape, minval=0, maxval=None, dtype=np.float32, name=None):
        dt = numpy_dtype(dtype)
        minval, maxval = _uniform_bounds(minval, maxval, dt)
        return Tensor(backend.to_device(_uniform_array(self._rng, static_shape(shape), minval,
                                                       maxval, dt)))


# --- categorical: class indices drawn from logits ------------------------------------------------
def _categorical_kernel(logits, *, num_samples, dtype, seed):
    """[batch, num_samples] class indices, each drawn with probability softmax(logits row):
    the Gumbel-max trick (argmax of logits plus Gumbel noise), so a -inf logit is never drawn."""
    rng = _rng(seed)
    batch, classes = logits.shape
    gumbel = -np.log(-np.log(rng.uniform(np.finfo(np.float64).tiny, 1.0,
                                         (batch, num_samples, classes))))
    host = np.asarray(backend.to_host(logits), dtype=np.float64)  # drawn on the host, as the others
    return backend.to_device(np.argmax(host[:, None, :] + gumbel, axis=-1).astype(dtype), logits)


CATEGORICAL = def_primitive("Multinomial", _categorical_kernel, stateful=True,
                            not_differentiable=True)  # a draw of class indices


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """int64 [batch, num_samples]: class indices drawn from the unnormalised log-probabilities
    ``logits`` [batch, classes], as ``tf.random.categorical``; reproducible under ``set_seed``
    (and an op ``seed``), a new draw at every run of a traced graph."""
    logits = convert_to_tensor(logits)
    if logits._value.ndim != 2:
        raise ValueError(f"categorical: logits must be [batch, classes], got shape "
                         f"{tuple(logits._value.shape)}")
    if not is_float_dtype(logits._value.dtype):
        raise TypeError(f"categorical: logits must be floats, not {logits._value.dtype.name}")
    if logits._value.shape[1] == 0:
        raise ValueError("categorical: logits need at least one class")
    num_samples = int(num_samples.numpy() if isinstance(num_samples, Tensor) else num_samples)
    if num_samples < 0:
        raise ValueError(f"categorical: num_samples must be >= 0, got {num_samples}")
    dt = numpy_dtype("int64" if dtype is None else dtype)
    if dt.kind not in "iu":
        raise TypeError(f"categorical: dtype must be an integer type, got {dt.name}")
    return apply(CATEGORICAL, (logits,), {"num_samples": num_samples, "dtype": dt, "seed": seed})
