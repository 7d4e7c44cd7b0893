"""benchmarks/bench_workloads.py's first-step guard, on tapeflow alone (no peer, no child
process): the figures it reports are only worth having if a run that trains differently is
refused.  Its speed figures are the benchmark's, never a test's."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH_DIR))
    import bench_workloads
    from workloads import spec, tapeflow_runs
    return bench_workloads, spec, tapeflow_runs


def first_steps(bench, spec, tapeflow_runs, workload):
    """``guard``'s inputs for tapeflow's two runs of ``workload``, from their first steps."""
    runs, weights = {}, {}
    batches = spec.batches(workload)
    for runner in tapeflow_runs.runners(workload, spec.initial_weights(workload), batches):
        loss, updated = runner.first_step()
        runs[runner.label] = {"loss1": loss}
        weights.update({f"{workload.name}/{runner.label}/{i}": w for i, w in enumerate(updated)})
    return runs, weights


def test_fit_and_the_traced_step_pass_the_guard_and_a_transposed_kernel_is_refused(bench):
    bench_workloads, spec, tapeflow_runs = bench
    w5 = dataclasses.replace(spec.WORKLOADS["W5a"], batch=64, steps_per_round=1)
    runs, weights = first_steps(bench_workloads, spec, tapeflow_runs, w5)
    assert bench_workloads.guard(runs, weights, "W5a") == []
    assert runs["tapeflow fit"]["weight_diff"] == (0.0, 0.0)

    # a peer that loaded the (64, 64) kernel transposed: its loss is close, its weights are not
    key = "W5a/tapeflow fit/2"
    weights[key] = np.ascontiguousarray(weights[key].T)
    (line,) = bench_workloads.guard(runs, weights, "W5a")
    assert "tapeflow fit REFUSED" in line and "weights after step 1 differ" in line
    assert "tapeflow fit" not in runs


def test_a_different_first_loss_is_refused(bench):
    bench_workloads, _, _ = bench
    runs = {"tapeflow traced": {"loss1": 0.5}, "torch eager": {"loss1": 0.501}}
    (line,) = bench_workloads.guard(runs, {}, "W1")
    assert "torch eager REFUSED" in line and "step-1 loss" in line
