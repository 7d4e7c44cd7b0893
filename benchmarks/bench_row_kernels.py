#!/usr/bin/env python
"""W4's softmax and LayerNormGrad: the large-array routes against the general ones, in one process.

``ops/nn.py``'s softmax skips the per-row maximum on large float arrays of short rows, and
``ops/layer_norm.py``'s LayerNormGrad computes its sums as BLAS products there (issue 22, W4).
Both keep their general route, which this script runs by turning the large-array test off
(the module functions the kernels consult at every call):

- kernels: each route on W4's shapes, (32, 4, 64, 64) scores and (32, 64, 128) activations
  (the LayerNormGrad with a dense cotangent and with a mean's spread one), minimum CPU us over
  repeats, the two routes alternating;
- ``--step``: the traced W4 training step of ``bench_workloads`` (the same compiled function),
  rounds alternating between the routes, CPU ms per step, and the median of the paired ratios:
  the machine's load drifts between rounds, not within a pair.

Usage:  python benchmarks/bench_row_kernels.py [--step] [--rounds N]   (1 thread)
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402 - after the thread count is set

import tapeflow.ops.layer_norm as layer_norm_ops  # noqa: E402
import tapeflow.ops.nn as nn_ops  # noqa: E402

ROUTES = {"general": ((lambda x, axis: False), (lambda xp, x, axes_count: False)),
          "rows": (nn_ops._unshifted_applies, layer_norm_ops._rows_fit)}


def use(route):
    nn_ops._unshifted_applies, layer_norm_ops._rows_fit = ROUTES[route]


def cpu_us(fn, number=10, repeat=15):
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best * 1e6


def kernels(pairs=3):
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((32, 4, 64, 64)).astype(np.float32)
    x = rng.normal(5.0, 10.0, (32, 64, 128)).astype(np.float32)
    gamma, beta = (rng.normal(1.0, 0.2, 128).astype(np.float32),
                   rng.standard_normal(128).astype(np.float32))
    _, mean, rstd = layer_norm_ops._layer_norm_forward(x, gamma, beta, axes_count=1,
                                                       epsilon=1e-3)
    dense = rng.standard_normal(x.shape).astype(np.float32)
    spread = np.broadcast_to(rng.standard_normal((32, 1, 128)).astype(np.float32), x.shape)
    zeros = np.zeros(mean.shape, np.float32)
    cases = {
        "softmax (32,4,64,64)": lambda: nn_ops._softmax_forward(scores, -1),
        "LayerNormGrad, dense dy": lambda: layer_norm_ops._layer_norm_grad_forward(
            x, gamma, mean, rstd, dense, zeros, zeros, axes_count=1, epsilon=1e-3),
        "LayerNormGrad, spread dy": lambda: layer_norm_ops._layer_norm_grad_forward(
            x, gamma, mean, rstd, spread, zeros, zeros, axes_count=1, epsilon=1e-3),
    }
    for name, fn in cases.items():
        times = {"general": [], "rows": []}
        for _ in range(pairs):
            for route in times:
                use(route)
                times[route].append(cpu_us(fn))
        print(f"{name:28s} general {min(times['general']):7.0f} us   rows "
              f"{min(times['rows']):7.0f} us")
    use("rows")


def step(rounds):
    sys.path.insert(0, str(Path(__file__).parent))
    from workloads import spec, tapeflow_runs
    workload = spec.WORKLOADS["W4"]
    runner = tapeflow_runs.TapeflowTraced(workload, spec.initial_weights(workload),
                                          spec.batches(workload))
    runner.first_step()
    runner.run_round()
    times = {"general": [], "rows": []}
    for i in range(rounds):
        for route in ("general", "rows") if i % 2 == 0 else ("rows", "general"):
            use(route)
            start = time.process_time()
            runner.run_round()
            times[route].append((time.process_time() - start) / workload.steps_per_round * 1e3)
    use("rows")
    for route, t in times.items():
        print(f"W4 traced step, {route:7s} routes: CPU ms per step min {min(t):.2f}, median "
              f"{statistics.median(t):.2f}")
    ratio = statistics.median(g / r for g, r in zip(times["general"], times["rows"]))
    print(f"general / rows, median of {rounds} paired rounds: {ratio:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--step", action="store_true", help="also time W4's traced step")
    p.add_argument("--rounds", type=int, default=40, help="paired rounds for --step")
    args = p.parse_args()
    kernels()
    if args.step:
        step(args.rounds)


if __name__ == "__main__":
    main()
