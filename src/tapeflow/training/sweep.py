"""``tapeflow sweep``: every combination of a grid of config values as its own run.

    tapeflow sweep configs/housing.yaml --grid optimizer.learning_rate=1e-3,3e-3 \\
        --grid training.batch_size=32,64 --jobs 2

Each combination is a ``--set`` list on the same config, checked (all of them) before any run
starts.  Its run directory is ``<output>/run-NN-<key=value,...>`` under the sweep's directory
(``runs/<config name>-sweep`` by default), which also gets ``sweep.json`` (the config and the
grid, so a rerun with another grid there is refused instead of mixing two sweeps) and the
summary: ``summary.csv`` (each run's grid values and test metrics, best first by test loss)
and ``summary.png``.

A rerun of the same command goes on: a run whose ``test_metrics.json`` exists is done and
skipped; any other resumes from its last checkpoint (``train(resume=True)`` starts a run whose
directory is missing or empty).  ``--jobs 1`` trains the runs one after another in this
process; ``--jobs N`` runs N ``tapeflow train`` processes at a time, each run's output in
``logs/<run>.log``.
"""
import csv
import itertools
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from .run_config import ConfigError, load_config, parse_override
from .errors import UserError

__all__ = ["parse_grid", "plan_sweep", "sweep", "SweepRun"]

MAX_RUNS = 1000  # a grid is a list of runs to train: more than this is a typing mistake


class SweepRun:
    """One combination: its ``--set`` overrides, the grid values, and its run directory."""

    def __init__(self, index, values, run_dir):
        self.index = index
        self.values = values          # [(key, text), ...] in the grid's order
        self.run_dir = run_dir

    @property
    def overrides(self):
        return [f"{key}={text}" for key, text in self.values]

    @property
    def done(self):
        return os.path.isfile(os.path.join(self.run_dir, "test_metrics.json"))

    def test_metrics(self):
        with open(os.path.join(self.run_dir, "test_metrics.json")) as f:
            return json.load(f)


def parse_grid(items):
    """``["a.b=1,2", "c=x,y"]`` -> ``[("a.b", ["1", "2"]), ("c", ["x", "y"])]``, each value
    checked as a ``--set`` value (YAML) on its own."""
    grid = []
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ConfigError(f"--grid {item}: expected key.path=value1,value2,...")
        texts = [v.strip() for v in values.split(",")]
        if any(not t for t in texts):
            raise ConfigError(f"--grid {item}: an empty value between commas")
        if len(set(texts)) != len(texts):
            raise ConfigError(f"--grid {item}: a value is listed twice")
        if key in (k for k, _ in grid):
            raise ConfigError(f"--grid {key}: the key is given twice")
        for text in texts:
            parse_override(f"{key}={text}")
        grid.append((key, texts))
    if not grid:
        raise ConfigError("tapeflow sweep needs at least one --grid key.path=value1,value2")
    return grid


def _run_name(index, values):
    label = "_".join(f"{key.rsplit('.', 1)[-1]}={text}" for key, text in values)
    label = re.sub(r"[^A-Za-z0-9._=,+-]", "_", label)[:80]
    return f"run-{index:02d}-{label}"


def plan_sweep(config_path, grid, overrides=(), output=None):
    """The sweep's directory and its runs; every combination's config is loaded (validated)
    first, so a bad value stops the sweep before any training."""
    combos = list(itertools.product(*[[(key, t) for t in texts] for key, texts in grid]))
    if len(combos) > MAX_RUNS:
        raise ConfigError(f"--grid: {len(combos)} combinations, more than {MAX_RUNS}")
    for values in combos:
        load_config(config_path, list(overrides) + [f"{k}={t}" for k, t in values])
    name = os.path.splitext(os.path.basename(str(config_path)))[0]
    sweep_dir = os.path.abspath(output or os.path.join("runs", f"{name}-sweep"))
    runs = [SweepRun(i, list(values), os.path.join(sweep_dir, _run_name(i, values)))
            for i, values in enumerate(combos)]
    return sweep_dir, runs


def _claim(sweep_dir, config_path, grid, overrides):
    """Write (or check) ``sweep.json``: one directory holds one sweep."""
    record = {"config": os.path.abspath(str(config_path)), "grid": [[k, v] for k, v in grid],
              "set": list(overrides)}
    path = os.path.join(sweep_dir, "sweep.json")
    if os.path.exists(path):
        try:
            with open(path) as f:
                existing = json.load(f)
        except (OSError, ValueError) as e:
            raise UserError(f"{path}: not a sweep record ({e})") from None
        if existing != record:
            raise UserError(f"{sweep_dir} holds another sweep ({path} records config "
                            f"{existing.get('config')!r} and grid {existing.get('grid')}); "
                            f"choose another --output")
        return
    os.makedirs(sweep_dir, exist_ok=True)
    from ..saving.atomic import write_text_atomically
    write_text_atomically(path, json.dumps(record, indent=2) + "\n")


def sweep(config_path, grid, *, overrides=(), output=None, jobs=1, allow_builder=False,
          stream=None):
    """Train every combination not done yet; returns the sweep's directory and its runs."""
    stream = stream if stream is not None else sys.stdout
    if not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"--jobs {jobs}: expected a whole number >= 1")
    sweep_dir, runs = plan_sweep(config_path, grid, overrides, output)
    _claim(sweep_dir, config_path, grid, overrides)
    todo = [r for r in runs if not r.done]
    print(f"tapeflow sweep: {len(runs)} runs in {sweep_dir}; {len(runs) - len(todo)} done, "
          f"{len(todo)} to train", file=stream)
    if jobs == 1:
        from .run import train
        for run in todo:
            print(f"tapeflow sweep: {os.path.basename(run.run_dir)}", file=stream)
            train(config_path, output=run.run_dir, resume=True,
                  overrides=list(overrides) + run.overrides, allow_builder=allow_builder,
                  verbose=False, stream=stream)
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            failed = [r for r, ok in zip(todo, pool.map(
                lambda r: _train_in_a_process(config_path, r, overrides, allow_builder), todo))
                if not ok]
        if failed:
            raise UserError(f"{len(failed)} run(s) failed; their output: " + ", ".join(
                _log_path(r) for r in failed))
    write_summary(sweep_dir, grid, runs, stream)
    return sweep_dir, runs


def _log_path(run):
    """A run's output under ``--jobs N``: beside the runs (a file in a run directory that has
    not started would make it look like another run's)."""
    return os.path.join(os.path.dirname(run.run_dir), "logs",
                        os.path.basename(run.run_dir) + ".log")


def _train_in_a_process(config_path, run, overrides, allow_builder):
    os.makedirs(os.path.dirname(_log_path(run)), exist_ok=True)
    command = [sys.executable, "-m", "tapeflow.cli", "train", str(config_path), "--resume",
               "--output", run.run_dir]
    for item in list(overrides) + run.overrides:
        command += ["--set", item]
    if allow_builder:
        command.append("--allow-builder")
    with open(_log_path(run), "a") as log:
        return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode == 0


def write_summary(sweep_dir, grid, runs, stream):
    """``summary.csv`` and ``summary.png``: the finished runs, best (lowest test loss) first."""
    finished = [(r, r.test_metrics()) for r in runs if r.done]
    finished.sort(key=lambda rm: (rm[1].get("loss", float("inf")), rm[0].index))
    metrics = sorted({m for _, ms in finished for m in ms}, key=lambda m: (m != "loss", m))
    keys = [k for k, _ in grid]
    from ..saving.atomic import write_text_atomically
    rows = [["run"] + keys + [f"test_{m}" for m in metrics]]
    for run, ms in finished:
        rows.append([os.path.basename(run.run_dir)] + [t for _, t in run.values] +
                    [repr(ms[m]) if m in ms else "" for m in metrics])
    text = _csv_text(rows)
    write_text_atomically(os.path.join(sweep_dir, "summary.csv"), text)
    if finished and "loss" in metrics:
        _plot(os.path.join(sweep_dir, "summary.png"), finished)
    print(text, end="", file=stream)


def _csv_text(rows):
    import io
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _plot(path, finished):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [os.path.basename(r.run_dir)[:40] for r, _ in finished]
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(labels) + 1.2))
    ax.barh(range(len(labels)), [ms["loss"] for _, ms in finished])
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("test loss")
    fig.tight_layout()
    from ..saving.atomic import write_atomically
    write_atomically(path, lambda tmp: fig.savefig(tmp, format="png"))
    plt.close(fig)
