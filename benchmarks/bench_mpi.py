#!/usr/bin/env python
"""Data-parallel fit on MPI (``tf.distribute.MPIStrategy``): steps/s for 1 and 2 ranks.

The housing MLP of ``configs/housing.yaml`` (8 -> 64 relu -> 64 relu -> 1, MSE, Adam) on
housing-shaped synthetic data (8 standardized features), at global batch sizes 256 and 4096.
For each batch size:

  no strategy   one process, plain ``model.fit`` (its train step traced by tf.function)
  N rank(s)     ``mpiexec -n N``, fit inside ``MPIStrategy().scope()`` (1 rank: fit's own
                traced step, nothing to reduce); with more, each rank takes
                global_batch / N rows of each step (the step compiled too: the
                gradients' and the metrics' all-reduces are ops of its graph)

Timing: one warm-up epoch, then ``--epochs`` timed epochs of ``--steps`` steps; the figure is
steps per second over the timed epochs, on rank 0.  With 2 ranks on 2 cores the ranks share
the cores with each other and with BLAS's threads (``--threads 1`` gives each rank one).
"allreduce ms/step" is the time in the gradients' Allreduce (4,801 floats, one call per
step), including any wait for the slower rank; the metrics' Allreduce (a few floats) is counted
apart.  Efficiency = steps/s with N ranks /
(N x steps/s with 1 rank) at the same global batch: 1.0 would be perfect strong scaling.

Usage:  python benchmarks/bench_mpi.py [--ranks 1,2] [--batches 256,4096] [--steps 50] [--epochs 3]
                                       [--threads T]
(it launches ``mpiexec`` itself; ``--worker`` is its internal mode.)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

FEATURES = 8
GRAD_FLOATS = 8 * 64 + 64 + 64 * 64 + 64 + 64 + 1  # the housing MLP's parameters


def _model(tf):
    model = tf.keras.Sequential([tf.keras.Input((FEATURES,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3), loss="mse", metrics=["mae"])
    return model


def _data(rows):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, FEATURES)).astype("float32")
    y = np.tanh(x @ rng.normal(size=(FEATURES, 1))).astype("float32")
    return x, y


class _Timer:
    """Wraps the communicator's Allreduce: seconds spent, split by buffer size."""

    def __init__(self, comm):
        self.inner, self.grads, self.metrics, self.on = comm.sum_in_place, 0.0, 0.0, False

    def __call__(self, buffer):
        start = time.perf_counter()
        out = self.inner(buffer)
        if self.on:
            spent = time.perf_counter() - start
            if buffer.size >= GRAD_FLOATS:
                self.grads += spent
            else:
                self.metrics += spent
        return out


def worker(args):
    import tapeflow as tf
    tf.random.set_seed(0)
    x, y = _data(args.batch * args.steps)
    timer, rank = None, 0
    if args.strategy:
        strategy = tf.distribute.MPIStrategy()
        rank = strategy.rank
        timer = _Timer(strategy._comm)
        strategy._comm.sum_in_place = timer
        with strategy.scope():
            model = _model(tf)
    else:
        model = _model(tf)
    marks = []

    def on_epoch(epoch, logs):
        marks.append(time.perf_counter())
        if timer is not None:
            timer.on = True  # after the warm-up epoch
    model.fit(x, y, batch_size=args.batch, epochs=1 + args.epochs, verbose=0, shuffle=True,
              callbacks=[tf.keras.callbacks.LambdaCallback(on_epoch_end=on_epoch)])
    steps = args.steps * args.epochs
    seconds = marks[-1] - marks[0]
    if rank == 0:
        print(json.dumps({"steps_per_s": steps / seconds,
                          "allreduce_ms": None if timer is None else 1e3 * timer.grads / steps,
                          "metrics_ms": None if timer is None else 1e3 * timer.metrics / steps}))


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--batches", default="256,4096")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads per process (default: the libraries' own)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--strategy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=256, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.threads is not None:  # inherited by every process launched below
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("no mpiexec: pip install 'tapeflow[distributed]'")
    me = [sys.executable, os.path.abspath(__file__), "--worker", "--steps", str(args.steps),
          "--epochs", str(args.epochs)]
    print(f"{os.cpu_count()} CPU cores; {args.steps} steps/epoch, {args.epochs} timed epochs; "
          f"threads per process: {args.threads or 'library default'}")
    print(f"{'global batch':>12} {'run':>12} {'steps/s':>9} {'efficiency':>10} "
          f"{'allreduce ms/step':>18} {'metrics ms/step':>16}")
    for batch in (int(b) for b in args.batches.split(",")):
        base = run(me + ["--batch", str(batch)])
        print(f"{batch:>12} {'no strategy':>12} {base['steps_per_s']:>9.1f}")
        one = None  # the 1-rank strategy's steps/s, the base of the efficiency
        for n in (int(r) for r in args.ranks.split(",")):
            got = run([mpiexec, "-n", str(n)] + me + ["--batch", str(batch), "--strategy"])
            if n == 1:
                one = got["steps_per_s"]
            eff = "" if one is None else f"{got['steps_per_s'] / (n * one):.2f}"
            ms = ["-" if n == 1 else f"{got[k]:.3f}" for k in ("allreduce_ms", "metrics_ms")]
            print(f"{batch:>12} {f'{n} rank(s)':>12} {got['steps_per_s']:>9.1f} {eff:>10} "
                  f"{ms[0]:>18} {ms[1]:>16}")


if __name__ == "__main__":
    main()
