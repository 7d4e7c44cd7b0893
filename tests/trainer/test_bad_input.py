"""Every bad input to the ``tapeflow`` command, through the real command in a subprocess.

Each test gives one mistake (in a config, a ``--set``, a data file, a checkpoint, an
output path) and checks what a user sees: exit status 2, no traceback, one message
on stderr naming what is wrong and where (the file, the key path, the row and
column), and that nothing that existed before was overwritten or lost.
Checkpoints crafted to run code (a module as the model's class, a pickle in an
array) must be refused or read as data: a marker file shows that nothing ran.
"""
import dataclasses
import importlib.util
import json
import os
import pathlib
import pickle
import shutil

import h5py
import numpy as np
import pytest
import yaml

from .helpers import (SMALL, assert_user_error, cli, rewrite, small_config, tree_digest,
                      write_config)

pytestmark = pytest.mark.child_process  # every test reads what the command or a run it made leaves

# The commands run in other directories than this process: a relative data folder (as the
# documented test command gives it) must be made absolute for them.
DATA_ENV = {"SCIKIT_LEARN_DATA": os.path.abspath(os.environ["SCIKIT_LEARN_DATA"])} \
    if "SCIKIT_LEARN_DATA" in os.environ else {}

# One row per example of the housing features, in the order the model takes them.
FEATURES = ["MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
            "Latitude", "Longitude"]


def tapeflow(*args, cwd):
    """``tapeflow ARGS...`` run in ``cwd``."""
    return cli(*args, cwd=cwd, env=DATA_ENV)


def assert_refused(result, *fragments):
    """``assert_user_error``, and the message is all that stderr holds: one line (each case
    here has one problem), no warnings before it."""
    assert_user_error(result, *fragments)
    assert result.stderr.startswith("tapeflow "), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def train_refused(tmp_path, config, *args, fragments):
    """``tapeflow train CONFIG --output run ARGS`` refused with ``fragments`` in its message;
    the config file is unchanged and no run directory was made."""
    path = tmp_path / "bad.yaml"
    if isinstance(config, str):
        path.write_text(config)
    else:
        write_config(path, config)
    before = path.read_bytes()
    result = tapeflow("train", path.name, "--output", "run", *args, cwd=tmp_path)
    assert_refused(result, *fragments)
    assert path.read_bytes() == before
    assert not (tmp_path / "run").exists()
    return result


def write_csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "".join(
        ",".join(map(str, row)) + "\n" for row in rows))
    return path


def csv_config(path):
    return small_config(data={"source": "csv", "path": str(path), "targets": ["y"],
                              "split": {"test_size": 0.25, "valid_size": 0.25, "seed": 1}})


@dataclasses.dataclass
class Trained:
    run: pathlib.Path           # the run directory (never changed by a test)
    x_csv: pathlib.Path         # a few rows of housing features
    predictions: np.ndarray     # tapeflow predict's for them
    test_metrics: str           # what tapeflow evaluate prints after the checkpoint's path


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small run trained once, and what predict and evaluate say of it."""
    base = tmp_path_factory.mktemp("trained")
    write_config(base / "small.yaml", small_config())
    assert tapeflow("train", "small.yaml", "--output", "run", cwd=base).returncode == 0
    from sklearn.datasets import fetch_california_housing
    write_csv(base / "x.csv", FEATURES, fetch_california_housing().data[:20].tolist())
    result = tapeflow("predict", "run", "--input", "x.csv", "--output", "y.csv", cwd=base)
    evaluated = tapeflow("evaluate", "run", cwd=base)
    return Trained(base / "run", base / "x.csv", predictions(result, base / "y.csv"),
                   metrics_line(evaluated))


@pytest.fixture
def run_copy(trained, tmp_path):
    """A copy of the trained run in ``tmp_path/run`` (to damage), the input rows beside it."""
    shutil.copytree(trained.run, tmp_path / "run")
    shutil.copy(trained.x_csv, tmp_path / "x.csv")
    return tmp_path / "run"


def predictions(result, path):
    assert result.returncode == 0, result.stderr
    return np.loadtxt(path, delimiter=",", skiprows=1)


def metrics_line(result):
    """``loss: ... - mae: ...`` from tapeflow evaluate's output."""
    assert result.returncode == 0, result.stderr
    return result.stdout.split("): ", 1)[1].strip()


# --- the config ----------------------------------------------------------------------------------
def test_unknown_section_suggests_the_closest_key(tmp_path):
    config = small_config()
    config["trainig"] = config.pop("training")
    train_refused(tmp_path, config, fragments=("bad.yaml", "trainig", "unknown key",
                                               "did you mean 'training'"))


def test_unknown_key_in_a_section_suggests_the_closest_key(tmp_path):
    config = small_config()
    config["training"]["epoch"] = config["training"].pop("epochs")
    train_refused(tmp_path, config, fragments=("bad.yaml", "training.epoch:", "unknown key",
                                               "did you mean 'epochs'"))


def test_a_string_is_not_an_integer(tmp_path):
    train_refused(tmp_path, small_config(training={"epochs": "5"}),
                  fragments=("bad.yaml", "training.epochs:", "integer", "'5'"))


def test_set_with_a_value_of_the_wrong_type(tmp_path):
    train_refused(tmp_path, small_config(), "--set", "training.batch_size=abc",
                  fragments=("--set training.batch_size=abc", "training.batch_size:",
                             "integer", "'abc'"))


def test_negative_epochs(tmp_path):
    train_refused(tmp_path, small_config(training={"epochs": -3}),
                  fragments=("bad.yaml", "training.epochs:", "greater than or equal to 1",
                             "-3"))


def test_batch_size_zero(tmp_path):
    train_refused(tmp_path, small_config(training={"batch_size": 0}),
                  fragments=("bad.yaml", "training.batch_size:", "greater than or equal to 1"))


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    lines = yaml.safe_dump(SMALL, sort_keys=False).splitlines()
    row = lines.index("  epochs: 4")
    lines[row] = "  epochs: 4: 5"          # a second ':' in a plain value
    train_refused(tmp_path, "\n".join(lines) + "\n",
                  fragments=("bad.yaml", f"line {row + 1}, column 12", "YAML syntax error"))


def test_empty_config_file(tmp_path):
    train_refused(tmp_path, "", fragments=("bad.yaml", "empty", "'data' and 'model'"))


def test_set_without_equals_sign(tmp_path):
    train_refused(tmp_path, small_config(), "--set", "training.epochs",
                  fragments=("--set training.epochs", "key.path=value"))


@pytest.mark.parametrize("where", ["file", "--set"])
def test_yaml_python_tag_is_refused_and_nothing_runs(tmp_path, where):
    marker = tmp_path / "MARKER"
    tag = f'!!python/object/apply:os.system ["touch {marker}"]'
    if where == "file":
        text = yaml.safe_dump(SMALL, sort_keys=False) + f"device: {tag}\n"
        row = text.count("\n")
        train_refused(tmp_path, text, fragments=("bad.yaml", f"line {row}", "python/object",
                                                 "refused"))
    else:
        train_refused(tmp_path, small_config(), "--set", f"training.epochs={tag}",
                      fragments=("--set training.epochs=", "python/object", "refused"))
    assert not marker.exists()


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_gpu_without_cupy_says_what_to_install(tmp_path):
    train_refused(tmp_path, small_config(), "--device", "gpu",
                  fragments=("device gpu", "CuPy is not installed", "tapeflow[gpu]"))


# --- the data ------------------------------------------------------------------------------------
def test_missing_data_file(tmp_path):
    train_refused(tmp_path, csv_config("houses.csv"),
                  fragments=("houses.csv", "no such file"))


def test_csv_with_a_non_numeric_cell_names_row_and_column(tmp_path):
    rows = [[i, 2 * i, i % 7] for i in range(40)]
    rows[5][1] = "n/a"                     # the header is row 1: this is row 7
    write_csv(tmp_path / "houses.csv", ["a", "b", "y"], rows)
    train_refused(tmp_path, csv_config("houses.csv"),
                  fragments=("houses.csv", "row 7", "column 'b'", "'n/a'", "not a number"))


def test_nan_in_the_data_names_row_and_column(tmp_path):
    rows = [[i, 2 * i, i % 7] for i in range(40)]
    rows[9][0] = "nan"
    write_csv(tmp_path / "houses.csv", ["a", "b", "y"], rows)
    train_refused(tmp_path, csv_config("houses.csv"),
                  fragments=("houses.csv", "NaN", "column 'a'", "row 11"))


# --- the run directory ---------------------------------------------------------------------------
def test_a_loss_turning_nan_names_epoch_and_step_and_keeps_the_checkpoints(tmp_path):
    # 46 steps an epoch at a sane learning rate, then 1e6: the loss overflows in epoch 2.
    config = small_config(optimizer={"name": "sgd", "learning_rate": None, "schedule": {
        "name": "ExponentialDecay", "options": {"initial_learning_rate": 0.01,
                                                "decay_steps": 46, "decay_rate": 1e8,
                                                "staircase": True}}})
    del config["optimizer"]["learning_rate"]
    write_config(tmp_path / "nan.yaml", config)
    result = tapeflow("train", "nan.yaml", "--output", "run", cwd=tmp_path)
    assert_refused(result, "the loss became", "at epoch 2, step ",
                   os.path.join("checkpoints", "epoch-0001.h5"))
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best.h5",
                                                                       "epoch-0001.h5"]
    assert not (run / "model.h5").exists()
    evaluated = tapeflow("evaluate", run, cwd=tmp_path)   # reads its last good checkpoint
    assert "epoch-0001.h5" in evaluated.stdout
    assert "nan" not in metrics_line(evaluated)


def test_training_into_an_existing_run_is_refused(trained):
    run = trained.run
    before = tree_digest(run)
    write_config(run.parent / "other.yaml", small_config(training={"epochs": 2}))
    result = tapeflow("train", "other.yaml", "--output", "run", cwd=run.parent)
    assert_refused(result, str(run), "already holds a run", "--resume",
                   "nothing was overwritten")
    assert tree_digest(run) == before


def test_training_into_a_directory_holding_a_model_h5_keeps_it(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "model.h5").write_bytes(b"a model saved by someone else")
    (tmp_path / "out" / "history.csv").write_text("my notes\n")
    before = tree_digest(tmp_path / "out")
    write_config(tmp_path / "small.yaml", small_config(training={"epochs": 1}))
    result = tapeflow("train", "small.yaml", "--output", "out", cwd=tmp_path)
    assert tree_digest(tmp_path / "out") == before, result.stdout
    assert_refused(result, "already holds files", "nothing was overwritten")


def test_resume_in_a_directory_of_other_files(tmp_path):
    # (a missing or empty directory starts the run: test_preemption.py)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("mine\n")
    write_config(tmp_path / "small.yaml", small_config())
    before = tree_digest(tmp_path)
    result = tapeflow("train", "small.yaml", "--output", "run", "--resume", cwd=tmp_path)
    assert_refused(result, "--resume", str(tmp_path / "run"), "no checkpoint", "without --resume")
    assert tree_digest(tmp_path) == before


def test_resume_with_a_checkpoint_of_another_architecture(trained, tmp_path):
    other = small_config(model={"layers": [{"Dense": {"units": 8, "activation": "relu"}},
                                           {"Dense": {"units": 1}}]})
    write_config(tmp_path / "other.yaml", other)
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    shutil.copy(trained.run / "checkpoints" / "epoch-0004.h5", tmp_path / "run" / "checkpoints")
    before = tree_digest(tmp_path)
    result = tapeflow("train", "other.yaml", "--output", "run", "--resume", "--set",
                      "training.epochs=6", cwd=tmp_path)
    assert_refused(result, "other.yaml", "model.layers", "keeps its config")
    assert tree_digest(tmp_path) == before


def test_restore_model_of_another_architecture_raises_checkpoint_error(trained, tmp_path):
    from tapeflow.training.build import build_model
    from tapeflow.training.checkpoint import read_checkpoint, restore_model
    from tapeflow.training.run_config import parse_config
    from tapeflow.training.data_sources import load_data
    from tapeflow.training.errors import CheckpointError

    ckpt = read_checkpoint(trained.run / "checkpoints" / "epoch-0004.h5")
    for layers in ([{"Dense": {"units": 8, "activation": "relu"}}, {"Dense": {"units": 1}}],
                   [{"Dense": {"units": 16, "activation": "relu"}}, {"Dense": {"units": 4}},
                    {"Dense": {"units": 1}}]):
        cfg = parse_config(small_config(model={"layers": layers}))
        model = build_model(cfg, load_data(cfg.data, tmp_path), "other.yaml")
        weights = [np.array(w) for w in model.get_weights()]
        with pytest.raises(CheckpointError, match="does not fit this model"):
            restore_model(model, ckpt)
        for before, after in zip(weights, model.get_weights()):
            np.testing.assert_array_equal(before, after)   # nothing was assigned


# --- predict's input and output ------------------------------------------------------------------
def test_predict_with_a_feature_column_missing(trained, tmp_path):
    x = np.loadtxt(trained.x_csv, delimiter=",", skiprows=1)
    write_csv(tmp_path / "x.csv", FEATURES[:-1], x[:, :-1].tolist())
    (tmp_path / "y.csv").write_text("yesterday's predictions\n")
    before = tree_digest(trained.run)
    result = tapeflow("predict", trained.run, "--input", "x.csv", "--output", "y.csv",
                      "--overwrite", cwd=tmp_path)  # even when told to, a failed run replaces nothing
    assert_refused(result, "x.csv", "8 features", "lacks Longitude")
    assert (tmp_path / "y.csv").read_text() == "yesterday's predictions\n"
    assert tree_digest(trained.run) == before


@pytest.mark.parametrize("output", ["the input", "the checkpoint", "a directory",
                                    "a missing directory"])
def test_predict_output_that_would_lose_a_file(run_copy, output):
    base = run_copy.parent
    target = {"the input": "x.csv", "the checkpoint": "run/model.h5", "a directory": "run",
              "a missing directory": "nowhere/y.csv"}[output]
    before = tree_digest(base)
    result = tapeflow("predict", "run", "--input", "x.csv", "--output", target, cwd=base)
    fragment = {"the input": "is the --input file", "the checkpoint": "is the checkpoint",
                "a directory": "is a directory", "a missing directory": "does not exist"}[output]
    assert_refused(result, f"--output {target}", fragment)
    assert tree_digest(base) == before


# --- damaged checkpoints -------------------------------------------------------------------------
def test_truncated_checkpoint(run_copy):
    data = (run_copy / "model.h5").read_bytes()
    (run_copy / "cut.h5").write_bytes(data[:len(data) // 2])
    before = tree_digest(run_copy)
    result = tapeflow("evaluate", "run/cut.h5", cwd=run_copy.parent)
    assert_refused(result, "cut.h5", "not a usable checkpoint", "truncated")
    assert tree_digest(run_copy) == before


def variable_dataset(path, variable):
    """The name of the dataset that holds ``variable``'s value in the save at ``path``."""
    with h5py.File(path, "r") as f:
        document = json.loads(f["graph.json"][()].tobytes())
    ref, = [v["value"]["$array"] for v in document["variables"] if v["name"] == variable]
    return f"arrays/{ref}"


def stored_bytes(path):
    """{dataset name: (byte offset, byte count)} of the data of every dataset in the file."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, ds):
            if not isinstance(ds, h5py.Dataset):
                return
            if ds.chunks is None:
                out[name] = (ds.id.get_offset(), ds.id.get_storage_size())
            else:
                info = ds.id.get_chunk_info(0)
                out[name] = (info.byte_offset, info.size)
        f.visititems(visit)
    return out


def flipped(source, target, offset):
    data = bytearray(source.read_bytes())
    data[offset] ^= 0x10
    target.write_bytes(bytes(data))


def test_a_flipped_byte_in_the_weights_is_an_error_not_other_weights(run_copy, trained):
    dataset = variable_dataset(run_copy / "model.h5", "model/dense/kernel")
    offset, size = stored_bytes(run_copy / "model.h5")[dataset]
    flipped(run_copy / "model.h5", run_copy / "flipped.h5", offset + size // 2)
    result = tapeflow("predict", "run/flipped.h5", "--input", "x.csv", "--output", "y.csv",
                      cwd=run_copy.parent)
    if result.returncode == 0:  # the worst outcome: predictions from other weights
        np.testing.assert_array_equal(predictions(result, run_copy.parent / "y.csv"),
                                      trained.predictions)
    assert_refused(result, "flipped.h5", f"dataset '{dataset}' is damaged", "checksum")
    assert not (run_copy.parent / "y.csv").exists()


def test_every_dataset_of_a_checkpoint_is_checked(run_copy, trained):
    """In-process: a byte flipped at the start, middle or end of each dataset's data (the
    weights, the optimizer's state, the document)."""
    from tapeflow.training.checkpoint import read_checkpoint
    from tapeflow.training.errors import CheckpointError
    from tapeflow.training.inference import load_checkpoint_model

    x = np.loadtxt(trained.x_csv, delimiter=",", skiprows=1).astype(np.float32)
    spans = stored_bytes(run_copy / "model.h5")
    assert len(spans) > 10
    for dataset, (offset, size) in spans.items():
        for at in (offset, offset + size // 2, offset + size - 1):
            flipped(run_copy / "model.h5", run_copy / "flipped.h5", at)
            try:
                model = load_checkpoint_model(read_checkpoint(run_copy / "flipped.h5"))
            except CheckpointError as e:
                assert f"'{dataset}'" in str(e), str(e)
                continue
            np.testing.assert_array_equal(model.predict(x).reshape(-1), trained.predictions,
                                          err_msg=f"{dataset}: byte {at} flipped")


# --- crafted checkpoints -------------------------------------------------------------------------
MARKER_MODULE = """\
import pathlib
pathlib.Path(__file__).with_name("MARKER").write_text("imported")
def build(*args, **kwargs):
    pathlib.Path(__file__).with_name("MARKER").write_text("called")
class Evil:
    def __init__(self, *args, **kwargs):
        build()
"""


def name_modules(document):
    document["model_config"]["class_name"] = "evil_marker.Evil"
    for layer, name in zip(document["model_config"]["config"]["layers"],
                           ["os.system", "subprocess.Popen", "evil_marker.build",
                            "builtins.eval"]):
        layer["class_name"] = name
    document["optimizer"]["config"] = {"class_name": "evil_marker.Evil", "config": {}}
    document["optimizer"]["loss"] = {"class_name": "subprocess.Popen", "config": {}}


def name_a_module_as_an_op(document):
    document["functions"]["__call__"][0]["graph"]["eqns"][0]["op"] = "evil_marker.build"


def name_a_builder(document):
    document["training"]["config"]["model"] = {"builder": "evil_marker:build", "layers": None,
                                               "arguments": {}, "normalize": True}


# Every command reads the whole file first (so an op name is checked by each); evaluate and
# predict then rebuild the model, inspect prints the config.
@pytest.mark.parametrize("edit, command", [
    (name_modules, "inspect"), (name_modules, "evaluate"), (name_modules, "predict"),
    (name_a_module_as_an_op, "evaluate"), (name_a_builder, "inspect"),
    (name_a_builder, "evaluate")])
def test_a_checkpoint_naming_modules_runs_nothing(run_copy, trained, edit, command):
    base = run_copy.parent
    (base / "evil_marker.py").write_text(MARKER_MODULE)   # importable from the command's cwd
    rewrite(run_copy / "model.h5", run_copy / "crafted.h5", edit)
    args = ["--input", "x.csv", "--output", "y.csv"] if command == "predict" else []
    result = tapeflow(command, "run/crafted.h5", *args, cwd=base)
    assert not (base / "MARKER").exists(), result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.returncode != 0:              # refused
        assert_refused(result, "crafted.h5")
    elif command == "predict":              # or read as data: the saved graph and weights
        np.testing.assert_array_equal(predictions(result, base / "y.csv"), trained.predictions)
    elif command == "evaluate":
        assert metrics_line(result) == trained.test_metrics


def pickled_payload(marker):
    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)
    return pickle.dumps(Payload())


@pytest.mark.parametrize("kind", ["opaque", "object"])
def test_a_pickle_in_an_array_dataset_is_never_unpickled(run_copy, kind):
    base = run_copy.parent
    marker = base / "MARKER"
    payload = pickled_payload(marker)
    dataset = variable_dataset(run_copy / "model.h5", "model/dense/kernel")
    shutil.copy(run_copy / "model.h5", run_copy / "pickled.h5")
    with h5py.File(run_copy / "pickled.h5", "r+") as f:
        del f[dataset]
        if kind == "opaque":
            f.create_dataset(dataset, data=np.frombuffer(payload, dtype=f"V{len(payload)}"),
                             chunks=True, fletcher32=True)
        else:
            ragged = np.empty(1, dtype=object)
            ragged[0] = np.frombuffer(payload, np.uint8)
            f.create_dataset(dataset, data=ragged, dtype=h5py.vlen_dtype(np.uint8))
    result = tapeflow("evaluate", "run/pickled.h5", cwd=base)  # (every command reads it all)
    assert_refused(result, "pickled.h5", "model/dense/kernel")
    assert not marker.exists()


def test_evaluate_after_the_data_file_lost_a_feature_column(tmp_path):
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(200, 3)).round(3).tolist()
    write_csv(tmp_path / "d.csv", ["a", "b", "y"], rows)
    write_config(tmp_path / "c.yaml", csv_config("d.csv") | {"training": {"epochs": 1}})
    assert tapeflow("train", "c.yaml", "--output", "run", cwd=tmp_path).returncode == 0
    write_csv(tmp_path / "d.csv", ["a", "y"], [[r[0], r[2]] for r in rows])
    result = tapeflow("evaluate", "run", cwd=tmp_path)
    assert_refused(result, "the model was trained on ['a', 'b']", "now have the features ['a']")


# --- values past the model's dtype, and feature names that do not fit (issue 21, group 7) --------
def test_a_predict_cell_past_float32s_range_is_refused(run_copy):
    base = run_copy.parent
    rows = np.loadtxt(base / "x.csv", delimiter=",", skiprows=1)[:3]
    rows[1, 2] = 1e39  # finite in float64, inf in the model's float32: NaN predictions, exit 0
    write_csv(base / "big.csv", FEATURES, rows.tolist())
    result = tapeflow("predict", "run", "--input", "big.csv", "--output", "y.csv", cwd=base)
    assert_refused(result, "big.csv: 1 values in column 'AveRooms' (first at row 3) are past "
                           "float32's range")
    assert not (base / "y.csv").exists()


def test_a_training_cell_past_float32s_range_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    rows = np.hstack([rng.normal(size=(40, 3)), rng.normal(size=(40, 1))])
    rows[7, 3] = -2e38 * 10
    write_csv(tmp_path / "d.csv", ["a", "b", "c", "y"], rows.tolist())
    train_refused(tmp_path, csv_config(tmp_path / "d.csv"),
                  fragments=["d.csv: 1 values in column 'y' (first at row 9) are past "
                             "float32's range"])


def test_a_checkpoint_naming_fewer_features_than_its_model_takes(run_copy):
    def one_feature(document):
        document["training"]["feature_names"] = ["MedInc"]
    rewrite(run_copy / "model.h5", run_copy / "crafted.h5", one_feature)
    result = tapeflow("predict", "run/crafted.h5", "--input", "x.csv", "--output", "y.csv",
                      cwd=run_copy.parent)
    assert_refused(result, "crafted.h5: names 1 feature columns, but its model takes 8")


# --- writes that cannot be redirected or lose a file (issue 21, group 6) ------------------------
@pytest.mark.parametrize("target", ["run/best_copy.csv", "run/checkpoints/y.csv",
                                    "run/config.yaml"])
def test_predict_refuses_any_path_inside_a_run_directory(run_copy, target):
    base = run_copy.parent
    before = tree_digest(base)
    result = tapeflow("predict", "run", "--input", "x.csv", "--output", target, cwd=base)
    assert_refused(result, f"--output {target} lies in the run directory")
    assert tree_digest(base) == before


def test_predict_replaces_an_existing_file_only_when_told(run_copy, trained):
    base = run_copy.parent
    (base / "y.csv").write_text("yesterday's predictions\n")
    result = tapeflow("predict", "run", "--input", "x.csv", "--output", "y.csv", cwd=base)
    assert_refused(result, "--output y.csv exists; pass --overwrite to replace it")
    assert (base / "y.csv").read_text() == "yesterday's predictions\n"
    result = tapeflow("predict", "run", "--input", "x.csv", "--output", "y.csv", "--overwrite",
                      cwd=base)
    np.testing.assert_array_equal(predictions(result, base / "y.csv"), trained.predictions)


def test_the_trainers_temporary_names_do_not_follow_planted_links(tmp_path):
    """Links planted in a run directory where the trainer used to write ``config.yaml.tmp`` (and
    the history's and metrics' temporaries) pointed its writes at a file of the user's when the
    run resumed; the temporaries are now new files made by mkstemp, the links are left alone."""
    from tapeflow.training.run import train  # in this process: the writes are what is tested
    config = write_config(tmp_path / "small.yaml", small_config(training={"epochs": 1}))
    train(config, output=tmp_path / "run", verbose=False)
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's\n")
    for name in ("config.yaml.tmp", "history.csv.tmp", "history.json.tmp",
                 "test_metrics.json.tmp"):
        (tmp_path / "run" / name).symlink_to(victim)
    train(config, output=tmp_path / "run", resume=True, overrides=["training.epochs=2"],
          verbose=False)
    assert victim.read_text() == "the user's\n"
    assert len(json.loads((tmp_path / "run" / "history.json").read_text())["loss"]) == 2
