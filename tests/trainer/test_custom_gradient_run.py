"""configs/housing_custom_gradient.yaml: a model whose activation has a hand-written gradient
(examples/stable_softplus.py) trains, and its checkpoint reloads and differentiates the same
in a process where that file cannot be imported."""
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml

from tapeflow.training.run import train

from .helpers import CONFIGS, ROOT, cli

pytestmark = pytest.mark.child_process  # the real command, in child processes

RELOAD = textwrap.dedent("""
    import sys
    import numpy as np
    import tapeflow as tf
    assert "stable_softplus" not in sys.modules
    model = tf.keras.models.load_model(sys.argv[1])
    x = tf.constant(np.load(sys.argv[2]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x)
    dx, *dw = tape.gradient(y, [x] + list(model.trainable_variables))
    np.savez(sys.argv[3], y=y.numpy(), dx=dx.numpy(), *[g.numpy() for g in dw],
             kind=np.array(type(model).__name__))
""")


def _config(tmp_path):
    config = yaml.safe_load((CONFIGS / "housing_custom_gradient.yaml").read_text())
    config["model"]["builder"] = str(ROOT / "examples" / "stable_softplus.py") + ":build_layers"
    config["model"]["arguments"] = {"units": [16]}
    config["training"].update(epochs=2, batch_size=512)
    return config


def test_builder_needs_permission(tmp_path):
    result = cli("train", CONFIGS / "housing_custom_gradient.yaml", "--output", tmp_path / "r")
    assert result.returncode == 2 and "--allow-builder" in result.stderr
    assert not (tmp_path / "r").exists()


def test_custom_gradient_survives_reload_without_its_code(tmp_path):
    run = train(_config(tmp_path), output=tmp_path / "run", allow_builder=True, verbose=False)
    # rows whose pre-activations reach the softplus's overflow region, where only the
    # hand-written gradient stays finite
    x = np.array([[8.3, 41, 7, 1, 300, 2.5, 37.9, -122.2],
                  [80.0, 52, 100, 50, 30000, 900, 40.0, -120.0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    import tapeflow as tf
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = run.model(xt)
    dx, *dw = tape.gradient(y, [xt] + list(run.model.trainable_variables))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "reload.py"
    script.write_text(RELOAD)
    ckpt = tmp_path / "copy.h5"
    shutil.copy(tmp_path / "run" / "model.h5", ckpt)
    done = subprocess.run([sys.executable, str(script), str(ckpt), str(tmp_path / "x.npy"),
                           str(tmp_path / "out.npz")], cwd=elsewhere, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = np.load(tmp_path / "out.npz")
    assert str(got["kind"]) == "SavedGraphModel"   # rebuilt from its graph, not from code
    np.testing.assert_array_equal(got["y"], y.numpy())
    np.testing.assert_array_equal(got["dx"], dx.numpy())
    for i, g in enumerate(dw):
        np.testing.assert_array_equal(got[f"arr_{i}"], g.numpy())
    assert np.isfinite(got["dx"]).all()

    inspected = cli("inspect", tmp_path / "run")
    assert "custom gradients: stable_softplus_grad" in inspected.stdout, inspected.stdout
