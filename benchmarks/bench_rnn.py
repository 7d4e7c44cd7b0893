#!/usr/bin/env python
"""Recurrent layers as one whole-sequence op against the unrolled steps (issue 22, item 3).

W3: Embedding(2000, 64) -> LSTM(128) -> Dense(2), sequences of 64 ids, batch 64, softmax
cross-entropy on logits, Adam; one training step (``train_on_batch``, the traced
``model.train_function``).  ``--cell gru`` swaps the LSTM for a GRU(128).

Three models with the same weights: "before" (the loop unrolled in the trace, each step in
elementwise ops and matmuls, as before the fused ops: ``unroll=True`` with the cell's fused op
turned off), "unrolled" (``unroll=True``: one fused cell op a step) and "fused" (the default:
one ``LSTMSequence``/``GRUSequence`` op over the sequence, and its gradient op).  After a
warm-up step each, they are timed alternately (before, unrolled, fused, before, ...)
so that load from elsewhere on a shared machine falls on both; each round times ``--steps``
steps, and the figure is the best (min) round: steps/s (wall), process CPU ms per step (less
sensitive to other processes at one thread) and the ratios.  Also printed: the
equations of each traced step (its optimized graph), and the first step's losses (equal).

``--mask`` pads the sequences: each row's length uniform in [length/2, length], the tail
masked (``Embedding(mask_zero=True)`` with id 0 there, or the op's mask operand with ``--ops``).

``--threads N`` sets the BLAS thread count before numpy is imported (1 gives steadier figures
on a shared machine: many threads waiting for cores make small matmuls erratic).

``--ops`` times the whole-sequence op alone instead, at W3's shapes: its forward
(``_sequence_forward``) and its gradient op's (``_sequence_backward``) on numpy arrays, best
process CPU time over ``--rounds`` rounds of ``--steps`` calls (the kernels of
``ops/rnn_kernels.py`` without the rest of the step).

Usage:  python benchmarks/bench_rnn.py [--cell lstm|gru|simple_rnn] [--ops] [--mask]
                                       [--rounds N] [--steps S] [--threads N]
"""
import argparse
import os
import time

VOCAB, EMBED, UNITS, LENGTH, BATCH = 2000, 64, 128, 64, 64


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cell", choices=("lstm", "gru", "simple_rnn"), default="lstm")
    p.add_argument("--ops", action="store_true", help="time the sequence op alone")
    p.add_argument("--mask", action="store_true",
                   help="padded sequences: lengths uniform in [length/2, length], tails masked")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    return p.parse_args()


ARGS = parse()
if ARGS.threads:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402 - after the thread count is set

import tapeflow as tf  # noqa: E402


def padding_mask(rng):
    """``(BATCH, LENGTH)``: True for each row's first ``n`` steps, ``n`` uniform in
    [LENGTH / 2, LENGTH]."""
    lengths = rng.integers(LENGTH // 2, LENGTH + 1, BATCH)
    return np.arange(LENGTH) < lengths[:, None]


def make_model(cell, unroll, fused_cell=True, mask_zero=False):
    recurrent = {"lstm": tf.keras.layers.LSTM, "gru": tf.keras.layers.GRU}[cell](
        UNITS, unroll=unroll)
    if not fused_cell:
        recurrent.cell.fused = lambda: None  # the cell's elementwise-op step (step_ops)
    model = tf.keras.Sequential([tf.keras.layers.Embedding(VOCAB, EMBED, mask_zero=mask_zero),
                                 recurrent,
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def equations(model):
    (concrete,) = model.train_function._cache.values()
    return len(concrete.optimized_graph.eqns)


def best_cpu_ms(fn, rounds, calls):
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - start) / calls)
    return 1e3 * best


def time_ops(args):
    """The whole-sequence op's forward and backward alone, float32, no initial state (a
    padding mask with ``--mask``)."""
    from tapeflow.ops import rnn
    gates = {"simple_rnn": 1, "lstm": 4, "gru": 3}[args.cell]
    rng = np.random.default_rng(0)
    projected = rng.normal(size=(BATCH, LENGTH, gates * UNITS)).astype(np.float32)
    U = (0.1 * rng.normal(size=(UNITS, gates * UNITS))).astype(np.float32)
    operands = [projected, U] + ([np.zeros(gates * UNITS, np.float32)] if args.cell == "gru"
                                 else [])
    if args.mask:
        operands.append(padding_mask(rng))
    attrs = dict(kind=args.cell, has_bias=args.cell == "gru", has_init=False,
                 has_mask=args.mask, zero_output=False)
    outs = rnn._sequence_forward(*operands, **attrs)
    d_seq = rng.normal(size=(BATCH, LENGTH, UNITS)).astype(np.float32)
    d_last = [np.zeros((BATCH, UNITS), np.float32) for _ in outs[1:-1]]
    forward = best_cpu_ms(lambda: rnn._sequence_forward(*operands, **attrs), args.rounds,
                          args.steps)
    backward = best_cpu_ms(lambda: rnn._sequence_backward(*operands, outs[-1], d_seq, *d_last,
                                                          **attrs), args.rounds, args.steps)
    masked = ", padded" if args.mask else ""
    print(f"{args.cell} sequence op alone ({UNITS} units, length {LENGTH}, batch {BATCH}"
          f"{masked}), best of {args.rounds} rounds of {args.steps} calls: forward "
          f"{forward:.1f} cpu ms, "
          f"gradient {backward:.1f} cpu ms")


def main():
    args = ARGS
    if args.ops:
        return time_ops(args)
    if args.cell == "simple_rnn":
        raise SystemExit("--cell simple_rnn: with --ops only (W3 is an LSTM or GRU model)")
    rng = np.random.default_rng(0)
    x = rng.integers(1 if args.mask else 0, VOCAB, (BATCH, LENGTH))
    y = rng.integers(0, 2, (BATCH,))
    if args.mask:
        x[~padding_mask(rng)] = 0
    models = {"before": make_model(args.cell, True, False, args.mask),
              "unrolled": make_model(args.cell, True, mask_zero=args.mask),
              "fused": make_model(args.cell, False, mask_zero=args.mask)}
    for model in models.values():
        model(x[:1])
        model.set_weights(models["before"].get_weights())
    losses = {k: float(m.train_on_batch(x, y)) for k, m in models.items()}  # traces the step
    best = {k: float("inf") for k in models}
    best_cpu = dict(best)
    for _ in range(args.rounds):
        for name, model in models.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                model.train_on_batch(x, y)
            best[name] = min(best[name], (time.perf_counter() - start) / args.steps)
            best_cpu[name] = min(best_cpu[name], (time.process_time() - start_cpu) / args.steps)
    print(f"W3 ({args.cell.upper()}({UNITS}), length {LENGTH}, batch {BATCH}"
          f"{', padded' if args.mask else ''}); best of "
          f"{args.rounds} rounds of {args.steps} steps")
    for name, model in models.items():
        print(f"  {name:8s} {1 / best[name]:7.2f} steps/s  {1e3 * best_cpu[name]:7.1f} cpu ms/step"
              f"  {equations(model):5d} equations  first loss {losses[name]:.6f}")
    for name in ("unrolled", "fused"):
        print(f"  {name} / before: {best['before'] / best[name]:.2f}x wall, "
              f"{best_cpu['before'] / best_cpu[name]:.2f}x cpu")
    if max(losses.values()) - min(losses.values()) > 1e-5:
        raise SystemExit(f"the models' first losses differ: {losses}")


if __name__ == "__main__":
    main()
