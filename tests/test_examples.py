"""The examples run as a user runs them: as scripts, in a fresh interpreter."""
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np

import tapeflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ran(*args, timeout=120):
    """The example's standard output; it must exit 0 without a traceback."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def test_hessian_example():
    out = _ran("examples/hessian.py")
    assert "symmetric: True" in out and "matches the matrix: True" in out


def test_housing_example_with_input_gradient():
    out = _ran("examples/housing.py", "--epochs", "1", "--input-gradient", "0.1", timeout=300)
    assert "Epoch 1/1" in out and "test MSE:" in out


def test_cli_lists_the_registry():
    result = subprocess.run([sys.executable, "-m", "tapeflow.cli", "ops"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "BatchMatMulV2" in result.stdout


# --- stable_softplus: the script, and build_layers as the YAML trainer loads it ---------------
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
