#!/usr/bin/env python
"""Damaged saves against tapeflow's loaders: no crash, hang or traceback (issue 21, group 6).

Five real saves are made (a trainer checkpoint's model file ``.h5`` through ``load_model``, a
``.keras`` file, one with variable-length string attributes as tapeflow wrote before, a
``.weights.h5`` through ``load_weights``, a SavedModel's ``arrays.h5`` and ``graph.json``
through ``tf.saved_model.load``); each damaged copy has seeded byte flips or is
truncated at a random offset.  Copies are loaded in worker processes under a memory cap
(``RLIMIT_AS``) one after another; a worker prints one line a file, so a crash or a hang is
pinned to the file that caused it (the worker is then replaced).  Outcomes:

  refused    a tapeflow error (LoadError / ValueError / OSError ...) with a one-line message
  loaded     the damage did not matter (e.g. in padding) and the result was usable
  traceback  an exception type a user should not see (KeyError, TypeError, h5py internals...)
  crash      the worker died (a signal, MemoryError, the memory cap)
  hang       no answer within the timeout

Usage:  python benchmarks/fuzz_loaders.py [--copies 1000] [--seed 0] [--timeout 30]
            [--memory-gib 2] [--workers 2]
Exit status 1 when any copy crashed, hung or gave a traceback.
"""
import argparse
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading

# What a user may see: tapeflow's load errors and the few standard ones it raises on purpose.
EXPECTED = {"LoadError", "ValueError", "OSError", "SaveError", "CheckpointError", "ConfigError",
            "UserError", "FileNotFoundError", "InvalidArgumentError", "TypeError_refused"}

WORKER = r"""
import json, os, resource, sys, traceback
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
import tapeflow as tf
from tapeflow.saving.format import LoadError
x = np.ones((2, 4), np.float32)
print("ready", flush=True)
for line in sys.stdin:
    kind, path = json.loads(line)
    try:
        if kind in ("keras", "h5", "keras_vlen"):
            m = tf.keras.models.load_model(path)
            m.predict(x, verbose=0)
        elif kind == "weights":
            m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3),
                                     tf.keras.layers.Dense(1)])
            m.load_weights(path)
            m.predict(x, verbose=0)
        elif kind == "saved_model":
            loaded = tf.saved_model.load(path)
            loaded.f(tf.constant(x))
        out = ("loaded", "")
    except MemoryError:
        out = ("crash", "MemoryError")
    except (LoadError, ValueError, OSError) as e:
        text = str(e)
        out = ("refused", type(e).__name__ + ": " + text.splitlines()[0][:200] if text else
               type(e).__name__)
    except Exception as e:  # noqa: BLE001
        out = ("traceback", "".join(traceback.format_exception_only(type(e), e)).strip()[:300])
    print(json.dumps(out), flush=True)
"""


def make_saves(directory):
    """The five undamaged saves, by kind: {kind: path} (``keras_vlen``: a .keras file with
    variable-length string attributes, as tapeflow wrote before)."""
    import numpy as np

    import tapeflow as tf
    rng = np.random.default_rng(0)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(rng.normal(size=(32, 4)).astype(np.float32),
              rng.normal(size=(32, 1)).astype(np.float32), epochs=1, verbose=0)
    saves = {"keras": os.path.join(directory, "m.keras"), "h5": os.path.join(directory, "m.h5"),
             "weights": os.path.join(directory, "w.weights.h5"),
             "saved_model": os.path.join(directory, "saved")}
    model.save(saves["keras"])
    model.save(saves["h5"])
    model.save_weights(saves["weights"])
    saves["keras_vlen"] = os.path.join(directory, "old.keras")
    model.save(saves["keras_vlen"])
    _variable_length_strings(saves["keras_vlen"])
    module = tf.Module()
    module.v = tf.Variable(np.ones(4, np.float32))
    module.f = tf.function(lambda x: tf.reduce_sum(x * module.v, axis=-1),
                           input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    tf.saved_model.save(module, saves["saved_model"])
    return saves


def _variable_length_strings(path):
    """Rewrite the file's string attributes as variable-length ones (in the HDF5 global heap),
    as tapeflow wrote them before: the loader must still not hang on a damaged heap."""
    import h5py
    with h5py.File(path, "r+") as f:
        objects = [f]
        f.visit(lambda name: objects.append(f[name]))
        for obj in objects:
            for key in list(obj.attrs):
                if isinstance(obj.attrs[key], bytes):
                    obj.attrs[key] = obj.attrs[key].decode()


def damage(source, target, rng):
    """A copy of ``source`` (a file, or a SavedModel directory: one of its files damaged) with
    1-8 flipped bytes, or truncated."""
    if os.path.isdir(source):
        shutil.copytree(source, target)
        files = sorted(os.path.join(target, f) for f in os.listdir(target))
        victim = rng.choice(files)
    else:
        shutil.copyfile(source, target)
        victim = target
    data = bytearray(open(victim, "rb").read())
    if rng.random() < 0.2:
        data = data[:rng.randrange(len(data))]
        how = f"truncated to {len(data)}"
    else:
        offsets = [rng.randrange(len(data)) for _ in range(rng.randint(1, 8))]
        for o in offsets:
            data[o] = rng.randrange(256)
        how = f"bytes {offsets} changed"
    with open(victim, "wb") as f:
        f.write(data)
    return f"{os.path.basename(victim)}: {how}"


class Worker:
    def __init__(self, memory):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(memory)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if self.lines.get(timeout=120) != "ready":
            raise RuntimeError("the worker did not start")

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def load(self, kind, path, timeout):
        self.proc.stdin.write(json.dumps([kind, path]) + "\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            return "hang", f"no answer in {timeout} s"
        if line is None:
            self.proc.wait()
            return "crash", f"worker exit status {self.proc.returncode}"
        return tuple(json.loads(line))

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def run(copies, seed, timeout, memory_gib, workers):
    rng = random.Random(seed)
    memory = int(memory_gib * 2 ** 30)
    counts = {}
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        saves = make_saves(tmp)
        kinds = sorted(saves)
        jobs = []
        for i in range(copies):
            kind = kinds[i % len(kinds)]
            target = os.path.join(tmp, f"copy{i}{'' if kind == 'saved_model' else '.' + saves[kind].split('.', 1)[1]}")
            jobs.append((i, kind, target, damage(saves[kind], target, rng)))
        pending = queue.Queue()
        for job in jobs:
            pending.put(job)
        lock = threading.Lock()

        def serve():
            worker = Worker(memory)
            while True:
                try:
                    i, kind, target, how = pending.get_nowait()
                except queue.Empty:
                    break
                outcome, detail = worker.load(kind, target, timeout)
                with lock:
                    counts[outcome] = counts.get(outcome, 0) + 1
                    if outcome in ("traceback", "crash", "hang"):
                        bad.append((i, kind, how, outcome, detail))
                if outcome in ("crash", "hang"):
                    worker = Worker(memory)
            worker.close()

        threads = [threading.Thread(target=serve) for _ in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return counts, bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--memory-gib", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    counts, bad = run(args.copies, args.seed, args.timeout, args.memory_gib, args.workers)
    print(f"{args.copies} damaged copies (seed {args.seed}): " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for i, kind, how, outcome, detail in sorted(bad)[:40]:
        print(f"  copy {i} ({kind}, {how}): {outcome}: {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
