"""Reading the HDF5 attributes tapeflow's loaders read (a format name, a checksum, a count, a
layer's or optimizer's name), checking each one's storage before its value is read.

An attribute is read only if it is a scalar string or number of a plausible size; any other
kind is None, unread.  A variable-length one (what tapeflow wrote before, and Keras writes)
lives in the HDF5 global heap, where one damaged byte makes libhdf5 loop forever (issue 21
item 4): its file's heap collections are walked first (``global_heap``), and a damaged one is
a LoadError naming the file and the attribute.
"""
import os

import numpy as np

from .errors import LoadError

__all__ = ["read_attribute", "text", "MAX_STRING_BYTES"]

MAX_STRING_BYTES = 64 << 10  # a name or a digest; more is not one tapeflow wrote
_VARIABLE_REFERENCE_BYTES = 16  # what a scalar variable-length attribute stores in place
_checked_files = {}  # (path, size, mtime, HDF5 file number) -> None or the heap's problem


def read_attribute(obj, name, where):
    """The value of attribute ``name`` of the h5py object ``obj`` (``where`` names the file in
    messages): a str, bytes or numpy number, or None where it is absent or of another kind."""
    # h5py's low level: the attribute is opened and read once (``obj.attrs[name]`` opens it
    # again, and each ``obj.attrs`` makes a manager object; loaders read one per dataset)
    from h5py import h5a, h5t
    key = name.encode("utf-8")
    if not h5a.exists(obj.id, key):
        return None
    attribute = h5a.open(obj.id, key)
    if attribute.shape != ():
        return None
    kind = attribute.get_type()
    stored = attribute.get_storage_size()
    variable = isinstance(kind, h5t.TypeStringID) and kind.is_variable_str()
    if variable:
        if stored > _VARIABLE_REFERENCE_BYTES:
            raise LoadError(f"{where}: attribute '{name}' of {obj.name} stores {stored} bytes "
                            f"where a string's reference takes {_VARIABLE_REFERENCE_BYTES}; the "
                            f"file is damaged")
        problem = _heap_problem(obj)
        if problem is not None:
            raise LoadError(f"{where}: attribute '{name}' of {obj.name} cannot be read safely: "
                            f"{problem}; the file is damaged")
    elif isinstance(kind, h5t.TypeStringID):
        if stored > MAX_STRING_BYTES:
            raise LoadError(f"{where}: attribute '{name}' of {obj.name} is a string of {stored} "
                            f"bytes, over the {MAX_STRING_BYTES} a name or checksum takes")
    elif not isinstance(kind, (h5t.TypeIntegerID, h5t.TypeFloatID)):
        return None  # another kind (a compound, a sequence, a reference): not read
    value = np.zeros((), attribute.dtype)
    attribute.read(value, mtype=h5t.py_create(attribute.dtype))
    value = value[()]
    if variable:  # the bytes of a variable-length string, decoded as h5py decodes them
        return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else None
    return value


def text(value):
    """A string attribute's value as str: fixed-length ones are bytes, variable-length str;
    None where it is neither (or not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _heap_problem(obj):
    """What is wrong with the global heap of ``obj``'s file, or None (checked once a file)."""
    from .global_heap import damaged_collection
    path = obj.file.filename
    try:
        status = os.stat(path)
    except (OSError, TypeError, ValueError):
        return "its file is not on disk, so its global heap cannot be checked"
    key = (path, status.st_size, status.st_mtime_ns, obj.file.id.fileno)
    if key not in _checked_files:
        if len(_checked_files) > 64:
            _checked_files.clear()
        _checked_files[key] = damaged_collection(path)
    return _checked_files[key]
