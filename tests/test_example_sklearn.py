"""examples/sklearn_pipeline.py as a user runs it, with --quick (a subsample, two epochs)."""
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.child_process  # runs the example in a child process

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_sklearn_pipeline_example_tunes_and_compares_with_a_baseline():
    result = subprocess.run([sys.executable, "examples/sklearn_pipeline.py", "--quick"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.count("cross-validated MSE") == 2 and "best: {'net__model_kwargs__learning_rate'" \
        in out
    assert "tapeflow network (tuned) test MSE:" in out
    assert "HistGradientBoostingRegressor test MSE:" in out
