"""A strict CPU stand-in for a GPU array library, for tests only (never offered to users).

``StrictArray`` holds numpy data but behaves as CuPy's arrays do where host leaks show:
numpy refuses to take it implicitly (``np.asarray(a)`` and every ``np.<function>(a)`` raise)
and it refuses to mix with a numpy array in an operation.  Python scalars and numpy scalars
mix, as with CuPy.  ``MODULE`` is its array module: numpy's functions, taking and giving
strict arrays, with ``asnumpy`` to copy data to the host explicitly (``cupy.asnumpy``).
Selected as the "GPU" of the tests by ``backend.use_gpu_module`` (``pytest --device strict``).
"""
import numbers
import types

import numpy as np

__all__ = ["StrictArray", "MODULE", "HostLeak", "syncs", "uploads"]

_SYNCS = [0]  # device-to-host reads so far (a GPU waits for its queue at each)
_UPLOADS = [0]  # host arrays copied to the device so far


def syncs():
    """How many times device data has been read on the host (``float(a)``, ``a.get()``, ...):
    tests compare the count across runs to find syncs made at every step."""
    return _SYNCS[0]


def uploads():
    """How many host arrays have been copied onto the device (``xp.asarray(numpy_array)``)."""
    return _UPLOADS[0]


class HostLeak(TypeError):
    """Device data met host data implicitly: a host round trip the code should not make."""


def _unwrap(value):
    """numpy data of a strict array (recursively in lists, tuples and dicts); refuses numpy arrays."""
    kind = type(value)
    if kind is StrictArray:  # the common cases first, by exact type: every call unwraps
        return value._data
    if kind in _SCALARS:
        return value
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, np.ndarray):
        raise HostLeak(f"a numpy array (shape {value.shape}) mixed with device arrays; move it "
                       "to the device first (xp.asarray)")
    if kind is tuple or kind is list:
        return kind([_unwrap(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


_SCALARS = frozenset([int, float, bool, str, type(None), slice, type(Ellipsis)])


def _wrap(value):
    """numpy results as strict arrays (a numpy scalar as a 0-d array, as CuPy gives)."""
    if type(value) is np.ndarray:  # the common case, before the isinstance chain
        return StrictArray(value)
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        return StrictArray(np.asarray(value))
    if isinstance(value, tuple):  # numpy's named results (svd, qr ...) keep their type
        items = [_wrap(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _strict(fn):
    def call(*args, **kwargs):
        if kwargs:
            return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)))
        return _wrap(fn(*_unwrap(args)))
    call.__name__ = getattr(fn, "__name__", "fn")
    return call


class _Ufunc:
    """A numpy ufunc taking strict arrays, its methods (``at``, ``reduce`` ...) included."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self._call = _strict(ufunc)  # made once, not at every call

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        return _strict(attr) if callable(attr) else attr


def _operand(other):
    """``other`` as numpy data for an operator, or None when the operator is not ours."""
    if isinstance(other, StrictArray):
        return other._data
    if isinstance(other, np.ndarray):
        raise HostLeak(f"an operation mixed a device array with a numpy array (shape "
                       f"{other.shape}); move it to the device first")
    if isinstance(other, (numbers.Number, np.generic)):
        return other
    return None


class StrictArray:
    """numpy data that numpy cannot take implicitly (see the module's docstring)."""

    __slots__ = ("_data", "__weakref__")  # CuPy's arrays take weak references too
    __array_priority__ = 50  # below Tensor's, so ``array <op> Tensor`` goes to the Tensor

    def __init__(self, data):
        self._data = data

    def __array__(self, dtype=None, copy=None):
        raise HostLeak("implicit conversion of a device array to numpy; use backend.to_host "
                       "(cupy.asnumpy) where a host copy is really wanted")

    __array_ufunc__ = None  # numpy's ufuncs defer to our operators, which refuse numpy arrays

    def __array_function__(self, func, types_, args, kwargs):
        raise HostLeak(f"numpy.{func.__name__} called on a device array; use the array module "
                       "of the data (backend.array_module)")

    # read at every op: the same values __getattr__ gives, without its lookups and wrapping
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)

    def __getattr__(self, name):
        if name.startswith("__"):  # numpy's __array_interface__ & co would hand it the data
            raise AttributeError(name)
        attr = getattr(self._data, name)
        return _strict(attr) if callable(attr) else _wrap(attr)

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap(key)])

    def __setitem__(self, key, value):
        self._data[_unwrap(key)] = _unwrap(value)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (StrictArray(row) if isinstance(row, np.ndarray) else _wrap(row) for row in self._data)

    # explicit Python conversions sync, as CuPy's do
    def __bool__(self):
        _SYNCS[0] += 1
        return bool(self._data)

    def __float__(self):
        _SYNCS[0] += 1
        return float(self._data)

    def __int__(self):
        _SYNCS[0] += 1
        return int(self._data)

    def __index__(self):
        _SYNCS[0] += 1
        return self._data.__index__()

    def __complex__(self):
        _SYNCS[0] += 1
        return complex(self._data)

    def __repr__(self):
        return f"strict({self._data!r})"

    def get(self):  # cupy.ndarray.get(): the host copy
        _SYNCS[0] += 1
        return self._data.copy()

    def __copy__(self):
        return StrictArray(self._data.copy())

    def __deepcopy__(self, memo):
        return StrictArray(self._data.copy())

    def __reduce__(self):  # pickled as its data, as CuPy's pickle
        return (StrictArray, (self._data.copy(),))


def _binary(name):
    method = getattr(np.ndarray, name)

    def op(self, other):
        data = other._data if type(other) is StrictArray else _operand(other)
        if data is None:
            return NotImplemented
        result = method(self._data, data)
        return StrictArray(result) if type(result) is np.ndarray else _wrap(result)
    op.__name__ = name
    return op


def _unary(name):
    method = getattr(np.ndarray, name)

    def op(self):
        return _wrap(method(self._data))
    op.__name__ = name
    return op


_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift"]
for _name in _BINARY:
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(StrictArray, _form, _binary(_form))
for _form in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__divmod__"):
    setattr(StrictArray, _form, _binary(_form))
for _form in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(StrictArray, _form, _unary(_form))
StrictArray.__hash__ = None


def _to_strict(value, dtype=None, **kwargs):
    """``cupy.asarray``: host data (numpy, lists, scalars) copied onto the device."""
    if isinstance(value, StrictArray):
        data = value._data if dtype is None else value._data.astype(dtype, copy=False)
        return StrictArray(data)
    if isinstance(value, np.ndarray):
        _UPLOADS[0] += 1
    return StrictArray(np.array(value, dtype=dtype, **kwargs))


def _asnumpy(value):
    if isinstance(value, StrictArray):
        _SYNCS[0] += 1
        return value._data.copy()
    return np.asarray(value)


class _Namespace(types.SimpleNamespace):
    """numpy's namespace (or a submodule) whose functions take and give strict arrays."""

    def __init__(self, source, **own):
        super().__init__(**own)
        self._source = source

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._source, name)
        if isinstance(attr, np.ufunc):
            wrapped = _Ufunc(attr)
        elif isinstance(attr, types.ModuleType):
            wrapped = _Namespace(attr)
        elif isinstance(attr, type) or not callable(attr):
            wrapped = attr  # dtypes, finfo, constants: as numpy's
        else:
            wrapped = _strict(attr)
        setattr(self, name, wrapped)
        return wrapped


def _scipy_special(name):
    import scipy.special
    return _Ufunc(getattr(scipy.special, name))


MODULE = _Namespace(np, __name__="strict_device", ndarray=StrictArray, asarray=_to_strict,
                    array=_to_strict, asnumpy=_asnumpy, scipy_special=_scipy_special)
