"""tapeflow/allocator.py: glibc keeps what a compiled step frees, so steady state does not fault.

The speed it buys is measured in benchmarks/bench_allocator.py; here only the mechanism: the
thresholds are set at import, the opt-out works, and a compiled step's steady state has no
minor page faults (issue 22: about 5,000 a call at batch 8,192 before).
"""
import os
import resource
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.allocator import KEPT

glibc_only = pytest.mark.skipif(not KEPT["done"], reason="glibc's mallopt is not available here")


@glibc_only
def test_a_compiled_step_does_not_fault_in_steady_state():
    x = tf.constant(np.random.default_rng(0).normal(size=(4096, 8)).astype(np.float32))
    w1 = tf.Variable(np.full((8, 64), 0.1, np.float32))
    w2 = tf.Variable(np.full((64, 1), 0.1, np.float32))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) ** 2)
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    for _ in range(10):
        step(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step(x)
    per_step = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20
    assert per_step < 10  # each step frees 1 MiB temporaries: glibc's defaults fault ~300 times


@pytest.mark.child_process
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_the_opt_out_leaves_glibc_alone():
    code = "import tapeflow.allocator as a, tapeflow; print(a.KEPT['done'])"
    env = dict(os.environ, TAPEFLOW_KEEP_FREED_MEMORY="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
