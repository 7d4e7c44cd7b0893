"""bfloat16 in saves: the dtype name a document may hold, and arrays in HDF5 as Keras 3 stores them.

numpy has no bfloat16 (ml_dtypes, the ``[bfloat16]`` extra, adds it as a 2-byte dtype of
kind 'V') and HDF5 has no bfloat16 type, so h5py writes such an array as a 2-byte *opaque*
dataset.  Keras 3 (``saving_lib.H5IOStore``) marks that dataset with the string attribute
``dtype = "bfloat16"`` and reads it back as ``ml_dtypes.bfloat16``; tapeflow writes and reads
the same, so the bits round-trip and a Keras 3 reader sees a ``.weights.h5`` as its own.
"""
import numpy as np

from ..dtypes import numpy_dtype
from .errors import LoadError
from .h5_attributes import read_attribute, text

__all__ = ["EXTENSION_DTYPES", "extension_dtype", "is_extension", "create_dataset",
           "stored_dtype"]

EXTENSION_DTYPES = ("bfloat16",)
_MARK = "dtype"  # the attribute Keras 3 marks a bfloat16 dataset with


def is_extension(dtype):
    """Whether numpy ``dtype`` is one of ``EXTENSION_DTYPES`` (ml_dtypes' bfloat16)."""
    return dtype.kind == "V" and dtype.name in EXTENSION_DTYPES


def extension_dtype(name, where):
    """The numpy dtype of an extension dtype's name from a file; a LoadError naming the extra
    to install where ml_dtypes is missing."""
    try:
        return numpy_dtype(name)
    except TypeError as missing:
        raise LoadError(f"{where}: the save holds {name} values: {missing}") from None


def create_dataset(group, name, array, **kwargs):
    """``group[name] = array`` for an extension-dtype array: an opaque dataset of its bytes,
    marked with its dtype's name as Keras 3 marks it (a variable-length string)."""
    dataset = group.create_dataset(name, data=array, **kwargs)
    dataset.attrs[_MARK] = array.dtype.name
    return dataset


def stored_dtype(dataset, where):
    """The dtype ``dataset`` holds: its HDF5 one, or an extension dtype for an opaque dataset
    of that dtype's size marked with its name."""
    if dataset.dtype.kind != "V" or dataset.dtype.fields is not None:
        return dataset.dtype
    name = text(read_attribute(dataset, _MARK, where))
    if name not in EXTENSION_DTYPES:
        return dataset.dtype  # unmarked raw bytes: the caller's dtype check refuses them
    dtype = extension_dtype(name, where)
    if dataset.dtype.itemsize != dtype.itemsize:
        raise LoadError(f"{where}: dataset {dataset.name!r} is marked {name} but holds "
                        f"{dataset.dtype.itemsize}-byte elements")
    return dtype
