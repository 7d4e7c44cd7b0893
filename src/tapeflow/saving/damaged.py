"""A damaged HDF5 file is a mistake in what the user gave, not a bug of tapeflow's.

libhdf5 checks what it reads and h5py raises what it finds as KeyError, RuntimeError,
OSError, ValueError..., types that would also mean a bug here.  ``reading(path)`` turns the
ones raised inside h5py (the innermost Python frame is h5py's) into one ``LoadError`` naming
the file; everything else passes through, so a bug of tapeflow's keeps its traceback.
Found by ``benchmarks/fuzz_loaders.py`` (byte flips in real saves).
"""
import contextlib
import os

from .format import LoadError

__all__ = ["reading", "raised_in_h5py"]

def raised_in_h5py(error):
    """Whether the innermost frame of ``error`` is h5py's (its Python layer, or its Cython
    modules, which name themselves 'h5py/h5o.pyx')."""
    tb, last = error.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    if last is None:
        return False
    name = last.tb_frame.f_code.co_filename.replace(os.sep, "/")
    return name.startswith("h5py/") or "/h5py/" in name


@contextlib.contextmanager
def reading(path):
    """Convert h5py's errors on a damaged ``path`` into a LoadError naming it."""
    try:
        yield
    except LoadError:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised unless h5py raised it
        if not raised_in_h5py(e):
            raise
        detail = str(e).strip().strip("'\"").splitlines()[0] if str(e).strip() else \
            type(e).__name__
        raise LoadError(f"{os.fspath(path)}: the file is damaged (HDF5 says: {detail[:200]})") \
            from None
