"""Data for models of several named inputs and outputs: ``npz`` and ``csv`` with
``inputs``/``targets`` mappings.

    data:
      source: npz
      path: ../examples/local_data/two_inputs.npz
      inputs: {numbers: x_numbers, extra: x_extra}     # model input name -> array key
      targets: {price: y_price, size: y_size}          # model output name -> array key

For ``csv`` each name maps to a list of columns (``inputs: {numbers: [a, b, c]}``).  The
``Dataset`` then holds dicts ``{name: array}`` in the mapping's order (what ``Model.fit`` takes
keyed by input and output names); its ``feature_names``/``target_names`` are the input and
output names (with one output, the targets are its array).  The rows are split as every source splits them (``split``: the same
``train_test_split`` calls on the row numbers); integer input arrays stay integers (token
ids), the others take ``dtype``.  Whether the names are the model's is checked when the model
is built (multi_output.py).  Without the mappings the sources are ``data_sources.py``'s.

``AnyDataConfig`` is the ``data:`` section with every source.
"""
from typing import Annotated, Optional, Union

import numpy as np
from pydantic import Field, model_validator

from .data_sources import (CaliforniaHousingData, CsvData, Dataset, DigitsData, NpzData,
                           _check_finite, _fingerprint, csv_columns, load_columns, read_csv_rows,
                           read_npz_arrays)
from .errors import DataError
from .text_image_sources import ImageDirectoryData, TextCsvData, _existing, _split_rows

__all__ = ["NamedNpzData", "NamedCsvData", "AnyDataConfig", "SOURCES", "n_rows",
           "read_named_arrays", "input_array"]

ArrayKeys = Annotated[dict[str, Annotated[str, Field(min_length=1)]], Field(min_length=1)]
ColumnLists = Annotated[dict[str, Annotated[list[str], Field(min_length=1)]], Field(min_length=1)]


class NamedNpzData(NpzData):
    inputs: Optional[ArrayKeys] = Field(None, description="model input name -> array key")
    targets: Optional[ArrayKeys] = Field(None, description="model output name -> array key")

    @model_validator(mode="after")
    def _both_mappings(self):
        _check_mappings(self, ("x", "y", "feature_names"))
        return self

    def load(self, base_dir):
        if self.inputs is None:
            return load_columns(self, base_dir)
        name = self.path
        keys = list(self.inputs.values()) + list(self.targets.values())
        arrays = read_named_arrays(_existing(base_dir, self.path, "file"), name, keys)
        x = {k: input_array(arrays[key], self.dtype) for k, key in self.inputs.items()}
        y = {k: _target_array(arrays[key], self.dtype) for k, key in self.targets.items()}
        return _named_dataset(name, x, y, self.split)


class NamedCsvData(CsvData):
    inputs: Optional[ColumnLists] = Field(None, description="model input name -> its columns")
    targets: Union[list[str], ColumnLists] = Field(
        description="the target columns, or model output name -> its columns (with inputs)")

    @model_validator(mode="after")
    def _distinct_columns(self):  # CsvData's check, on the mappings' columns too
        if isinstance(self.targets, list) and self.inputs is None:
            return super()._distinct_columns()
        _check_mappings(self, ("features",))
        named = [c for columns in (*self.inputs.values(), *self.targets.values()) for c in columns]
        repeated = sorted({c for c in named if named.count(c) > 1})
        if repeated:
            raise ValueError(f"columns named twice in inputs/targets: {', '.join(repeated)}")
        return self

    def load(self, base_dir):
        if self.inputs is None:
            return load_columns(self, base_dir)
        name = self.path
        header, rows, numbers = read_csv_rows(_existing(base_dir, self.path, "file"), name,
                                              self.delimiter)

        def columns(mapping, key):
            out = {}
            for part, names in mapping.items():
                missing = [c for c in names if c not in header]
                if missing:
                    raise DataError(f"{name}: data.{key}.{part} names column {missing[0]!r}, "
                                    f"which is not in the header ({', '.join(header)})")
                out[part] = csv_columns(name, header, rows, numbers, names,
                                        self.dtype).astype(self.dtype)
            return out
        return _named_dataset(name, columns(self.inputs, "inputs"),
                              columns(self.targets, "targets"), self.split)


AnyDataConfig = Annotated[Union[CaliforniaHousingData, DigitsData, NamedCsvData, NamedNpzData,
                                TextCsvData, ImageDirectoryData], Field(discriminator="source")]
SOURCES = ("california_housing", "digits", "csv", "npz", "text_csv", "image_directory")


def _check_mappings(config, single_keys):
    """``inputs`` and ``targets`` come together (a mapping each), and without the keys of the
    one-array form."""
    if config.inputs is None:
        if isinstance(config.targets, dict):
            raise ValueError("targets maps output names to data, so inputs must map the "
                             "model's input names too")
        return
    if not isinstance(config.targets, dict):
        raise ValueError("inputs maps the model's input names to data; targets must map its "
                         "output names the same way")
    # (a resolved config holds the defaults: only a changed one is a mistake)
    given = [k for k in single_keys if getattr(config, k) != type(config).model_fields[k].default]
    if given:
        raise ValueError(f"{given[0]} is for one input array; with inputs/targets, each "
                         f"input names its own data")


def n_rows(x):
    """The examples in ``x``: an array, or a dict of arrays of the same length."""
    return len(next(iter(x.values()))) if isinstance(x, dict) else len(x)


def read_named_arrays(path, name, keys):
    """``read_npz_arrays``'s arrays, each checked: numbers, a row per example, finite."""
    arrays = read_npz_arrays(path, name, keys)
    for key, a in arrays.items():
        if a.dtype.kind not in "biuf" or a.ndim == 0 or len(a) == 0:
            raise DataError(f"{name}: array {key!r} has dtype {a.dtype} and shape {a.shape}; "
                            f"it must hold numbers, a row per example")
        flat = a.reshape(len(a), -1).astype(np.float64)
        _check_finite(f"{name}: array {key!r}", flat, [f"{key}[{j}]" for j in
                                                        range(flat.shape[1])], np.arange(len(a)))
    return arrays


def input_array(a, dtype):
    """Integers stay integers (token ids for an Embedding); a column vector is (rows, 1)."""
    a = a.reshape(len(a), 1) if a.ndim == 1 else a
    return a.astype(np.int32) if a.dtype.kind in "biu" else a.astype(dtype)


def _target_array(a, dtype):
    return (a.reshape(len(a), 1) if a.ndim == 1 else a).astype(dtype)


def _named_dataset(name, x, y, split):
    """The split ``Dataset`` of dicts of arrays; every array has the same number of rows."""
    lengths = {key: len(a) for part in (x, y) for key, a in part.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{key} {rows}" for key, rows in lengths.items())
        raise DataError(f"{name}: the inputs and targets must have a row per example each, "
                        f"but their rows differ ({described})")
    train, valid, test = _split_rows(name, n_rows(x), split)

    def part(arrays, rows):
        if rows is None:
            return None
        out = {key: a[rows] for key, a in arrays.items()}
        for a in out.values():
            a.flags.writeable = False
        return out
    parts = [part(x, train), part(y, train), part(x, valid), part(y, valid), part(x, test),
             part(y, test)]
    flat = [None if p is None else a for p in parts for a in (p.values() if p else [None])]
    if len(y) == 1:  # one output: its targets as the array fit takes for a one-output model
        parts[1::2] = [None if p is None else next(iter(p.values())) for p in parts[1::2]]
    return Dataset(*parts, tuple(x), tuple(y), _fingerprint(flat, list(x), list(y)))
