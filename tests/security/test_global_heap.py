"""Issue 21 item 4: an old save's variable-length string attributes live in the HDF5 global
heap, where one damaged byte (an object's size) made libhdf5 loop forever on reading them.
Their storage is checked first: the heap is walked as libhdf5 walks it, and a walk that would
not end is one LoadError naming the file and the attribute."""
import struct

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving.format import LoadError
from tapeflow.saving.global_heap import damaged_collection


def _old_save(tmp_path):
    """A .keras file with its string attributes variable-length, as tapeflow wrote before."""
    path = str(tmp_path / "old.keras")
    tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(1)]).save(path)
    with h5py.File(path, "r+") as f:
        for key in ("format", "json_sha256"):
            f.attrs[key] = f.attrs[key].decode()
    return path


def _heap_objects(data):
    """``[(index, offset of its size field), ...]`` of the file's one global heap."""
    at = data.index(b"GCOL") + 16
    found = []
    while True:
        index, _, _, size = struct.unpack_from("<HHIQ", data, at)
        found.append((index, at + 8))
        if index == 0:
            return found
        at += 16 + size + (-size) % 8


def _damage(path, index, value):
    """Set the low byte of the size of heap object ``index`` (0: the free space)."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    offset = dict(_heap_objects(data))[index]
    data[offset] = value
    with open(path, "wb") as f:
        f.write(data)


def test_an_old_save_with_an_undamaged_heap_loads(tmp_path):
    path = _old_save(tmp_path)
    assert damaged_collection(path) is None
    x = np.ones((1, 2), np.float32)
    model = tf.keras.models.load_model(path)
    assert model(x).shape == (1, 1)


def test_a_damaged_object_size_is_refused_before_libhdf5_walks_the_heap(tmp_path):
    """The size of the first object (the format name, 14 bytes) set to 255: libhdf5 then
    meets a free-space entry of size 0 and never moves past it."""
    path = _old_save(tmp_path)
    _damage(path, 1, 0xFF)
    with pytest.raises(LoadError, match=r"old\.keras: attribute 'format' of / cannot be read "
                       r"safely: the global heap collection at byte \d+ holds object 0 at byte "
                       r"\d+ of size 0, which does not fit"):
        tf.keras.models.load_model(path)


def test_a_free_space_entry_of_size_zero_is_refused(tmp_path):
    path = _old_save(tmp_path)
    _damage(path, 0, 0x00)
    with h5py.File(path, "r") as f:
        assert f.attrs.get_id("json_sha256").get_storage_size() == 16  # only its reference
    assert "holds object 0" in damaged_collection(path)
    with pytest.raises(LoadError, match=r"attribute 'format' of / cannot be read safely"):
        tf.keras.models.load_model(path)
