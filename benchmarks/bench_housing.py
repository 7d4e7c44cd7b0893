#!/usr/bin/env python
"""tapeflow against its peers on the housing MLP training workload (seed 001).

The workload is the one in ``shared/bench/peers_housing.py``. It uses the California housing data
with the seed's split (train_test_split twice, random_state=42, 11610 training rows) and a
StandardScaler. The model is Dense(30, relu) -> Dense(1), trained on MSE with SGD lr=0.001,
batch 32 and no shuffling, which gives 363 steps per epoch. Every framework starts from the same
initial weights W1, b1, W2, b2, taken from the peers file.

  tapeflow custom loop  the peers' TF eager GradientTape step with ``import tapeflow as tf``:
                        tf.Variable weights, tf.optimizers.SGD, tape.gradient, apply_gradients,
                        and batches converted to tf.constant beforehand
  tapeflow tf.function  the same step under ``@tf.function`` (traced once, then the compiled graph
                        replays: forward, tape.gradient and the optimizer update in one graph)
  tapeflow model.fit    Sequential([Input((8,)), Dense(30, relu), Dense(1)]) with set_weights,
                        compile(loss="mse", optimizer=SGD), then one fit(..., epochs=1,
                        shuffle=False, verbose=0) per epoch, as the peers' keras_fit does
  tapeflow fit, steps_per_execution=N   the same, compiled with steps_per_execution=N (N
                        batches per compiled call; --steps-per-execution, default 8 and 32)
  peers                 numpy by hand (the floor), pytorch eager, TF eager / tf.function,
                        Keras model.fit, jax eager / jit and HIPS autograd, whichever are installed

The peers run in the same process and in the same run. Their code is not copied: the script runs
``peers_housing.py`` up to its command-line loop and replaces its ``timed`` with one that records
results instead of printing them, so the peers do exactly the work that file defines.

Timing: W warm-up epochs (1 by default), then N timed epochs (5 by default). The figure is the
median seconds per epoch (wall time, or with ``--clock cpu`` the main thread's CPU time), and
steps/s is 363 divided by it. numpy by hand and tapeflow's rows take turns, an epoch each (a
change of the shared machine's speed during the run falls on all of them, so their ratios, the
targets, hold); the other peers run after them, one at a time. Every framework trains for the same W+N epochs, so all of them can
be compared on validation MSE afterwards.

Correctness: with the same initial weights, the same SGD and no shuffling, tapeflow's custom loop
and model.fit must reach numpy-by-hand's validation MSE to within 1e-4. If they do not, the exit
status is 1, so a fast but wrong run cannot pass.

Usage:  python benchmarks/bench_housing.py [--epochs N] [--warmup W]
            [--peers numpy,torch,tf,keras,jax] [--steps-per-execution 8,32]
            [--clock wall|cpu] [--profile] [--profile-fit]
"""
import argparse
import cProfile
import importlib
import io
import os
import platform
import pstats
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]  # the project root
DEFAULT_PEERS_FILE = ROOT.parent / "shared" / "bench" / "peers_housing.py"
DEFAULT_SKLEARN_DATA = ROOT.parent / "shared" / "data" / "scikit_learn_data"
STEPS_PER_EPOCH = 363
VAL_TOL = 1e-4

# Targets from the issue.
TARGET_LOOP_VS_TORCH = 2.0   # custom loop steps/s / pytorch eager steps/s >= 2.0
TARGET_FIT_VS_LOOP = 0.8     # model.fit steps/s / custom loop steps/s >= 0.8
TARGET_VS_NUMPY = 3.0        # tapeflow s/epoch / numpy-by-hand s/epoch <= 3.0
# The graphs issue's targets for the traced step.
TARGET_TRACED_VS_NUMPY = 1.0   # traced steps/s / numpy-by-hand steps/s >= 1.0
TARGET_TRACED_VS_TORCH = 5.0   # traced steps/s / pytorch eager steps/s >= 5.0
TARGET_FIT_VS_TRACED = 0.9     # model.fit steps/s / traced steps/s >= 0.9

# --clock: wall time, or this thread's CPU time: on a loaded machine it leaves out the time the
# thread waits for a core (a BLAS pool's or torch's other threads are left out too: compare
# tapeflow's rows with --peers '' and OPENBLAS_NUM_THREADS=1, where every row runs on one thread)
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}

# Peer runs: key -> (module needed, label, how to call it in the peers file's namespace).
PEERS = {
    "numpy": ("numpy", "numpy by hand (floor)", lambda ns: ns["numpy_by_hand"]()),
    "torch": ("torch", "pytorch eager", lambda ns: ns["torch_eager"]()),
    "tf": ("tensorflow", "TF eager GradientTape", lambda ns: ns["tf_tape"](False)),
    "tffn": ("tensorflow", "TF GradientTape tf.function", lambda ns: ns["tf_tape"](True)),
    "keras": ("tensorflow", "Keras (TF) model.fit", lambda ns: ns["keras_fit"]()),
    "jax": ("jax", "jax eager (no jit)", lambda ns: ns["jax_run"](False)),
    "jaxjit": ("jax", "jax.jit", lambda ns: ns["jax_run"](True)),
    "autograd": ("autograd", "autograd (HIPS)", lambda ns: ns["autograd_hips"]()),
}
PEER_ORDER = list(PEERS)
# What the --peers names select. "tf" and "jax" cover both of their modes.
ALIASES = {"numpy": ["numpy"], "torch": ["torch"], "tf": ["tf", "tffn"], "tfeager": ["tf"],
           "tffn": ["tffn"], "keras": ["keras"], "jax": ["jax", "jaxjit"], "jaxeager": ["jax"],
           "jaxjit": ["jaxjit"], "autograd": ["autograd"]}
DEFAULT_PEER_NAMES = "numpy,torch,tf,keras,jax,autograd"


# --- the peers file -----------------------------------------------------------------------------
def load_peers(path):
    """Execute peers_housing.py up to its command-line loop; return its namespace."""
    src = Path(path).read_text()
    m = re.search(r"^which = sys\.argv", src, re.M)
    if m is None:
        raise RuntimeError(f"{path}: cannot find its command-line loop ('which = sys.argv...')")
    ns = {"__name__": "peers_housing", "__file__": str(path)}
    exec(compile(src[:m.start()], str(path), "exec"), ns)
    return ns


def module_available(mod):
    try:
        importlib.import_module(mod)
    except Exception as e:  # ImportError, or a broken install
        return False, f"{type(e).__name__}: {e}".splitlines()[0][:100]
    if mod == "tensorflow":
        import logging
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
    return True, ""


# --- timing -------------------------------------------------------------------------------------
class Recorder:
    """Takes the place of peers_housing.timed: W warm-up epochs, N timed ones, then val MSE.

    Rows recorded while ``held`` is set wait for ``run_held()``, which runs their epochs in
    turns (round k runs epoch k of every held row, the order rotating each round), so a change
    of the machine's speed during the run (a shared host's other tenants, its clock) falls on
    every held row alike: numpy by hand and tapeflow's rows, whose ratios are the targets.
    Other rows run when recorded, one after another (a peer's thread pool, still spinning after
    its epoch, would slow the next row's)."""

    def __init__(self, warmup, epochs, steps, clock=time.perf_counter):
        self.warmup, self.epochs, self.steps = warmup, epochs, steps
        self.clock = clock
        self.rows = {}  # label -> dict
        self.current = None  # the row key to file the next call under
        self.keep = {}  # label -> (epoch_fn, val_fn), for --profile
        self.held = False
        self.waiting = []  # (label, name, epoch_fn, val_fn) while held

    def __call__(self, name, epoch_fn, val_fn):
        label = self.current or name
        if self.held:
            self.waiting.append((label, name, epoch_fn, val_fn))
            return
        ts = []
        for _ in range(self.warmup + self.epochs):
            t = self.clock()
            epoch_fn()
            ts.append(self.clock() - t)
        self._record(label, name, ts, epoch_fn, val_fn)

    def run_held(self):
        """The held rows' epochs in turns, then their rows."""
        waiting, self.waiting, self.held = self.waiting, [], False
        times = {label: [] for label, *_ in waiting}
        for k in range(self.warmup + self.epochs):
            shift = k % len(waiting)
            for label, _, epoch_fn, _ in waiting[shift:] + waiting[:shift]:
                t = self.clock()
                epoch_fn()
                times[label].append(self.clock() - t)
        for label, name, epoch_fn, val_fn in waiting:
            self._record(label, name, times[label], epoch_fn, val_fn)

    def _record(self, label, name, ts, epoch_fn, val_fn):
        med = statistics.median(ts[self.warmup:])
        val = float(val_fn())
        self.rows[label] = {"s": med, "sps": self.steps / med, "val": val,
                            "warm": ts[:self.warmup], "name": name}
        self.keep[label] = (epoch_fn, val_fn)
        warm = (f"  (warm-up {', '.join(f'{w:.4f}' for w in ts[:self.warmup])} s)"
                if self.warmup else "")
        print(f"  {label:30s} s/epoch={med:.4f}  steps/s={self.steps / med:9.0f}  "
              f"val_mse={val:.6f}{warm}", flush=True)


# --- tapeflow -----------------------------------------------------------------------------------
def tapeflow_custom_loop(ns, timed, traced=False):
    """The peers' tf_tape eager step, with ``import tapeflow as tf``; with ``traced``, the same
    step under ``@tf.function`` (what a TF user writes for speed)."""
    import tapeflow as tf
    W1, b1, W2, b2 = ns["W1"], ns["b1"], ns["W2"], ns["b2"]
    LR, batches, X_valid, y_valid = ns["LR"], ns["batches"], ns["X_valid"], ns["y_valid"]

    w1 = tf.Variable(W1); c1 = tf.Variable(b1); w2 = tf.Variable(W2); c2 = tf.Variable(b2)
    vs = [w1, c1, w2, c2]
    opt = tf.optimizers.SGD(LR)
    tb = [(tf.constant(x), tf.constant(y)) for x, y in batches]

    def step(xb, yb):
        with tf.GradientTape() as tape:
            p = tf.nn.relu(xb @ w1 + c1) @ w2 + c2
            loss = tf.reduce_mean((p - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, vs), vs))

    if traced:
        step = tf.function(step)

    def epoch():
        for xb, yb in tb:
            step(xb, yb)

    def val():
        p = tf.nn.relu(X_valid @ w1 + c1) @ w2 + c2
        return float(tf.reduce_mean((p - y_valid) ** 2))

    timed("tapeflow tf.function" if traced else "tapeflow custom loop", epoch, val)


def tapeflow_fit(ns, timed, steps_per_execution=1):
    """The peers' keras_fit, with ``import tapeflow as tf``; ``steps_per_execution=N`` runs N
    batches in each compiled call (compile's argument)."""
    import tapeflow as tf
    W1, b1, W2, b2 = ns["W1"], ns["b1"], ns["W2"], ns["b2"]
    LR, B = ns["LR"], ns["B"]
    X_train, y_train, X_valid, y_valid = ns["X_train"], ns["y_train"], ns["X_valid"], ns["y_valid"]

    m = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(30, activation="relu"),
                             tf.keras.layers.Dense(1)])
    m.layers[0].set_weights([W1, b1]); m.layers[1].set_weights([W2, b2])
    m.compile(loss="mse", optimizer=tf.optimizers.SGD(LR), steps_per_execution=steps_per_execution)

    def epoch():
        m.fit(X_train, y_train, batch_size=B, epochs=1, shuffle=False, verbose=0)

    def val():
        r = m.evaluate(X_valid, y_valid, verbose=0)
        return float(np.ravel(np.asarray(r, dtype=np.float64))[0])

    timed(fit_label(steps_per_execution), epoch, val)


def fit_label(steps_per_execution):
    return "tapeflow model.fit" if steps_per_execution == 1 else \
        f"tapeflow fit, steps_per_execution={steps_per_execution}"


# --- profile ------------------------------------------------------------------------------------
def profile_epoch(label, epoch_fn, top=25):
    pr = cProfile.Profile()
    pr.enable()
    epoch_fn()
    pr.disable()
    out = io.StringIO()
    st = pstats.Stats(pr, stream=out).strip_dirs().sort_stats("tottime")
    st.print_stats(top)
    text = out.getvalue()
    head = text[:text.find("ncalls")].strip().splitlines() if "ncalls" in text else []
    total = next((ln.strip() for ln in head if "function calls" in ln), "")
    body = text[text.find("ncalls"):] if "ncalls" in text else text
    print(f"\n--- cProfile: one {label} epoch ({STEPS_PER_EPOCH} steps), top {top} by tottime ---")
    if total:
        print(total)
    print(body.rstrip())


# --- table --------------------------------------------------------------------------------------
def print_table(head, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up epochs before them (default 1)")
    ap.add_argument("--peers", default=None,
                    help="comma-separated: numpy,torch,tf,keras,jax,autograd (tf = TF eager + "
                    "tf.function, also tfeager/tffn; jax = eager + jit, also jaxeager/jaxjit). "
                    "Default: every one that imports. numpy by hand always runs: it is the "
                    "correctness reference. '' for numpy alone")
    ap.add_argument("--peers-file", default=os.environ.get("TAPEFLOW_HOUSING_PEERS_FILE",
                                                           str(DEFAULT_PEERS_FILE)),
                    help="path of peers_housing.py (default ../shared/bench/peers_housing.py)")
    ap.add_argument("--steps-per-execution", default="8,32",
                    help="comma-separated N: one more 'fit, steps_per_execution=N' row each "
                    "(default 8,32; '' for none)")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile one tapeflow custom-loop epoch (top 25 by tottime)")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="what an epoch's time is: 'wall' (default), or 'cpu', this thread's CPU "
                    "time, which a shared machine's load disturbs less (see CLOCKS)")
    ap.add_argument("--profile-fit", action="store_true",
                    help="cProfile one epoch of each tapeflow fit row as well")
    args = ap.parse_args(argv)
    if args.epochs < 1 or args.warmup < 0:
        ap.error("--epochs must be >= 1 and --warmup >= 0")
    try:
        args.steps_per_execution = [int(n) for n in args.steps_per_execution.split(",") if n]
    except ValueError:
        ap.error(f"--steps-per-execution takes integers, got {args.steps_per_execution!r}")
    if any(n < 2 for n in args.steps_per_execution):
        ap.error("--steps-per-execution: each N must be >= 2 (N=1 is the model.fit row)")

    explicit = args.peers is not None
    names = [p.strip() for p in (args.peers if explicit else DEFAULT_PEER_NAMES).split(",")
             if p.strip()]
    bad = [p for p in names if p not in ALIASES]
    if bad:
        ap.error(f"unknown peer(s) {bad}; choose from {sorted(ALIASES)}")
    wanted = ["numpy"] + [k for n in names for k in ALIASES[n]]
    wanted = [k for k in PEER_ORDER if k in wanted]

    if not Path(args.peers_file).is_file():
        print(f"peers file not found: {args.peers_file}", file=sys.stderr)
        return 2
    if not os.environ.get("SCIKIT_LEARN_DATA"):
        os.environ["SCIKIT_LEARN_DATA"] = str(DEFAULT_SKLEARN_DATA)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # quiet TensorFlow's start-up logging

    import tapeflow
    print(f"python {platform.python_version()}, numpy {np.__version__}, tapeflow "
          f"{tapeflow.__version__}, {os.cpu_count()} cpus; {args.warmup} warm-up + "
          f"{args.epochs} timed epochs each, median s/epoch ({args.clock} clock)")
    print(f"SCIKIT_LEARN_DATA={os.environ['SCIKIT_LEARN_DATA']}")

    ns = load_peers(args.peers_file)
    steps = len(ns["batches"])
    print(f"peers from {args.peers_file}: {len(ns['X_train'])} train rows, "
          f"{len(ns['X_valid'])} valid rows, batch {ns['B']}, lr {ns['LR']}, {steps} steps/epoch")
    if steps != STEPS_PER_EPOCH:
        print(f"  note: {steps} steps per epoch, not the expected {STEPS_PER_EPOCH}")
    rec = Recorder(args.warmup, args.epochs, steps, CLOCKS[args.clock])
    ns["timed"] = rec
    ns["EPOCHS"] = args.warmup + args.epochs

    # numpy by hand (the reference) and tapeflow's rows in turns, then the other peers
    rec.held = True
    rec.current = PEERS["numpy"][1]
    PEERS["numpy"][2](ns)
    rec.current = None
    tapeflow_custom_loop(ns, rec)
    tapeflow_custom_loop(ns, rec, traced=True)
    tapeflow_fit(ns, rec)
    for n in args.steps_per_execution:
        tapeflow_fit(ns, rec, steps_per_execution=n)
    rec.run_held()

    ran, skipped = ["numpy"], {}
    for key in wanted[1:]:
        mod, label, call = PEERS[key]
        ok, why = module_available(mod)
        if not ok:
            if explicit or key in ("torch", "tf", "tffn", "keras"):
                skipped[key] = why
            continue
        rec.current = label
        try:
            call(ns)
            ran.append(key)
        except Exception as e:  # a peer that breaks must not take the tapeflow figures with it
            skipped[key] = f"failed: {type(e).__name__}: {e}".splitlines()[0][:120]
        finally:
            rec.current = None
    versions = []
    for mod in dict.fromkeys(PEERS[k][0] for k in ran if k != "numpy"):
        versions.append(f"{mod} {getattr(sys.modules[mod], '__version__', '?')}")
    if versions:
        print(f"peer versions: {', '.join(versions)}")
    for k, why in skipped.items():
        print(f"peer {k} skipped: {why}")
    if not explicit:
        missing = [k for k in ("jax", "autograd") if k not in ran]
        if missing:
            print(f"not installed, not run: {', '.join(missing)}")

    # --- correctness and table
    R = rec.rows
    loop, fit = R["tapeflow custom loop"], R["tapeflow model.fit"]
    traced = R["tapeflow tf.function"]
    ref = R[PEERS["numpy"][1]]
    torch_row = R.get(PEERS["torch"][1])

    def agree(row):
        return abs(row["val"] - ref["val"]) <= VAL_TOL

    fit_rows = ["tapeflow model.fit"] + [fit_label(n) for n in args.steps_per_execution]
    labels = (["tapeflow custom loop", "tapeflow tf.function"] + fit_rows
              + [PEERS[k][1] for k in ran])
    head = ["name", "s/epoch", "steps/s", f"val_mse ({args.warmup + args.epochs} ep)",
            "|dval| vs numpy", "same val?", "s / numpy s", "loop speed vs this"]
    rows = []
    for lab in labels:
        r = R[lab]
        d = abs(r["val"] - ref["val"])
        is_tf = lab.startswith("tapeflow")
        same = ("yes" if agree(r) else "NO") if is_tf else ("(yes)" if agree(r) else "(no)")
        rows.append([lab, f"{r['s']:.4f}", f"{r['sps']:,.0f}", f"{r['val']:.6f}", f"{d:.1e}",
                     same, f"{r['s'] / ref['s']:.2f}x", f"{loop['sps'] / r['sps']:.2f}x"])
    print()
    print_table(head, rows)

    checks = []
    if torch_row is not None:
        v = loop["sps"] / torch_row["sps"]
        checks.append(("custom loop vs pytorch eager, steps/s", v, f">= {TARGET_LOOP_VS_TORCH:.1f}x",
                       v >= TARGET_LOOP_VS_TORCH))
    else:
        checks.append(("custom loop vs pytorch eager, steps/s", None,
                       f">= {TARGET_LOOP_VS_TORCH:.1f}x", None))
    v = fit["sps"] / loop["sps"]
    checks.append(("model.fit vs custom loop, steps/s", v, f">= {TARGET_FIT_VS_LOOP:.1f}x",
                   v >= TARGET_FIT_VS_LOOP))
    v = traced["sps"] / ref["sps"]
    checks.append(("tf.function step vs numpy by hand, steps/s", v,
                   f">= {TARGET_TRACED_VS_NUMPY:.1f}x", v >= TARGET_TRACED_VS_NUMPY))
    if torch_row is not None:
        v = traced["sps"] / torch_row["sps"]
        checks.append(("tf.function step vs pytorch eager, steps/s", v,
                       f">= {TARGET_TRACED_VS_TORCH:.1f}x", v >= TARGET_TRACED_VS_TORCH))
    jit_row = R.get(PEERS["jaxjit"][1])
    if jit_row is not None:
        v = traced["sps"] / jit_row["sps"]
        checks.append(("tf.function step vs jax.jit, steps/s (reported)", v, "-", None))
    for lab in fit_rows:
        v = R[lab]["sps"] / traced["sps"]
        name = "model.fit" if lab == "tapeflow model.fit" else lab[len("tapeflow "):]
        checks.append((f"{name} vs tf.function step, steps/s", v,
                       f">= {TARGET_FIT_VS_TRACED:.1f}x", v >= TARGET_FIT_VS_TRACED))
    for lab, r in (("custom loop", loop), ("model.fit", fit)):
        v = r["s"] / ref["s"]
        checks.append((f"{lab} time / numpy-by-hand time", v, f"<= {TARGET_VS_NUMPY:.1f}x",
                       v <= TARGET_VS_NUMPY))
    print()
    print_table(["target check", "ratio", "target", "met?"],
                [[n, "-" if v is None else f"{v:.2f}x", t,
                  "n/a" if ok is None else ("met" if ok else "MISSED")] for n, v, t, ok in checks])

    wrong = [lab for lab in ["tapeflow custom loop", "tapeflow tf.function"] + fit_rows
             if not agree(R[lab])]
    print(f"\nval MSE check (tapeflow vs numpy by hand, |diff| <= {VAL_TOL:g}; the peers' "
          f"agreement is in brackets, for information): "
          + ("tapeflow agrees" if not wrong else f"WRONG: {', '.join(wrong)}"))
    if torch_row is None:
        print("pytorch not run: the custom-loop vs pytorch target was not checked.")
    met = [ok for _, _, _, ok in checks if ok is not None]
    print(f"targets: {'all met' if all(met) else f'{met.count(False)} of {len(met)} MISSED'}; "
          f"correctness: {'ok' if not wrong else 'WRONG'}")

    if args.profile:
        profile_epoch("tapeflow custom loop", rec.keep["tapeflow custom loop"][0])
    if args.profile_fit:
        for lab in fit_rows:
            profile_epoch(lab, rec.keep[lab][0])
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
