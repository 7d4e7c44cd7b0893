"""HDF5 global heap collections checked before libhdf5 walks one (issue 21 item 4).

Variable-length string attributes (tapeflow's saves before they wrote fixed-length ones,
Keras's files) keep their text in global heap collections.  libhdf5 2.0 decodes a collection
by walking its objects, each one's size saying where the next begins; a damaged size (one
byte) makes a step of 0 bytes and the walk never ends, inside C, where no Python check or
signal reaches it.  So before a variable-length attribute is read, every collection in the
file is walked here the way libhdf5 walks it (``H5HG__cache_heap_deserialize``), and a walk
that would not end exactly at the collection's end is refused.

A collection starts with ``GCOL``, version 1, 3 reserved bytes and its size (8 bytes, the
whole collection, at least 4096); then objects of a 16-byte header (index 2, reference
count 2, reserved 4, size 8) and their data padded to 8 bytes; index 0 is the free space,
whose size counts its header.  Every ``GCOL`` in the file is walked, so any collection that
libhdf5 could load (it checks that signature) is walked first; a file's array data that
happens to hold those bytes is refused too, a cost paid only by files that hold
variable-length attributes.
"""
import mmap
import os
import struct

__all__ = ["damaged_collection"]

_SIGNATURE = b"GCOL\x01\x00\x00\x00"  # signature, version 1, reserved
_HEADER = 16                          # the collection's header, and each object's
_MIN_SIZE = 4096                      # libhdf5's H5HG_MINSIZE


def damaged_collection(path):
    """``None`` if every global heap collection of the HDF5 file at ``path`` walks to its end,
    else a sentence saying where the first one that does not goes wrong."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return None
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            start = data.find(_SIGNATURE)
            while start != -1:
                problem = _walk(data, start, size)
                if problem is not None:
                    return f"the global heap collection at byte {start} {problem}"
                start = data.find(_SIGNATURE, start + 1)
    return None


def _walk(data, start, file_size):
    """Why the collection at ``start`` cannot be walked, or None."""
    if start + _HEADER > file_size:
        return "is cut off"
    (size,) = struct.unpack_from("<Q", data, start + 8)
    if size < _MIN_SIZE or size > file_size - start:
        return f"declares {size} bytes (at least {_MIN_SIZE}, within the file, expected)"
    end, at = start + size, start + _HEADER
    while at < end:
        if at + _HEADER > end:  # too small for an object header: free space, as libhdf5 has it
            return None
        index, _, _, object_size = struct.unpack_from("<HHIQ", data, at)
        step = object_size if index == 0 else _HEADER + object_size + (-object_size) % 8
        if index == 0 and object_size < _HEADER or step > end - at:
            return (f"holds object {index} at byte {at} of size {object_size}, which does not "
                    f"fit in the collection")
        at += step
    return None
