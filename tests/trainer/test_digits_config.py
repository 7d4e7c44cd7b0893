"""Classification through the trainer: ``tapeflow train configs/digits_cnn.yaml`` (sklearn's
bundled digits, a CNN, sparse categorical cross-entropy, accuracy watched on the validation
split), and the mistakes a classification config can make, each refused with one message."""
import copy
import json
import re

import numpy as np
import pytest
import yaml

import tapeflow
from tapeflow.training.run_config import parse_config
from tapeflow.training.data_sources import load_data
from tapeflow.training.errors import ConfigError

from .helpers import CONFIGS, cli

DIGITS = yaml.safe_load((CONFIGS / "digits_cnn.yaml").read_text())


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    """The shipped config, unchanged, through the real command (about 10 s on an idle core)."""
    out = tmp_path_factory.mktemp("digits") / "run"
    result = cli("train", CONFIGS / "digits_cnn.yaml", "--output", out, timeout=300)
    assert result.returncode == 0, result.stderr
    return out, result


@pytest.mark.child_process
def test_the_digits_cnn_reaches_97_percent_on_the_test_split(digits_run):
    out, result = digits_run
    match = re.search(r"^test: loss: ([0-9.]+) - accuracy: ([0-9.]+)$", result.stdout, re.M)
    assert match, result.stdout
    assert float(match.group(2)) >= 0.97
    saved = json.loads((out / "test_metrics.json").read_text())
    assert saved["accuracy"] == pytest.approx(float(match.group(2)), abs=1e-4)


@pytest.mark.child_process
def test_the_best_checkpoint_is_chosen_by_validation_accuracy(digits_run):
    out, _ = digits_run
    resolved = yaml.safe_load((out / "config.yaml").read_text())
    assert resolved["checkpoint"]["monitor"] == "val_accuracy"
    assert resolved["checkpoint"]["mode"] == "max"
    history = json.loads((out / "history.json").read_text())
    best_epoch = int(np.argmax(history["val_accuracy"]))  # the first of equal maxima
    assert (out / "checkpoints" / "best.h5").exists()
    # `tapeflow evaluate` matches "accuracy" to class ids as fit does
    evaluated = cli("evaluate", out / "checkpoints" / "best.h5", "--split", "valid")
    assert evaluated.returncode == 0, evaluated.stderr
    accuracy = float(re.search(r"accuracy: ([0-9.]+)", evaluated.stdout).group(1))
    assert accuracy == pytest.approx(history["val_accuracy"][best_epoch], abs=1e-4)


def test_the_digits_source():
    data = load_data(parse_config(DIGITS).data, ".")
    assert data.n_classes == 10 and data.target_names == ("digit",)
    assert data.x_train.shape[1] == 64 and data.feature_names[0] == "pixel_0_0"
    assert len(data.x_train) + len(data.x_valid) + len(data.x_test) == 1797
    everything = np.concatenate([data.x_train, data.x_valid, data.x_test])
    assert everything.min() == 0 and everything.max() == 16   # raw intensities: the model scales
    assert set(np.unique(data.y_train)) == set(range(10))


# --- mistakes --------------------------------------------------------------------------------
def digits_config(**changes):
    config = copy.deepcopy(DIGITS)
    config["training"]["epochs"] = 1
    config.update(changes)
    return config


@pytest.mark.parametrize("change, fragments", [
    (dict(loss="mse"), ["loss: 'mean_squared_error' does not take class ids",
                        "class labels 0..9", "sparse_categorical_crossentropy"]),
    (dict(loss="categorical_crossentropy"), ["'categorical_crossentropy' does not take class ids"]),
    (dict(model={"normalize": False, "layers": [{"Flatten": {}}, {"Dense": {"units": 1}}]}),
     ["the loss takes class ids and the data have 10 classes", "Dense: {units: 10}"]),
    (dict(model={"normalize": False, "layers": [{"Reshape": {"target_shape": [7, 7, 1]}},
                                                {"Flatten": {}}, {"Dense": {"units": 10}}]}),
     ["model: on the data's 64 feature columns", "cannot take the shape (7, 7, 1)"]),
    (dict(model={"normalize": False, "layers": [{"Conv2D": {"filters": 2, "kernl_size": 3}}]}),
     ["model.layers.0.Conv2D.kernl_size: unknown argument", "did you mean 'kernel_size'"]),
])
def test_classification_mistakes_name_what_is_wrong(tmp_path, change, fragments):
    with pytest.raises(ConfigError) as caught:
        tapeflow.train(digits_config(**change), output=tmp_path / "run", verbose=False)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    assert not (tmp_path / "run").exists()


def test_a_class_id_loss_on_regression_targets_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "reg.npz", x=rng.normal(size=(40, 3)), y=rng.normal(size=40))
    config = {"data": {"source": "npz", "path": str(tmp_path / "reg.npz")},
              "model": {"layers": [{"Dense": {"units": 3}}]},
              "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"],
              "training": {"epochs": 1}}
    with pytest.raises(ConfigError, match="takes one column of class ids"):
        tapeflow.train(config, output=tmp_path / "run", verbose=False)
