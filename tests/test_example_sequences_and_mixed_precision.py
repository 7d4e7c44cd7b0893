"""examples/masked_bilstm.py, examples/transformer_block.py and examples/mixed_precision_fit.py,
each run as its script (``runpy``, as ``__main__``, in this process, as
tests/test_example_ops_and_vae.py runs its examples, so the strict device runs them too), with
its metric."""
import pathlib
import re
import runpy
import sys

from tapeflow.keras import mixed_precision

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _ran(script, epochs, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script, "--epochs", str(epochs)])
    runpy.run_path(str(ROOT / script), run_name="__main__")
    return capsys.readouterr().out


def test_masked_bilstm_example_reads_both_ends_and_ignores_the_padding(monkeypatch, capsys):
    out = _ran("examples/masked_bilstm.py", 4, monkeypatch, capsys)  # the script's default: 8
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.9, out  # 0.988 on the seed; chance about 0.5
    assert "predictions with 8 more padding steps equal: True" in out


def test_transformer_block_example_learns_the_order_of_two_words(monkeypatch, capsys):
    out = _ran("examples/transformer_block.py", 8, monkeypatch, capsys)
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", out).group(1))
    assert accuracy > 0.9, out  # 0.973 on the seed; chance 0.5 (0.49 without positions)


def test_mixed_precision_fit_example_trains_in_float16_with_float32_variables(
        monkeypatch, capsys):
    out = _ran("examples/mixed_precision_fit.py", 8, monkeypatch, capsys)  # default 20
    assert mixed_precision.global_policy().name == "float32"  # the example put it back
    assert ("policy mixed_float16: compute dtype float16, variable dtype float32; kernel "
            "float32; hidden outputs float16; predictions float32") in out, out
    assert "optimizer: LossScaleOptimizer(Adam)" in out, out
    accuracy = float(re.search(r"test accuracy \(mixed_float16\): ([0-9.]+)", out).group(1))
    assert accuracy > 0.93, out  # 0.958 on the seed (float32: about the same); chance 0.1
