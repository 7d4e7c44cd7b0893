"""The run config: parsing, overrides, and one message naming the key path for each mistake."""
import pytest

from tapeflow.training.build import build_model
from tapeflow.training.run_config import load_config, parse_config, parse_override
from tapeflow.training.data_sources import load_data
from tapeflow.training.errors import ConfigError

from .helpers import CONFIGS, small_config


def _error(doc, overrides=()):
    with pytest.raises(ConfigError) as info:
        parse_config(doc, "run.yaml", overrides)
    return str(info.value)


@pytest.mark.parametrize("name", ["housing", "housing_newton", "housing_input_gradient",
                                  "housing_custom_gradient", "housing_lm"])
def test_shipped_configs_are_valid(name):
    config = load_config(CONFIGS / f"{name}.yaml")
    assert config.training.seed == 42


def test_defaults_fill_the_resolved_config():
    resolved = parse_config({"data": {"source": "california_housing"},
                             "model": {"layers": [{"Dense": {"units": 1}}]}}).resolved()
    assert resolved["training"]["epochs"] == 30 and resolved["optimizer"]["name"] == "adam"
    assert isinstance(resolved["training"]["seed"], int)   # null: chosen, and written down
    assert resolved["data"]["split"] == {"test_size": 0.25, "valid_size": 0.25, "seed": 42}


@pytest.mark.parametrize("change, expected", [
    ({"trainig": {}}, "run.yaml: trainig: unknown key; did you mean 'training'?"),
    ({"training": {"epoch": 3}}, "run.yaml: training.epoch: unknown key; did you mean 'epochs'?"),
    ({"training": {"epochs": "5"}}, "training.epochs: Input should be a valid integer (got '5')"),
    ({"training": {"epochs": -1}}, "training.epochs: Input should be greater than or equal to 1"),
    ({"training": {"batch_size": 0}}, "training.batch_size: Input should be greater than or "
                                      "equal to 1; or Input should be 'full' (got 0)"),
    ({"training": {"shuffle": "yes"}}, "training.shuffle: Input should be a valid boolean"),
    ({"optimizer": {"learning_rate": 0}}, "optimizer.learning_rate: Input should be greater "
                                          "than 0"),
    ({"device": "tpu"}, "device: Input should be 'cpu' or 'gpu' (got 'tpu')"),
    ({"model": {"layers": [], "builder": "m:f"}}, "model: give exactly one of 'layers'"),
    ({"data": {"source": "csv", "path": "a.csv", "targets": ["y"], "delimeter": ";"}},
     "data.delimeter: unknown key; did you mean 'delimiter'?"),
])
def test_each_mistake_is_one_message_with_its_key_path(change, expected):
    assert expected in _error(small_config(**change) | change)


def test_monitors_must_be_logged():
    no_validation = {"source": "california_housing", "split": {"valid_size": 0}}
    assert _error(small_config(data=no_validation, training={"early_stopping": {}})) == (
        "run.yaml: training.early_stopping.monitor: 'val_loss' is not logged (data.split."
        "valid_size is 0: there is no validation split); the run logs loss, mae")
    assert "'val_mse' is not logged; the run logs loss, mae, val_loss, val_mae" in _error(
        small_config(training={"early_stopping": {"monitor": "val_mse"}}))
    # the best checkpoint's default monitor follows the data: val_loss, or loss without
    # a validation split
    resolved = parse_config(small_config(data=no_validation)).resolved()
    assert resolved["checkpoint"]["monitor"] == "loss"
    assert parse_config(small_config()).resolved()["checkpoint"]["monitor"] == "val_loss"


def test_missing_section():
    assert _error({"data": {"source": "california_housing"}}) == \
        "run.yaml: model: required, but missing"


def test_overrides_are_yaml_scalars_validated_like_the_file():
    config = parse_config(small_config(), "run.yaml", [
        "training.epochs=7", "optimizer.learning_rate=1e-3", "model.layers.0.Dense.units=4",
        "training.early_stopping={patience: 2}"])
    assert config.training.epochs == 7
    assert config.optimizer.learning_rate == 0.001        # YAML 1.2's float, not a string
    assert config.model.layers[0]["Dense"]["units"] == 4
    assert config.training.early_stopping.patience == 2
    message = _error(small_config(), ["training.epochs=many"])
    assert message.startswith("--set training.epochs=many: training.epochs: Input should be a "
                              "valid integer")
    assert "unknown key; did you mean 'epochs'" in _error(small_config(), ["training.epoch=2"])
    with pytest.raises(ConfigError, match="expected key.path=value"):
        parse_override("training.epochs")
    with pytest.raises(ConfigError, match="a list of 3 items needs an index 0..2"):
        parse_config(small_config(), "run.yaml", ["model.layers.7.Dense.units=4"])


def test_yaml_floats_in_exponent_form(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data: {source: california_housing}\n"
                    "model: {layers: [{Dense: {units: 1}}]}\n"
                    "optimizer: {learning_rate: 3e-4}\n")
    assert load_config(path).optimizer.learning_rate == 3e-4


@pytest.fixture(scope="module")
def housing():
    return load_data(parse_config(small_config()).data, ".")


@pytest.mark.parametrize("layers, expected", [
    ([{"Dense": {"unitz": 4}}], "model.layers.0.Dense.unitz: unknown argument of Dense; did you "
                                "mean 'units'?"),
    ([{"Dens": {"units": 1}}], "model.layers.0.Dens: unknown layer; did you mean 'Dense'?"),
    ([{"Dense": {"units": 1}, "Dropout": {"rate": 0.1}}], "model.layers.0: a layer is one "
                                                          "mapping"),
    ([{"Dense": {"units": 1, "activation": "relux"}}], "model.layers.0.Dense: "),
    ([{"Dense": {"units": 4}}], "model: its output has shape (1, 4) per batch of 1, but the "
                                "data have 1 target column(s) (MedHouseVal)"),
    ([], "model: its output has shape (1, 8)"),
    # issue 21: refused before a byte is allocated (29.8 GiB), and before a traceback at fit
    ([{"Dense": {"units": 10 ** 9}}], "dense.kernel: a weight of shape (8, 1000000000) needs "
                                      "29.8 GiB, past the 4.0 GiB left of the cap"),
    ([{"Dense": {"units": 4, "dtype": "complex64"}}],
     "model.layers.0.Dense.dtype: a layer computes in float16, float32, float64; got "
     "'complex64'"),
])
def test_layer_mistakes_name_the_layer_and_argument(housing, layers, expected):
    config = parse_config(small_config(model={"layers": layers}))
    with pytest.raises(ConfigError) as info:
        build_model(config, housing, "run.yaml")
    assert expected in str(info.value)


@pytest.mark.parametrize("section, expected", [
    ({"optimizer": {"name": "adamm"}}, "optimizer.name: "),
    ({"optimizer": {"name": "adam", "options": {"beta1": 0.8}}},
     "optimizer.options.beta1: not an argument of Adam; did you mean 'beta_1'?"),
    ({"optimizer": {"name": "adam", "schedule": {"name": "Cosine", "options": {}}}},
     "optimizer.schedule.name: unknown schedule 'Cosine'"),
    ({"loss": "msee"}, "loss: "),
    ({"metrics": ["mae", "maee"]}, "metrics.1: "),
    ({"model": {"builder": "examples/stable_softplus.py:build_layers"}},
     "model.builder: 'examples/stable_softplus.py:build_layers' names code to run; allow it "
     "with --allow-builder"),
])
def test_named_objects_are_checked_before_training(housing, section, expected):
    config = parse_config(small_config(**section) | section)
    with pytest.raises(ConfigError) as info:
        build_model(config, housing, "run.yaml")
    assert expected in str(info.value)


def test_schedule_and_loss_with_arguments(housing):
    config = parse_config(small_config(
        optimizer={"name": "sgd", "learning_rate": None,
                   "schedule": {"name": "ExponentialDecay",
                                "options": {"initial_learning_rate": 0.1, "decay_steps": 10,
                                            "decay_rate": 0.5}}},
        loss={"name": "Huber", "delta": 2.0}))
    model = build_model(config, housing, "run.yaml")
    assert type(model.optimizer).__name__ == "SGD"
    schedule = model.optimizer.get_config()["learning_rate"]
    assert schedule["class_name"] == "ExponentialDecay"
    assert schedule["config"]["decay_rate"] == 0.5
    assert type(model.loss).__name__ == "Huber" and model.loss.get_config()["delta"] == 2.0
