#!/usr/bin/env python
"""Where a workload's traced training step spends its time (W1-W5 of bench_workloads.py).

Builds ``bench_workloads``'s tapeflow traced step for one workload, then times every equation
of its compiled function alone on the step's own arrays (``profile_traced_step.per_line``) and
sums their CPU time by kind: matrix products (``@``), each compiled kernel by its function's name, and the
other numpy expressions (elementwise, reductions, reshapes) by their first operation.  Prints
the kinds by time with their shares of the equations' sum, the whole call's time beside it (the
rest is per-equation overhead and cache misses between equations), and the BLAS floor.

Usage:  python benchmarks/profile_workload.py W2 [--threads N] [--top K]
"""
import argparse
import os
import re
import statistics
import time
from collections import defaultdict


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=("W1", "W2", "W3", "W4", "W5a", "W5b"))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--top", type=int, default=12, help="kinds to print")
    return p.parse_args()


ARGS = parse()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

from profile_traced_step import per_line  # noqa: E402 - after the thread count is set
from workloads import blas_floor, spec, tapeflow_runs  # noqa: E402


def time_us(fn, budget=0.05, repeat=3):
    """Median process-CPU microseconds per call over ``repeat`` runs of about ``budget`` CPU
    seconds each: CPU time, not wall, as it is steadier on a loaded machine (at 1 thread it is
    the call's time; at more it sums the threads)."""
    start = time.process_time()
    fn()
    number = max(1, int(budget / max(time.process_time() - start, 1e-6)))
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - start) / number)
    return statistics.median(times) * 1e6


def kind(line, kernels):
    expr = line.split(" = ", 1)[1]
    called = re.match(r"\(?(k\d+)\(", expr)
    if called:
        fn = kernels.get(called.group(1))
        fn = getattr(fn, "func", fn)  # a partial: the kernel with its attributes bound
        return getattr(fn, "__qualname__", called.group(1))
    if "@" in expr:
        return "matmul (@)"
    op = re.search(r"\.(\w+)\(|([*+/-])|(\w+)\(", expr)
    return next((g for g in op.groups() if g), "other") if op else "other"


def main():
    workload = spec.WORKLOADS[ARGS.workload]
    runner = tapeflow_runs.TapeflowTraced(workload, spec.initial_weights(workload),
                                          spec.batches(workload))
    runner.first_step()
    (concrete,) = runner.step._cache.values()
    args = runner.batches[0]
    whole = time_us(lambda: runner.step(*args), budget=0.3)
    rows = per_line(concrete, args, time_us)
    totals, counts = defaultdict(float), defaultdict(int)
    for us, line in rows:
        k = kind(line, concrete._run.__globals__)
        totals[k] += us
        counts[k] += 1
    summed = sum(totals.values())
    floor = blas_floor.BlasFloor(workload, None, None)
    floor.steps = 1
    floor_us = time_us(floor.run_round, budget=0.3)
    print(f"{workload.name}: {workload.title}; {len(concrete.optimized_graph.eqns)} equations, "
          f"{ARGS.threads} thread(s)")
    for k, us in sorted(totals.items(), key=lambda kv: -kv[1])[:ARGS.top]:
        print(f"  {us / 1e3:8.2f} ms  {100 * us / summed:5.1f}%  {counts[k]:4d}x  {k}")
    print(f"equations alone {summed / 1e3:.2f} ms; the whole call {whole / 1e3:.2f} ms; "
          f"BLAS floor {floor_us / 1e3:.2f} ms (call / floor {whole / floor_us:.2f}x)")


if __name__ == "__main__":
    main()
