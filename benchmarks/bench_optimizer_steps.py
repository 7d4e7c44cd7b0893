#!/usr/bin/env python
"""model.fit steps/s of the housing MLP (8 -> 64 relu -> 64 relu -> 1, MSE + MAE) per optimizer.

The cost of an optimizer's update inside fit's traced step, on the CPU: 11,610 housing-shaped
rows at batch 32 (363 steps), one warm-up epoch, then the best of ``--reps`` epochs.  Compare two
checkouts in the same run, alternating, e.g.:

    for src in ../base/src src; do OMP_NUM_THREADS=1 PYTHONPATH=$src \\
        python benchmarks/bench_optimizer_steps.py --label $src; done
"""
import argparse
import time

import numpy as np

import tapeflow as tf


def steps_per_second(optimizer, x, y, reps):
    tf.keras.backend.clear_session()
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((8,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer, "mse", metrics=["mae"])
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)  # traced, warm
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
        best = min(best, time.perf_counter() - start)
    return -(-len(x) // 32) / best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimizers", default="adam,sgd,rmsprop")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(11610, 8)).astype("float32")
    y = rng.normal(size=(11610, 1)).astype("float32")
    figures = {name: steps_per_second(name, x, y, args.reps)
               for name in args.optimizers.split(",")}
    print(args.label, "  ".join(f"{k}: {v:,.0f} steps/s" for k, v in figures.items()))


if __name__ == "__main__":
    main()
