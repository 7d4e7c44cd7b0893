"""Assertions as ops: ``Assert`` and ``CheckNumerics``, TensorFlow's two checking kernels.

Both are ``effect`` primitives (as ``tf.print``'s PrintV2): a traced graph keeps
them in program order and never drops, folds or merges them, so they check every
call of the compiled function (TensorFlow runs its stateful ops in program order
likewise).  A trace records them without running them: the values seen then are
examples (a branch not taken, a loop body's first state), not what the graph will
run on; a gradient's recomputation of a loop body does not check again.  A failed
check raises ``tf.errors.InvalidArgumentError`` and leaves nothing behind, so the
next call runs as if it had not happened.

The condition is read on the host (``backend.to_host``): an assertion is a host
check, as TensorFlow's Assert kernel runs on the CPU.
"""
import numpy as np

from .. import backend
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..errors import InvalidArgumentError
from .elementwise import identity
from ..dtypes import is_inexact_dtype

__all__ = ["ASSERT", "CHECK_NUMERICS", "assert_that", "check_numerics", "describe_data"]


def describe_data(template, tensors, summarize):
    """The message of a failed assertion: the strings of ``template`` in order, each None in it
    replaced by the next of ``tensors`` (arrays), at most ``summarize`` entries of each."""
    values = iter(tensors)
    parts = []
    for item in template:
        parts.append(item if item is not None else _summary(next(values), summarize))
    return " ".join(parts)


def _summary(array, summarize):
    host = np.asarray(backend.to_host(array))
    if host.ndim == 0:
        return str(host.item())
    flat = host.reshape(-1)
    shown = flat if summarize is None or summarize < 0 else flat[:summarize]
    text = np.array2string(shown, separator=" ", threshold=max(shown.size, 1))
    if shown.size < flat.size:
        text = text[:-1] + "...]"
    return text


def _assert_forward(condition, *tensors, template, summarize):
    if not bool(np.all(backend.to_host(condition))):
        raise InvalidArgumentError(None, None, describe_data(template, tensors, summarize))
    return ()


def _check_numerics_forward(x, *, message):
    host = np.asarray(backend.to_host(x))
    nan, inf = bool(np.isnan(host).any()), bool(np.isinf(host).any())
    if nan or inf:
        what = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
        raise InvalidArgumentError(None, None, f"{message} : Tensor had {what} values")
    return ()


# Effect ops (no outputs): a trace records them without running them on its examples.
# no outputs: nothing flows through them
ASSERT = def_primitive("Assert", _assert_forward, effect=True, not_differentiable=True)
CHECK_NUMERICS = def_primitive("CheckNumerics", _check_numerics_forward, effect=True,
                               not_differentiable=True)


def assert_that(condition, template, tensors, summarize=None):
    """Run the Assert op: raises now eagerly, records the check inside a trace."""
    apply(ASSERT, (condition,) + tuple(tensors),
          {"template": tuple(template), "summarize": summarize})


def check_numerics(x, message):
    """``x`` (through an Identity: the gradient is the identity), after the CheckNumerics op
    checked it has no NaN or Inf (InvalidArgumentError naming ``message``)."""
    if not is_inexact_dtype(x._value.dtype):
        raise TypeError(f"check_numerics takes a floating-point tensor, got {x._value.dtype}")
    apply(CHECK_NUMERICS, (x,), {"message": str(message)})
    return identity(x)
