#!/usr/bin/env python
"""What memory planning (``tracing/memory_plan.py``) buys a compiled training step.

Workloads (issue 22): W5, the housing-sized MLP 8-64-64-1 (ReLU, MSE, Adam) at batch 1,024 and
8,192, and W1, the MLP 784-512-512-10 (ReLU, softmax cross-entropy, Adam) at batch 128, each as
one ``tf.function`` step on random data.  The same traced graph is compiled five ways and the
five run alternately in one process, ``--repeats`` rounds of ``--steps`` steps each:

  plain     every temporary held to the end of the call (before memory planning)
  freed     each value dropped after its last use (liveness)
  buffers   freed, and the large elementwise and matmul results written with ``out=`` into
            buffers the function keeps between calls
  in_place  freed, and optimizer updates written into the Variables' own arrays where
            nothing else holds them
  all       all three

tapeflow's default is freed + in_place: buffers measured no faster than freeing alone
(``memory_plan.BUFFERS``).

Printed per workload and variant: the median milliseconds per step (wall and CPU), the minor
page faults per step (``resource.getrusage``), and its speed over plain (the median of the
rounds' ratios).

Usage:  python benchmarks/bench_memory_plan.py [--steps 50] [--repeats 7] [--workloads w5a,w5b,w1]
"""
import argparse
import os
import resource
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402
from tapeflow.tracing.compiler import compile_graph  # noqa: E402

VARIANTS = {"plain": dict(free_dead=False),
            "freed": dict(free_dead=True),
            "buffers": dict(free_dead=True, buffers=True),
            "in_place": dict(free_dead=True, in_place=True),
            "all": dict(free_dead=True, buffers=True, in_place=True)}
WORKLOADS = {"w5a": ("mlp", 8, (64, 64, 1), 1024), "w5b": ("mlp", 8, (64, 64, 1), 8192),
             "w1": ("ce", 784, (512, 512, 10), 128)}


def make_step(loss_kind, features, units, batch):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, features)).astype(np.float32))
    layers = [tf.keras.layers.Dense(n, activation="relu") for n in units[:-1]]
    model = tf.keras.Sequential([tf.keras.Input((features,))] + layers +
                                [tf.keras.layers.Dense(units[-1])])
    if loss_kind == "mlp":
        y = tf.constant(rng.normal(size=(batch, 1)).astype(np.float32))
        loss_fn = lambda y, p: tf.reduce_mean(tf.square(p - y))  # noqa: E731
    else:
        y = tf.constant(rng.integers(0, units[-1], size=(batch,)))
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    step(x, y)
    concrete = step.get_concrete_function(x, y)
    runs = {name: compile_graph(concrete.optimized_graph, tensors=True, **options)
            for name, options in VARIANTS.items()}
    return runs, (x, y)


def timed(run, args, steps):
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        run(*args)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return wall / steps * 1e3, cpu / steps * 1e3, faults / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args()
    print(f"{'workload':>8} {'variant':>8} {'ms':>8} {'steps/s':>8} {'cpu ms':>8} {'faults':>7} "
          f"{'speed (wall)':>12} {'speed (cpu)':>11}")
    for name in args.workloads.split(","):
        runs, inputs = make_step(*WORKLOADS[name])
        for run in runs.values():  # warm up: buffers made, allocator settled
            for _ in range(5):
                run(*inputs)
        results = {variant: [] for variant in runs}
        order = list(runs)
        for _ in range(args.repeats):
            for variant in order:
                results[variant].append(timed(runs[variant], inputs, args.steps))
            order = order[1:] + order[:1]  # no variant always first
        base = results["plain"]
        for variant, rs in results.items():
            ms, cpu, faults = (statistics.median(r[i] for r in rs) for i in range(3))
            # speeds as the median of each round's ratio: rounds are adjacent in time, so a
            # load that drifts over the run (a shared machine) cancels out of each ratio
            wall_speed = statistics.median(b[0] / r[0] for b, r in zip(base, rs))
            cpu_speed = statistics.median(b[1] / r[1] for b, r in zip(base, rs))
            print(f"{name:>8} {variant:>8} {ms:>8.3f} {1e3 / ms:>8.1f} {cpu:>8.3f} {faults:>7.1f} "
                  f"{wall_speed:>11.2f}x {cpu_speed:>10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
