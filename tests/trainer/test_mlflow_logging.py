"""``logging: {mlflow: true}`` in a run's config: params, metrics and the run directory in MLflow.

The tests against a store need MLflow (``pip install 'tapeflow[mlflow]'``) and skip, saying so,
where it is not installed (CI does not install it: its time). One run, resumed, serves the
default store's tests: its SQLite database takes seconds to create. MLflow's own
tests/keras/test_callback.py::test_keras_mlflow_callback_log_every_epoch is the model: one metric
point per epoch for the loss and the validation loss, the optimizer's name and learning rate
among the params.
"""
import json
import math
import os
import sys

import pytest

from tapeflow.training.errors import ConfigError
from tapeflow.training.mlflow_log import RECORD_NAME, STORE_DIR, flatten_config
from tapeflow.training.run import train
from tapeflow.training.run_config import parse_config

from .helpers import small_config, tiny_config

_NEEDS_MLFLOW = "needs MLflow: pip install 'tapeflow[mlflow]'"


def _client(run_dir):
    """The MLflow client of the store ``run_dir``'s record names, and the run's id."""
    from mlflow.tracking import MlflowClient
    with open(os.path.join(run_dir, RECORD_NAME)) as f:
        record = json.load(f)
    return MlflowClient(record["tracking_uri"]), record["run_id"]


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory, tiny_csv):
    """A run of 1 epoch into the default store, resumed to 2: its run directory."""
    pytest.importorskip("mlflow", reason=_NEEDS_MLFLOW)
    run_dir = tmp_path_factory.mktemp("mlflow") / "run"
    for epochs, resume in ((1, False), (2, True)):
        train(tiny_config(tiny_csv, training={"epochs": epochs}, logging={"mlflow": True}),
              output=run_dir, resume=resume, verbose=False)
    return run_dir


# MLflow: tests/keras/test_callback.py::test_keras_mlflow_callback_log_every_epoch
def test_metrics_are_history_json_at_step_epoch(resumed_run):
    client, run_id = _client(resumed_run)
    history = json.loads((resumed_run / "history.json").read_text())
    assert set(client.get_run(run_id).data.metrics) == set(history) \
        == {"loss", "mae", "val_loss", "val_mae"}
    for name, values in history.items():
        points = sorted(client.get_metric_history(run_id, name), key=lambda m: m.step)
        assert [m.step for m in points] == [1, 2]  # num_epochs points, the resumed epoch once
        assert [m.value for m in points] == values


# MLflow: tests/keras/test_callback.py::test_keras_mlflow_callback_log_every_epoch
def test_params_are_the_resolved_config(resumed_run):
    client, run_id = _client(resumed_run)
    run = client.get_run(run_id)
    params = run.data.params
    assert params["optimizer.name"] == "adam"
    assert math.isclose(float(params["optimizer.learning_rate"]), 0.01, rel_tol=1e-6)
    assert params["training.batch_size"] == "16"
    assert params["training.seed"] == "5"
    assert params["model.layers.0.Dense.units"] == "4"
    assert params["model.layers.0.Dense.activation"] == "relu"
    assert params["data.targets"] == '["y"]'
    # MLflow's params never change: the epochs the resume raised are a tag
    assert params["training.epochs"] == "1"
    assert run.data.tags["resumed.training.epochs"] == "2"


def test_a_resumed_run_goes_on_in_the_same_mlflow_run(resumed_run):
    client, run_id = _client(resumed_run)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert [r.info.run_id for r in client.search_runs([run.info.experiment_id])] == [run_id]
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "tapeflow"
    assert (resumed_run / STORE_DIR / "mlflow.db").is_file()  # the default store


def test_artifacts_are_the_run_directory(resumed_run):
    client, run_id = _client(resumed_run)
    logged = {a.path for a in client.list_artifacts(run_id)}
    assert logged == set(os.listdir(resumed_run)) - {STORE_DIR}
    assert {"config.yaml", "history.json", "history.csv", "model.h5", RECORD_NAME} <= logged
    checkpoints = {os.path.basename(a.path) for a in client.list_artifacts(run_id, "checkpoints")}
    assert checkpoints == set(os.listdir(resumed_run / "checkpoints"))
    local = client.download_artifacts(run_id, "history.json", str(resumed_run.parent))
    assert open(local).read() == (resumed_run / "history.json").read_text()


def test_the_environment_names_the_store_and_a_late_turn_on_logs_earlier_epochs(
        tmp_path, tiny_csv, monkeypatch):
    """MLFLOW_TRACKING_URI (a file store, which MLflow 3 opens only when allowed) and
    MLFLOW_EXPERIMENT_NAME; MLflow turned on when the run is resumed gets its first epoch too."""
    pytest.importorskip("mlflow", reason=_NEEDS_MLFLOW)
    store = tmp_path / "store"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-the-environment")
    run_dir = tmp_path / "run"
    train(tiny_config(tiny_csv, training={"epochs": 1}), output=run_dir, verbose=False)
    assert not (run_dir / RECORD_NAME).exists()  # off by default
    train(tiny_config(tiny_csv, training={"epochs": 2}, logging={"mlflow": True}),
          output=run_dir, resume=True, verbose=False)
    client, run_id = _client(run_dir)
    assert client.tracking_uri == store.as_uri()
    assert not (run_dir / STORE_DIR).exists()
    run = client.get_run(run_id)
    assert client.get_experiment(run.info.experiment_id).name == "from-the-environment"
    history = json.loads((run_dir / "history.json").read_text())
    points = sorted(client.get_metric_history(run_id, "loss"), key=lambda m: m.step)
    assert [(m.step, m.value) for m in points] == list(enumerate(history["loss"], start=1))
    assert run.data.params["training.epochs"] == "2"


# --- without MLflow ----------------------------------------------------------------------------
def test_without_mlflow_the_config_is_refused_before_any_work(tmp_path, tiny_csv, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    for name in ("mlflow", "sqlalchemy", "alembic"):  # as if not installed
        monkeypatch.setitem(sys.modules, name, None)
    server = {"tracking_uri": "http://localhost:5000"}  # MLflow alone
    for settings, missing in ((server, "mlflow is"), (True, "mlflow, sqlalchemy and alembic are")):
        config = tiny_config(tiny_csv, logging={"mlflow": settings})
        with pytest.raises(ConfigError, match=rf"^logging\.mlflow: {missing} not installed; "
                                              rf"pip install 'tapeflow\[mlflow\]'"):
            train(config, output=tmp_path / "run", verbose=False)
    assert not (tmp_path / "run").exists()


def test_the_mlflow_section_is_checked():
    assert parse_config(small_config()).logging.mlflow is None  # off by default
    assert parse_config(small_config(logging={"mlflow": False})).logging.mlflow is None
    settings = parse_config(small_config(logging={"mlflow": True})).logging.mlflow
    assert settings.tracking_uri is None and settings.experiment is None
    with pytest.raises(ConfigError, match=r"logging\.mlflow\.tracking_url: unknown key; did "
                                          r"you mean 'tracking_uri'"):
        parse_config(small_config(logging={"mlflow": {"tracking_url": "sqlite:///m.db"}}))
    with pytest.raises(ConfigError, match=r"logging\.mlflow\.experiment"):
        parse_config(small_config(logging={"mlflow": {"experiment": ""}}))
    with pytest.raises(ConfigError, match=r"logging\.mlflow: true, false or a mapping "):
        parse_config(small_config(logging={"mlflow": "yes"}))


def test_flatten_config_follows_mappings_and_lists_of_layers():
    config = {"model": {"layers": [{"Dense": {"units": 4}}, {"Dropout": {"rate": 0.1}}],
                        "arguments": {}},
              "metrics": ["mae"], "training": {"seed": None, "shuffle": True},
              "loss": "mse", "data": {"path": "x" * 7000}}
    flat = flatten_config(config)
    assert {k: v for k, v in flat.items() if k != "data.path"} == {
        "model.layers.0.Dense.units": "4", "model.layers.1.Dropout.rate": "0.1",
        "model.arguments": "{}", "metrics": '["mae"]', "training.seed": "null",
        "training.shuffle": "true", "loss": "mse"}
    assert len(flat["data.path"]) == 6000 and flat["data.path"].endswith("...")
