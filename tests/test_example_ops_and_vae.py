"""examples/functional_ops_two_heads.py and examples/vae_add_loss.py, each run as its script
(``runpy``, as ``__main__``; in this process, since a child process's imports would cost
more than the example, and so the strict device runs them too), with its metric: the
two-head model of symbolic operators learns the digits and reloads without its code; the
VAE's add_loss KL term trains with its reconstruction."""
import pathlib
import re
import runpy
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ran(script, monkeypatch, capsys):
    # 15 epochs (the scripts' defaults are 30 and 40): enough for the metrics checked here
    monkeypatch.setattr(sys, "argv", [script, "--epochs", "15"])
    runpy.run_path(str(ROOT / script), run_name="__main__")
    return capsys.readouterr().out


def test_functional_ops_two_heads_example_learns_digits_and_reloads_without_code(
        monkeypatch, capsys):
    out = _ran("examples/functional_ops_two_heads.py", monkeypatch, capsys)
    digit, parity = map(float, re.search(r"test accuracy: ([0-9.]+) \(digit\), ([0-9.]+)",
                                         out).groups())
    assert digit > 0.95 and parity > 0.88, out  # 0.969 and 0.924 on the seed; chance 0.1, 0.5
    assert "reloaded from two_heads.keras (Functional): predictions equal: True" in out
    assert "tf.math.reduce_mean (TFOpLambda)" in out and "tf.__operators__.getitem" in out


def test_vae_add_loss_example_reconstructs_better_than_the_mean_image(monkeypatch, capsys):
    out = _ran("examples/vae_add_loss.py", monkeypatch, capsys)
    mse, baseline, kl = map(float, re.search(
        r"test reconstruction MSE: ([0-9.]+) \(mean image: ([0-9.]+)\); test KL: ([0-9.]+)",
        out).groups())
    assert mse < 0.8 * baseline, out  # 0.054 against 0.073 on the seed
    assert 0.5 < kl < 20.0, out        # the code carries information, and stays near N(0, 1)
