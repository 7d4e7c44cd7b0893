"""Tensors, Variables, and turning Python and numpy data into them.

A ``Tensor`` is an immutable array (numpy or CuPy, see ``tapeflow.backend``)
with a unique integer id and, when a tape recorded the op that made it, the
graph node of that op.  A ``Variable`` is a Tensor whose value can be replaced
with ``assign``; a tape watches trainable Variables when an op reads them.

Python floats become float32 and Python ints int32, as in TensorFlow.  A
Python number, list or numpy array combined with a tensor takes the tensor's
dtype; two tensors of different dtypes are a TypeError.
"""
import itertools
import math

import numpy as np

from .. import backend
from ..dtypes import as_dtype, numpy_dtype
from .context import context
from .installed_ops import OPS
from ..dtypes import is_float_dtype, is_inexact_dtype

__all__ = [
    "Tensor", "Variable", "TensorShape", "constant", "convert_to_tensor",
    "is_tensor", "lift", "next_tensor_id", "made_before",
]

_next_id = itertools.count(1).__next__


def next_tensor_id():
    """An id larger than every tensor's made so far and smaller than any made later: a nested
    trace tells the enclosing function's tensors from its own by it (``made_before``)."""
    return _next_id()


_variables_made_in_traces = itertools.count(1).__next__
_last_variable_made_in_a_trace = [0]


def variables_made_in_traces():
    """How many Variables traced code has created (outside ``init_scope``): a tf.function
    compares the count around a trace, as TensorFlow refuses a Variable made at every trace."""
    return _last_variable_made_in_a_trace[0]


def made_before(tensor, mark):
    """Whether ``tensor`` was made before ``next_tensor_id()`` returned ``mark``.  A Python
    number an op lifted is cached and shared by every graph that uses it: it counts as made
    where it is used, never before."""
    return tensor._id < mark and tensor._id not in _LIFTED_IDS


class TensorShape(tuple):
    """A shape: a tuple that also compares equal to a list, as TensorFlow's does."""

    __slots__ = ()

    def __eq__(self, other):
        if isinstance(other, (list, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__

    @property
    def rank(self):
        return len(self)

    @property
    def ndims(self):
        return len(self)

    def as_list(self):
        return list(self)

    def num_elements(self):
        return int(np.prod(self, dtype=np.int64))

    def __repr__(self):
        return f"TensorShape({list(self)})"

    def __str__(self):  # TensorFlow prints a shape as its tuple: (201,)
        return str(tuple(self))


class Reference:
    """A hashable handle on a tensor or variable (``tensor.ref()``)."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, Reference) and other._tensor is self._tensor


class Tensor:
    """An immutable n-dimensional array that tapes can differentiate through.

    Made by ops and by ``tapeflow.constant``; not constructed directly.
    """

    # _keras_mask: Keras's per-timestep mask that a layer attaches to its output (layers/base.py);
    # left unset (read with getattr(t, "_keras_mask", None)), so a tensor pays nothing for it
    __slots__ = ("_value", "_id", "_node", "_keras_mask", "__weakref__")
    # numpy defers ``ndarray <op> Tensor`` to the Tensor's reflected operator.
    __array_priority__ = 100

    def __init__(self, value, node=None, tensor_id=None):
        self._value = value
        self._id = _next_id() if tensor_id is None else tensor_id
        self._node = node

    # --- what the tensor is -------------------------------------------------
    @property
    def shape(self):
        return TensorShape(self._value.shape)

    def get_shape(self):
        return self.shape

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def dtype(self):
        return as_dtype(self._value.dtype)

    @property
    def device(self):
        return "GPU:0" if backend.array_module(self._value) is not np else "CPU:0"

    @property
    def name(self):
        return None

    def numpy(self):
        """The value as a numpy array (a numpy scalar for a 0-d tensor), copied to the host."""
        _note_leaving(self)
        value = backend.to_host(self._value)
        if isinstance(value, np.ndarray) and value.ndim == 0:
            return value[()]
        return np.array(value) if isinstance(value, np.ndarray) else value

    def __array__(self, dtype=None, copy=None):
        _note_leaving(self)
        value = np.asarray(backend.to_host(self._value))
        if dtype is not None:
            value = value.astype(dtype, copy=False)
        if copy:
            return np.array(value, copy=True)
        if np.shares_memory(value, np.asarray(backend.to_host(self._value))):
            value = value.view()
            value.flags.writeable = False  # tensors are immutable: numpy may read, not write
        return value

    def ref(self):
        return Reference(self)

    # --- Python protocol -----------------------------------------------------
    def __bool__(self):
        return bool(self._value)

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __index__(self):
        if self._value.dtype.kind not in "iu":
            raise TypeError(f"only integer scalar tensors can be used as an index, got {self.dtype.name}")
        return int(self._value)

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar (0-d) tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("Cannot iterate over a scalar tensor.")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self):
        raise TypeError(f"{type(self).__name__} is unhashable: use tensor.ref() as the key.")

    def __format__(self, spec):
        if self._value.ndim == 0 and spec:
            return format(self.numpy(), spec)
        return format(str(self), spec)

    def __repr__(self):
        return (f"<tf.Tensor: shape={tuple(self._value.shape)}, dtype={self._value.dtype.name}, "
                f"numpy={_numpy_repr(self._value)}>")

    def __str__(self):
        text = _numpy_str(self._value)
        if "\n" in text:  # as TensorFlow: a multi-line value starts on its own line
            text = "\n" + text
        return f"tf.Tensor({text}, shape={tuple(self._value.shape)}, dtype={self._value.dtype.name})"

    # Arithmetic, comparison and indexing operators (``+``, ``<``, ``[]``...) are installed
    # by tapeflow.ops.operators, which defines the ops behind them.


class Variable(Tensor):
    """A tensor with state: ``assign`` replaces its value, never its identity.

    Reading a trainable Variable inside a ``GradientTape`` makes the tape watch
    it.  Gradients stop at a Variable: how it got its value is not recorded.
    """

    __slots__ = ("trainable", "_name", "_constraint", "_updated_in_place", "_keras_name")

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, shape=None,
                 constraint=None):
        if callable(initial_value):
            initial_value = initial_value()
        value = convert_to_tensor(initial_value, dtype=dtype)._value
        super().__init__(_owned_copy(value))
        if shape is not None and tuple(shape) != tuple(value.shape):
            raise ValueError(f"Variable initial value has shape {tuple(value.shape)}, not {tuple(shape)}")
        self.trainable = bool(trainable)
        self._updated_in_place = False  # optimizer slots: their arrays change in place
        self._name = "Variable" if name is None else str(name)
        self._keras_name = None  # a Keras layer's weight: its own short name (add_weight's)
        self._constraint = constraint
        if context().trace is not None:
            _last_variable_made_in_a_trace[0] = _variables_made_in_traces()

    @property
    def name(self):
        """TensorFlow's variable name, the given name with its output index ('x0:0'); for a
        Keras layer's weight, Keras 3's: the name ``add_weight`` was given ('kernel')."""
        return self._keras_name if self._keras_name is not None else f"{self._name}:0"

    @property
    def path(self):
        """The hierarchical name, without an output index: 'sequential/dense/kernel'."""
        return self._name

    @property
    def constraint(self):
        return self._constraint

    def value(self):
        """The current value as a Tensor that will not change with later assigns.

        Read inside a tape, it is differentiable with respect to this Variable, as in TensorFlow.
        """
        ctx = context()
        for tape in ctx.tapes:
            if tape._watch_accessed_variables and self.trainable:
                tape._watch_variable(self)
        if ctx.trace is not None:
            return ctx.trace.read(self)
        value = _owned_copy(self._value) if self._updated_in_place else self._value
        return Tensor(value, None, self._id)

    def read_value(self):
        return self.value()

    def assign(self, value, read_value=True):
        """Replace the value (same shape and dtype); gradients do not flow through this."""
        trace = context().trace
        if trace is not None:
            trace.assign(self, value, "assign")
            return self if read_value else None
        new = _assignable(self, value, "assign")
        self._value = new
        _note_assign(self, value)
        return self if read_value else None

    def assign_add(self, delta, read_value=True):
        trace = context().trace
        if trace is not None:
            trace.assign(self, delta, "assign_add")
            return self if read_value else None
        new = self._value + _assignable(self, delta, "assign_add")
        self._value = new
        _note_assign(self, delta)
        return self if read_value else None

    def assign_sub(self, delta, read_value=True):
        trace = context().trace
        if trace is not None:
            trace.assign(self, delta, "assign_sub")
            return self if read_value else None
        new = self._value - _assignable(self, delta, "assign_sub")
        self._value = new
        _note_assign(self, delta)
        return self if read_value else None

    def _replace_value(self, array):
        """Install a new array of the same shape and dtype, unchecked (optimizers' fast path).

        The old array is not modified: a tape may still hold it as this variable's
        value when it was read.  Inside a trace there is no array to install: state
        changes there are ``assign`` ops.
        """
        if context().trace is not None:
            raise RuntimeError(f"Variable '{self.name}' was updated outside the op set while "
                               f"tracing: use assign(), which a graph can record.")
        self._value = array

    def __repr__(self):
        return (f"<tf.Variable '{self.name}' shape={tuple(self._value.shape)} "
                f"dtype={self._value.dtype.name}, numpy={_numpy_repr(self._value)}>")

    __str__ = __repr__  # TensorFlow prints a Variable as its repr

    # ``v += 1`` gives a Tensor, as in TensorFlow: __iadd__/__isub__ are installed with the operators.


def _owned_copy(value):
    """A private copy, so no caller-held array can change a Variable behind its back."""
    xp = backend.array_module(value)
    return xp.array(value, copy=True)


def _assignable(variable, value, what):
    new = lift(value, variable)._value
    if new.shape != variable._value.shape:
        if new.size == variable._value.size and new.ndim == 0:
            pass  # a scalar into a one-element variable
        else:
            raise ValueError(
                f"Cannot {what} a value of shape {tuple(new.shape)} to Variable "
                f"'{variable.name}' of shape {tuple(variable._value.shape)}")
    if new.dtype != variable._value.dtype:
        raise TypeError(f"Cannot {what} a {new.dtype.name} value to Variable "
                        f"'{variable.name}' of dtype {variable._value.dtype.name}")
    # TensorFlow's assign copies across devices: a host value (a loaded weight) goes to the
    # variable's device, a device value to the host, explicitly.
    new = backend.on_device_of(variable._value, new)
    if what == "assign":
        return _owned_copy(backend.array_module(new).broadcast_to(new, variable._value.shape))
    return new


def is_tensor(x):
    return isinstance(x, Tensor)


def _to_array(value, dtype):
    """Python or host data as an array on the current device (``tf.device``), device data
    where it is; Python data gets TensorFlow's default dtypes."""
    xp = backend.device_module()
    if backend.is_array(value):
        arr = value if dtype is None else value.astype(dtype, copy=False)
        return arr if xp is np or backend.array_module(arr) is xp else xp.asarray(arr)
    arr = _host_array(value, dtype)
    return arr if xp is np else xp.asarray(arr)


def _host_array(value, dtype):
    arr = np.asarray(value)
    if dtype is not None:
        if is_float_dtype(arr.dtype) and np.dtype(dtype).kind in "iub":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {np.dtype(dtype).name}")
        return arr.astype(dtype, copy=False)
    if arr.dtype == np.float64:
        return arr.astype(np.float32)
    if arr.dtype == np.int64:
        return arr.astype(np.int32)
    if arr.dtype == np.complex128:
        return arr.astype(np.complex64)
    if arr.dtype.kind in "USO":
        raise TypeError(f"Cannot convert {value!r} to a numeric tensor")
    return arr


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    """``value`` as a Tensor; a Tensor of another dtype than asked is a TypeError."""
    want = numpy_dtype(dtype)
    if isinstance(value, Tensor):
        if want is not None and value._value.dtype != want:
            raise TypeError(f"Tensor conversion requested dtype {want.name} for a tensor "
                            f"of dtype {value._value.dtype.name}")
        return value
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return OPS.stack([convert_to_tensor(v, dtype=dtype) for v in value])
    if want is None and dtype_hint is not None:
        try:
            return Tensor(_to_array(value, numpy_dtype(dtype_hint)))
        except (TypeError, ValueError):
            pass
    return Tensor(_to_array(value, want))


def _holds_tensor(seq):
    return any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _holds_tensor(v)) for v in seq)


def constant(value, dtype=None, shape=None, name=None):
    """A Tensor holding ``value`` (copied), optionally cast to ``dtype`` and reshaped or filled to ``shape``."""
    if isinstance(value, Tensor):
        t = value if dtype is None else OPS.cast(value, dtype)
        return t if shape is None else OPS.reshape(t, shape)
    arr = _to_array(value, numpy_dtype(dtype))
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        xp = backend.array_module(arr)
        arr = xp.broadcast_to(arr, shape) if arr.size == 1 else xp.reshape(arr, shape)
    if backend.is_array(value) and (arr is value or _same_memory(arr, value)):
        arr = _owned_copy(arr)  # a constant never changes with the caller's array
    return Tensor(arr)


def _same_memory(arr, value):
    xp = backend.array_module(arr)
    return xp is backend.array_module(value) and xp.shares_memory(arr, value)


_LIFT_CACHE = {}
_LIFTED_IDS = set()  # the ids of the cached tensors


def lift(value, like):
    """Convert a non-tensor operand of an op with tensor ``like`` to ``like``'s dtype.

    Python numbers are cached per (type, value, dtype): loops such as
    ``y = y * 0.999 + s`` convert the same constant many times.
    """
    if isinstance(value, Tensor):
        return value
    data = like._value
    dtype = data.dtype
    # on the device of ``like`` (CuPy refuses host arrays); numpy's ndarray checked first: cheap
    xp = np if type(data) is np.ndarray else backend.module_of(data)
    if type(value) in (float, int, bool):
        key = (type(value), value, dtype) if xp is np else (type(value), value, dtype, id(xp))
        if value == 0 and type(value) is float:
            key += (math.copysign(1.0, value),)  # -0.0 == 0.0, but they are different constants
        t = _LIFT_CACHE.get(key)
        if t is None:
            if type(value) is float and dtype.kind in "iub":
                raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name}: "
                                f"it would mix a float with an {dtype.name} tensor")
            if len(_LIFT_CACHE) > 4096:
                _LIFT_CACHE.clear()
                _LIFTED_IDS.clear()
            scalar = dtype.type(value)
            t = _LIFT_CACHE[key] = Tensor(scalar if xp is np else xp.asarray(scalar))
            _LIFTED_IDS.add(t._id)
        return t
    arr = value if backend.is_array(value) else np.asarray(value)
    if is_inexact_dtype(arr.dtype) and dtype.kind in "iub":
        raise TypeError(f"Cannot combine a {dtype.name} tensor with float data {value!r}")
    return Tensor(xp.asarray(arr, dtype=dtype))


def _numpy_repr(value):
    value = backend.to_host(value)
    if np.ndim(value) == 0:
        return str(np.asarray(value)[()])
    return repr(np.asarray(value))


def _numpy_str(value):
    value = backend.to_host(value)
    return str(np.asarray(value))


def _note_leaving(tensor):
    """A watched tensor is becoming a numpy array: remember it for ``tape.explain``."""
    for tape in context().tapes:
        n = tensor._node
        if tensor._id in tape._watched_ids or (n is not None and tape._id in n.tapes):
            tape._left_tapeflow.append((tensor._id, tensor._node))


def _note_assign(variable, value):
    """A Variable was assigned a watched value: remember it for ``tape.explain``."""
    if context().tapes and isinstance(value, Tensor):
        _note_leaving(value)
