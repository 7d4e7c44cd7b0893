"""The data section and its loader: the seed's split, CSV and npz files, and every user error."""
import pickle
import urllib.error

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from sklearn.datasets import fetch_california_housing
from sklearn.model_selection import train_test_split

from tapeflow.training import data_sources as data_module
from tapeflow.training.data_sources import DataConfig, load_data
from tapeflow.training.errors import DataError
from tapeflow.training.section import Section


def config(**fields):
    return TypeAdapter(DataConfig).validate_python(fields)


def load(base_dir, **fields):
    return load_data(config(**fields), base_dir)


def data_error(base_dir, **fields):
    """The message of the DataError loading this config raises (exactly DataError, no subclass)."""
    with pytest.raises(DataError) as caught:
        load(base_dir, **fields)
    assert type(caught.value) is DataError
    return str(caught.value)


def write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")
    return path


TABLE = np.arange(60, dtype=np.float64).reshape(20, 3) / 4  # columns a, b, t


# ---- the seed's split ----

def test_housing_defaults_give_the_seed_split(tmp_path):
    got = load(tmp_path, source="california_housing")
    housing = fetch_california_housing(download_if_missing=False)
    x_full, x_test, y_full, y_test = train_test_split(
        housing.data, housing.target.reshape(-1, 1), random_state=42)
    x_train, x_valid, y_train, y_valid = train_test_split(x_full, y_full, random_state=42)
    assert (len(got.x_train), len(got.x_valid), len(got.x_test)) == (11610, 3870, 5160)
    for name, want in dict(x_train=x_train, y_train=y_train, x_valid=x_valid, y_valid=y_valid,
                           x_test=x_test, y_test=y_test).items():
        array = getattr(got, name)
        assert array.dtype == np.float32 and not array.flags.writeable
        np.testing.assert_array_equal(array, want.astype(np.float32), err_msg=name)
    assert got.feature_names == tuple(housing.feature_names)
    assert got.target_names == ("MedHouseVal",)


def test_no_validation_part_and_the_fingerprint(tmp_path):
    base = load(tmp_path, source="california_housing")
    assert load(tmp_path, source="california_housing").fingerprint == base.fingerprint
    whole = load(tmp_path, source="california_housing", split={"valid_size": 0})
    assert whole.x_valid is None and whole.y_valid is None
    assert (len(whole.x_train), len(whole.x_test)) == (15480, 5160)
    other_seed = load(tmp_path, source="california_housing", split={"seed": 7})
    wide = load(tmp_path, source="california_housing", dtype="float64")
    assert wide.x_train.dtype == np.float64
    prints = {base.fingerprint, whole.fingerprint, other_seed.fingerprint, wide.fingerprint}
    assert len(prints) == 4


def test_a_failed_download_is_a_data_error(tmp_path, monkeypatch):
    def offline():
        raise urllib.error.URLError("no network")
    import sklearn.datasets
    monkeypatch.setattr(sklearn.datasets, "fetch_california_housing", offline)
    message = data_error(tmp_path, source="california_housing")
    assert "no network" in message and "SCIKIT_LEARN_DATA" in message


# ---- CSV ----

def test_csv_round_trip(tmp_path):
    (tmp_path / "runs").mkdir()
    write_csv(tmp_path / "runs" / "table.csv", ["a", "b", "t"], TABLE)
    got = load(tmp_path, source="csv", path="runs/table.csv", targets=["t"], dtype="float64",
               split={"test_size": 0.1, "valid_size": 0.4, "seed": 3})
    x_full, x_test, y_full, y_test = train_test_split(
        TABLE[:, :2], TABLE[:, 2:], test_size=0.1, random_state=3)
    x_train, x_valid, y_train, y_valid = train_test_split(x_full, y_full, test_size=0.4,
                                                          random_state=3)
    for name, want in dict(x_train=x_train, y_train=y_train, x_valid=x_valid, y_valid=y_valid,
                           x_test=x_test, y_test=y_test).items():
        np.testing.assert_array_equal(getattr(got, name), want, err_msg=name)
    assert (got.feature_names, got.target_names) == (("a", "b"), ("t",))


def test_csv_chosen_columns_delimiter_and_absolute_path(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("name;a;b;t\n" + "".join(f"row{i};{a};{b};{t}\n" for i, (a, b, t) in enumerate(TABLE)))
    got = load("/nonexistent", source="csv", path=str(path), delimiter=";", features=["b"],
               targets=["t", "a"], split={"valid_size": 0})
    assert (got.feature_names, got.target_names) == (("b",), ("t", "a"))
    assert got.x_train.shape == (15, 1) and got.y_test.shape == (5, 2)
    rows = np.vstack([got.x_train, got.x_test])[:, 0]
    targets = np.vstack([got.y_train, got.y_test])
    np.testing.assert_array_equal(targets[np.argsort(rows)], TABLE[:, [2, 0]])


def test_csv_errors_name_the_file_row_and_column(tmp_path):
    rows = TABLE.tolist()
    rows[15][1] = "abc"  # the header is row 1: the 16th row of data is row 17
    write_csv(tmp_path / "data.csv", ["a", "rooms", "t"], rows)
    assert data_error(tmp_path, source="csv", path="data.csv", targets=["t"]) == (
        "data.csv: row 17, column 'rooms': 'abc' is not a number")


def test_csv_missing_empty_and_unreadable_files(tmp_path):
    message = data_error(tmp_path, source="csv", path="gone.csv", targets=["t"])
    assert message.startswith("gone.csv: no such file") and str(tmp_path) in message
    (tmp_path / "empty.csv").write_text("")
    assert "empty.csv: the file is empty" in data_error(tmp_path, source="csv", path="empty.csv",
                                                        targets=["t"])
    (tmp_path / "header.csv").write_text("a,t\n\n")
    assert "header.csv: the file has a header but no rows" in data_error(
        tmp_path, source="csv", path="header.csv", targets=["t"])
    (tmp_path / "latin.csv").write_bytes(b"a,t\n1,\xe9\n")
    assert data_error(tmp_path, source="csv", path="latin.csv", targets=["t"]).startswith(
        "latin.csv: cannot read it as a CSV file")


def test_csv_ragged_rows_and_repeated_header(tmp_path):
    (tmp_path / "ragged.csv").write_text("a,t\n1,2\n3,4,5\n")
    assert data_error(tmp_path, source="csv", path="ragged.csv", targets=["t"]) == (
        "ragged.csv: row 3 has 3 cells, the header has 2")
    (tmp_path / "twice.csv").write_text("a,a,t\n1,2,3\n")
    assert "twice.csv: the header names a column twice: 'a'" in data_error(
        tmp_path, source="csv", path="twice.csv", targets=["t"])


def test_csv_unknown_columns_suggest_close_names(tmp_path):
    write_csv(tmp_path / "data.csv", ["rooms", "age", "price"], TABLE)
    message = data_error(tmp_path, source="csv", path="data.csv", features=["roms"],
                         targets=["price"])
    assert message.startswith("data.csv: features names column 'roms'")
    assert "did you mean 'rooms'?" in message
    message = data_error(tmp_path, source="csv", path="data.csv", targets=["value"])
    assert message.startswith("data.csv: targets names column 'value'")
    assert "rooms, age, price" in message and "did you mean" not in message


def test_csv_nan_and_inf_name_the_column_and_first_row(tmp_path):
    rows = TABLE.tolist()
    for i in (3, 9, 12):
        rows[i][1] = "nan" if i != 9 else ""  # an empty cell is a missing value
    write_csv(tmp_path / "data.csv", ["x1", "x2", "t"], rows)
    assert data_error(tmp_path, source="csv", path="data.csv", targets=["t"]) == (
        "data.csv: 3 NaN values in column 'x2' (first at row 5); clean or impute them first")
    rows = TABLE.tolist()
    rows[0][2] = "inf"
    write_csv(tmp_path / "inf.csv", ["x1", "x2", "t"], rows)
    assert data_error(tmp_path, source="csv", path="inf.csv", targets=["t"]).startswith(
        "inf.csv: 1 infinite values in column 't' (first at row 2)")


def test_too_few_rows_for_the_split(tmp_path):
    write_csv(tmp_path / "small.csv", ["a", "t"], [[1, 2], [3, 4], [5, 6]])
    assert load(tmp_path, source="csv", path="small.csv", targets=["t"]).x_train.shape == (1, 1)
    message = data_error(tmp_path, source="csv", path="small.csv", targets=["t"],
                         split={"test_size": 0.5})
    assert message.startswith("small.csv: 3 rows are too few for test_size 0.5 and valid_size 0.25")


# ---- npz ----

def test_npz_round_trip(tmp_path):
    x, y = TABLE[:, :2], TABLE[:, 2]
    np.savez(tmp_path / "arrays.npz", inputs=x, y=y)
    got = load(tmp_path, source="npz", path="arrays.npz", x="inputs", split={"valid_size": 0},
               feature_names=["a", "b"], dtype="float64")
    x_train, x_test, y_train, y_test = train_test_split(x, y.reshape(-1, 1), random_state=42)
    for name, want in dict(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test).items():
        np.testing.assert_array_equal(getattr(got, name), want, err_msg=name)
    assert (got.feature_names, got.target_names) == (("a", "b"), ("y",))
    renamed = load(tmp_path, source="npz", path="arrays.npz", x="inputs", split={"valid_size": 0},
                   feature_names=["a", "c"], dtype="float64")
    assert renamed.fingerprint != got.fingerprint  # the names are part of what a run saw
    np.savez(tmp_path / "two.npz", x=x.astype(np.int32), y=TABLE[:, 1:])
    got = load(tmp_path, source="npz", path="two.npz")
    assert got.x_train.dtype == np.float32 and got.y_train.shape[1] == 2
    assert (got.feature_names, got.target_names) == (("x0", "x1"), ("y0", "y1"))


def test_npz_errors(tmp_path):
    np.savez(tmp_path / "a.npz", features=TABLE, y=TABLE[:, 0])
    assert data_error(tmp_path, source="npz", path="a.npz") == (
        "a.npz: no array named 'x'; the file holds 'features', 'y'")
    np.savez(tmp_path / "b.npz", x=TABLE, y=TABLE[:5, 0])
    assert data_error(tmp_path, source="npz", path="b.npz") == "b.npz: 'x' has 20 rows but 'y' has 5"
    np.savez(tmp_path / "c.npz", x=TABLE, y=TABLE[:, 0])
    assert "c.npz: feature_names gives 2 names for the 3 columns of 'x'" in data_error(
        tmp_path, source="npz", path="c.npz", feature_names=["a", "b"])
    x = TABLE.copy()
    x[[4, 7], 2] = np.nan
    np.savez(tmp_path / "d.npz", x=x, y=TABLE[:, 0])
    assert data_error(tmp_path, source="npz", path="d.npz").startswith(
        "d.npz: 2 NaN values in column 'x2' (first at row 4)")
    np.savez(tmp_path / "e.npz", x=np.array([["a", "b"]]), y=np.array([1.0]))
    assert "e.npz: array 'x' has dtype <U1; it must hold numbers" in data_error(
        tmp_path, source="npz", path="e.npz")
    np.save(tmp_path / "f.npy", TABLE)
    assert "a .npy file holds one array" in data_error(tmp_path, source="npz", path="f.npy")
    (tmp_path / "g.npz").write_bytes(b"")
    assert data_error(tmp_path, source="npz", path="g.npz").startswith("g.npz: not a .npz file")
    assert data_error(tmp_path, source="npz", path="nowhere.npz").startswith(
        "nowhere.npz: no such file")


class _Exploit:
    """Unpickling this would create a file: the loader must refuse it before that."""
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickled_objects_are_refused_unexecuted(tmp_path):
    marker = tmp_path / "unpickled"
    np.savez(tmp_path / "objects.npz", x=np.array([[_Exploit(marker)]], dtype=object),
             y=np.array([1.0]))
    message = data_error(tmp_path, source="npz", path="objects.npz")
    assert message.startswith("objects.npz: cannot read its arrays") and "never unpickled" in message
    (tmp_path / "raw.npz").write_bytes(pickle.dumps({"x": _Exploit(marker)}))
    message = data_error(tmp_path, source="npz", path="raw.npz")
    assert message.startswith("raw.npz: not a .npz file") and "never unpickled" in message
    assert not marker.exists()


# ---- the config section ----

class Run(Section):
    data: DataConfig


def problems(fields):
    with pytest.raises(ValidationError) as caught:
        Run.model_validate({"data": fields})
    return [(".".join(map(str, e["loc"])), e["type"]) for e in caught.value.errors()]


def test_defaults():
    got = Run.model_validate({"data": {"source": "csv", "path": "d.csv", "targets": ["t"]}}).data
    assert (got.split.test_size, got.split.valid_size, got.split.seed) == (0.25, 0.25, 42)
    assert (got.features, got.delimiter, got.dtype) == (None, ",", "float32")
    got = config(source="npz", path="d.npz")
    assert (got.x, got.y, got.feature_names) == ("x", "y", None)
    assert config(source="california_housing", split={"valid_size": 0}).split.valid_size == 0


def test_wrong_types_are_not_coerced():
    assert problems({"source": "california_housing", "split": {"test_size": "0.2"}}) == [
        ("data.california_housing.split.test_size", "float_type")]
    assert problems({"source": "california_housing", "split": {"seed": True}}) == [
        ("data.california_housing.split.seed", "int_type")]
    assert problems({"source": "csv", "path": 3, "targets": "t"}) == [
        ("data.csv.path", "string_type"), ("data.csv.targets", "list_type")]


def test_unknown_keys_and_sources():
    assert problems({"source": "california_housing", "test_size": 0.2}) == [
        ("data.california_housing.test_size", "extra_forbidden")]
    assert problems({"source": "npz", "path": "d.npz", "targets": ["y"]}) == [
        ("data.npz.targets", "extra_forbidden")]
    assert problems({"source": "xls"}) == [("data", "union_tag_invalid")]
    assert problems({"path": "d.csv"}) == [("data", "union_tag_not_found")]


@pytest.mark.parametrize("fields, where, kind", [
    ({"split": {"test_size": 0}}, "split.test_size", "greater_than"),
    ({"split": {"test_size": 1.0}}, "split.test_size", "less_than"),
    ({"split": {"valid_size": -0.1}}, "split.valid_size", "greater_than_equal"),
    ({"split": {"valid_size": 1}}, "split.valid_size", "less_than"),
    ({"dtype": "int8"}, "dtype", "literal_error"),
    ({"targets": []}, "targets", "too_short"),
    ({"features": []}, "features", "too_short"),
    ({"delimiter": ";;"}, "delimiter", "string_too_long"),
    ({"path": ""}, "path", "string_too_short"),
])
def test_impossible_values(fields, where, kind):
    assert problems({"source": "csv", "path": "d.csv", "targets": ["t"], **fields}) == [
        (f"data.csv.{where}", kind)]


def test_a_column_named_twice():
    assert problems({"source": "csv", "path": "d.csv", "features": ["a", "t"],
                     "targets": ["t"]}) == [("data.csv", "value_error")]
