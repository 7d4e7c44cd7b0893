"""examples/text_classifier.py runs as a user runs it and learns word order well above chance."""
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.child_process  # runs the example in a child process

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_text_classifier_learns_the_order_of_words():
    result = subprocess.run([sys.executable, "examples/text_classifier.py"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", result.stdout).group(1))
    assert accuracy > 0.9, result.stdout  # chance is 0.5
    assert "embedding (Embedding)" in result.stdout  # the summary shows the model
