#!/usr/bin/env python
"""AutoGraph's conversion cost: what a tf.function pays once, on its first call, to rewrite a
50-line training step's Python control flow into graph control flow.

Measured on ``train_step`` below (50 lines: a Python ``if`` on a flag, an ``if`` on a tensor,
a ``for`` over ``tf.range``, a ``while`` on a tensor with a ``break``, an early ``return``):

  convert        source -> AST -> rewritten AST -> code object (tracing/autograph/conversion.py),
                 the conversion cache emptied before each repeat
  first call     tf.function(train_step) called once: conversion + trace + compile
  first call, plain step
                 the same step without tensor control flow (``plain_step``), autograph=True and
                 autograph=False: the difference is what AutoGraph adds to a step that does not
                 need it (conversion, plus the calls through ``ag__``)
  later calls    median of the compiled step: conversion never runs again

Figures are medians of the process's CPU time (time.process_time), so that a busy machine
does not inflate them.

Usage:  python benchmarks/bench_autograph.py [--repeats N]
"""
import argparse
import statistics
import time

import numpy as np

import tapeflow as tf
from tapeflow.tracing.autograph import conversion


def train_step(x, y, w, b, lr, clip_norm, use_l2):
    with tf.GradientTape() as tape:
        hidden = tf.matmul(x, w) + b
        if use_l2:                       # a Python bool: stays Python
            penalty = 1e-3 * tf.reduce_sum(w * w)
        else:
            penalty = tf.constant(0.0)
        pred = tf.reduce_sum(hidden, axis=1)
        err = pred - y
        loss = tf.reduce_mean(err * err) + penalty
    gw, gb = tape.gradient(loss, [w, b])
    norm = tf.sqrt(tf.reduce_sum(gw * gw) + tf.reduce_sum(gb * gb))
    if norm > clip_norm:                 # a tensor: tf.cond
        scale = clip_norm / norm
        gw = gw * scale
        gb = gb * scale
    else:
        scale = tf.constant(1.0)
    total = tf.constant(0.0)
    for i in tf.range(3):                # tf.range: tf.while_loop
        total = total + tf.cast(i, tf.float32) * scale
    steps = tf.constant(0)
    decay = lr
    while decay > 1e-4:                  # a tensor: tf.while_loop, with a break
        decay = decay * 0.5
        steps += 1
        if steps >= 10:
            break
    w.assign_sub(decay * gw)
    b.assign_sub(decay * gb)
    if loss > 1e6:                       # an early return on a tensor
        return loss * 0.0, steps, total
    smoothed = loss
    for k in range(2):                   # a Python range: unrolled
        smoothed = 0.5 * smoothed + 0.5 * loss
    if use_l2 and smoothed > 0:
        smoothed = smoothed + penalty
    elif not use_l2:
        smoothed = smoothed - penalty
    report = smoothed if steps > 0 else loss
    count = 0
    for name in ("w", "b"):              # a Python loop over names: unrolled
        if name == "w":
            count += 1
        else:
            count += 2
    if count != 3:
        raise ValueError("unreachable")
    mean_abs = tf.reduce_mean(tf.abs(err))
    report = report + 0.0 * mean_abs
    return report, steps, total


def plain_step(x, y, w, b, lr):
    with tf.GradientTape() as tape:
        pred = tf.reduce_sum(tf.matmul(x, w) + b, axis=1)
        loss = tf.reduce_mean((pred - y) ** 2)
    gw, gb = tape.gradient(loss, [w, b])
    w.assign_sub(lr * gw)
    b.assign_sub(lr * gb)
    return loss


def _seconds(fn, repeats):
    """Median CPU seconds of the process per call (on a shared machine, wall time mostly
    measures the other processes; this is single-threaded Python)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((32, 8)), dtype=tf.float32)
    y = tf.constant(rng.standard_normal(32), dtype=tf.float32)
    w = tf.Variable(rng.standard_normal((8, 4)) * 0.1, dtype=tf.float32)
    b = tf.Variable(np.zeros(4), dtype=tf.float32)
    lr, clip = tf.constant(0.01), tf.constant(1.0)

    def convert_once():
        conversion._converted_code.clear()
        conversion._transform(train_step, conversion.inspect.getsource(train_step))
    convert = _seconds(convert_once, args.repeats)

    def first_call(fn, *call_args, autograph=True):
        conversion._converted_code.clear()
        conversion._converted_fns.clear()
        return lambda: tf.function(fn, autograph=autograph)(*call_args)

    def fresh_first_call(fn, *call_args, autograph=True):
        return _seconds(lambda: first_call(fn, *call_args, autograph=autograph)(),
                        max(3, args.repeats // 4))

    first = fresh_first_call(train_step, x, y, w, b, lr, clip, True)
    plain_on = fresh_first_call(plain_step, x, y, w, b, lr)
    plain_off = fresh_first_call(plain_step, x, y, w, b, lr, autograph=False)
    step = tf.function(train_step)
    step(x, y, w, b, lr, clip, True)
    later = _seconds(lambda: step(x, y, w, b, lr, clip, True), args.repeats * 5)

    lines = len(conversion.inspect.getsource(train_step).splitlines())
    print(f"train_step: {lines} lines")
    print(f"convert (source -> code object)        {convert * 1e3:8.2f} ms  "
          f"(median of {args.repeats})")
    print(f"first call (convert + trace + compile) {first * 1e3:8.2f} ms")
    print(f"first call, plain step, autograph=True  {plain_on * 1e3:8.2f} ms")
    print(f"first call, plain step, autograph=False {plain_off * 1e3:8.2f} ms")
    print(f"later calls (compiled step)            {later * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
