"""Memory planning for a compiled graph: when each value dies, and which values write into
buffers the compiled function keeps from call to call.

``plan_memory(graph)`` reads the equations once and answers two questions:

- **liveness**: after which equation each value is used for the last time, so the compiled
  function drops its reference there (``del``) and the allocator can hand the memory to the
  next temporary while it is still in cache, instead of holding every temporary to the end;
- **buffers**: the large elementwise and matrix-product equations whose result never leaves
  the call (not an output, not assigned to a Variable, read only by equations whose results
  cannot be views of it) write with ``out=`` into an array the function owns.  Values whose
  lives do not overlap share one buffer (a greedy interval colouring per shape and dtype,
  as XLA's buffer assignment does).  The buffers of one call are one tuple, taken from a
  per-thread free list (``BufferPool``), so two threads, or a call nested in a call, never
  share one.

A buffer is written only by the kernels in ``WRITERS``: numpy ufuncs and ``np.matmul``
with the operands' dtype, which is what the ops' own forwards compute for float operands.
"""
import sys
import threading

import numpy as np

from ..core.backward import _summed_axes
from ..core.in_place import in_place_kernel
from .ir import ASSIGN, READ

__all__ = ["plan_memory", "MemoryPlan", "BufferPool", "owned", "WRITERS", "MIN_BUFFER_BYTES",
           "BUFFERS"]

# Below this a fresh array costs less than the bookkeeping (numpy's small-array cache).
MIN_BUFFER_BYTES = 64 * 1024
# Whether compiled functions use buffers unless told: not by default, as they measured no
# faster than dropping dead values alone, since the allocator (``tapeflow/allocator.py``) hands
# a freed block straight to the next temporary (benchmarks/bench_memory_plan.py: CPU time per
# step 0.99-1.02x of freeing alone on W1 and W5), and they hold their memory between calls.
BUFFERS = False


def _ufunc(name, arity):
    args = ", ".join(f"{{{i}}}" for i in range(arity))
    return lambda in_types, attrs: f"np.{name}({args}, out={{out}})"


def _matmul_writer(in_types, attrs):
    (sa, da), (sb, _) = in_types
    if len(sa) != 2 or len(sb) != 2 or da == np.float16:
        return None
    ta, tb = attrs.get("transpose_a"), attrs.get("transpose_b")
    # the forward's outer product (one column times one row) is a broadcast multiply
    product = "multiply" if (sa[0] if ta else sa[1]) == 1 else "matmul"
    return f"np.{product}({{0}}{'.T' if ta else ''}, {{1}}{'.T' if tb else ''}, out={{out}})"


# op name -> writer(in_types, attrs) -> a template over the operands {0}, {1}... and {out}
# (or None where the op's forward would compute something else).  Float operands only.
WRITERS = {
    "AddV2": _ufunc("add", 2),
    "Sub": _ufunc("subtract", 2),
    "Mul": _ufunc("multiply", 2),
    "Maximum": _ufunc("maximum", 2),
    "Minimum": _ufunc("minimum", 2),
    "Neg": _ufunc("negative", 1),
    "Tanh": _ufunc("tanh", 1),
    "Square": lambda in_types, attrs: "np.multiply({0}, {0}, out={out})",
    "Relu": lambda in_types, attrs: "np.maximum({0}, 0, out={out})",
    "ReluGrad": lambda in_types, attrs: "np.multiply({0}, {1} > 0, out={out})",
    "BatchMatMulV2": _matmul_writer,
}

# Ops whose results never share memory with their operands (besides the writers): a value
# read only by these and by writers cannot be seen through a view after it dies.
_FRESH_RESULTS = {"ApplyAdam", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdamWithAmsgrad"}


def _makes_fresh(eqn, types):
    name = eqn.op.name
    if name in WRITERS or name in _FRESH_RESULTS:
        return True
    if name in ("Sum", "Mean"):
        return eqn.attrs.get("axes", None) != ()
    if name == "SumToShape":  # a view when nothing is summed
        (gshape, _), = (types[i] for i in eqn.inputs)
        return None not in gshape and bool(_summed_axes(gshape, eqn.attrs["shape"],
                                                        eqn.attrs["batch_ndim"]))
    return False


class MemoryPlan:
    """``frees[k]``: values to drop after equation k; ``writes[k]``: (template, buffer index)
    for equation k; ``buffers``: (shape, dtype) of each buffer; ``in_place[k]``: the in-place
    kernel of update equation k and the operands it overwrites, to run when ``owned``."""

    def __init__(self, frees, writes, buffers, in_place):
        self.frees = frees
        self.writes = writes
        self.buffers = buffers
        self.in_place = in_place


def plan_memory(graph, buffers=True, in_place=True):
    """The ``MemoryPlan`` of ``graph`` (optimized); without ``buffers`` and ``in_place``, its
    liveness alone."""
    eqns = graph.eqns
    last = {}
    for k, e in enumerate(eqns):
        for i in e.inputs:
            last[i] = k
    kept = set(graph.outputs) | set(graph.inputs) | set(graph.consts)
    kept.update(v for v, t in graph.types.items() if _small(t))  # not worth a line
    frees = {}
    for k, e in enumerate(eqns):
        for o in e.outputs:
            if o not in last and o not in kept:  # never read: dropped at once
                frees.setdefault(k, []).append(o)
    for vid, k in last.items():
        if vid not in kept:
            frees.setdefault(k, []).append(vid)
    frees = {k: sorted(v) for k, v in frees.items()}
    writes, specs = _assign_buffers(graph, last, kept) if buffers else ({}, [])
    updates = _in_place_updates(graph, last) if in_place else {}
    return MemoryPlan(frees, writes, specs, updates)


def _in_place_updates(graph, last):
    """Update equations (``core.in_place``) whose overwritten operands are Variables' arrays
    read for this update alone, and whose results go straight back to those Variables."""
    read_of = {e.outputs[0]: e.attrs["variable"] for e in graph.eqns if e.op is READ}
    found = {}
    for k, e in enumerate(graph.eqns):
        entry = in_place_kernel(e.op.name)
        if entry is None:
            continue
        kernel, n = entry
        targets = e.inputs[:n]
        variables = [read_of.get(i) for i in targets]
        if None in variables or len(set(variables)) != n or len(e.outputs) < n \
                or set(targets) & set(e.inputs[n:]) \
                or any(last[i] != k for i in targets) \
                or any(graph.types[i][1].kind != "f" for i in targets) \
                or _small(graph.types[targets[0]]):
            continue
        assigns = graph.eqns[k + 1:k + 1 + n]  # the next equations store every result
        stored = {a.inputs[0]: a.attrs["variable"] for a in assigns if a.op is ASSIGN}
        if all(stored.get(o) == var for o, var in zip(e.outputs[:n], variables)):
            found[k] = (kernel, targets)
    return found


def _counts(arrays):
    return [sys.getrefcount(a) for a in arrays]


def _probe(*arrays):  # ``owned``'s own calling form: a *arrays tuple handed to ``_counts``
    return _counts(arrays)


def _unshared_count():
    """References an array has, as ``owned`` counts them, when a Variable and one local of the
    compiled function hold it and nothing else (the interpreter's own count varies by version)."""
    holder = type("Holder", (), {})()
    holder.value = np.empty(1)
    namespace = {"holder": holder, "probe_counts": _probe}
    exec("def probe():\n    a = holder.value\n    return probe_counts(a)[0]\n", namespace)  # noqa: S102
    return namespace["probe"]()


_UNSHARED = _unshared_count()


def owned(*arrays):
    """True when each of ``arrays`` (each held by one Variable and one local of the calling
    compiled function) is held by nothing else, no view and no eager tensor, and may be
    written: then an update may overwrite it and no one can tell."""
    return all(a.base is None and a.flags.writeable for a in arrays) and \
        all(count == _UNSHARED for count in _counts(arrays))


def _assign_buffers(graph, last, kept):
    types = graph.types
    readers = {}
    escaping = set(kept)
    for k, e in enumerate(graph.eqns):
        for i in e.inputs:
            readers.setdefault(i, []).append(e)
        if e.op is ASSIGN:
            escaping.update(e.inputs)
    writes, specs, free = {}, [], {}  # free: (shape, dtype) -> [(dies at, buffer index)]
    for k, e in enumerate(graph.eqns):
        template = _template(e, types)
        out = e.outputs[0] if len(e.outputs) == 1 else None
        if template is not None and out not in escaping and out in last \
                and all(_makes_fresh(r, types) for r in readers[out]):
            key = types[out]
            pool = free.setdefault(key, [])
            index = next((n for n, (dies, _) in enumerate(pool) if dies < k), None)
            if index is None:
                buffer = len(specs)
                specs.append(key)
            else:
                buffer = pool.pop(index)[1]
            pool.append((last[out], buffer))
            writes[k] = (template, buffer)
    return writes, specs


def _small(value_type):
    shape, dtype = value_type
    return None not in shape and \
        np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)) < MIN_BUFFER_BYTES


def _template(eqn, types):
    writer = WRITERS.get(eqn.op.name)
    if writer is None or len(eqn.outputs) != 1:
        return None
    shape, dtype = types[eqn.outputs[0]]
    if None in shape or dtype.kind != "f":
        return None
    in_types = [types[i] for i in eqn.inputs]
    if any(None in s or d != dtype for s, d in in_types) or _small((shape, dtype)):
        return None
    return writer(in_types, eqn.attrs)


class BufferPool:
    """The buffers of one compiled function: one tuple per call in flight, per thread."""

    def __init__(self, specs):
        self._specs = tuple((tuple(shape), np.dtype(dtype)) for shape, dtype in specs)
        self._local = threading.local()

    def take(self):
        free = getattr(self._local, "free", None)
        if free:
            return free.pop()
        return tuple(np.empty(shape, dtype) for shape, dtype in self._specs)

    def give(self, buffers):
        free = getattr(self._local, "free", None)
        if free is None:
            free = self._local.free = []
        free.append(buffers)
