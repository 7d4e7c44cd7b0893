"""TensorFlow-style dtype objects (``tapeflow.float32`` ...) over numpy dtypes.

Tensors keep plain numpy dtypes internally; ``DType`` is what users see and
pass.  ``as_dtype`` accepts a DType, a numpy dtype or type, or a name.

``bfloat16`` is not numpy's: the optional ``ml_dtypes`` package (``pip install
'tapeflow[bfloat16]'``) adds it, as a numpy dtype of kind 'V', so code asks
``is_float_dtype`` rather than ``is_float_dtype(dtype)``.  ml_dtypes is imported on
first use of bfloat16 only (it costs ~0.15 s at import).
"""
import importlib
import importlib.util

import numpy as np

__all__ = [
    "DType", "as_dtype", "float16", "float32", "float64", "int8", "int16", "int32",
    "int64", "uint8", "bool", "complex64", "complex128", "string",
]


class DType:
    """A tensor element type; compares equal to its numpy dtype and its name."""

    __slots__ = ("_np",)

    def __init__(self, np_dtype):
        self._np = np.dtype(np_dtype)

    @property
    def name(self):
        return self._np.name

    @property
    def as_numpy_dtype(self):
        return self._np.type

    @property
    def is_floating(self):
        return is_float_dtype(self._np)

    @property
    def is_complex(self):
        return self._np.kind == "c"

    @property
    def is_integer(self):
        return self._np.kind in "iu"

    @property
    def is_bool(self):
        return self._np.kind == "b"

    @property
    def base_dtype(self):
        return self

    @property
    def size(self):
        return self._np.itemsize

    @property
    def min(self):
        return finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def __eq__(self, other):
        try:
            return self._np == as_dtype(other)._np
        except TypeError:
            return NotImplemented

    def __hash__(self):
        return hash(self._np)

    def __repr__(self):
        return f"tf.{self.name}"

    __str__ = __repr__


_BY_NUMPY = {}


def as_dtype(value):
    """The DType for ``value`` (a DType, numpy dtype/type, Python type or name)."""
    if isinstance(value, DType):
        return value
    if value is None:
        raise TypeError("None is not a dtype")
    if value is float:
        value = np.float32
    elif value is int:
        value = np.int32
    if isinstance(value, str) and value == "bfloat16":
        value = _bfloat16_numpy()  # numpy knows the name only once ml_dtypes is imported
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"Cannot convert {value!r} to a tapeflow dtype") from None
    dt = _BY_NUMPY.get(npd)
    if dt is None:
        dt = _BY_NUMPY[npd] = DType(npd)
    return dt


# float dtypes that numpy files under kind 'V' (ml_dtypes' extension types)
_EXTENSION_FLOATS = frozenset({"bfloat16"})


def is_float_dtype(dtype):
    """Whether ``dtype`` (numpy dtype, DType or name) is a real floating point type, numpy's
    or ml_dtypes' bfloat16: what tapes differentiate and mixed precision casts."""
    try:
        kind = dtype.kind  # a numpy dtype: the hot case, in every op a tape records
    except AttributeError:
        dtype = numpy_dtype(dtype)
        kind = dtype.kind
    return kind == "f" or (kind == "V" and dtype.name in _EXTENSION_FLOATS)


def is_inexact_dtype(dtype):
    """Float (``is_float_dtype``) or complex: the dtypes that carry gradients."""
    try:
        kind = dtype.kind
    except AttributeError:
        dtype = numpy_dtype(dtype)
        kind = dtype.kind
    return kind == "f" or kind == "c" or (kind == "V" and dtype.name in _EXTENSION_FLOATS)


def finfo(dtype):
    """``np.finfo``, which refuses bfloat16, or ml_dtypes' for it."""
    dtype = numpy_dtype(dtype)
    if dtype.kind == "V" and dtype.name in _EXTENSION_FLOATS:
        return importlib.import_module("ml_dtypes").finfo(dtype)
    return np.finfo(dtype)


def _bfloat16_numpy():
    """ml_dtypes' bfloat16 numpy type, or an error that names the extra to install."""
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
    except ImportError:
        raise TypeError("bfloat16 needs the ml_dtypes package (numpy has no bfloat16): "
                        "pip install 'tapeflow[bfloat16]'") from None
    return ml_dtypes.bfloat16


def bfloat16_available():
    """Whether ml_dtypes (tapeflow's bfloat16) can be imported."""
    return importlib.util.find_spec("ml_dtypes") is not None


def __getattr__(name):
    # tf.bfloat16: made on first access, since it imports ml_dtypes
    if name == "bfloat16":
        try:
            return as_dtype("bfloat16")
        except TypeError as error:
            raise AttributeError(f"tapeflow.bfloat16 is unavailable: {error}") from None
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def numpy_dtype(value):
    """The numpy dtype for a DType, numpy dtype or name (None stays None)."""
    if value is None:
        return None
    if isinstance(value, DType):
        return value._np
    return as_dtype(value)._np


float16 = as_dtype(np.float16)
float32 = as_dtype(np.float32)
float64 = as_dtype(np.float64)
int8 = as_dtype(np.int8)
int16 = as_dtype(np.int16)
int32 = as_dtype(np.int32)
int64 = as_dtype(np.int64)
uint8 = as_dtype(np.uint8)
bool = as_dtype(np.bool_)  # noqa: A001 - TensorFlow's name
complex64 = as_dtype(np.complex64)
complex128 = as_dtype(np.complex128)
string = as_dtype(np.str_)
half = float16
double = float64
