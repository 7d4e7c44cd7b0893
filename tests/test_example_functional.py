"""examples/functional_two_inputs.py runs as a user runs it: two inputs and two outputs trained
with fit, saved and reloaded with the same predictions."""
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.child_process  # runs the example in a child process

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_functional_two_inputs_example_trains_saves_and_reloads():
    result = subprocess.run([sys.executable, "examples/functional_two_inputs.py"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    both, means = map(float, re.search(r"test accuracy: ([0-9.]+) \(both groups\), ([0-9.]+)",
                                       result.stdout).groups())
    assert both > 0.93 and means > 0.88, result.stdout  # the majority class is 0.63
    assert "predictions equal: True" in result.stdout
    assert "joined (Concatenate)" in result.stdout and "Connected to" in result.stdout
