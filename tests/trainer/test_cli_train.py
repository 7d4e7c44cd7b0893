"""The main job as a user runs it: ``tapeflow train configs/housing.yaml``, then the other commands."""
import csv
import json
import re

import numpy as np
import pytest
import yaml

from .helpers import CONFIGS, cli, small_config, write_config

pytestmark = pytest.mark.child_process  # the real command, in child processes


@pytest.fixture(scope="module")
def housing_run(tmp_path_factory):
    """The default config, unchanged, through the real command (about 10 s; its wall time is a
    benchmark figure, benchmarks/bench_cli_train.py, not a test's)."""
    out = tmp_path_factory.mktemp("housing") / "run"
    result = cli("train", CONFIGS / "housing.yaml", "--output", out, timeout=300)
    assert result.returncode == 0, result.stderr
    return out, result


def test_housing_beats_the_seed_baseline(housing_run):
    out, result = housing_run
    match = re.search(r"^test: loss: ([0-9.]+) - mae: ([0-9.]+)$", result.stdout, re.M)
    assert match, result.stdout
    assert float(match.group(1)) <= 0.30      # the seed's Keras model: 0.338 on this split
    saved = json.loads((out / "test_metrics.json").read_text())
    assert saved["loss"] == pytest.approx(float(match.group(1)), abs=1e-4)


def test_a_run_leaves_config_history_plot_and_checkpoints(housing_run):
    out, result = housing_run
    resolved = yaml.safe_load((out / "config.yaml").read_text())
    assert resolved["training"]["seed"] == 42 and resolved["training"]["epochs"] == 60
    history = json.loads((out / "history.json").read_text())
    with open(out / "history.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "loss", "mae", "val_loss", "val_mae"]
    assert len(rows) - 1 == len(history["loss"]) >= 1
    assert float(rows[1][1]) == pytest.approx(history["loss"][0])
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "model.h5").exists() and (out / "checkpoints" / "best.h5").exists()
    assert len(list((out / "checkpoints").glob("epoch-*.h5"))) == 3   # keep_last: 3
    # not a terminal: one clean line per epoch, no progress-bar control characters
    epochs = [line for line in result.stdout.splitlines() if line.startswith("Epoch ")]
    assert len(epochs) == len(history["loss"])
    assert "\r" not in result.stdout and "\x1b" not in result.stdout


def test_evaluate_predict_inspect_on_the_run_directory(housing_run, tmp_path):
    out, result = housing_run
    evaluated = cli("evaluate", out)
    assert evaluated.returncode == 0, evaluated.stderr
    printed = re.search(r"test: loss: ([0-9.]+)", result.stdout).group(1)
    assert f"loss: {printed}" in evaluated.stdout

    from sklearn.datasets import fetch_california_housing
    housing = fetch_california_housing()
    x_csv = tmp_path / "houses.csv"
    # columns in another order, and an extra column: selected by name
    names = list(reversed(housing.feature_names)) + ["note"]
    rows = [names] + [list(reversed(r.tolist())) + [0] for r in housing.data[:20]]
    with open(x_csv, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    preds = tmp_path / "preds.csv"
    predicted = cli("predict", out, "--input", x_csv, "--output", preds)
    assert predicted.returncode == 0, predicted.stderr
    with open(preds, newline="") as f:
        got = list(csv.reader(f))
    assert got[0] == ["MedHouseVal"] and len(got) == 21

    import tapeflow as tf
    model = tf.keras.models.load_model(out / "model.h5")
    expected = model.predict(housing.data[:20].astype(np.float32))
    np.testing.assert_array_equal(np.array(got[1:], np.float32), expected)

    inspected = cli("inspect", out)
    assert inspected.returncode == 0, inspected.stderr
    for fragment in ("epoch: ", "parameters: 4,817 (4,801 trainable)", "model/dense/kernel",
                     "optimizer: Adam", "custom gradients: none", "seed: 42", "config:"):
        assert fragment in inspected.stdout, fragment


def test_print_config_shows_the_resolved_config_with_overrides(tmp_path):
    result = cli("train", CONFIGS / "housing.yaml", "--print-config", "--seed", "5",
                 "--set", "training.epochs=3", "--set", "model.layers.0.Dense.units=8")
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert resolved["training"]["seed"] == 5 and resolved["training"]["epochs"] == 3
    assert resolved["model"]["layers"][0] == {"Dense": {"units": 8, "activation": "relu"}}
    assert resolved["checkpoint"]["keep_last"] == 3 and resolved["device"] == "cpu"
    assert not (tmp_path / "runs").exists()


def test_a_null_seed_is_chosen_and_written_down(tmp_path):
    config = small_config(training={"seed": None, "epochs": 1})
    result = cli("train", write_config(tmp_path / "c.yaml", config), "--output", tmp_path / "r")
    assert result.returncode == 0, result.stderr
    seed = yaml.safe_load((tmp_path / "r" / "config.yaml").read_text())["training"]["seed"]
    assert isinstance(seed, int)
    # the written config alone reproduces the run
    again = cli("train", tmp_path / "r" / "config.yaml", "--output", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    first = json.loads((tmp_path / "r" / "history.json").read_text())
    assert json.loads((tmp_path / "again" / "history.json").read_text()) == first


def _help(capsys, *args):
    """What ``tapeflow ARGS --help`` prints (argparse exits 0 after printing it)."""
    from tapeflow.cli import main
    with pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_help_reads_like_a_finished_tool(capsys):
    top = _help(capsys)  # in this process: the commands' runs are tested through the real CLI
    for command in ("train", "evaluate", "predict", "inspect"):
        assert command in top
        assert "usage: tapeflow " + command in _help(capsys, command)
    assert "--resume" in _help(capsys, "train")
