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
import warnings

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
                _LOADED[module] = _imported(module)
    return _LOADED[module]


def _imported(module):
    """The kernel module, or None and a warning where numba cannot load it.  The usual
    cause: numba finds nowhere to write its cache (site-packages read-only and no writable
    home: containers, Nix, clusters) and refuses ``cache=True`` functions at import.  numpy's
    code then runs instead, slower.  The cache is not redirected to a shared
    temporary directory: numba's cache files are pickles, and loading one someone else could
    write would run their code."""
    try:
        return importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - any failure to load leaves numpy's code
        warnings.warn(
            f"tapeflow: numba's compiled kernels ({module}) did not load, so numpy's code runs "
            f"instead: {type(error).__name__}: {error}. Where numba has no writable cache "
            f"directory, set NUMBA_CACHE_DIR to a directory of your own; TAPEFLOW_JIT=0 "
            f"leaves numba out.", RuntimeWarning, stacklevel=4)
        return None


def loaded():
    """Whether numba's start has been paid in this process (a kernel module is loaded): from
    then on kernels that give numpy's bits are worth taking on small arrays too."""
    return any(module is not None for module in _LOADED.values())


def plain(*arrays, dtype=np.float32, contiguous=False):
    """Whether every one of ``arrays`` is a numpy array of ``dtype`` (the kernels are compiled
    for no other), and C-contiguous where asked."""
    return all(type(a) is np.ndarray and a.dtype == dtype and
               (a.flags.c_contiguous or not contiguous) for a in arrays)
