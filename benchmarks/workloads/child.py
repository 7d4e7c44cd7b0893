"""One framework's runs in a process of its own, for ``bench_workloads.py``.

    python -m workloads.child FRAMEWORK --threads N --workloads W2,W1,... --rounds R --out PREFIX

Sets the thread counts before anything imports numpy, torch or jax; for each workload builds
the framework's runners from ``spec``'s weights and batches, takes the first step (its loss and
updated weights go to PREFIX.npz for the guard), one warm-up round, then R timed rounds, the
runners taking turns.  Writes PREFIX.json: per workload and runner the wall and CPU seconds of
each round (``time.perf_counter``, ``time.process_time``), the step-1 loss, and the process's
peak RSS (``ru_maxrss``) after the imports and after each workload.
"""
import argparse
import json
import os
import resource
import sys
import time

RUNNER_MODULES = {"tapeflow": "tapeflow_runs", "torch": "torch_peer", "jax": "jax_peer",
                  "keras": "keras3_runs", "floor": "blas_floor"}


def set_threads(n):
    """Before the imports: BLAS (OpenBLAS, MKL, OpenMP), XLA's CPU client, Keras on jax; and
    the process pinned to ``n`` cores.  The thread settings alone do not hold jax to one core:
    its dispatch runs the next step's Python while XLA computes the last one on a thread of
    its own (measured: W1 at 9.6 ms CPU a step ran 5.3 ms wall), so without the pin a
    "1 thread" comparison gave jax two cores."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) > n:
        os.sched_setaffinity(0, cores[-n:])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["KERAS_BACKEND"] = "jax"
    if n == 1:
        os.environ["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def run(framework, names, rounds, threads):
    import importlib

    import numpy as np

    from .spec import WORKLOADS, batches, initial_weights
    module = importlib.import_module(f"{__package__}.{RUNNER_MODULES[framework]}")
    if framework == "torch":
        import torch
        torch.set_num_threads(threads)
    report = {"rss_import_mib": peak_rss_mib(), "workloads": {}}
    arrays = {}
    for name in names:
        workload = WORKLOADS[name]
        runs = module.runners(workload, initial_weights(workload), batches(workload))
        rows = {}
        for runner in runs:
            first = runner.first_step()
            row = rows[runner.label] = {"wall": [], "cpu": [], "loss1": None}
            if first is not None:
                row["loss1"] = first[0]
                for i, w in enumerate(first[1]):
                    arrays[f"{name}/{runner.label}/{i}"] = np.asarray(w)
            runner.run_round()  # warm-up (tracing, compilation, first allocations)
        for _ in range(rounds):
            for runner in runs:
                wall, cpu = time.perf_counter(), time.process_time()
                runner.run_round()
                rows[runner.label]["wall"].append(time.perf_counter() - wall)
                rows[runner.label]["cpu"].append(time.process_time() - cpu)
        for runner in runs:
            if hasattr(runner, "equations"):
                rows[runner.label]["equations"] = runner.equations()
        report["workloads"][name] = {"runners": rows, "rss_mib": peak_rss_mib(),
                                     "steps_per_round": workload.steps_per_round}
    return report, arrays


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("framework", choices=sorted(RUNNER_MODULES))
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--workloads", required=True)
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    set_threads(args.threads)
    report, arrays = run(args.framework, args.workloads.split(","), args.rounds, args.threads)
    import numpy as np
    np.savez(args.out + ".npz", **arrays)
    with open(args.out + ".json", "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
