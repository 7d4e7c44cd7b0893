#!/usr/bin/env python
"""tapeflow on a device against PyTorch on the same device, in one run (issue 9).

Workloads (each framework on the same arrays, float32, moved to the device once):

  MLP-B   the housing MLP's training step (Dense(30, relu) -> Dense(1), MSE, SGD lr=1e-3) at
          batch B = 32, 1024 and 8192: tapeflow's step under ``tf.function`` inside
          ``tf.device``, PyTorch's eager step with ``torch.optim.SGD``.  Figure: steps/s.
  J2      batch_jacobian of a 2-layer elu MLP 5->64->6 at batch 256 -> (256, 6, 5)
          (``shared/bench/peers_autodiff.py``'s J2; torch.func vmap(jacrev)).  Figure: ms/call.
  H2      the full 301x301 Hessian of the housing MLP's MSE on 1024 rows (its H2;
          ``tf.hessian``, torch.func.hessian).  Figure: ms/call.

Timing synchronizes the device before reading the clock (CuPy's and torch's ``synchronize``):
W warm-up calls, then the median of N timed blocks.  The ratio printed is tapeflow's
throughput / PyTorch's (above 1: tapeflow is faster).  Issue 9's target: MLP-8192 >= 1.0 on a GPU.

Usage:  python benchmarks/bench_gpu.py --device gpu     # needs CuPy, a GPU and torch with CUDA
        python benchmarks/bench_gpu.py --device cpu     # the same workloads on numpy / torch CPU
"""
import argparse
import statistics
import sys
import time

import numpy as np

BATCHES = (32, 1024, 8192)
STEPS_PER_BLOCK = 50


def data(rng):
    """The arrays every framework starts from (host numpy, float32)."""
    f32 = np.float32
    d = {"W1": (rng.standard_normal((8, 30)) * 0.5).astype(f32), "b1": np.zeros(30, f32),
         "W2": (rng.standard_normal((30, 1)) * 0.2).astype(f32), "b2": np.zeros(1, f32),
         "X": rng.standard_normal((max(BATCHES), 8)).astype(f32),
         "Y": rng.standard_normal((max(BATCHES), 1)).astype(f32),
         "xb": rng.standard_normal((256, 5)).astype(f32),
         "A1": (rng.standard_normal((5, 64)) * 0.4).astype(f32), "a1": np.zeros(64, f32),
         "A2": (rng.standard_normal((64, 6)) * 0.2).astype(f32), "a2": np.zeros(6, f32)}
    d["theta"] = np.concatenate([d["W1"].ravel(), d["b1"], d["W2"].ravel(), d["b2"]])
    return d


def timed(fn, sync, warmup, reps, calls=1):
    """Median seconds per call of ``fn`` over ``reps`` blocks of ``calls`` calls."""
    for _ in range(warmup):
        fn()
    sync()
    blocks = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        blocks.append((time.perf_counter() - start) / calls)
    return statistics.median(blocks)


# --- tapeflow --------------------------------------------------------------------------------
def tapeflow_workloads(d, device):
    import tapeflow as tf
    from tapeflow import backend

    name = "/GPU:0" if device == "gpu" else "/CPU:0"
    xp = backend.gpu_module() if device == "gpu" else np

    def sync():
        if device == "gpu":
            xp.cuda.Device().synchronize()  # pragma: no cover - needs a GPU

    with tf.device(name):
        W1, b1, W2, b2 = (tf.Variable(d[k]) for k in ("W1", "b1", "W2", "b2"))
        opt = tf.keras.optimizers.SGD(1e-3)
        X, Y = tf.constant(d["X"]), tf.constant(d["Y"])
        xb = tf.constant(d["xb"])
        A1, a1, A2, a2 = (tf.constant(d[k]) for k in ("A1", "a1", "A2", "a2"))
        theta = tf.Variable(d["theta"])
        Xh, Yh = X[:1024], Y[:1024]

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.nn.relu(x @ W1 + b1) @ W2 + b2 - y) ** 2)
        grads = tape.gradient(loss, [W1, b1, W2, b2])
        opt.apply_gradients(zip(grads, [W1, b1, W2, b2]))
        return loss

    def j2():
        with tf.GradientTape() as t:
            t.watch(xb)
            y = tf.nn.elu(tf.nn.elu(xb @ A1 + a1) @ A2 + a2)
        return t.batch_jacobian(y, xb)

    def housing_loss():
        w1 = tf.reshape(theta[:240], (8, 30))
        w2 = tf.reshape(theta[270:300], (30, 1))
        return tf.reduce_mean((tf.nn.relu(Xh @ w1 + theta[240:270]) @ w2 + theta[300:] - Yh) ** 2)

    work = {f"MLP-{b}": (lambda b=b: step(X[:b], Y[:b])) for b in BATCHES}
    work["J2"] = j2
    work["H2"] = lambda: tf.hessian(housing_loss, [theta])

    def run(fn):
        def call():
            with tf.device(name):
                return fn()
        return call
    return {k: run(f) for k, f in work.items()}, sync


# --- PyTorch ---------------------------------------------------------------------------------
def torch_workloads(d, device):
    import torch
    from torch.func import hessian, jacrev, vmap

    dev = torch.device("cuda" if device == "gpu" else "cpu")

    def sync():
        if device == "gpu":
            torch.cuda.synchronize()  # pragma: no cover - needs a GPU

    def t(k, grad=False):
        return torch.tensor(d[k], device=dev, requires_grad=grad)
    params = [t(k, True) for k in ("W1", "b1", "W2", "b2")]
    opt = torch.optim.SGD(params, lr=1e-3)
    X, Y = t("X"), t("Y")
    W1, b1, W2, b2 = params
    xb, A1, a1, A2, a2 = (t(k) for k in ("xb", "A1", "a1", "A2", "a2"))
    theta, Xh, Yh = t("theta"), X[:1024], Y[:1024]
    elu = torch.nn.functional.elu

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = ((torch.relu(x @ W1 + b1) @ W2 + b2 - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    def loss_of(th):
        w1, w2 = th[:240].reshape(8, 30), th[270:300].reshape(30, 1)
        return ((torch.relu(Xh @ w1 + th[240:270]) @ w2 + th[300:] - Yh) ** 2).mean()

    work = {f"MLP-{b}": (lambda b=b: step(X[:b], Y[:b])) for b in BATCHES}
    work["J2"] = lambda: vmap(jacrev(lambda x: elu(elu(x @ A1 + a1) @ A2 + a2)))(xb)
    work["H2"] = lambda: hessian(loss_of)(theta)
    return work, sync


def missing(device):
    """Why the workloads cannot run on ``device`` (None when they can)."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed (pip install 'tapeflow[bench]')"
    if device == "cpu":
        return None
    from tapeflow import backend
    why = backend.gpu_missing()
    if why is not None:
        return f"tapeflow: {why}"
    if not torch.cuda.is_available():  # pragma: no cover - needs a GPU
        return "PyTorch finds no CUDA device (a CPU-only torch build?)"
    return None  # pragma: no cover


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up calls (default 3)")
    ap.add_argument("--reps", type=int, default=7, help="timed blocks (default 7)")
    args = ap.parse_args(argv)
    why = missing(args.device)
    if why is not None:
        print(f"bench_gpu: cannot run on {args.device}: {why}", file=sys.stderr)
        return 2
    import torch
    torch.manual_seed(0)
    d = data(np.random.default_rng(0))
    mine, my_sync = tapeflow_workloads(d, args.device)
    theirs, their_sync = torch_workloads(d, args.device)
    print(f"device {args.device}; torch {torch.__version__}; median of {args.reps} blocks")
    print(f"{'workload':10s} {'tapeflow':>14s} {'torch':>14s} {'ratio':>7s}")
    for name in mine:
        calls = STEPS_PER_BLOCK if name.startswith("MLP") else 1
        a = timed(mine[name], my_sync, args.warmup, args.reps, calls)
        b = timed(theirs[name], their_sync, args.warmup, args.reps, calls)
        if name.startswith("MLP"):
            print(f"{name:10s} {1 / a:10.0f} st/s {1 / b:10.0f} st/s {b / a:6.2f}x")
        else:
            print(f"{name:10s} {a * 1e3:11.2f} ms {b * 1e3:11.2f} ms {b / a:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
