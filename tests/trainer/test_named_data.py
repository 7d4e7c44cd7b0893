"""Runs of a functional model with several named inputs and outputs: ``npz``/``csv`` data
with ``inputs``/``targets`` mappings (named_sources.py), per-output losses, weights and
metrics (multi_output.py), resume, evaluate and predict."""
import copy
import importlib.util
import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.training import checkpoint as ckpt_io
from tapeflow.training.build import named_compile_arguments
from tapeflow.training.data_sources import load_data
from tapeflow.training.errors import ConfigError, DataError
from tapeflow.training.inference import evaluate_checkpoint, predict_csv
from tapeflow.training.run import train
from tapeflow.training.run_config import load_config, parse_config

from .helpers import CONFIGS, ROOT

ROWS = 40


def _write_npz(path):
    rng = np.random.default_rng(3)
    numbers, extra = rng.standard_normal((ROWS, 3)), rng.standard_normal((ROWS, 2))
    np.savez(path, x_numbers=numbers.astype(np.float32), x_extra=extra.astype(np.float32),
             y_sum=(numbers.sum(1) + extra[:, 0]).astype(np.float32),
             y_pair=(numbers[:, :2] * extra).astype(np.float32))
    return path


CONFIG = {
    "data": {"source": "npz", "path": "two.npz",
             "inputs": {"numbers": "x_numbers", "extra": "x_extra"},
             "targets": {"sum": "y_sum", "pair": "y_pair"},
             "split": {"test_size": 0.25, "valid_size": 0.25, "seed": 1}},
    "model": {"graph": {
        "inputs": [{"name": "numbers", "shape": [3]}, {"name": "extra", "shape": [2]}],
        "layers": [{"name": "joined", "inputs": ["numbers", "extra"], "Concatenate": {}},
                   {"name": "hidden", "inputs": "joined", "Dense": {"units": 8,
                                                                  "activation": "relu"}},
                   {"name": "drop", "inputs": "hidden", "Dropout": {"rate": 0.2}},
                   {"name": "sum", "inputs": "drop", "Dense": {"units": 1}},
                   {"name": "pair", "inputs": "drop", "Dense": {"units": 2}}],
        "outputs": ["sum", "pair"]}},
    "loss": {"sum": "mse", "pair": {"name": "Huber", "delta": 1.0}},
    "loss_weights": {"sum": 1.0, "pair": 0.5},
    "metrics": {"sum": ["mae"], "pair": ["mse"]},
    "optimizer": {"name": "adam", "learning_rate": 0.01},
    "training": {"epochs": 2, "batch_size": 8, "seed": 5},
    "checkpoint": {"every": 1, "keep_last": 3},
    "logging": {"progress": "none", "plot": False},
}


@pytest.fixture
def config(tmp_path):
    _write_npz(tmp_path / "two.npz")
    config = copy.deepcopy(CONFIG)
    config["data"]["path"] = str(tmp_path / "two.npz")
    return config


def _with(config, **sections):
    config = copy.deepcopy(config)
    for key, value in sections.items():
        section, _, field = key.partition("__")
        if field:
            config[section] = dict(config[section], **{field: value})
        else:
            config[section] = value
    return config


def test_a_two_input_two_output_run_trains_evaluates_and_predicts(tmp_path, config):
    run = train(config, output=tmp_path / "run", verbose=False)
    assert set(run.history) == {"loss", "sum_loss", "pair_loss", "sum_mae", "pair_mse",
                                "val_loss", "val_sum_loss", "val_pair_loss", "val_sum_mae",
                                "val_pair_mse"}
    # Keras's total: the weighted sum of the outputs' losses
    for prefix in ("", "val_"):
        total = run.history[f"{prefix}sum_loss"][-1] + 0.5 * run.history[f"{prefix}pair_loss"][-1]
        assert run.history[f"{prefix}loss"][-1] == pytest.approx(total, rel=1e-5)
    ckpt = ckpt_io.resolve_checkpoint(str(tmp_path / "run"))
    assert evaluate_checkpoint(ckpt) == pytest.approx(run.test_metrics, rel=1e-5)
    y = predict_csv(ckpt, tmp_path / "two.npz", tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "sum,pair_0,pair_1"
    with np.load(tmp_path / "two.npz") as npz:
        expected = run.model.predict({"numbers": npz["x_numbers"], "extra": npz["x_extra"]},
                                     verbose=0)
    assert y.shape == (ROWS, 3)
    np.testing.assert_allclose(y, np.hstack(expected), rtol=1e-6)


def test_the_split_and_fingerprint_of_named_arrays(tmp_path, config):
    cfg = parse_config(config)
    data = load_data(cfg.data, tmp_path)
    assert data.feature_names == ("numbers", "extra") and data.target_names == ("sum", "pair")
    assert data.x_train["numbers"].shape == (22, 3) and data.y_train["sum"].shape == (22, 1)
    assert len(data.x_valid["extra"]) == 8 and len(data.y_test["pair"]) == 10
    with np.load(tmp_path / "two.npz") as npz:  # the rows as the one-array sources split them
        every = np.concatenate([data.x_train["extra"], data.x_valid["extra"], data.x_test["extra"]])
        np.testing.assert_array_equal(np.sort(every, axis=0), np.sort(npz["x_extra"], axis=0))
    assert load_data(cfg.data, tmp_path).fingerprint == data.fingerprint
    other = parse_config(_with(config, data__targets={"sum": "y_sum", "pair": "x_extra"}))
    assert load_data(other.data, tmp_path).fingerprint != data.fingerprint


def test_a_resumed_run_equals_the_uninterrupted_run_bit_for_bit(tmp_path, config):
    first = 1  # resumed from epoch 1's checkpoint: the next epoch's shuffle and dropout
    whole = train(config, output=tmp_path / "whole", verbose=False)
    train(_with(config, training__epochs=first), output=tmp_path / "split", verbose=False)
    split = train(config, output=tmp_path / "split", resume=True, verbose=False)
    for a, b in zip(whole.model.get_weights(), split.model.get_weights()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert whole.history == split.history


def test_a_csv_of_named_column_groups_trains_and_predicts(tmp_path):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((16, 4))
    lines = ["a,b,c,d"] + [",".join(f"{v:.6f}" for v in row) for row in table]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    graph = {"inputs": [{"name": "left", "shape": [2]}, {"name": "right", "shape": [1]}],
             "layers": [{"name": "both", "inputs": ["left", "right"], "Concatenate": {}},
                        {"name": "out", "inputs": "both", "Dense": {"units": 1}}],
             "outputs": "out"}
    config = {"data": {"source": "csv", "path": str(tmp_path / "t.csv"),
                       "inputs": {"left": ["a", "b"], "right": ["c"]}, "targets": {"out": ["d"]}},
              "model": {"graph": graph}, "metrics": {"out": ["mae"]},
              "training": {"epochs": 1, "batch_size": 4, "seed": 0},
              "logging": {"progress": "none", "plot": False}}
    data = load_data(parse_config(config).data, tmp_path)
    assert data.x_train["left"].shape[1] == 2 and data.x_test["right"].shape[1] == 1
    every = np.concatenate([data.y_train, data.y_valid, data.y_test])  # one output: an array
    np.testing.assert_allclose(np.sort(every[:, 0]), np.sort(table[:, 3]), atol=1e-6)
    run = train(config, output=tmp_path / "run", verbose=False)
    assert set(run.test_metrics) == {"loss", "mae"}  # one output: Keras's names
    y = predict_csv(ckpt_io.resolve_checkpoint(run.run_dir), tmp_path / "t.csv",
                    tmp_path / "y.csv")
    x = {"left": table[:, :2].astype(np.float32), "right": table[:, 2:3].astype(np.float32)}
    np.testing.assert_allclose(y, run.model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    bad = parse_config(config).data.model_copy(update={"inputs": {"left": ["a", "zz"],
                                                                  "right": ["c"]}})
    with pytest.raises(DataError, match=r"t\.csv: data\.inputs\.left names column 'zz'"):
        load_data(bad, tmp_path)


@pytest.mark.parametrize("edit, expected", [
    (dict(data__inputs={"numbers": "x_numbers", "extras": "x_extra"}),
     "data.inputs.extras: the model has no input 'extras'; its inputs (model.graph) are "
     "numbers, extra"),
    (dict(data__targets={"sum": "y_sum"}),
     "data.targets: gives nothing for the model's output 'pair' (model.graph)"),
    (dict(loss={"sum": "mse", "pairs": "mse"}), "loss.pairs: the model has no output 'pairs'"),
    (dict(loss={"sum": "mse"}), "loss: gives nothing for the output 'pair'"),
    (dict(loss={"sum": "mse", "pair": "msee"}), "loss.pair: "),
    (dict(metrics={"sum": ["mae"], "pair": ["nope"]}), "metrics.pair.0: "),
    (dict(loss_weights=[1.0]), "loss_weights: 1 weights for the 2 outputs (sum, pair)"),
    (dict(loss_weights={"sum": 1.0, "other": 2.0}), "loss_weights.other: the model has no "
                                                     "output 'other'"),
    (dict(model={"layers": [{"Dense": {"units": 1}}]}),
     "model: data.inputs feeds the named inputs of a functional model"),
    (dict(loss={"sum": "sparse_categorical_crossentropy", "pair": "mse"}),
     "loss: 'sparse_categorical_crossentropy' takes one column of class ids"),
])
def test_names_that_are_not_the_models_are_refused_at_their_key(tmp_path, config, edit,
                                                                 expected):
    with pytest.raises(ConfigError, match=re.escape(expected)):
        train(_with(config, **edit), output=tmp_path / "run", verbose=False)
    assert not (tmp_path / "run" / "config.yaml").exists()


@pytest.mark.parametrize("data, expected", [
    ({"inputs": {"a": "x"}}, "targets must map its output names the same way"),
    ({"targets": {"a": "y"}}, "inputs must map the model's input names too"),
    ({"inputs": {"a": "x"}, "targets": {"b": "y"}, "x": "other"},
     "x is for one input array"),
])
def test_the_mappings_come_together(data, expected):
    config = {"data": dict({"source": "npz", "path": "d.npz"}, **data), "model": {"layers": []}}
    with pytest.raises(ConfigError, match=re.escape(expected)):
        parse_config(config)


def test_metrics_by_output_need_named_targets():
    with pytest.raises(ConfigError, match="metrics: a mapping by output name is for data whose"):
        parse_config({"data": {"source": "digits"}, "model": {"layers": []},
                      "metrics": {"out": ["mae"]}})


def test_a_missing_array_or_uneven_rows_are_named(tmp_path, config):
    np.savez(tmp_path / "two.npz", x_numbers=np.zeros((4, 3)), x_extra=np.zeros((3, 2)),
             y_sum=np.zeros(4), y_pair=np.zeros((4, 2)))
    with pytest.raises(DataError, match=r"rows differ \(numbers 4, extra 3, sum 4, pair 4\)"):
        load_data(parse_config(config).data, tmp_path)
    bad = _with(config, data__targets={"sum": "y_total", "pair": "y_pair"})
    with pytest.raises(DataError, match="no array named 'y_total'; the file holds 'x_numbers'"):
        load_data(parse_config(bad).data, tmp_path)


# Keras: keras/src/trainers/compile_utils_test.py::TestCompileLoss::test_list_output_case
# (0.953333: one loss for every output, or one each) and ::test_list_loss_dict_data (1.07666:
# mse on b, mae on a) -- through the config's loss: by output name.
@pytest.mark.parametrize("loss, expected", [("mse", 0.953333),
                                            ({"a": "mse", "b": "mse"}, 0.953333),
                                            ({"b": "mse", "a": "mae"}, 1.07666)])
def test_per_output_losses_as_keras_compile_takes_them(loss, expected):
    inputs = {name: tf.keras.layers.Input(shape=(2,), name=f"{name}_in") for name in "ab"}
    outputs = [tf.keras.layers.Activation("linear", name=name)(inputs[name]) for name in "ab"]
    model = tf.keras.Model(inputs=list(inputs.values()), outputs=outputs)
    cfg = parse_config({"data": {"source": "npz", "path": "d.npz", "inputs": {"a_in": "p",
                        "b_in": "q"}, "targets": {"a": "u", "b": "v"}},
                        "model": {"layers": []}, "loss": loss, "metrics": []})

    class Names:
        target_names = ("a", "b")
    model.compile(**named_compile_arguments(cfg, Names, None, "test.yaml"))
    y_true = {"a": np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]),
              "b": np.array([[0.7, 0.8], [0.9, 1.0], [1.1, 1.2]])}
    y_pred = {"a_in": np.array([[1.2, 1.1], [1.0, 0.9], [0.8, 0.7]]),
              "b_in": np.array([[0.6, 0.5], [0.4, 0.3], [0.2, 0.1]])}
    result = model.evaluate(y_pred, y_true, batch_size=3, verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(expected, abs=1e-5)


def test_the_shipped_two_input_config_trains_on_the_example_arrays(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_local_example_data", ROOT / "examples" / "make_local_example_data.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    arrays = script.two_input_arrays(rows=60)
    np.testing.assert_array_equal(arrays["y_pair"], script.two_input_arrays(rows=60)["y_pair"])
    np.savez(tmp_path / "two_inputs.npz", **arrays)
    config = load_config(CONFIGS / "two_input_regression.yaml",
                         [f"data.path={tmp_path / 'two_inputs.npz'}", "training.epochs=2"])
    run = train(config, output=tmp_path / "run", verbose=False)
    assert set(run.test_metrics) == {"loss", "sum_loss", "pair_loss", "sum_mae", "pair_mae"}
