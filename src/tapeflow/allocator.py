"""Keep freed memory in the process (glibc), so a compiled step does not fault its pages anew.

glibc returns every block above its mmap threshold (128 KiB at first, growing to at most
32 MiB as the program frees large blocks) to the operating system when it is freed, and trims
the top of the heap past 128 KiB.  A training step allocates the same large temporaries at
every call, so each call maps them again and touches every page afresh: about 5,000 minor page
faults a call on the housing MLP at batch 8,192 (issue 22), a third of its time.  Raising both
thresholds keeps those blocks for the next call, as PyTorch's caching allocator and jemalloc do;
peak memory does not grow (the same blocks are reused).  Arrays above the 32 MiB maximum still
come from mmap.

``keep_freed_memory()`` runs once when tapeflow is imported; ``TAPEFLOW_KEEP_FREED_MEMORY=0``
leaves glibc's defaults.  Elsewhere (macOS, Windows, musl) it does nothing.
"""
import ctypes
import ctypes.util
import os
import sys

__all__ = ["keep_freed_memory", "KEPT"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024    # glibc's ceiling for the mmap threshold on 64 bits
_TRIM_THRESHOLD = 512 * 1024 * 1024       # free heap kept at the top before giving it back

KEPT = {"done": False}


def keep_freed_memory():
    """Raise glibc's mmap and trim thresholds (once); True where they were set."""
    if KEPT["done"] or os.environ.get("TAPEFLOW_KEEP_FREED_MEMORY", "1") == "0":
        return KEPT["done"]
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: musl has no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    KEPT["done"] = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    return KEPT["done"]
