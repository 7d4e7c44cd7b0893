#!/usr/bin/env python
"""Save and load times: ``model.save``/``load_model`` (.keras), ``save_weights``/``load_weights``
(.weights.h5) and ``tf.saved_model.save``/``load``, on an MLP 784-512-512-10 (669,706 weights,
compiled with Adam after one step, so the optimizer state is saved too).

Issue 21 asks that the loaders' checks cost no more than 10% of these times.  Each timing is
the median of ``--repeats`` calls in a child process, as wall time and as the process's CPU
time (on a shared machine the wall time also holds the time spent waiting for a core: the
CPU time is the steadier measure of the code's own cost, and its fastest call the least
disturbed; a save's fsync shows only in the wall time).  With ``--baseline SRC`` (another
checkout's ``src``, e.g. a ``git worktree`` of an older commit; repeatable, ``NAME=SRC``
names a column) the same runs alternate between the trees, each in a fresh process, and
each tree's ratio to the first baseline is printed.
Every load is checked to give the saved model's predictions (bitwise); a tree that cannot
save the SavedModel rows says so on stderr and shows them as failed.

Usage:  python benchmarks/bench_save_load.py [--repeats 15] [--rounds 3]
            [--baseline [NAME=]SRC ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, os, sys, tempfile, time
import numpy as np
import tapeflow as tf
repeats = int(sys.argv[1])
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 784)).astype(np.float32)
y = rng.integers(0, 10, size=64)
model = tf.keras.Sequential([tf.keras.Input((784,)), tf.keras.layers.Dense(512, activation="relu"),
                             tf.keras.layers.Dense(512, activation="relu"),
                             tf.keras.layers.Dense(10)])
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, epochs=1, batch_size=64, verbose=0)
want = model.predict(x, verbose=0)
twin = tf.keras.models.clone_model(model)
twin.build((None, 784))
twin.compile(optimizer="adam",
             loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


def timed(fn):
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return [sorted(walls)[len(walls) // 2] * 1e3, sorted(cpus)[len(cpus) // 2] * 1e3,
            min(cpus) * 1e3], out


with tempfile.TemporaryDirectory() as d:
    keras_path = os.path.join(d, "m.keras")
    weights_path = os.path.join(d, "m.weights.h5")
    saved_dir = os.path.join(d, "saved")
    result = {}
    result["save .keras"], _ = timed(lambda: model.save(keras_path))
    result["load_model .keras"], loaded = timed(lambda: tf.keras.models.load_model(keras_path))
    assert np.array_equal(loaded.predict(x, verbose=0), want)
    result["save_weights"], _ = timed(lambda: model.save_weights(weights_path))
    result["load_weights"], _ = timed(lambda: twin.load_weights(weights_path))
    assert np.array_equal(twin.predict(x, verbose=0), want)
    try:  # before 2026-11-28 a model saved after fit took its compiled steps along, and failed
        result["saved_model.save"], _ = timed(lambda: tf.saved_model.save(model, saved_dir))
        result["saved_model.load"], restored = timed(lambda: tf.saved_model.load(saved_dir))
    except Exception as e:  # noqa: BLE001 - the row says so
        print(f"saved_model: {type(e).__name__}: {e}", file=sys.stderr)
        result["saved_model.save"] = result["saved_model.load"] = None
print(json.dumps(result))
"""


def run_child(src, repeats):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if src:
        env["PYTHONPATH"] = src
    out = subprocess.run([sys.executable, "-c", CHILD, str(repeats)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="calls per timing (median)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per tree")
    parser.add_argument("--baseline", action="append", default=[], metavar="[NAME=]SRC",
                        help="another checkout's src directory to compare with (repeatable; "
                             "ratios are to the first)")
    args = parser.parse_args(argv)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    trees = {"this": os.path.abspath(here)}
    for i, spec in enumerate(args.baseline):
        name, _, src = spec.rpartition("=")
        trees[name or ("baseline" if i == 0 else f"baseline{i + 1}")] = os.path.abspath(src)
    runs = {name: [] for name in trees}
    names, first = list(trees), list(trees)[1] if len(trees) > 1 else None
    for r in range(args.rounds):
        # alternating, each round starting with the next tree: the machine's drift, and any
        # cost of coming first or after another, hit every tree alike
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(run_child(trees[name], args.repeats))
    for column, (clock, pick) in enumerate(
            (("wall ms, median of the processes' medians", statistics.median),
             ("CPU ms (the process's), median of the processes' medians", statistics.median),
             ("CPU ms, the fastest call of all (interference only ever slows one)", min))):
        medians = {name: {k: None if any(r[k] is None for r in rs) else
                          pick(r[k][column] for r in rs) for k in rs[0]}
                   for name, rs in runs.items()}
        print(f"\n{clock}, {args.rounds} processes a tree")
        print(f"{'':<20}" + "".join(f"{n:>12}" for n in names)
              + "".join(f"{n + '/' + first:>20}" for n in names if first and n != first))
        for key in medians["this"]:
            row = f"{key:<20}" + "".join(_shown(medians[n][key]) for n in names)
            for n in names:
                if first and n != first:
                    mine, theirs = medians[n][key], medians[first][key]
                    row += f"{'-' if None in (mine, theirs) else f'{mine / theirs:.2f}x':>20}"
            print(row)


def _shown(value):
    return f"{'failed':>12}" if value is None else f"{value:>12.2f}"


if __name__ == "__main__":
    main()
