"""``tf.TensorArray``: a list of tensors written one index at a time, readable inside loops.

As in TensorFlow, a write returns a new TensorArray (use the returned value); the
old one is left as it was.  A TensorArray holds its elements in one of two ways:

* a Python list of tensors (``None`` where nothing was written), which is how every
  TensorArray starts: eagerly, and in straight-line traced code, a write stores its
  tensor and a read returns it, so a tape differentiates through them as through
  any op, to any order, and elements may differ in shape (``infer_shape=False``);
* one stacked buffer tensor of shape ``[size, *element_shape]``, which is what a
  TensorArray becomes where a trace needs it as tensors: a loop variable of a
  traced ``tf.while_loop``, a result of a traced ``tf.cond`` or ``tf.function``
  (``nest.flatten(..., expand_composites=True)`` gives the buffer), or a write or
  read at a traced index.  A write is then ``where(row == index, value, buffer)``
  and a read a gather, both differentiable to any order with the ops' own rules.
  Each write costs O(size) (a new buffer), so a traced loop of n writes costs
  O(n * size); TensorFlow's TensorList writes in place.

Limits, chosen so that a traced graph keeps static shapes: in the buffer form the
size is fixed.  ``dynamic_size=True`` grows the array at writes to a known index
(eagerly, or a Python int in a trace); a traced ``tf.while_loop`` (or AutoGraph
loop) that writes it at its counter first finds the size the loop reaches and
gives it that (``tracing/loop_sizing.py``): the trip count must be fixed by
constants or by integer arguments of the ``tf.function``, which then traces once
per value of them.  Elsewhere a write at a traced index cannot grow the array: a
write past its size raises InvalidArgumentError when the graph runs.
``clear_after_read`` is enforced eagerly only (TensorFlow 2 ignores it in graphs
too).  An element shape not given is taken from the first write; a traced
``tf.while_loop`` learns it from its body and traces the body again.
"""
import numpy as np

from . import backend
from .core import nest
from .core.context import context
from .core.tensor import Tensor, TensorShape, convert_to_tensor
from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .ops import assertion
from .ops.arithmetic import equal, greater_equal, less, logical_and, maximum, minimum
from .ops.creation import range_, zeros
from .ops.elementwise import identity
from .ops.shape import concat, expand_dims, gather, reshape, split, stack, unstack, where
from .tracing.loop_sizing import is_recording, record_write
from .tracing.tracer import SymbolicTensor

__all__ = ["TensorArray"]


def _known(t):
    """The value of tensor ``t`` on the host if known now (eagerly, or integer work on sizes,
    which a trace folds: ``tf.shape(x)[0]``), else None."""
    if t.__class__ is SymbolicTensor:
        return None
    return np.asarray(backend.to_host(t._value))


def _static_index(index, what):
    """A Python int for an index known now (an int, an eager tensor, a traced constant),
    None for a traced one."""
    if isinstance(index, Tensor):
        index = _known(index)
        if index is None:
            return None
    value = np.asarray(index)
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise TypeError(f"TensorArray.{what}: the index must be a scalar integer, got {index!r}")
    return int(value)


def _int_tensor(index):
    t = index if isinstance(index, Tensor) else convert_to_tensor(np.int32(index))
    if t._value.ndim != 0 or np.dtype(t._value.dtype).kind not in "iu":
        raise TypeError(f"TensorArray: the index must be a scalar integer, got {t!r}")
    return t


def _indices(indices):
    """``indices`` as given, or a list holding traced indices (``[i, 0]`` in a loop) as one
    tensor of them, as TensorFlow converts it."""
    if isinstance(indices, (list, tuple)) and any(isinstance(i, Tensor) for i in indices):
        return stack([_int_tensor(i) for i in indices])
    return indices


def _shape_text(shape):
    return "<unknown>" if shape is None else "(" + ", ".join(str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


class TensorArray(nest.Composite):
    """TensorFlow's ``tf.TensorArray`` (see the module's docstring for the two forms)."""

    __slots__ = ("_dtype", "_dynamic_size", "_clear_after_read", "_infer_shape",
                 "_element_shape", "_elements", "_cleared", "_buffer", "_size", "_traced",
                 "_flat_cache", "_tag")

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None or flow is not None:
            raise NotImplementedError("TensorArray(handle=, flow=) is TensorFlow 1's: tapeflow "
                                      "has no resource handles")
        self._dtype = as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = None if element_shape is None else self._shape_of(element_shape)
        n = self._size_of(size)
        self._elements = [None] * n
        self._cleared = frozenset()
        self._buffer = None
        self._size = n
        self._traced = context().trace is not None
        self._flat_cache = None  # (trace, buffer) of the last flattening: see _components
        self._tag = None  # which growing array of a loop being sized this is (loop_sizing)

    # --- construction helpers ----------------------------------------------------------------
    @staticmethod
    def _shape_of(shape):
        dims = getattr(shape, "dims", shape)
        if dims is None:
            return None
        dims = tuple(dims)
        if any(d is None for d in dims):
            return None  # partly known: taken from the first write instead
        return tuple(int(d) for d in dims)

    @staticmethod
    def _size_of(size):
        if size is None:
            return 0
        if isinstance(size, Tensor):
            value = _known(size)
            if value is None:
                raise ValueError(
                    "TensorArray: size must be known when tracing (a Python int, x.shape[0], or "
                    "tf.shape(x)[0]), not a value computed from the function's data: the "
                    "TensorArray of a traced loop is one buffer of that many rows")
            size = value
        size = np.asarray(size)
        if size.ndim != 0 or size.dtype.kind not in "iu" or int(size) < 0:
            raise ValueError(f"TensorArray: size must be a non-negative integer, got {size!r}")
        return int(size)

    def _copy(self, **changes):
        new = object.__new__(TensorArray)
        changes.setdefault("flat_cache", None)
        for slot in TensorArray.__slots__:
            setattr(new, slot, changes.get(slot[1:], getattr(self, slot)))
        return new

    # --- properties ------------------------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        """The elements' shape (a TensorShape), or None while unknown."""
        return None if self._element_shape is None else TensorShape(self._element_shape)

    def size(self, name=None):
        return convert_to_tensor(np.int32(self._size))

    def close(self, name=None):
        return None

    def identity(self):
        return self

    def mark_used(self):
        return None

    @property
    def flow(self):
        raise NotImplementedError("TensorArray.flow is TensorFlow 1's: tapeflow's TensorArray "
                                  "is a value (pass the TensorArray itself)")

    def grad(self, source, flow=None, name=None):
        raise NotImplementedError("TensorArray.grad is TensorFlow 1's (v2 has none either): "
                                  "take gradients with tf.GradientTape")

    # --- writing ---------------------------------------------------------------------------
    def _checked_value(self, value, what):
        if isinstance(value, Tensor):
            if value._value.dtype != self._dtype.as_numpy_dtype:
                raise InvalidArgumentError(
                    None, None, f"TensorArray dtype is {self._dtype.name} but Op is trying to "
                                f"{what} dtype {value.dtype.name}")
            return value
        try:
            return convert_to_tensor(value, dtype=self._dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Expected {self._dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.") from e

    def _merged_shape(self, shape):
        """The element shape after writing a value of ``shape`` (ValueError if it differs)."""
        if self._element_shape is None:
            return tuple(shape) if self._infer_shape or self._buffer is not None else None
        if tuple(shape) != self._element_shape and (self._infer_shape or self._buffer is not None):
            raise ValueError(f"Shapes {_shape_text(tuple(shape))} and "
                             f"{_shape_text(self._element_shape)} are incompatible: the "
                             f"TensorArray's elements have shape {_shape_text(self._element_shape)}")
        return self._element_shape

    def write(self, index, value, name=None):
        """A TensorArray with ``value`` at ``index`` (this one is left as it was)."""
        value = self._checked_value(value, "write")
        at = _static_index(index, "write")
        if at is None or self._elements is None:
            return self._buffered(value._value.shape)._write_row(index, at, value)
        self._check_write_index(at)
        shape = self._merged_shape(value._value.shape)
        elements = list(self._elements)
        if at >= len(elements):
            elements.extend([None] * (at + 1 - len(elements)))
        elements[at] = value
        return self._copy(elements=elements, element_shape=shape, size=len(elements),
                          cleared=self._cleared - {at})

    def _check_write_index(self, at):
        """TensorFlow's errors for a write at known index ``at`` the array cannot take."""
        if at < 0:
            raise InvalidArgumentError(None, None, f"Writing to negative indices (index {at}) "
                                                   f"is not allowed.")
        if at >= self._size and not self._dynamic_size:
            raise InvalidArgumentError(None, None, f"Tried to write to index {at} but array is "
                                                   f"not resizeable and size is: {self._size}")

    def _write_row(self, index, at, value):
        """Buffer form: ``value`` into row ``index`` (``at`` when known)."""
        self._merged_shape(value._value.shape)
        n = self._size
        if at is not None:
            self._check_write_index(at)
            if at >= n:  # dynamic_size, at an index known now: the buffer grows
                grown = zeros((at + 1 - n,) + tuple(value._value.shape), self._dtype)
                return self._copy(buffer=concat([self._buffer, grown], 0),
                                  size=at + 1)._write_row(index, at, value)
        index = _int_tensor(index)
        if at is None:
            record_write(self._tag, index)
            in_loop = self._dynamic_size and is_recording()  # the loop sizes it first
            if n == 0 and not in_loop:
                raise ValueError(
                    "TensorArray.write at a traced index into a TensorArray of size 0 outside "
                    "a tf.while_loop or AutoGraph loop: it cannot grow there; give it size= (at "
                    "least as many elements as are written)")
            if self._tag is None:  # (a sizing trace writes past the size, on purpose)
                self._check_in_range(index, "write to", n)
        rows = equal(range_(n, dtype=index.dtype), index)
        rows = reshape(rows, (n,) + (1,) * value._value.ndim)
        return self._copy(buffer=where(rows, expand_dims(value, 0), self._buffer))

    def _check_in_range(self, index, verb, n):
        ok = logical_and(greater_equal(index, 0), less(index, n))
        if verb == "write to":
            what = "resizeable inside a traced loop" if self._dynamic_size else "resizeable"
            tail = f"but array is not {what} and size is: {n}"
        else:
            tail = f"but array size is: {n}"
        assertion.assert_that(ok, ["Tried to", verb, "index", None, tail], [index])

    def unstack(self, value, name=None):
        """The rows of ``value`` as the elements (the array's size becomes their number)."""
        value = self._checked_value(value, "write")
        if value._value.ndim == 0:
            raise ValueError("TensorArray.unstack takes a tensor of rank 1 at least, got a scalar")
        n = value._value.shape[0]
        if n > self._size and not self._dynamic_size:
            raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size "
                             f"{self._size}")
        shape = self._merged_shape(value._value.shape[1:])
        if self._elements is None:
            return self._copy(buffer=value, size=n, element_shape=shape)
        return self._copy(elements=list(unstack(value)) if n else [], size=n,
                          element_shape=shape, cleared=frozenset())

    def scatter(self, indices, value, name=None):
        """``value[k]`` written at ``indices[k]`` for each k."""
        value = self._checked_value(value, "write")
        indices = _indices(indices)
        if isinstance(indices, Tensor) and _known(indices) is None:
            rows = [indices[k] for k in range(indices._value.shape[0])]
        else:
            rows = [int(i) for i in np.asarray(
                _known(indices) if isinstance(indices, Tensor) else indices).reshape(-1)]
        if len(rows) != value._value.shape[0]:
            raise ValueError(f"TensorArray.scatter: {len(rows)} indices for "
                             f"{value._value.shape[0]} rows of value")
        out = self
        for k, (index, row) in enumerate(zip(rows, unstack(value) if rows else [])):
            out = out.write(index, row)
        return out

    def split(self, value, lengths, name=None):
        """Consecutive pieces of ``value`` (along axis 0) of the given ``lengths`` as elements."""
        value = self._checked_value(value, "write")
        lengths = [int(n) for n in np.asarray(
            _known(lengths) if isinstance(lengths, Tensor) else lengths).reshape(-1)]
        if value._value.ndim == 0:
            raise ValueError("Expected value to be at least a vector, but received shape: []")
        if sum(lengths) != value._value.shape[0]:
            raise InvalidArgumentError(
                None, None, f"Expected sum of lengths to be equal to values.shape[0], but sum of "
                            f"lengths is {sum(lengths)} and value's shape is: "
                            f"[{','.join(map(str, value._value.shape))}]")
        if len(lengths) > self._size and not self._dynamic_size:
            raise InvalidArgumentError(
                None, None, f"TensorArray's size is not equal to the size of lengths "
                            f"({self._size} vs. {len(lengths)}), and the TensorArray is not "
                            f"marked as dynamically resizeable")
        out = self
        for k, piece in enumerate(split(value, lengths, axis=0) if lengths else []):
            out = out.write(k, piece)
        return out

    # --- reading ---------------------------------------------------------------------------
    def read(self, index, name=None):
        """The element at ``index`` (zeros if never written and the element shape is known)."""
        at = _static_index(index, "read")
        if at is None or self._elements is None:
            return self._buffered(None)._read_row(index, at)
        if at < 0:
            raise InvalidArgumentError(None, None, f"Reading from negative indices (index {at}) "
                                                   f"is not allowed.")
        if at >= len(self._elements):
            raise InvalidArgumentError(None, None, f"Tried to read from index {at} but array "
                                                   f"size is: {len(self._elements)}")
        value = self._element(at, reading=True)
        if self._clear_after_read and context().trace is None:
            # TensorFlow's eager TensorArray forgets what was read (this object, not its copies)
            self._elements[at] = None
            self._cleared = self._cleared | {at}
        return identity(value)

    def _element(self, at, reading=False):
        """Element ``at``, zeros where none was written (``reading``: read() of a cleared one
        raises, as TensorFlow's; stack, gather and concat zero-fill it)."""
        value = self._elements[at]
        if value is not None:
            return value
        if reading and at in self._cleared:
            raise InvalidArgumentError(
                None, None, f"Could not read index {at} twice because it was cleared after a "
                            f"previous read (perhaps try setting clear_after_read = false?)")
        if self._element_shape is None:
            raise InvalidArgumentError(
                None, None, f"Could not read from TensorArray index {at}: it was never written "
                            f"and the element shape is unknown")
        return zeros(self._element_shape, self._dtype)

    def _read_row(self, index, at):
        n = self._size
        if at is not None and not 0 <= at < n:
            raise InvalidArgumentError(None, None, f"Tried to read from index {at} but array "
                                                   f"size is: {n}")
        index = _int_tensor(index)
        if at is None:
            if self._tag is None:
                self._check_in_range(index, "read from", n)
            if n == 0:  # a loop's array before it is sized: the values are not used
                return zeros(self._element_shape, self._dtype)
            # the check raises when the graph runs; the clip keeps trace-time examples (a
            # branch not taken, a loop's first state) from failing the gather before that
            index = minimum(maximum(index, 0), max(n - 1, 0))
        return gather(self._buffer, index)

    def stack(self, name=None):
        """The elements stacked on a new axis 0: ``[size, *element_shape]``."""
        if self._elements is None:
            return identity(self._buffer)
        if not self._elements:
            if self._element_shape is None:
                raise InvalidArgumentError(None, None, "Tried to stack elements of an empty list "
                                                       "with non-fully-defined element_shape")
            return zeros((0,) + self._element_shape, self._dtype)
        return stack([self._element(k) for k in range(len(self._elements))])

    def gather(self, indices, name=None):
        """The elements at ``indices``, stacked."""
        indices = _indices(indices)
        if self._elements is None or (isinstance(indices, Tensor) and _known(indices) is None):
            buffered = self._buffered(None)
            indices = indices if isinstance(indices, Tensor) else \
                convert_to_tensor(np.asarray(indices, dtype=np.int32))
            n = buffered._size
            if _known(indices) is None:
                buffered._check_in_range(indices, "read from", n)
                indices = minimum(maximum(indices, 0), max(n - 1, 0))
            return gather(buffered._buffer, indices)
        at = np.asarray(_known(indices) if isinstance(indices, Tensor) else indices)
        for i in at.reshape(-1):
            if not 0 <= int(i) < len(self._elements):
                raise InvalidArgumentError(None, None, f"Tried to read from index {int(i)} but "
                                                       f"array size is: {len(self._elements)}")
        if at.size == 0:
            return zeros(at.shape + (self._element_shape or ()), self._dtype)
        rows = [self._element(int(i)) for i in at.reshape(-1)]
        return reshape(stack(rows), at.shape + tuple(rows[0]._value.shape))

    def concat(self, name=None):
        """The elements concatenated along axis 0."""
        if self._elements is None:
            shape = self._buffer._value.shape
            if len(shape) < 2:
                raise InvalidArgumentError(None, None, "Concat saw a scalar shape at index 0 but "
                                                       "requires at least vectors")
            return reshape(self._buffer, (shape[0] * shape[1],) + tuple(shape[2:]))
        values = [self._element(k) for k in range(len(self._elements))]
        for k, v in enumerate(values):
            if v._value.ndim == 0:
                raise InvalidArgumentError(None, None, f"Concat saw a scalar shape at index {k} "
                                                       f"but requires at least vectors")
        if not values:
            if self._element_shape is None or not self._element_shape:
                raise InvalidArgumentError(None, None, "Tried to concat elements of an empty "
                                                       "list with non-fully-defined element_shape")
            return zeros((0,) + self._element_shape[1:], self._dtype)
        return concat(values, 0)

    # --- the buffer form -------------------------------------------------------------------
    def _buffered(self, value_shape):
        """This array as one buffer tensor (``value_shape``: a write's, when the element shape
        is not known yet)."""
        if self._elements is None and self._buffer is not None:
            return self
        shape = self._element_shape
        if shape is None and value_shape is not None:
            shape = tuple(value_shape)
        if shape is None:
            if self._elements is None or any(e is None for e in self._elements):
                raise ValueError("TensorArray: its element shape is not known yet (give "
                                 "element_shape=, or write an element first)")
            shapes = {tuple(e._value.shape) for e in self._elements}
            if len(shapes) > 1:
                raise ValueError(f"TensorArray with elements of different shapes {sorted(shapes)} "
                                 "cannot become one buffer (a loop variable or a traced index); "
                                 "give them one shape")
            shape = shapes.pop() if shapes else None
            if shape is None:
                raise ValueError("TensorArray: its element shape is not known yet")
        if self._elements is None:  # a loop's array that had no element shape: zeros
            buffer = zeros((self._size,) + shape, self._dtype)
        elif self._elements:
            buffer = stack([e if e is not None else zeros(shape, self._dtype)
                            for e in self._elements])
        else:
            buffer = zeros((0,) + shape, self._dtype)
        return self._copy(elements=None, buffer=buffer, element_shape=shape, cleared=frozenset())

    # --- growing in a traced loop (tracing/loop_sizing.py) ------------------------------------
    @property
    def _grows_in_loops(self):
        return self._dynamic_size and self._element_shape is not None

    def _tagged(self, tag):
        """This array for a loop's sizing trace: writes record their index under ``tag``, and
        it holds one row at least, so that reads have rows to gather from."""
        return self._grown(max(self._size, 1))._copy(tag=tag)

    def _grown(self, rows):
        """This array as a buffer of ``rows`` rows (zeros after its own), untagged."""
        array = self._buffered(None)
        if rows > array._size:
            extra = zeros((rows - array._size,) + array._element_shape, self._dtype)
            array = array._copy(buffer=concat([array._buffer, extra], 0), size=rows)
        return array._copy(tag=None)

    # --- nest.Composite: a loop variable, a branch's or a function's result ----------------
    def _as_tensors(self):
        """Whether this array flattens to its buffer (it lives in a trace) or to nothing."""
        return self._elements is None or self._traced or context().trace is not None

    def _num_components(self):
        if not self._as_tensors() or self._buffer is None and self._element_shape is None and (
                self._elements is None or all(e is None for e in self._elements)):
            return 0  # eagerly a Python value (loops carry it as it is), or nothing known yet
        return 1

    def _components(self):
        if not self._num_components():
            return []  # in a loop, the body will tell the element shape (``_refine``)
        if self._buffer is None:
            # Stacked in the trace that flattens it (a branch flattening an array of the
            # enclosing function stacks it there), the array itself left as it is; flattened
            # again in that trace, or outside any (a function's outputs counted), the same
            # tensor comes back.
            trace = context().trace
            cached = self._flat_cache
            if cached is not None and (cached[0] is trace or trace is None):
                return [cached[1]]
            buffer = self._buffered(None)._buffer
            if self._traced:
                self._flat_cache = (trace, buffer)
            return [buffer]
        return [self._buffer]

    def _from_components(self, components):
        if not self._as_tensors():
            return self
        if not components:
            return self._copy(elements=None, buffer=None)
        (buffer,) = components
        return self._copy(elements=None, buffer=buffer,
                          element_shape=tuple(buffer._value.shape[1:]), traced=True)

    def _structure_key(self):
        if not self._as_tensors():
            return ("eager", self._dtype.name)
        return (self._dtype.name, self._size, self._element_shape, self._dynamic_size)

    def _refine(self, other):
        # only an array that holds nothing yet (a loop's first state) takes another's shape
        if self._element_shape is None and other._element_shape is not None and \
                other._size == self._size and self._buffer is None and (
                    self._elements is None or all(e is None for e in self._elements)):
            return self._copy(elements=None, buffer=None, element_shape=other._element_shape,
                              traced=True)
        return None

    def __repr__(self):
        form = "buffer" if self._elements is None else "list"
        return (f"<tf.TensorArray dtype={self._dtype.name} size={self._size} "
                f"element_shape={_shape_text(self._element_shape)} ({form})>")
