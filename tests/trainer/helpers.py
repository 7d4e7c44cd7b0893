"""Shared by the trainer's tests: the real ``tapeflow`` command in a subprocess, small configs."""
import copy
import hashlib
import os
import pathlib
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"

# A run that takes about a second: the housing data, a small MLP with Dropout (so the random
# state matters after the initial weights), large batches, few epochs.
SMALL = {
    "data": {"source": "california_housing",
             "split": {"test_size": 0.25, "valid_size": 0.25, "seed": 42}},
    "model": {"layers": [{"Dense": {"units": 16, "activation": "relu"}},
                         {"Dropout": {"rate": 0.1}},
                         {"Dense": {"units": 1}}]},
    "loss": "mse",
    "metrics": ["mae"],
    "optimizer": {"name": "adam", "learning_rate": 0.01},
    "training": {"epochs": 4, "batch_size": 256, "seed": 7},
    "checkpoint": {"every": 1, "keep_last": 2},
    "logging": {"progress": "lines", "plot": False},
}


def small_config(**sections):
    """SMALL with whole sections replaced or (for dicts) updated one level deep."""
    config = copy.deepcopy(SMALL)
    for name, value in sections.items():
        if isinstance(value, dict) and isinstance(config.get(name), dict):
            config[name].update(value)
        else:
            config[name] = value
    return config


def write_config(path, config):
    path = pathlib.Path(path)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def cli(*args, cwd=None, timeout=240, env=None):
    """``tapeflow ARGS...`` as a user runs it; a CompletedProcess with text output."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tapeflow.cli", *map(str, args)],
                          cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def assert_user_error(result, *fragments):
    """Exit status 2, no traceback, one message on stderr holding every fragment."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def tree_digest(directory):
    """{relative path: sha256} of every file under ``directory`` (to show nothing changed)."""
    out = {}
    for path in sorted(pathlib.Path(directory).rglob("*")):
        if path.is_file():
            out[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def rewrite(source, target, edit):
    """A copy of the save at ``source`` whose document ``edit`` changed, written by the
    format's own writer: its checksums are right, as a crafted file's would be."""
    from tapeflow.saving import format as fmt
    document, reader = fmt.read(source)
    arrays = fmt.ArrayWriter()
    try:
        for i in range(reader.count):
            arrays.add(reader.get(i, f"array {i}"))
    finally:
        reader.close()
    edit(document)
    fmt.write(target, document, arrays)


def tiny_config(data_csv, **sections):
    """A run of a fraction of a second: ``write_tiny_csv``'s 40 rows, a 2-4-1 MLP, batches
    of 16 (2 steps an epoch), 2 epochs."""
    tiny = {"data": {"source": "csv", "path": str(data_csv), "targets": ["y"]},
            "model": {"layers": [{"Dense": {"units": 4, "activation": "relu"}},
                                 {"Dense": {"units": 1}}]},
            "training": {"epochs": 2, "batch_size": 16, "seed": 5}}
    config = small_config(**tiny)
    for name, value in sections.items():
        config[name] = dict(config.get(name) or {}, **value)
    return config


def write_tiny_csv(path):
    """40 rows of y = a - 2b, a header ``a,b,y``."""
    import numpy as np
    x = np.random.default_rng(0).normal(size=(40, 2))
    rows = ["a,b,y"] + [f"{a:.6f},{b:.6f},{a - 2 * b:.6f}" for a, b in x]
    pathlib.Path(path).write_text("\n".join(rows) + "\n")
    return path
