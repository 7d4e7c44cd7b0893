"""Making a traced Graph fast to run, and running it.

``optimize`` rewrites a graph once: constant folding (pure equations on
constants run now), a negated product of a constant folded into the constant (``peephole``),
common-subexpression elimination (the same op on the same
operands with equal attributes is computed once) and dead-code elimination
(equations no output, assignment or random draw depends on are dropped).

``compile_graph`` turns the result into one Python function with a line per
equation, each calling the op's own array kernel on local variables: no tape,
no Tensor objects, no dictionary lookups while it runs (tinygrad's TinyJit
replays the same way, with the input buffers swapped in); an op whose kernel is
a Python operator is written as that operator (``registry.Inline``).  Each value is
dropped after its last use, and optimizer updates may write into their Variables' arrays
(``memory_plan``); small ones of one optimizer run as one call (``update_groups``).  Its source is built from integers and those templates of tapeflow's
own op modules: op names, attributes and anything else from a graph never become code.

``interpret`` runs a graph op by op through ``apply`` on Tensors instead: that
is how a call under a GradientTape (or inside another trace) is recorded, so
a traced function is differentiable, to any order, through its graph.
"""
import functools
import itertools
import linecache
import weakref

import numpy as np

from ..core.context import context
from ..core.dispatch import apply
from ..core.graph import record
from ..core.registry import GradientRule, Inline
from ..core.tensor import Tensor
from . import memory_plan
from .ir import ASSIGN, CUSTOM_GRADIENT, READ, Eqn, Graph, describe_source, is_effect
from .memory_plan import BufferPool, owned, plan_memory
from .peephole import fold_negated_product
from .update_groups import group_updates

__all__ = ["optimize", "compile_graph", "interpret"]


# --- optimization ------------------------------------------------------------------------------
def optimize(graph):
    """A new Graph computing the same outputs and effects with less work."""
    out = Graph(graph.name)
    out.inputs = list(graph.inputs)
    out.types = dict(graph.types)
    out.variables = list(graph.variables)
    out._next = graph._next
    consts = dict(graph.consts)
    rename = {}
    seen = {}
    made_by = {}  # value id -> the kept equation that computes it (for the peephole)
    eqns = []
    for e in graph.eqns:
        ins = tuple(rename.get(i, i) for i in e.inputs)
        pure = not is_effect(e.op) and e.op is not READ and e.op is not CUSTOM_GRADIENT
        if pure and ins and all(i in consts for i in ins):
            try:
                with np.errstate(all="ignore"):
                    res = e.op.forward(*[consts[i] for i in ins], **e.attrs)
            except Exception:  # noqa: BLE001 - an op that fails now will fail at run time too
                res = None
            if res is not None:
                res = (res,) if e.op.num_outputs == 1 else tuple(res)
                for o, r in zip(e.outputs, res):
                    consts[o] = r
                continue
        if pure:
            folded = fold_negated_product(e, ins, made_by, consts, out)
            if folded is not None:
                e, ins = folded, folded.inputs
            key = _cse_key(e.op, e.attrs, ins)
            if key is not None:
                prev = seen.get(key)
                if prev is not None:
                    rename.update(zip(e.outputs, prev))
                    continue
                seen[key] = e.outputs
        eqns.append(Eqn(e.op, e.attrs, ins, e.outputs, e.source))
        for o in e.outputs:
            made_by[o] = eqns[-1]
    outputs = [rename.get(o, o) for o in graph.outputs]
    # Dead code: walk back from the outputs and the effects.
    live = set(outputs)
    kept = []
    for e in reversed(eqns):
        if is_effect(e.op) or any(o in live for o in e.outputs):
            kept.append(e)
            live.update(e.inputs)
    kept.reverse()
    out.eqns = kept
    out.outputs = outputs
    out.consts = {k: v for k, v in consts.items() if k in live}
    return out


def _cse_key(op, attrs, ins):
    try:
        frozen = tuple(sorted((k, _freeze(v)) for k, v in attrs.items()))
        key = (op.name, frozen, ins)
        hash(key)
        return key
    except TypeError:
        return None


def _freeze(value):
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, Graph):
        raise TypeError("graphs are not merged")
    return value


# --- compilation -----------------------------------------------------------------------------
def compile_graph(graph, tensors=False, xp=np, buffers=None, in_place=False, free_dead=True):
    """``run(*input_arrays) -> tuple of output arrays`` for ``graph`` (optimize it first).

    With ``tensors``, ``run`` takes and returns Tensors (None for a None output): the
    unwrapping and wrapping are then lines of the same function.  ``xp`` is the array
    module the graph runs on: ops' specialized kernels are numpy's fast paths, so on a
    device every equation calls its op's own forward, which follows its operands' module.

    ``free_dead`` drops each value after its last use (``memory_plan``); ``buffers`` lets
    large numpy temporaries write into buffers the function keeps between calls (None:
    ``memory_plan.BUFFERS``), at the shapes in ``graph.types`` (other shapes run without
    them); ``in_place`` lets optimizer updates overwrite Variables' arrays nothing else holds.
    """
    specialize = xp is np
    if specialize:  # small optimizer updates of one op as one call (numpy kernels only)
        graph = group_updates(graph)
    if buffers is None:
        buffers = memory_plan.BUFFERS
    plan = plan_memory(graph, buffers=buffers and specialize, in_place=in_place and specialize) \
        if free_dead or buffers or in_place else None
    pool = BufferPool(plan.buffers) if plan is not None and plan.buffers else None
    filename = f"<tapeflow graph {next(_compiled)}: {len(graph.eqns)} eqns>"
    made_by = {}  # line of the generated source -> the equation it runs
    namespace = {"Tensor": Tensor, "np": np, "_pool": pool, "_owned": owned}
    lines = []
    for k, vid in enumerate(graph.consts):
        namespace[f"c{vid}"] = graph.consts[vid]
    names = {vid: f"c{vid}" for vid in graph.consts}
    args = []
    for vid in graph.inputs:
        names[vid] = f"v{vid}"
        if tensors:
            args.append(f"t{vid}")
            lines.append(f"v{vid} = t{vid}._value")
        else:
            args.append(f"v{vid}")
    if pool is not None:  # buffers fit the traced shapes: other inputs run without them
        _guard_shapes(graph, lines, namespace, args,
                      lambda: compile_graph(graph, tensors, xp, buffers=False, in_place=in_place,
                                            free_dead=free_dead))
    for i, variable in enumerate(graph.variables):
        namespace[f"V{i}"] = variable
    for k, e in enumerate(graph.eqns):
        made_by[len(lines) + 1] = e  # counted from the first of ``lines`` (line 1)
        for o in e.outputs:
            names[o] = f"v{o}"
        if e.op is READ:
            lines.append(f"v{e.outputs[0]} = V{e.attrs['variable']}._value")
            _free(lines, plan, k)
            continue
        if e.op is ASSIGN:
            lines.append(f"V{e.attrs['variable']}._value = {names[e.inputs[0]]}")
            _free(lines, plan, k)
            continue
        attrs = {a: v for a, v in e.attrs.items() if a != "grad"}
        kernel = None
        write = plan.writes.get(k) if plan is not None else None
        if write is not None:  # into buffer b<n> of this call: the template's own ufunc
            template, buffer = write
            operands = [names[i] for i in e.inputs]
            lines.append(f"v{e.outputs[0]} = " + template.format(*operands, out=f"b{buffer}"))
            _free(lines, plan, k)
            continue
        if specialize and e.op.specialize is not None:
            kernel = e.op.specialize([graph.types[i] for i in e.inputs], attrs)
        if kernel is None:
            kernel = e.op.forward
            if attrs:
                kernel = functools.partial(kernel, **attrs)
        operands = [names[i] for i in e.inputs]
        if isinstance(kernel, Inline):  # an operator written in place: no call at all
            call = "(" + kernel.format(*operands) + ")"
        else:
            namespace[f"k{k}"] = kernel
            call = f"k{k}({', '.join(operands)})"
        if plan is not None and k in plan.in_place:  # overwrite state no one else holds
            update, targets = plan.in_place[k]
            namespace[f"i{k}"] = functools.partial(update, **attrs) if attrs else update
            call = (f"(i{k}({', '.join(operands)}) if _owned("
                    f"{', '.join(names[i] for i in targets)}) else {call})")
        if e.op.num_outputs == 1:
            lines.append(f"v{e.outputs[0]} = {call}")
        elif not e.outputs:  # an effect: tf.print
            lines.append(call)
        else:
            lines.append(f"{', '.join(f'v{o}' for o in e.outputs)}{',' if len(e.outputs) == 1 else ''} = {call}")
        _free(lines, plan, k)
    wrap = "Tensor({})" if tensors else "{}"
    result = ", ".join("None" if o is None else wrap.format(names[o]) for o in graph.outputs)
    lines.append(f"return ({result}{',' if len(graph.outputs) == 1 else ''})")
    source, offset = _function_source(args, lines, len(plan.buffers) if pool is not None else 0)
    # the generated line that raised -> the equation it runs, for the error's note
    made_by = {line + offset: e for line, e in made_by.items()}
    namespace["_failed"] = functools.partial(_failed, filename, made_by)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    run = namespace["run"]
    run.source = source
    # Tracebacks show the generated lines; the entry goes when the function does.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(run, linecache.cache.pop, filename, None)
    return run


_compiled = itertools.count()


def _function_source(args, lines, n_buffers):
    """``def run(...)`` around ``lines`` and how many lines come before the first of them;
    with buffers, the call takes a tuple of them first and gives it back however it ends."""
    body = "\n        ".join(lines)
    if not n_buffers:
        return (f"def run({', '.join(args)}):\n    try:\n        {body}\n"
                "    except Exception as e:\n        _failed(e)\n        raise\n"), 2
    unpack = "".join(f"b{n}, " for n in range(n_buffers)) + "= _B"
    return (f"def run({', '.join(args)}):\n    _B = _pool.take()\n    try:\n        {unpack}\n"
            f"        {body}\n    except Exception as e:\n        _failed(e)\n        raise\n"
            "    finally:\n        _pool.give(_B)\n"), 4


def _guard_shapes(graph, lines, namespace, args, compile_unplanned):
    """A line that hands a call whose inputs differ from the traced shapes to the graph compiled
    without buffers (made at the first such call): a ConcreteFunction called directly."""
    known = [vid for vid in graph.inputs if None not in graph.types[vid][0]]
    if not known:
        return
    for vid in known:
        namespace[f"S{vid}"] = tuple(int(d) for d in graph.types[vid][0])
    unplanned = []

    def run_unplanned(*inputs):
        if not unplanned:
            unplanned.append(compile_unplanned())
        return unplanned[0](*inputs)
    namespace["_unplanned"] = run_unplanned
    differs = " or ".join(f"v{vid}.shape != S{vid}" for vid in known)
    lines.append(f"if {differs}: return _unplanned({', '.join(args)})")


def _free(lines, plan, k):
    """Drop the values equation ``k`` read last, so their memory serves the next ones."""
    dead = plan.frees.get(k) if plan is not None else None
    if dead:
        lines.append("del " + ", ".join(f"v{v}" for v in dead))


def _failed(filename, made_by, error):
    """Name the user's line that made the op which raised, on the error (PEP 678 notes)."""
    tb = error.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    eqn = made_by.get(line)
    if eqn is not None:
        note(error, eqn)


def note(error, eqn):
    """Add 'raised by <op>, made at <file:line> in <function>' to an error, once per op."""
    if hasattr(error, "add_note"):  # Python 3.11+
        text = f"Raised by the traced {describe_source(eqn)}."
        if text not in getattr(error, "__notes__", ()):
            error.add_note(text)


# --- interpretation --------------------------------------------------------------------------
def interpret(graph, inputs, captures=()):
    """Run ``graph`` on Tensors through ``apply`` (recorded by tapes, traced by traces)."""
    # A constant traced from an eager tensor is that tensor again, so that a tape watching
    # it (a closure's tensor, TensorFlow's captured inputs) differentiates through the call.
    captured = graph.captured
    env = {vid: Tensor(arr) if captured.get(vid) is None else captured[vid]
           for vid, arr in graph.consts.items()}
    env.update(zip(graph.inputs, inputs))
    for vid, t in captures:
        env[vid] = t
    for e in graph.eqns:
        try:
            _interpret_one(graph, e, env)
        except Exception as error:
            note(error, e)
            raise
    return [None if o is None else env[o] for o in graph.outputs]


def _interpret_one(graph, e, env):
    if e.op is READ:
        env[e.outputs[0]] = graph.variables[e.attrs["variable"]]
    elif e.op is ASSIGN:
        graph.variables[e.attrs["variable"]].assign(env[e.inputs[0]])
    elif e.op is CUSTOM_GRADIENT and e.attrs.get("grad") is not None:
        outs = _apply_custom(e, [env[i] for i in e.inputs])
        env.update(zip(e.outputs, outs))
    else:
        out = apply(e.op, tuple(env[i] for i in e.inputs), e.attrs or None)
        env.update(zip(e.outputs, (out,) if e.op.num_outputs == 1 else out))


class _SavedGradientOp:
    """A CUSTOM_GRADIENT equation run eagerly: its gradient is its traced gradient graph."""

    __slots__ = ("_rule", "num_outputs", "forward")
    name = CUSTOM_GRADIENT.name

    def __init__(self, eqn):
        self.forward = CUSTOM_GRADIENT.forward
        self.num_outputs = None  # IdentityN is variadic: its forward gives a tuple
        self._rule = GradientRule(_graph_gradient(eqn), saves="inputs", vectorized=False)

    def gradient_rule(self, attrs=None):
        return self._rule


def _graph_gradient(eqn):
    grad_graph = eqn.attrs["grad"]
    n_diff = eqn.attrs["n_differentiable"]
    n_pass = eqn.attrs["n_inputs"]

    def rule(op, *dys):
        operands = op.inputs
        captured = operands[n_diff:n_pass]
        ins = list(captured) + list(dys)
        grads = interpret(grad_graph, ins)
        grads = [None if g is None else g for g in grads]
        return list(grads[:n_diff]) + [None] * (len(operands) - n_diff)
    rule.__qualname__ = f"saved_gradient({grad_graph.name})"
    return rule


def _apply_custom(eqn, operands):
    op = _SavedGradientOp(eqn)
    ctx = context()
    if ctx.trace is not None:  # inlined into another trace: the equation keeps its gradient graph
        outs = ctx.trace.apply(CUSTOM_GRADIENT, tuple(operands), dict(eqn.attrs))
        if ctx.tapes or ctx.watchers:
            record(op, tuple(operands), outs, None)
        return outs
    outs = apply(op, tuple(operands), {"n_inputs": eqn.attrs["n_inputs"]})
    return (outs,) if op.num_outputs == 1 else outs
