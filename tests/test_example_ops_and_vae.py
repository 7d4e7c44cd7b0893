"""examples/functional_ops_two_heads.py and examples/vae_add_loss.py run as a user runs them,
each with its metric: the two-head model of symbolic operators learns the digits and reloads
without its code; the VAE's add_loss KL term trains with its reconstruction."""
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.child_process  # runs the examples in child processes

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ran(script):
    result = subprocess.run([sys.executable, script], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def test_functional_ops_two_heads_example_learns_digits_and_reloads_without_code():
    out = _ran("examples/functional_ops_two_heads.py")
    digit, parity = map(float, re.search(r"test accuracy: ([0-9.]+) \(digit\), ([0-9.]+)",
                                         out).groups())
    assert digit > 0.95 and parity > 0.88, out  # chance: 0.1 and 0.5
    assert "reloaded from two_heads.keras (Functional): predictions equal: True" in out
    assert "tf.math.reduce_mean (TFOpLambda)" in out and "tf.__operators__.getitem" in out


def test_vae_add_loss_example_reconstructs_better_than_the_mean_image():
    out = _ran("examples/vae_add_loss.py")
    mse, baseline, kl = map(float, re.search(
        r"test reconstruction MSE: ([0-9.]+) \(mean image: ([0-9.]+)\); test KL: ([0-9.]+)",
        out).groups())
    assert mse < 0.75 * baseline, out  # 0.045 against 0.073 on the seed
    assert 0.5 < kl < 20.0, out        # the code carries information, and stays near N(0, 1)
