"""The one place that knows which array library holds tensor data.

Every op's array work asks this module for the array module of its inputs
(numpy on the host, CuPy on an NVIDIA GPU), in the style of Chainer's
``get_array_module``: the choice follows the data, never a global switch or an
environment variable read at import time.  CuPy is imported here and nowhere
else, behind a guarded import, so tapeflow runs where CuPy is absent.

New tensors (zeros, initial weights, random draws) are born on the current device of the
thread's context (``tf.device``): ``device_module()`` is that device's array module.
Tests may make "GPU" resolve to a strict CPU stand-in (``use_gpu_module``).
"""
import numpy

from .core.context import PER_THREAD


def _import_cupy():
    """(cupy, None), or (None, why it could not be imported)."""
    try:
        import cupy
    except ImportError as e:
        return None, e
    except Exception as e:  # pragma: no cover - a CUDA runtime that fails to initialise
        return None, e
    return cupy, None  # pragma: no cover - needs CuPy


_cupy, _cupy_error = _import_cupy()
# The array library of "GPU" devices and its array type: CuPy, or a test's stand-in.
_GPU_XP = _cupy
_GPU_TYPE = None if _cupy is None else _cupy.ndarray
_GPU_STAND_IN = False

# Keras's backend.epsilon(): the floor of divisions and probability clips in losses and layers.
EPSILON = 1e-7

__all__ = ["EPSILON", "numpy", "array_module", "to_host", "asarray", "is_array", "gpu_available",
           "special_function", "device_module", "to_device", "gpu_count", "gpu_missing",
           "gpu_module", "use_gpu_module", "module_of"]

_NO_CUPY = ("CuPy is not installed; install it with pip install 'tapeflow[gpu]' "
            "(needs an NVIDIA GPU and CUDA 12)")


def gpu_count():
    """How many GPUs the GPU array library sees (0 without CuPy)."""
    if _GPU_STAND_IN:
        return 1
    if _GPU_XP is None:
        return 0
    try:  # pragma: no cover - needs CuPy
        return int(_GPU_XP.cuda.runtime.getDeviceCount())
    except Exception:  # pragma: no cover
        return 0


def gpu_missing():
    """Why no GPU can be used (which of CuPy or a device is missing), or None when one can."""
    if _GPU_STAND_IN:
        return None
    if _GPU_XP is None:
        if isinstance(_cupy_error, ImportError):
            return _NO_CUPY
        return f"CuPy is installed but failed to load ({_cupy_error})"
    try:
        count = int(_GPU_XP.cuda.runtime.getDeviceCount())
    except Exception as e:  # noqa: BLE001 - CuPy raises its own CUDA errors
        return f"CuPy is installed but finds no usable GPU ({e})"
    if count == 0:
        return "CuPy is installed but this machine has no GPU"
    return None


def gpu_available():
    """True when CuPy imported and can see a GPU."""
    return gpu_missing() is None


def gpu_module():
    """The array module of GPU devices (CuPy, or a test's stand-in); None without one."""
    return _GPU_XP


def use_gpu_module(xp, array_type):
    """Test hook: make GPU devices hold ``array_type`` arrays of array module ``xp``.

    Returns the previous setting, to pass back as ``use_gpu_module(*previous)``; ``xp`` None
    restores CuPy.  Only the strict stand-in of the tests (tests/strict_device) uses it.
    """
    global _GPU_XP, _GPU_TYPE, _GPU_STAND_IN
    previous = (_GPU_XP if _GPU_STAND_IN else None, _GPU_TYPE if _GPU_STAND_IN else None)
    if xp is None:
        _GPU_XP, _GPU_TYPE, _GPU_STAND_IN = _cupy, None if _cupy is None else _cupy.ndarray, False
    else:
        _GPU_XP, _GPU_TYPE, _GPU_STAND_IN = xp, array_type, True
    return previous


def device_module():
    """The array module of the thread's current device (numpy unless inside a GPU ``tf.device``)."""
    return PER_THREAD.context.xp


def module_of(value):
    """The array module of ``value``'s data; for a value with no data (a traced tensor's
    shape-and-dtype stand-in), that of the current device, where its trace runs."""
    if is_array(value):
        return array_module(value)
    return PER_THREAD.context.xp


def to_device(value, like=None):
    """``value`` (host data) on the device of array ``like``, or on the current device."""
    xp = PER_THREAD.context.xp if like is None else array_module(like)
    return xp.asarray(value)


def on_device_of(like, value):
    """``value`` (host data, or an array on any device) on the device of array ``like``: an
    explicit copy when it is elsewhere (an index or a loaded weight), itself when it is there.
    A traced tensor's stand-in ``like`` has no data: its device is the current one."""
    xp = module_of(like)
    if is_array(value) and array_module(value) is xp:
        return value
    return xp.asarray(to_host(value))


def array_module(*arrays):
    """numpy, or the GPU's array module when any of ``arrays`` lives on a GPU."""
    if _GPU_TYPE is not None:
        for a in arrays:
            if isinstance(a, _GPU_TYPE):
                return _GPU_XP
    return numpy


def special_function(like, name):
    """``scipy.special.<name>``, or CuPy's twin when ``like`` is on a GPU (e.g. "erf")."""
    xp = array_module(like)
    if xp is not numpy:
        if _GPU_STAND_IN:
            return xp.scipy_special(name)
        import cupyx.scipy.special  # pragma: no cover - needs a GPU
        return getattr(cupyx.scipy.special, name)  # pragma: no cover
    import scipy.special
    return getattr(scipy.special, name)


def is_array(value):
    """True for an array or array scalar of a supported array library."""
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        return True
    return _GPU_TYPE is not None and isinstance(value, _GPU_TYPE)


def asarray(value, dtype=None, like=None):
    """``value`` as an array of the library that holds ``like`` (numpy by default)."""
    xp = numpy if like is None else array_module(like)
    return xp.asarray(value, dtype=dtype)


def to_host(value):
    """A numpy array (or numpy scalar) with the same contents as ``value``."""
    if _GPU_TYPE is not None and isinstance(value, _GPU_TYPE):
        return _GPU_XP.asnumpy(value)
    return value
