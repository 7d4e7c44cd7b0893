#!/usr/bin/env python
"""The gradient of a tf.while_loop taken inside a tf.function, by trip count (issue 18 item 3).

Inside a trace the gradient is one ``WhileGrad`` equation: it runs the compiled loop again
keeping every state, then walks back through the body's compiled vector-Jacobian product, so
its cost grows as the trip count (TensorFlow's while_v2 accumulates the states the same way).
The form it replaced, a While whose body recomputed each state from the start, grew as its
square; it is still what a tape recording the backward pass gets (second order).

Usage:  python benchmarks/bench_while_grad.py [--trips 10,100,1000] [--repeats 5]
"""
import argparse
import statistics
import time

import numpy as np

import tapeflow as tf


def gradient_function(trips):
    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.while_loop(lambda i, y: i < trips,
                              lambda i, y: (i + 1, tf.sin(y) * 1.001 + 0.01 * x),
                              (tf.constant(0), x))[1]
            s = tf.reduce_sum(y)
        return tape.gradient(s, x)
    return grad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trips", default="10,100,1000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    x = tf.constant(np.linspace(0.0, 1.0, 16))
    print(f"{'trips':>6} {'ms per gradient':>16} {'us per trip':>12}")
    for trips in (int(t) for t in args.trips.split(",")):
        grad = gradient_function(trips)
        grad(x)  # trace and compile
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            grad(x)
            times.append(time.perf_counter() - start)
        ms = statistics.median(times) * 1e3
        print(f"{trips:>6} {ms:>16.2f} {ms * 1e3 / trips:>12.1f}")


if __name__ == "__main__":
    main()
