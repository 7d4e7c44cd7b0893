"""``tapeflow sweep`` (issue 23 item 4): a grid of runs, resumable, with a summary.

The end-to-end test runs the real command, SIGKILLs it after two of four runs, and runs it
again (with --jobs 2): only the missing runs train, and the summary lists all four.
"""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tapeflow.cli import main
from tapeflow.training.run_config import ConfigError
from tapeflow.training.sweep import parse_grid, plan_sweep

from .helpers import assert_user_error, cli, small_config, write_config

GRID = ["--grid", "training.epochs=1,3", "--grid", "training.batch_size=512,1024"]


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path / "small.yaml", small_config())


@pytest.mark.child_process
def test_a_killed_sweep_reruns_only_its_missing_runs(config, tmp_path):
    out = tmp_path / "sweep"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tapeflow.cli", "sweep", str(config), *GRID,
                             "--output", str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    runs = lambda: sorted(p for p in out.glob("run-*"))  # noqa: E731
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if sum((r / "test_metrics.json").exists() for r in runs()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = {r.name: (r / "test_metrics.json").stat().st_mtime_ns
            for r in runs() if (r / "test_metrics.json").exists()}
    assert len(done) == 2, done  # runs 0 and 1 (1 epoch); run 2 (3 epochs) was under way

    result = cli("sweep", config, *GRID, "--output", out, "--jobs", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 runs in" in result.stdout and "2 done, 2 to train" in result.stdout
    for name, mtime in done.items():  # the finished runs were not trained again
        assert (out / name / "test_metrics.json").stat().st_mtime_ns == mtime
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4
    losses = [float(r["test_loss"]) for r in rows]
    assert losses == sorted(losses)  # best first
    for row in rows:
        metrics = json.loads((out / row["run"] / "test_metrics.json").read_text())
        assert float(row["test_loss"]) == metrics["loss"]
        assert row["training.epochs"] in ("1", "3")
    assert (out / "summary.png").stat().st_size > 0


def test_every_combination_is_checked_before_any_run(config, tmp_path, capsys):
    out = tmp_path / "sweep"
    status = main(["sweep", str(config), "--grid", "training.batch_size=64,-3",
                   "--output", str(out)])
    assert status == 2
    err = capsys.readouterr().err
    assert "training.batch_size" in err and "Traceback" not in err
    assert not out.exists()  # nothing trained, nothing written


def test_a_directory_holding_another_sweep_is_refused(config, tmp_path):
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"config": "other.yaml", "grid": [], "set": []}))
    result = main(["sweep", str(config), "--grid", "training.epochs=1,2", "--output", str(out)])
    assert result == 2


@pytest.mark.parametrize("item, fragment", [
    ("training.epochs", "expected key.path=value1,value2"),
    ("training.epochs=1,,2", "an empty value between commas"),
    ("training.epochs=1,1", "listed twice"),
    ("training.epochs=[1", "training.epochs"),
])
def test_grid_mistakes_are_one_message(item, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("[", r"\[")):
        parse_grid([item])


def test_runs_are_every_combination_in_grid_order(config, tmp_path):
    grid = parse_grid(["training.epochs=1,2", "training.batch_size=32,64,128"])
    sweep_dir, runs = plan_sweep(config, grid, output=tmp_path / "s")
    assert len(runs) == 6
    assert runs[0].overrides == ["training.epochs=1", "training.batch_size=32"]
    assert runs[5].overrides == ["training.epochs=2", "training.batch_size=128"]
    assert os.path.basename(runs[4].run_dir) == "run-04-epochs=2_batch_size=64"
