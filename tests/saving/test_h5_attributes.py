"""``saving.h5_attributes.read_attribute`` reads an attribute with h5py's low level (one open,
one read): what it gives must be what ``obj.attrs[name]`` gives, for every kind a loader
reads, and None for the kinds it leaves unread."""
import h5py
import numpy as np
import pytest

from tapeflow.saving.format import LoadError
from tapeflow.saving.h5_attributes import MAX_STRING_BYTES, read_attribute, text


@pytest.fixture(scope="module")
def attributes(tmp_path_factory):
    path = tmp_path_factory.mktemp("attributes") / "a.h5"
    with h5py.File(path, "w", libver="latest") as f:  # (an attribute over 64 kB needs it)
        f.attrs["fixed"] = np.bytes_(b"tapeflow.saved")
        f.attrs["variable"] = "d\u00e9j\u00e0"                      # variable-length UTF-8
        f.attrs.create("ascii", "adam", dtype=h5py.string_dtype("ascii"))
        f.attrs.create("not_utf8", b"\xff\xfe", dtype=h5py.string_dtype("ascii"))
        f.attrs["count"] = np.int64(7)
        f.attrs["rate"] = np.float32(0.5)
        f.attrs["big_endian"] = np.array(3, ">i4")
        f.attrs["vector"] = [1, 2]
        f.attrs["pair"] = np.array((1, 2.0), dtype=[("a", "i4"), ("b", "f8")])
        f.attrs.create("empty", h5py.Empty("f"))
        f.attrs["long"] = np.bytes_(b"x" * (MAX_STRING_BYTES + 1))
    with h5py.File(path, "r") as f:
        yield f


@pytest.mark.parametrize("name", ["fixed", "variable", "ascii", "not_utf8", "count", "rate",
                                  "big_endian"])
def test_a_scalar_string_or_number_reads_as_h5py_reads_it(attributes, name):
    got = read_attribute(attributes, name, "a.h5")
    want = attributes.attrs[name]
    assert type(got) is type(want) and got == want


def test_text_of_each_string_kind(attributes):
    assert text(read_attribute(attributes, "fixed", "a.h5")) == "tapeflow.saved"
    assert text(read_attribute(attributes, "variable", "a.h5")) == "d\u00e9j\u00e0"
    assert text(read_attribute(attributes, "ascii", "a.h5")) == "adam"


@pytest.mark.parametrize("name", ["absent", "vector", "pair", "empty"])
def test_other_kinds_and_absent_ones_are_none_unread(attributes, name):
    assert read_attribute(attributes, name, "a.h5") is None


def test_an_oversized_fixed_string_is_refused_unread(attributes):
    with pytest.raises(LoadError, match=r"a\.h5: attribute 'long' of / is a string of 65537 "
                                        r"bytes, over the 65536"):
        read_attribute(attributes, "long", "a.h5")
