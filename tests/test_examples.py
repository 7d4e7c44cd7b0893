"""The examples run as a user runs them: as scripts, in a fresh interpreter (``child_process``:
those run on numpy whatever the device, so the strict pass skips them; build_layers, imported
here, runs on both)."""
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ran(*args, timeout=120):
    """The example's standard output; it must exit 0 without a traceback."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


@pytest.mark.child_process
def test_hessian_example():
    out = _ran("examples/hessian.py")
    assert "symmetric: True" in out and "matches the matrix: True" in out


@pytest.mark.child_process
def test_housing_example_with_input_gradient():
    out = _ran("examples/housing.py", "--epochs", "1", "--input-gradient", "0.1", timeout=300)
    assert "Epoch 1/1" in out and "test MSE:" in out


@pytest.mark.child_process
def test_cli_lists_the_registry():
    result = subprocess.run([sys.executable, "-m", "tapeflow.cli", "ops"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "BatchMatMulV2" in result.stdout


# --- stable_softplus: the script, and build_layers as the YAML trainer loads it ---------------
@pytest.mark.child_process
def test_stable_softplus_example_gradient_is_one_where_the_naive_one_is_nan():
    rows = {line.split()[0]: line.split()[1:] for line in _ran("examples/stable_softplus.py")
            .splitlines() if line.split() and line.split()[0] in ("0.0", "100.0", "-100.0")}
    #       naive softplus, gradient, stable softplus, gradient
    assert rows["100.0"] == ["inf", "nan", "100.0", "1.0"]
    assert rows["0.0"] == ["0.6931", "0.5", "0.6931", "0.5"]
    assert rows["-100.0"][2:] == ["3.784e-44", "3.784e-44"]


def _load_builder():
    """``examples/stable_softplus.py:build_layers``, imported by file path as the trainer does."""
    spec = importlib.util.spec_from_file_location("stable_softplus_example",
                                                  ROOT / "examples" / "stable_softplus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_build_layers_is_the_trainers_contract():
    module = _load_builder()
    layers = module.build_layers()
    assert isinstance(layers, list) and [layer.units for layer in layers] == [64, 64, 1]
    assert all(isinstance(layer, tf.keras.layers.Dense) for layer in layers)
    assert [layer.units for layer in module.build_layers(units=(8, 4))] == [8, 4, 1]
    assert [layer.units for layer in module.build_layers(units=[5])] == [5, 1]


def test_build_layers_trains_behind_the_trainers_input_and_normalization():
    module = _load_builder()
    x = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32) * 50.0
    y = x[:, :1] / 50.0
    normalize = tf.keras.layers.Normalization()
    normalize.adapt(x)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), normalize]
                                + module.build_layers(units=(8, 8)))
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    big = tf.constant(x * 1e4)                  # pre-activations far past exp's float32 range
    with tf.GradientTape() as tape:
        tape.watch(big)
        out = tf.reduce_sum(model(big))
    assert np.isfinite(tape.gradient(out, big).numpy()).all()


# --- the tour of the API -------------------------------------------------------------------------
@pytest.mark.child_process
def test_model_building_example():
    out = _ran("examples/model_building.py")
    assert 'Model: "sequential_classifier"' in out and 'Model: "residual_classifier"' in out
    for name in ("sequential_classifier", "residual_classifier"):
        line = next(line for line in out.splitlines() if line.startswith(f"{name}: train loss"))
        assert float(line.split("test accuracy")[1]) > 0.9, line


@pytest.mark.child_process
def test_custom_training_loop_example_eager_and_traced_agree():
    out = _ran("examples/custom_training_loop.py", "--epochs", "1")
    assert out.count("epoch 1/1: loss") == 2
    assert "same test MSE eager and traced: True" in out
    assert "BatchMatMulV2" in out               # the traced step's graph listing


@pytest.mark.child_process
def test_advanced_autodiff_example_prints_the_seeds_numbers():
    out = _ran("examples/advanced_autodiff.py")
    for expected in ["dz/dw1, dz/dw2: [36.0, 10.0]",
                     "A non-persistent GradientTape can only be used to compute one set",
                     "(of their sum): [136.0, 30.0]",
                     "constants, not watched: [None, None]",
                     "stop_recording: dz/dx 4.0 dz/dy None",
                     "reset:          dz/dx 4.0 dz/dy None",
                     "stop_gradient: [30.0, 0.0]",
                     "/ dv at 2: 2.0",
                     "cos(0): 1.0  sigmoid'(0): 0.25",
                     "x^3 at 1: dy_dx 3.0 d2y_dx2 6.0",
                     "Hessian of f by nested tapes: [[6.0, 2.0], [2.0, 0.0]]",
                     "gradient == c / a: True",
                     "nonzeros [48. 12.  3. 27.]",
                     "scalar source: y (201,) dy/d delta (201,)",
                     "jacobian (7, 10, 5, 10) | summed over the target = gradient: True",
                     "jacobian (7, 6, 7, 5) batch_jacobian (7, 6, 5)",
                     "layer1.kernel (5, 8) h (5, 8, 5, 8)",
                     "symmetric: True",
                     "tf.hessian over all 4 variables: (102, 102)"]:
        assert expected in out, expected
    for line in out.splitlines():               # each Newton step lowers the loss
        if "loss" in line and "->" in line:
            before, after = (float(s) for s in line.split("loss")[1].split("->"))
            assert after < before, line


@pytest.mark.child_process
def test_saving_and_reloading_example_is_bitwise_and_keeps_the_custom_gradient():
    out = _ran("examples/saving_and_reloading.py")
    assert "load_model: Sequential 'sequential', predictions identical: True" in out
    assert "same step count: True" in out
    assert "before loading, same predictions: False; after: True" in out
    assert "outputs identical: True | d clip_gradients(v * v) / dv at 2: 2.0" in out
    assert "fresh process | stable_softplus is not importable here" in out
    assert "fresh process | load_model: SavedGraphModel" in out
    assert "fresh process | predictions identical: True" in out
    assert "weights) identical: True | finite: True" in out


# --- timeseries_forecasting: window/flat_map and timeseries_dataset_from_array ---------------
@pytest.mark.child_process
def test_timeseries_forecasting_example_beats_the_naive_forecast():
    out = _ran("examples/timeseries_forecasting.py", "--epochs", "4")
    metrics = {line.split(":")[0]: float(line.split(":")[1]) for line in out.splitlines()
               if line.startswith(("validation MAE", "naive forecast MAE"))}
    assert "shape=(None, 24)" in out                    # window + flat_map's spec, batched
    # the noise alone (sd 0.1) costs an MAE of about 0.08; the naive forecast about 0.2
    assert metrics["validation MAE"] < 0.6 * metrics["naive forecast MAE"]
    assert metrics["validation MAE"] < 0.13
