"""The ``data:`` section of a run config, and the loader that turns it into split arrays.

Contract:

- ``DataConfig`` is a union told apart by ``source``: ``california_housing``
  (scikit-learn's ``fetch_california_housing``, which downloads and caches the data
  set itself, or reads it from ``SCIKIT_LEARN_DATA``), ``digits`` (scikit-learn's bundled
  ``load_digits``: 1,797 8x8 images as 64 pixel columns of intensities 0..16, the digit 0-9
  as a class label; no download), ``csv`` (a header row, then
  one row of numbers per example) or ``npz`` (``numpy.savez`` arrays, read with
  ``allow_pickle=False``: nothing in a data file is ever unpickled).  Every source
  has ``split`` and ``dtype``.  pydantic puts the source in an error's location:
  ``data.csv.targets: Field required``.
- ``load_data(config, base_dir)`` returns a frozen ``Dataset``: read-only arrays,
  ``y`` 2-D with one column per target, and a sha256 ``fingerprint`` of the arrays
  (with their shapes, dtypes and names) that a resumed run compares; ``n_classes`` is the
  number of classes when the targets are class labels (``digits``), else None.
- The split is the seed program's: ``train_test_split(x, y, test_size, random_state=seed)``,
  then the training part split again by ``valid_size`` with the same seed
  (``valid_size: 0`` keeps no validation part).
- Every problem with the data is one ``DataError`` naming the file, and the row and
  column of a bad cell.  CSV rows are counted as a spreadsheet counts them (the
  header is row 1); an empty CSV cell is a missing value and counts as NaN.
  Array rows are numpy indices (from 0).
"""
import csv
import dataclasses
import difflib
import hashlib
import math
import os
import pathlib
import zipfile
from typing import Annotated, Literal, Optional, Union

import numpy as np
from pydantic import Field, model_validator

from .errors import DataError
from .section import Section

__all__ = ["SplitConfig", "DataSource", "CaliforniaHousingData", "DigitsData", "CsvData", "NpzData",
           "DataConfig", "Dataset", "load_data", "load_columns", "read_npz_arrays", "read_csv_rows", "csv_columns"]


class SplitConfig(Section):
    """How the rows are split: a test part, then a validation part of what is left."""
    test_size: float = Field(0.25, gt=0, lt=1)
    valid_size: float = Field(0.25, ge=0, lt=1)
    seed: int = Field(42, ge=0, lt=2 ** 32)  # numpy's seeds


class DataSource(Section):
    """What every source has: the split and the float dtype of the arrays."""
    split: SplitConfig = SplitConfig()
    dtype: Literal["float32", "float64"] = "float32"


class CaliforniaHousingData(DataSource):
    source: Literal["california_housing"]


class DigitsData(DataSource):
    source: Literal["digits"]


class CsvData(DataSource):
    source: Literal["csv"]
    path: str = Field(min_length=1)
    targets: list[str] = Field(min_length=1)
    features: Optional[list[str]] = Field(None, min_length=1)  # None: every column but the targets
    delimiter: str = Field(",", min_length=1, max_length=1)

    @model_validator(mode="after")
    def _distinct_columns(self):
        named = self.targets + (self.features or [])
        repeated = sorted({c for c in named if named.count(c) > 1})
        if repeated:
            raise ValueError(f"columns named twice in features/targets: {', '.join(repeated)}")
        return self


class NpzData(DataSource):
    source: Literal["npz"]
    path: str = Field(min_length=1)
    x: str = Field("x", min_length=1)
    y: str = Field("y", min_length=1)
    feature_names: Optional[list[str]] = Field(None, min_length=1)


DataConfig = Annotated[Union[CaliforniaHousingData, DigitsData, CsvData, NpzData],
                       Field(discriminator="source")]


@dataclasses.dataclass(frozen=True)
class Dataset:
    """The split arrays (read-only); ``x_valid``/``y_valid`` are None without validation."""
    x_train: np.ndarray = dataclasses.field(repr=False)
    y_train: np.ndarray = dataclasses.field(repr=False)
    x_valid: Optional[np.ndarray] = dataclasses.field(repr=False)
    y_valid: Optional[np.ndarray] = dataclasses.field(repr=False)
    x_test: np.ndarray = dataclasses.field(repr=False)
    y_test: np.ndarray = dataclasses.field(repr=False)
    feature_names: tuple[str, ...]
    target_names: tuple[str, ...]
    fingerprint: str
    n_classes: Optional[int] = None
    # a text source's vocabulary (token id -> token), written beside the run for predict
    vocabulary: Optional[tuple[str, ...]] = dataclasses.field(default=None, repr=False)


def load_data(config: DataConfig, base_dir: Union[str, os.PathLike]) -> Dataset:
    """Read, check and split the data; relative paths resolve against ``base_dir``."""
    if hasattr(config, "load"):  # text_image_sources' and named_sources' read and split themselves
        return config.load(base_dir)
    return load_columns(config, base_dir)


def load_columns(config, base_dir):
    """``load_data`` for the sources of one feature array and one target array."""
    n_classes = None
    if isinstance(config, CaliforniaHousingData):
        name, x, y, features, targets = _read_housing()
    elif isinstance(config, DigitsData):
        name, x, y, features, targets = _read_digits()
        n_classes = 10
    else:
        path = pathlib.Path(base_dir, pathlib.Path(config.path).expanduser())
        if not path.is_file():
            where = "" if str(path) == config.path else f" (looked for {path})"
            raise DataError(f"{config.path}: no such file{where}")
        read = _read_csv if isinstance(config, CsvData) else _read_npz
        name = config.path
        x, y, features, targets = read(config, path, name)
    from sklearn.model_selection import train_test_split  # imported only to load data

    split = config.split
    _check_sizes(name, len(x), split)
    x, y = x.astype(config.dtype), y.astype(config.dtype)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=split.test_size, random_state=split.seed)
    x_valid = y_valid = None
    if split.valid_size > 0:
        x_train, x_valid, y_train, y_valid = train_test_split(
            x_train, y_train, test_size=split.valid_size, random_state=split.seed)
    arrays = [x_train, y_train, x_valid, y_valid, x_test, y_test]
    for a in arrays:
        if a is not None:
            a.flags.writeable = False
    return Dataset(*arrays, tuple(features), tuple(targets),
                   _fingerprint(arrays, features, targets), n_classes)


def _read_housing():
    from sklearn.datasets import fetch_california_housing

    try:
        housing = fetch_california_housing()
    except OSError as e:
        raise DataError(f"california_housing: cannot download the data set ({e}); with no "
                        "network, set SCIKIT_LEARN_DATA to a folder holding scikit-learn's "
                        "cal_housing_py3.pkz") from None
    x, y = housing.data, housing.target.reshape(-1, 1)
    features, targets = list(housing.feature_names), list(housing.target_names)
    _check_finite("california_housing", np.hstack([x, y]), features + targets, np.arange(len(x)))
    return "california_housing", x, y, features, targets


def _read_digits():
    from sklearn.datasets import load_digits

    digits = load_digits()  # bundled with scikit-learn: read from its package, never downloaded
    # the raw intensities, as a user's file of pixels holds them (a config's model scales them)
    x, y = digits.data, digits.target.reshape(-1, 1)
    return "digits", x, y, list(digits.feature_names), ["digit"]


def _read_csv(config, path, name):
    header, rows, row_numbers = read_csv_rows(path, name, config.delimiter)
    for key in ("targets", "features"):
        _require_columns(name, header, getattr(config, key) or [], key)
    features = config.features or [c for c in header if c not in config.targets]
    if not features:
        raise DataError(f"{name}: no feature columns are left once the targets are taken out")
    table = csv_columns(name, header, rows, row_numbers, features + config.targets, config.dtype)
    return table[:, :len(features)], table[:, len(features):], features, config.targets


def read_csv_rows(path, name, delimiter=","):
    """``(header, rows, row numbers)`` of a CSV file with a header row, its shape checked."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f, delimiter=delimiter, skipinitialspace=True)
            header = [c.strip() for c in next(reader, [])]
            rows, row_numbers = [], []
            for row in reader:
                if row:  # a blank line is not a row of data
                    rows.append(row)
                    row_numbers.append(reader.line_num)
    except FileNotFoundError:
        raise DataError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"{name}: cannot read it as a CSV file ({e})") from None
    if not header:
        raise DataError(f"{name}: the file is empty (a CSV file needs a header row of column names)")
    if not rows:
        raise DataError(f"{name}: the file has a header but no rows of data")
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise DataError(f"{name}: the header names a column twice: {', '.join(map(repr, repeated))}")
    for row, number in zip(rows, row_numbers):
        if len(row) != len(header):
            raise DataError(f"{name}: row {number} has {len(row)} cells, the header has {len(header)}")
    return header, rows, row_numbers


def _require_columns(name, header, columns, key):
    for column in columns:
        if column not in header:
            close = difflib.get_close_matches(column, header, n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise DataError(f"{name}: {key} names column {column!r}, which is not in the "
                            f"header ({', '.join(header)}){hint}")


def csv_columns(name, header, rows, row_numbers, columns, dtype):
    """The named columns of ``read_csv_rows``'s rows as one float64 array, every cell a
    finite number in ``dtype``'s range (else a DataError naming its row and column)."""
    table = np.empty((len(rows), len(columns)))
    for j, column in enumerate(columns):
        k = header.index(column)
        for i, row in enumerate(rows):
            table[i, j] = _number(row[k], name, row_numbers[i], column)
    _check_finite(name, table, columns, np.array(row_numbers), dtype)
    return table


def _number(cell, name, row, column):
    cell = cell.strip()
    if not cell:
        return math.nan
    try:
        return float(cell)
    except ValueError:
        raise DataError(f"{name}: row {row}, column {column!r}: {cell!r} is not a number") from None


def _read_npz(config, path, name):
    arrays = read_npz_arrays(path, name, (config.x, config.y))
    x, y = arrays[config.x], arrays[config.y]
    for key, a, ndims in ((config.x, x, (2,)), (config.y, y, (1, 2))):
        if a.dtype.kind not in "biuf":
            raise DataError(f"{name}: array {key!r} has dtype {a.dtype}; it must hold numbers")
        if a.ndim not in ndims or len(a) == 0:
            raise DataError(f"{name}: array {key!r} has shape {a.shape}; expected "
                            f"{'(rows, features)' if key == config.x else '(rows,) or (rows, targets)'}")
    if len(x) != len(y):
        raise DataError(f"{name}: {config.x!r} has {len(x)} rows but {config.y!r} has {len(y)}")
    y = y.reshape(len(y), -1)
    features = config.feature_names or [f"{config.x}{j}" for j in range(x.shape[1])]
    if len(features) != x.shape[1]:
        raise DataError(f"{name}: feature_names gives {len(features)} names for the "
                        f"{x.shape[1]} columns of {config.x!r}")
    targets = [config.y] if y.shape[1] == 1 else [f"{config.y}{j}" for j in range(y.shape[1])]
    _check_finite(name, np.hstack([x, y]).astype(np.float64), features + targets, np.arange(len(x)),
                  config.dtype)
    return x, y, features, targets


def read_npz_arrays(path, name, keys):
    """``{key: array}`` read from a ``numpy.savez`` file (never unpickled); one DataError
    naming a missing key or an array that cannot be read."""
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise DataError(f"{name}: not a .npz file of numeric arrays (numpy.savez); data files "
                        f"are never unpickled ({e})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise DataError(f"{name}: a .npy file holds one array; save the arrays with numpy.savez")
    with npz:
        for key in keys:
            if key not in npz.files:
                raise DataError(f"{name}: no array named {key!r}; the file holds "
                                f"{', '.join(map(repr, npz.files)) or 'no arrays'}")
        try:
            return {key: npz[key] for key in keys}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
            raise DataError(f"{name}: cannot read its arrays; they must hold numbers, as "
                            f"arrays of Python objects are never unpickled ({e})") from None


def _check_finite(name, table, columns, row_numbers, dtype="float64"):
    """Every value finite, and still finite once cast to ``dtype`` (1e39 is float32's inf)."""
    bad = ~np.isfinite(table)
    if not bad.any():
        limit = np.finfo(dtype).max
        past = np.abs(table) > limit
        if past.any():
            j = int(past.any(axis=0).argmax())
            raise DataError(f"{name}: {past[:, j].sum()} values in column {columns[j]!r} (first "
                            f"at row {row_numbers[past[:, j].argmax()]}) are past {dtype}'s "
                            f"range (magnitude above {limit:.4g})")
        return
    j = int(bad.any(axis=0).argmax())
    column = table[:, j]
    nan, inf = np.isnan(column).sum(), np.isinf(column).sum()
    what = "NaN" if not inf else "infinite" if not nan else "NaN or infinite"
    first = row_numbers[bad[:, j].argmax()]
    raise DataError(f"{name}: {nan + inf} {what} values in column {columns[j]!r} (first at row "
                    f"{first}); clean or impute them first")


def _check_sizes(name, rows, split):
    """The sizes train_test_split will give; refuse a split that leaves a part empty."""
    train = rows - math.ceil(split.test_size * rows)
    if split.valid_size > 0:
        train -= math.ceil(split.valid_size * train)
    if train < 1:
        raise DataError(f"{name}: {rows} rows are too few for test_size {split.test_size} and "
                        f"valid_size {split.valid_size}: no rows are left to train on")


def _fingerprint(arrays, features, targets):
    digest = hashlib.sha256(repr((features, targets)).encode())
    for a in arrays:
        header = "none" if a is None else f"{a.dtype.str}{a.shape}"
        digest.update(header.encode())
        if a is not None:
            digest.update(np.ascontiguousarray(a).tobytes())
    return digest.hexdigest()
