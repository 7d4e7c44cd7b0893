"""Kernels compiled with numba (the optional ``jit`` extra): whether they load, and for which arrays.

A kernel module (``ops/_rnn_numba.py``, ``optimizers/_adam_numba.py``) imports numba at its
top, so it is imported here, on first use, only where numba imports and ``TAPEFLOW_JIT`` is not
``0``.
Importing numba and a kernel module costs a process about 1.5 s (numba's own start, then the
kernels read from its on-disk cache), so callers use them only on arrays large enough to repay
it, and everything else keeps numpy's code: CuPy and the strict device's arrays, other dtypes.
"""
import importlib
import os

import numpy as np

__all__ = ["kernels", "loaded", "plain"]

_LOADED = {}


def kernels(module):
    """The kernel module ``module`` (``"tapeflow.ops._rnn_numba"``), or None where numba is
    missing or off."""
    if module not in _LOADED:
        _LOADED[module] = None
        if os.environ.get("TAPEFLOW_JIT", "1") != "0":
            try:
                import numba  # noqa: F401 - the optional jit extra
            except ImportError:
                pass
            else:
                _LOADED[module] = importlib.import_module(module)
    return _LOADED[module]


def loaded():
    """Whether numba's start has been paid in this process (a kernel module is loaded): from
    then on kernels that give numpy's bits are worth taking on small arrays too."""
    return any(module is not None for module in _LOADED.values())


def plain(*arrays, dtype=np.float32, contiguous=False):
    """Whether every one of ``arrays`` is a numpy array of ``dtype`` (the kernels are compiled
    for no other), and C-contiguous where asked."""
    return all(type(a) is np.ndarray and a.dtype == dtype and
               (a.flags.c_contiguous or not contiguous) for a in arrays)
