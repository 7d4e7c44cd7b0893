#!/usr/bin/env python
"""What keeping freed memory (``tapeflow/allocator.py``) buys a compiled training step.

The workload is issue 22's W5: the housing-sized MLP 8-64-64-1 (ReLU, MSE, Adam) as one
``tf.function`` step, at batch 1,024 and 8,192, on random data.  Each setting runs in a fresh
process (glibc's thresholds are per process and best set before the first large array):
``TAPEFLOW_KEEP_FREED_MEMORY=0`` (glibc's defaults) against tapeflow's default, alternating,
``--repeats`` times.  It prints milliseconds per step (the median of the repeats), minor page
faults per step (``resource.getrusage``) and the speed-up, and exits 1 when the default setting
faults in steady state (more than 10 faults a step) on Linux.

Usage:  python benchmarks/bench_allocator.py [--batches 1024,8192] [--steps 200] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
import numpy as np
import tapeflow as tf
from tapeflow.allocator import KEPT
batch, steps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(batch, 8)).astype(np.float32))
y = tf.constant(rng.normal(size=(batch, 1)).astype(np.float32))
model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu", input_shape=(8,)),
                             tf.keras.layers.Dense(64, activation="relu"),
                             tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.Adam()

@tf.function
def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

for _ in range(20):
    step(x, y)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
start = time.perf_counter()
for _ in range(steps):
    step(x, y)
seconds = (time.perf_counter() - start) / steps
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / steps
print(json.dumps({"kept": KEPT["done"], "ms": seconds * 1e3, "faults": faults}))
"""


def run(batch, steps, keep):
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
               TAPEFLOW_KEEP_FREED_MEMORY="1" if keep else "0")
    out = subprocess.run([sys.executable, "-c", CHILD, str(batch), str(steps)], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1024,8192")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    failed = False
    print(f"{'batch':>6} {'glibc default ms':>17} {'kept ms':>9} {'speed-up':>9} "
          f"{'faults/step default':>20} {'kept':>6}")
    for batch in (int(b) for b in args.batches.split(",")):
        default, kept = [], []
        for _ in range(args.repeats):
            default.append(run(batch, args.steps, keep=False))
            kept.append(run(batch, args.steps, keep=True))
        d_ms = statistics.median(r["ms"] for r in default)
        k_ms = statistics.median(r["ms"] for r in kept)
        d_f = statistics.median(r["faults"] for r in default)
        k_f = statistics.median(r["faults"] for r in kept)
        print(f"{batch:>6} {d_ms:>17.2f} {k_ms:>9.2f} {d_ms / k_ms:>8.2f}x {d_f:>20.0f} {k_f:>6.0f}")
        if sys.platform.startswith("linux") and kept[0]["kept"] and k_f > 10:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
