"""``tf.debugging`` and ``tf.Assert``: checks that raise ``tf.errors.InvalidArgumentError``.

Eagerly a check runs now.  Inside a ``tf.function`` it is an ``Assert`` (or
``CheckNumerics``) equation of the graph, run in program order at every call of
the compiled function (``ops/assertion.py``); a call that fails raises and the
next call checks afresh.  What depends on shapes only (``assert_rank``,
``assert_shapes``) is checked when the function is traced, since tapeflow knows
every shape then, and raises ``ValueError`` as TensorFlow's static checks do.
The checks return None (TensorFlow 2 returns None eagerly, an op in a graph:
a traced tapeflow program runs its equations in order, so nothing needs it).
"""
import numpy as np

from .core.tensor import Tensor, convert_to_tensor
from .dtypes import as_dtype
from .ops import assertion
from .ops.arithmetic import (
    abs_, add, equal, greater, greater_equal, less, less_equal, multiply, not_equal, subtract,
)
from .ops.reduce import reduce_all
from .dtypes import is_inexact_dtype

__all__ = [
    "Assert", "assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
    "assert_greater", "assert_greater_equal", "assert_near", "assert_negative",
    "assert_positive", "assert_non_negative", "assert_non_positive", "assert_rank",
    "assert_rank_at_least", "assert_rank_in", "assert_shapes", "assert_scalar", "assert_type",
    "assert_integer", "assert_all_finite", "check_numerics",
]

_SUMMARIZE = 3  # TensorFlow's default number of entries printed per tensor


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """Raise InvalidArgumentError (printing ``data``) where ``condition`` is false."""
    condition = _tensor(condition)
    if condition._value.dtype != np.bool_:
        raise TypeError(f"tf.Assert: condition must be a bool tensor, got {condition.dtype.name}")
    template, tensors = _template(["assertion failed:"] + list(data))
    assertion.assert_that(condition, template, tensors, summarize)


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _template(data):
    """Strings stay text; everything else is a tensor printed in its place (None)."""
    template, tensors = [], []
    for item in data:
        if isinstance(item, (str, bytes)):
            template.append(item.decode() if isinstance(item, bytes) else item)
        else:
            template.append(None)
            tensors.append(_tensor(item))
    return template, tensors


def _describe(t):
    return f"(shape={tuple(t._value.shape)} dtype={t.dtype.name})"


def _broadcastable(x, y):
    """TensorFlow's error for operands that do not broadcast, before any op is built."""
    a, b = tuple(x._value.shape), tuple(y._value.shape)
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(f"Incompatible shapes: [{','.join(map(str, a))}] vs. "
                         f"[{','.join(map(str, b))}]") from None


def _check(condition, default_data, data, summarize, message):
    if data is None:
        data = ([message] if message else []) + default_data
    elif message:
        data = [message] + list(data)
    template, tensors = _template(data)
    assertion.assert_that(reduce_all(condition), template, tensors,
                          _SUMMARIZE if summarize is None else summarize)


def _binary(symbol, compare):
    def check(x, y, data=None, summarize=None, message=None, name=None):
        x, y = _tensor(x), _tensor(y)
        _broadcastable(x, y)
        default = [f"Condition x {symbol} y did not hold element-wise:",
                   f"x {_describe(x)} = ", x, f"y {_describe(y)} = ", y]
        _check(compare(x, y), default, data, summarize, message)
    return check


assert_equal = _binary("==", equal)
assert_none_equal = _binary("!=", not_equal)
assert_less = _binary("<", less)
assert_less_equal = _binary("<=", less_equal)
assert_greater = _binary(">", greater)
assert_greater_equal = _binary(">=", greater_equal)
for _fn, _name in ((assert_equal, "assert_equal"), (assert_none_equal, "assert_none_equal"),
                   (assert_less, "assert_less"), (assert_less_equal, "assert_less_equal"),
                   (assert_greater, "assert_greater"),
                   (assert_greater_equal, "assert_greater_equal")):
    _fn.__name__ = _fn.__qualname__ = _name


def _sign(symbol, compare):
    def check(x, data=None, summarize=None, message=None, name=None):
        x = _tensor(x)
        default = [f"Condition x {symbol} 0 did not hold element-wise:", f"x {_describe(x)} = ", x]
        _check(compare(x, 0), default, data, summarize, message)
    return check


assert_negative = _sign("<", less)
assert_positive = _sign(">", greater)
assert_non_negative = _sign(">=", greater_equal)
assert_non_positive = _sign("<=", less_equal)
for _fn, _name in ((assert_negative, "assert_negative"), (assert_positive, "assert_positive"),
                   (assert_non_negative, "assert_non_negative"),
                   (assert_non_positive, "assert_non_positive")):
    _fn.__name__ = _fn.__qualname__ = _name


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """``|x - y| <= atol + rtol * |y|`` element-wise (defaults: 10 machine epsilons of x's dtype)."""
    x, y = _tensor(x), _tensor(y)
    if not is_inexact_dtype(x._value.dtype):
        raise TypeError(f"assert_near takes floating-point tensors, got {x.dtype.name}")
    _broadcastable(x, y)
    eps = float(np.finfo(x._value.dtype).eps)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    tolerance = add(atol, multiply(rtol, abs_(y)))
    default = [f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
               f"x {_describe(x)} = ", x, f"y {_describe(y)} = ", y]
    _check(less_equal(abs_(subtract(x, y)), tolerance), default, data, summarize, message)


# --- shapes: known when tracing, so checked then ---------------------------------------------
def _static_int(value, what):
    if isinstance(value, Tensor):
        value = value.numpy()  # a traced rank needs its value: TraceError names the call
    value = np.asarray(value)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise ValueError(f"{what} must be a scalar integer, got {value!r}")
    return int(value)


def _prefix(message):
    return f"{message}.  " if message else ""


def assert_rank(x, rank, message=None, name=None):
    """``x`` has rank ``rank``; else ValueError (ranks are known, also when tracing)."""
    x = _tensor(x)
    rank = _static_int(rank, "assert_rank: rank")
    got = x._value.ndim
    if got != rank:
        raise ValueError(f"{_prefix(message)}Tensor x must have rank {rank}.  Received rank "
                         f"{got}, shape {tuple(x._value.shape)}")


def assert_rank_at_least(x, rank, message=None, name=None):
    x = _tensor(x)
    rank = _static_int(rank, "assert_rank_at_least: rank")
    got = x._value.ndim
    if got < rank:
        raise ValueError(f"{_prefix(message)}Tensor x must have rank at least {rank}.  Received "
                         f"rank {got}, shape {tuple(x._value.shape)}")


def assert_rank_in(x, ranks, message=None, name=None):
    x = _tensor(x)
    ranks = tuple(_static_int(r, "assert_rank_in: ranks") for r in ranks)
    if x._value.ndim not in ranks:
        raise ValueError(f"{_prefix(message)}Tensor x must have rank in {ranks}.  Received rank "
                         f"{x._value.ndim}, shape {tuple(x._value.shape)}")


def assert_scalar(tensor, message=None, name=None):
    tensor = _tensor(tensor)
    if tensor._value.ndim != 0:
        raise ValueError(f"{_prefix(message)}Expected scalar shape, saw shape: "
                         f"{tuple(tensor._value.shape)}.")


def assert_type(tensor, tf_type, message=None, name=None):
    want = as_dtype(tf_type)
    got = _tensor(tensor).dtype
    if got != want:
        raise TypeError(f"{_prefix(message)}Tensor must be of type tf.{want.name}; "
                        f"got tf.{got.name}")


def assert_integer(x, message=None, name=None):
    got = _tensor(x).dtype
    if not got.is_integer:
        raise TypeError(f"{_prefix(message)}Expected integer type, got tf.{got.name}")


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Each ``(tensor, shape)`` pair (or ``{tensor: shape}``) matches its shape: integers are
    sizes, None or '.' any size, other entries symbols that must agree across tensors, and a
    leading ``...`` or '*' stands for any outer dimensions.  Checked when tracing (shapes are
    known then); a mismatch raises ValueError naming the tensor and dimension."""
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    symbols = {}  # symbol -> (size, tensor index, dimension)
    for k, (tensor, spec) in enumerate(pairs):
        tensor = tensor.deref() if hasattr(tensor, "deref") else tensor  # {x.ref(): shape}
        actual = tuple(_tensor(tensor)._value.shape) or (1,)
        spec = list(spec)
        inner = bool(spec) and (spec[0] is Ellipsis or spec[0] == "*")
        if inner:
            spec = spec[1:]
        spec = spec or [1]
        if len(actual) < len(spec) if inner else len(actual) != len(spec):
            need = f"at least {len(spec)}" if inner else str(len(spec))
            raise ValueError(f"{_prefix(message)}Tensor {k} must have rank {need}.  Received "
                             f"rank {len(actual)}, shape {actual}")
        dims = actual[len(actual) - len(spec):]
        for d, (want, size) in enumerate(zip(spec, dims), start=len(actual) - len(spec)):
            if want is None or want == ".":
                continue
            if isinstance(want, (int, np.integer)) or (isinstance(want, str) and want.isdigit()):
                if int(want) != size:
                    raise ValueError(f"{_prefix(message)}[Specified explicitly] Tensor {k} "
                                     f"dimension {d} must have size {int(want)}.  Received size "
                                     f"{size}, shape {actual}")
                continue
            seen = symbols.setdefault(want, (size, k, d))
            if seen[0] != size:
                raise ValueError(f"{_prefix(message)}Specified by tensor {seen[1]} dimension "
                                 f"{seen[2]}.  Tensor {k} dimension {d} must have size "
                                 f"{seen[0]}.  Received size {size}, shape {actual}")


# --- numerics ---------------------------------------------------------------------------------
def check_numerics(tensor, message, name=None):
    """``tensor``, checked for NaN and Inf when it is computed (InvalidArgumentError
    "``message`` : Tensor had NaN values"); its gradient is the identity, checked likewise."""
    return assertion.check_numerics(_tensor(tensor), message)


def assert_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """``tf.debugging.assert_all_finite(x, message)``: ``check_numerics`` under its TF2 name."""
    tensor = x if x is not None else t
    text = message if message is not None else msg
    if tensor is None or text is None:
        raise TypeError("assert_all_finite(x, message) takes a tensor and a message")
    return check_numerics(tensor, text)
