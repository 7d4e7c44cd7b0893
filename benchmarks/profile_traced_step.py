#!/usr/bin/env python
"""Where a traced training step's time goes: each line of its compiled function, timed alone.

The step is the housing MLP's (Dense(30, relu) -> Dense(1), MSE, SGD, batch 32) under
``tf.function``, as in ``bench_housing.py``; data of the same shapes, drawn here.  Prints the
compiled function's source, then every equation's kernel time (median of repeats, alone, on
the step's own arrays), their sum, the whole call, and numpy by hand's step for comparison.

Usage:  python benchmarks/profile_traced_step.py [--fit]   (--fit: model.fit's train step)
"""
import argparse
import statistics
import timeit

import numpy as np

import tapeflow as tf

BATCH, LR = 32, 0.001


def median_us(fn, number=5000, repeat=7):
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def traced_custom_step(x, y, weights):
    w1, c1, w2, c2 = (tf.Variable(w) for w in weights)
    vs = [w1, c1, w2, c2]
    opt = tf.optimizers.SGD(LR)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            p = tf.nn.relu(xb @ w1 + c1) @ w2 + c2
            loss = tf.reduce_mean((p - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, vs), vs))

    args = (tf.constant(x), tf.constant(y))
    step(*args)
    return (lambda: step(*args)), step.get_concrete_function(*args), args


def fit_train_step(x, y, weights):
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(30, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.layers[0].set_weights(weights[:2])
    model.layers[1].set_weights(weights[2:])
    model.compile(loss="mse", optimizer=tf.optimizers.SGD(LR))
    model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    batch = (tf.constant(x), tf.constant(y))
    train = model.train_function
    return (lambda: train(batch)), train.get_concrete_function(batch), batch


def numpy_step(x, y, weights):
    w1, c1, w2, c2 = (w.copy() for w in weights)

    def step():
        nonlocal w1, c1, w2, c2
        h = x @ w1 + c1
        a = np.maximum(h, 0)
        p = a @ w2 + c2
        g = 2 * (p - y) / p.size
        gw2 = a.T @ g; gc2 = g.sum(0); ga = g @ w2.T; gh = ga * (h > 0)  # noqa: E702
        gw1 = x.T @ gh; gc1 = gh.sum(0)  # noqa: E702
        w1 -= LR * gw1; c1 -= LR * gc1; w2 -= LR * gw2; c2 -= LR * gc2  # noqa: E702
    return step


def per_line(concrete, args, time_us=None):
    """(microseconds, line) for every equation of ``concrete``'s compiled function, run alone
    (timed by ``time_us(fn)``; by default the median of 5 repeats of 2,000 calls)."""
    time_us = time_us or (lambda fn: median_us(fn, number=2000, repeat=5))
    run = concrete._run
    env = dict(run.__globals__)
    for vid, t in zip(concrete.optimized_graph.inputs, args):
        env[f"t{vid}"] = t
    rows = []
    for line in run.source.splitlines()[1:-1]:
        line = line.strip()
        if " = " not in line:
            continue  # the function's frame: try/except, return, raise
        target, expr = line.split(" = ", 1)
        if target.startswith("V"):
            continue  # an assignment to a Variable: skipped, so the step's inputs stay as they are
        exec(line, env)  # noqa: S102 - the compiled function's own lines, one by one
        if expr.startswith(("V", "t")):
            continue  # reading a Variable or unwrapping an input
        timed = eval(compile(f"lambda: {expr}", "<equation>", "eval"), env)  # noqa: S307
        rows.append((time_us(timed), line))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit", action="store_true", help="profile model.fit's traced train step")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 8)).astype(np.float32)
    y = rng.standard_normal((BATCH, 1)).astype(np.float32)
    weights = [(rng.standard_normal((8, 30)) * 0.5).astype(np.float32), np.zeros(30, np.float32),
               (rng.standard_normal((30, 1)) * 0.25).astype(np.float32), np.zeros(1, np.float32)]
    call, concrete, call_args = (fit_train_step if args.fit else traced_custom_step)(x, y, weights)
    print(concrete._run.source)
    rows = per_line(concrete, call_args)
    for us, line in rows:
        print(f"{us:6.2f} us  {line}")
    kernels = sum(us for us, _ in rows)
    whole = median_us(call)
    by_hand = median_us(numpy_step(x, y, weights))
    print(f"\nkernels alone {kernels:.1f} us; the whole call {whole:.1f} us; "
          f"numpy by hand's step {by_hand:.1f} us (traced / numpy time {whole / by_hand:.2f}x)")


if __name__ == "__main__":
    main()
