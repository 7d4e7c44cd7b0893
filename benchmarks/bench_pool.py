#!/usr/bin/env python
"""Max pooling, forward and backward: numba's loops against numpy's route, and torch (issue 22).

``ops/_pool_numba.py`` runs ``MaxPool`` and ``MaxPoolGrad`` on large float32 arrays, windows
overlapping or not; numpy's route is what runs without numba.  This script times both routes in
one process (switching ``jit._LOADED``, which ``pooling`` consults at every call), on a ResNet
stem's pool (3x3, stride 2, VALID and SAME, on (32, 56, 56, 64)), a 2x2/2 control on the same
input, and W2's two pools:

- ``forward``: ``tf.nn.max_pool2d``; ``gradient``: the ``MaxPoolGrad`` kernel alone;
- ``fwd+bwd``: ``tf.nn.max_pool2d`` under a tape and ``tape.gradient`` with a given cotangent;
- torch, where it imports: ``F.max_pool2d`` forward and forward+backward, on channels-last
  (NHWC memory, ``permute`` of the same array) and NCHW (contiguous) tensors.

``--channels``: the kernels called directly (past ``pooling``'s channel rule) against numpy's
route on (512 // C, 28, 28, C) inputs, 3x3/2 and 2x2/2, for C from 8 to 128: where numba's
vectorized loop over channels (32 floats an iteration) pays, which sets that rule.

Each figure is the minimum CPU ms over ``--rounds`` rounds, the routes alternating within a
round.  Run with one thread, pinned:
  taskset -c 1 python benchmarks/bench_pool.py [--rounds N] [--channels]
"""
import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402 - after the thread count is set

import tapeflow as tf  # noqa: E402
from tapeflow.ops import jit, pooling  # noqa: E402
from tapeflow.ops.window_args import explicit_pads  # noqa: E402

POOL = "tapeflow.ops._pool_numba"
CASES = [  # name, input shape, window, stride, padding
    ("stem 3x3/2 VALID", (32, 56, 56, 64), 3, 2, "VALID"),
    ("stem 3x3/2 SAME", (32, 56, 56, 64), 3, 2, "SAME"),
    ("control 2x2/2", (32, 56, 56, 64), 2, 2, "VALID"),
    ("W2 pool 1 2x2/2", (64, 26, 26, 32), 2, 2, "VALID"),
    ("W2 pool 2 2x2/2", (64, 11, 11, 64), 2, 2, "VALID"),
]


def cpu_ms(fn, number=3):
    start = time.process_time()
    for _ in range(number):
        fn()
    return (time.process_time() - start) / number * 1e3


def use(route):
    jit._LOADED[POOL] = route


def tapeflow_runs(x, k, s, padding):
    pads = explicit_pads(padding, x.shape[1:3], (k, k), (s, s), (1, 1), "NHWC", "bench")
    xt = tf.constant(x)
    dy = tf.nn.max_pool2d(xt, k, s, padding).numpy() * 0 + np.float32(1.5)
    dyt = tf.constant(dy)

    def forward():
        tf.nn.max_pool2d(xt, k, s, padding)

    def gradient():
        pooling._max_pool_grad_forward(x, dy, (k, k), (s, s), pads)

    def both():
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = tf.nn.max_pool2d(xt, k, s, padding)
        tape.gradient(y, xt, output_gradients=dyt)
    return {"forward": forward, "gradient": gradient, "fwd+bwd": both}


def torch_runs(x, k, s, padding):
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    pad = 0 if padding == "VALID" else k // 2  # both sides: TF's SAME windows, shifted one
    runs = {}
    for layout in ("channels-last", "NCHW"):
        t = torch.from_numpy(x).permute(0, 3, 1, 2)
        t = (t if layout == "channels-last" else t.contiguous()).requires_grad_(True)
        dy = torch.full_like(torch.nn.functional.max_pool2d(t, k, s, pad), 1.5)

        def forward(t=t):
            with torch.no_grad():
                torch.nn.functional.max_pool2d(t, k, s, pad)

        def both(t=t, dy=dy):
            t.grad = None
            torch.nn.functional.max_pool2d(t, k, s, pad).backward(dy)
        runs[f"torch {layout} forward"] = forward
        runs[f"torch {layout} fwd+bwd"] = both
    return runs


def channel_sweep(compiled, rounds):
    rng = np.random.default_rng(0)
    print("channels  window  forward numpy / numba (ms)   gradient numpy / numba (ms)")
    for c in (8, 16, 24, 32, 48, 64, 128):
        for k in (3, 2):
            x = rng.standard_normal((512 // c, 28, 28, c)).astype(np.float32)
            pads = ((0, 0), (0, 0))
            use(None)
            y = pooling._max_pool_forward(x, (k, k), (2, 2), pads)
            dy = np.ones_like(y)
            runs = {
                "numpy forward": lambda: pooling._max_pool_forward(x, (k, k), (2, 2), pads),
                "numba forward": lambda: compiled.max_pool(x, k, k, 2, 2, 0, 0, np.empty_like(y)),
                "numpy gradient": lambda: pooling._max_pool_grad_forward(x, dy, (k, k), (2, 2),
                                                                         pads),
                "numba gradient": lambda: compiled.max_pool_grad(x, dy, k, k, 2, 2, 0, 0,
                                                                 np.empty_like(x))}
            for fn in runs.values():
                fn()
            best = {what: min(cpu_ms(fn) for _ in range(rounds)) for what, fn in runs.items()}
            print(f"{c:8d}  {k}x{k}/2  {best['numpy forward']:7.3f} / {best['numba forward']:7.3f}"
                  f"            {best['numpy gradient']:7.3f} / {best['numba gradient']:7.3f}")
    use(compiled)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--channels", action="store_true", help="numba against numpy by channels")
    args = p.parse_args()
    compiled = jit.kernels(POOL)
    if compiled is None:
        raise SystemExit("numba is not installed (or TAPEFLOW_JIT=0): nothing to compare")
    if args.channels:
        return channel_sweep(compiled, args.rounds)
    rng = np.random.default_rng(0)
    for name, shape, k, s, padding in CASES:
        x = rng.standard_normal(shape).astype(np.float32)
        runs = tapeflow_runs(x, k, s, padding)
        best = {}
        for _ in range(args.rounds):
            for route_name, route in (("numpy", None), ("numba", compiled)):
                use(route)
                for what, fn in runs.items():
                    key = f"{route_name} {what}"
                    best[key] = min(best.get(key, float("inf")), cpu_ms(fn))
        use(compiled)
        for what, fn in torch_runs(x, k, s, padding).items():
            fn()
            best[what] = min(cpu_ms(fn) for _ in range(args.rounds))
        print(f"{name} {shape}:")
        for key, ms in best.items():
            print(f"  {key:32s} {ms:7.2f} ms")


if __name__ == "__main__":
    main()
