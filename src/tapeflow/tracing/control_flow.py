"""Graph control flow: ``tf.cond``, ``tf.while_loop`` and ``tf.map_fn``.

Eagerly (no trace) they are Python: ``cond`` calls the branch its concrete
predicate picks, ``while_loop`` loops, ``map_fn`` calls ``fn`` on each row
and stacks the results, so a tape records the ops that ran, as for any code.

Inside a trace each branch, body or mapped function is traced once, by a
nested tracer, into a Graph of its own, and the call becomes ONE equation of
a primitive (``If``, ``While``, ``MapFn``) whose attributes hold those graphs
and whose kernel runs them compiled (``compiler.compile_graph``) on arrays.
The operands are the predicate / loop variables / mapped tensors, then every
value of the enclosing graphs the nested graphs use (their captures, the
same list for both branches or for cond and body): traced values and tensors
made before the nested graph began alike (a ``tf.constant`` of the enclosing
function too), so gradients reach whatever a tape watches.

* Variables read inside are captured (their value when the equation runs), so
  gradients reach them; ``assign`` inside is lifted out: the new value becomes
  an extra result and the enclosing graph assigns it after the equation
  (a while_loop carries an assigned Variable as a loop variable).
* The three primitives are registered ``stateful``: ``optimize`` never folds,
  merges or drops them (a loop on constants is not run at compile time).
* At trace time a ``While`` kernel does not loop: shape inference gets the
  loop variables back (they keep their shapes and dtypes by construction).

Gradients are rules written in tapeflow ops, so they can be differentiated
again.  ``graph_vjp`` (in ``graph_vjp.py``) re-runs a nested graph through
``apply`` (recorded by any outer tape, or traced) and walks its equations
backwards calling each op's registered rule: no tape is involved, so the
inputs may already be recorded by other tapes.  The rule of ``If`` is an
``If`` (``cond``) of its branches' vjps; of ``MapFn`` a ``map_fn`` of the row
vjps (captured values' gradients summed over rows).  The rule of ``While``
re-runs the loop: eagerly it keeps every iteration's state and walks back
(run-time unrolling, O(n)); inside a trace, where the trip count is known only
at run time, it is a ``while_loop`` walking back whose body recomputes the
state of its iteration with an inner ``while_loop`` from the start (O(n^2)
body runs, no stacked state needed).

Limits: a nested graph's outputs must keep one shape and dtype across
branches / iterations (``shape_invariants`` is not supported); the gradient
recomputes the forward, so it refuses bodies that draw random numbers, and a
``custom_gradient`` inside a loop body whose gradient is not linear in its
cotangent (clipping it) gets its recomputed copies' cotangents one by one, so
second derivatives taken inside a trace can differ from eager's;
``maximum_iterations`` must be a Python int (or a concrete tensor) in a trace.
"""
import numpy as np

from .. import backend
from ..core import nest
from ..core.context import PER_THREAD, context
from ..core.dispatch import apply
from ..core.tape import GradientTape
from ..core.registry import def_primitive
from ..core.tensor import Tensor, Variable, convert_to_tensor, made_before, next_tensor_id
from ..ops.arithmetic import add, greater, less, logical_and, maximum, subtract
from ..ops.elementwise import identity
from ..ops.reduce import reduce_sum
from ..ops.shape import cast, stack
from .compiler import compile_graph, optimize
from .graph_vjp import (add_cotangents, call_graph, cotangent_batch_ndim, example, graph_vjp,
                        is_float, lead_axes, or_zeros, per_row, zeros_cotangent)
from .ir import ASSIGN, Graph, is_effect
from .loop_sizing import growing, recording, static_outputs
from .tracer import SymbolicTensor, TraceError, Tracer, tracing
from ..dtypes import is_inexact_dtype

__all__ = ["cond", "while_loop", "map_fn"]


# =================================================================================================
# Nested graphs
# =================================================================================================
class SubGraph(Graph):
    """A branch, loop body or mapped function: a Graph that prints short inside an attribute."""

    def __repr__(self):
        return f"{{{self.name}: {len(self.inputs)} in, {len(self.eqns)} eqns, {len(self.outputs)} out}}"


class _NestedTracer(Tracer):
    """Traces a branch or body: Variables are read from the enclosing graph (captured, so their
    gradients flow), assignments are kept as the Variable's new value (``assigned``) for the
    enclosing graph to assign after the equation."""

    def __init__(self, name, parent, assignable=True):
        super().__init__(name, parent)
        self.graph = SubGraph(name)
        self.assigned = {}          # id(Variable) -> Variable, in order of first assignment
        self._assignable = assignable
        self._first_own_id = next_tensor_id()  # tensors made from here on are this graph's

    def value_of(self, t):
        # A tensor made before this graph began (a tf.constant of the enclosing function) is
        # captured, as a traced one is, not embedded: the equation takes it as an operand, so
        # a tape watching it gets its gradient through the branch or loop.
        if t.__class__ is Tensor and self.parent is not None and made_before(t, self._first_own_id):
            return self._capture(t), t._value
        return super().value_of(t)

    def _read(self, variable):
        if self.parent is None:     # eager map_fn of no rows: read at run time
            return super()._read(variable)
        # The Variable itself is the captured operand: the enclosing graph passes its current
        # value, and a tape recording the equation sees (and watches) the Variable.
        vid = self._captured.get(id(variable))
        if vid is None:
            vid = self._captured[id(variable)] = self.graph.new_value(variable._value.shape,
                                                                     variable._value.dtype)
            self.captures.append((variable, vid))
        current = self._variables[id(variable)] = (vid, variable._value)
        return current

    def assign(self, variable, value, how="assign"):
        if not self._assignable:
            raise TraceError(f"Variable '{variable.name}' is assigned inside the function of "
                             f"'{self.graph.name}', which runs once per row: assign after it.")
        super().assign(variable, value, how)
        eqn = self.graph.eqns.pop()  # the AssignVariableOp: lifted out to the enclosing graph
        assert eqn.op is ASSIGN
        self.assigned.setdefault(id(variable), variable)


def _is_symbolic(t):
    return t.__class__ is SymbolicTensor


def _as_tensor(x):
    if isinstance(x, Variable):
        return x.value()
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _trace(name, fn, args, parent, structure=None, carried=(), assignable=True,
           may_return_none=False):
    """Trace ``fn`` on placeholders shaped like ``args`` (Tensors) into a nested tracer.

    ``carried`` Variables get placeholders too (after ``args``): reads inside see them.
    ``may_return_none``: ``fn`` may return None, nothing (a branch run for its assertions).
    Returns (tracer, result structure, flat result tensors).
    """
    tracer = _NestedTracer(name, parent, assignable)
    with tracing(tracer):
        placeholders = [tracer.placeholder(example(a)) for a in args]
        for v in carried:
            ph = tracer.placeholder(example(parent.read(v)) if parent is not None else v._value)
            tracer._variables[id(v)] = (ph._vid, ph._example)
        if structure is None:
            result = fn()
        else:
            packed = nest.pack_sequence_as(structure, placeholders, expand_composites=True)
            result = fn(*packed) if isinstance(structure, (list, tuple)) else fn(packed)
        flat = [] if result is None and may_return_none else \
            nest.flatten(result, expand_composites=True)
        for r in flat:
            if r is None:
                raise TypeError(f"{name} returned None in {result!r}: return tensors")
        flat = [_as_tensor(r) for r in flat]
    return tracer, result, flat


def _finish(tracers, own, outputs):
    """Give each tracer's graph the same input list: its own placeholders (``own[k]`` of them),
    then every value captured by any of them; set its outputs (tensors of that tracer)."""
    out_ids = [[tr.value_of(o)[0] for o in outs] for tr, outs in zip(tracers, outputs)]
    union, seen = [], set()  # after the outputs: returning an outer value captures it
    for tr in tracers:
        for t, _ in tr.captures:
            if id(t) not in seen:
                seen.add(id(t))
                union.append(t)
    graphs = []
    for tr, n_own, ids in zip(tracers, own, out_ids):
        graph = tr.graph
        graph.outputs = ids
        mine = {id(t): vid for t, vid in tr.captures}
        cap_ids = []
        for t in union:
            vid = mine.get(id(t))
            if vid is None:  # used by another branch only: an input this one ignores
                vid = graph.new_value(example(t).shape, example(t).dtype)
            cap_ids.append(vid)
        graph.inputs = graph.inputs[:n_own] + cap_ids
        graphs.append(_optimized(graph))
    return union, graphs


def _optimized(graph):
    out = optimize(graph)
    out.__class__ = SubGraph
    return out


def _types(tensors):
    return [(tuple(example(t).shape), np.dtype(example(t).dtype)) for t in tensors]


def _describe(shape, dtype):
    return f"{dtype.name}[{','.join(map(str, shape))}]"


def _run(graph, arrays):
    """Run a nested graph on arrays, compiled once (shapes left free: one graph serves every
    size a polymorphic function is called with), once per device it runs on."""
    ctx = PER_THREAD.context
    runs = graph.__dict__.setdefault("_runs", {})
    run = runs.get(ctx.device)
    if run is None:
        free = Graph(graph.name)
        free.inputs, free.outputs, free.consts = graph.inputs, graph.outputs, graph.consts
        free.variables, free.eqns, free._next = graph.variables, graph.eqns, graph._next
        free.types = {v: (tuple(None for _ in s), d) for v, (s, d) in graph.types.items()}
        run = runs[ctx.device] = compile_graph(free, xp=ctx.xp)
    return run(*arrays)


def _emit(op, operands, attrs):
    outs = apply(op, tuple(operands), attrs)
    return list(outs) if isinstance(outs, tuple) else [outs]


def _assign_after(variables, values):
    """The enclosing graph assigns what the nested graphs assigned (lifted out)."""
    trace = context().trace
    for v, value in zip(variables, values):
        trace.assign(v, value)


def _assigned(tracers):
    out = {}
    for tr in tracers:
        out.update(tr.assigned)
    return list(out.values())


# =================================================================================================
# tf.cond
# =================================================================================================
def _if_forward(pred, *operands, then_branch, else_branch):
    return _run(then_branch if bool(pred) else else_branch, operands)


def _if_grad(op, *dys):
    pred, *operands = op.inputs
    then_g, else_g = op.get_attr("then_branch"), op.get_attr("else_branch")
    nb = cotangent_batch_ndim(op, dys)
    diff = [k for k, t in enumerate(operands) if is_float(t)]
    grads = [None] * (1 + len(operands))
    if not diff:
        return grads

    def branch(graph):
        def vjp():
            g = graph_vjp(graph, operands, dys, nb)
            return [g[k] for k in diff]
        return vjp

    for k, g in zip(diff, cond(pred, branch(then_g), branch(else_g))):
        grads[1 + k] = g
    return grads


IF = def_primitive("If", _if_forward, num_outputs=None, stateful=True,
                   grad=_if_grad, saves="inputs", vectorized=True)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` else ``false_fn()``; in a trace, one ``If`` equation.

    A Python bool, or a tensor whose value is known (eagerly, or a constant in a
    trace), picks the branch now and only that branch runs.  A traced scalar
    bool traces both branches; they must return the same structure of tensors
    with the same shapes and dtypes.
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("tf.cond needs callables true_fn and false_fn")
    trace = context().trace
    if trace is None or not _is_symbolic(pred):
        value = pred._value if isinstance(pred, Tensor) else pred
        if getattr(value, "ndim", 0) != 0:
            raise ValueError(f"tf.cond: pred must be a scalar, got shape {tuple(value.shape)}")
        return true_fn() if bool(value) else false_fn()
    ex = pred._example
    if ex.dtype != np.bool_ or ex.ndim != 0:
        raise TypeError(f"tf.cond: pred must be a scalar bool tensor, got "
                        f"{_describe(ex.shape, ex.dtype)}")
    t_tr, t_res, t_flat = _trace("cond_true", true_fn, (), trace, may_return_none=True)
    f_tr, f_res, f_flat = _trace("cond_false", false_fn, (), trace, may_return_none=True)
    _check_same("tf.cond", "true_fn", t_res, t_flat, "false_fn", f_res, f_flat)
    assigned = _assigned([t_tr, f_tr])
    t_out = t_flat + [t_tr.read(v) for v in assigned]
    f_out = f_flat + [f_tr.read(v) for v in assigned]
    if not t_out and not _has_effects([t_tr, f_tr]):
        return t_res   # nothing returned, assigned or asserted: nothing to run
    caps, (then_g, else_g) = _finish([t_tr, f_tr], [0, 0], [t_out, f_out])
    outs = _emit(IF, [pred] + caps, {"then_branch": then_g, "else_branch": else_g})
    _assign_after(assigned, outs[len(t_flat):])
    return None if t_res is None else \
        nest.pack_sequence_as(t_res, outs[:len(t_flat)], expand_composites=True)


def _has_effects(tracers):
    """Whether a nested graph runs an effect op (an assertion) that its equation must keep."""
    return any(is_effect(e.op) for tr in tracers for e in tr.graph.eqns)


def _structure(result):
    flat = nest.flatten(result, expand_composites=True)
    return nest.pack_sequence_as(result, [0] * len(flat), expand_composites=True)


def _check_same(what, a_name, a_res, a_flat, b_name, b_res, b_flat):
    _check_structure(what, a_name, a_res, b_name, b_res)
    for k, ((sa, da), (sb, db)) in enumerate(zip(_types(a_flat), _types(b_flat))):
        if sa != sb or da != db:
            raise ValueError(f"{what}: output {k} is {_describe(sa, da)} from {a_name} but "
                             f"{_describe(sb, db)} from {b_name}; both branches must give the "
                             f"same shape and dtype")


def _check_structure(what, a_name, a_res, b_name, b_res):
    if nest.structure_key(a_res) != nest.structure_key(b_res):
        raise ValueError(f"{what}: {a_name} and {b_name} must return the same structure; got "
                         f"{_structure(a_res)!r} and {_structure(b_res)!r} (0 for each tensor)")


# =================================================================================================
# tf.while_loop
# =================================================================================================
def _while_forward(*operands, cond, body, n_vars, maximum_iterations):
    state, captured = operands[:n_vars], operands[n_vars:]
    if context().trace is not None:
        return tuple(state)  # shape inference at trace time: the loop keeps the variables' types
    i = 0
    while maximum_iterations is None or i < maximum_iterations:
        if not bool(_run(cond, state + captured)[0]):
            break
        state = _run(body, state + captured)
        i += 1
    return tuple(state)


def _while_grad(op, *dys):
    n_vars = op.get_attr("n_vars")
    loop = (op.get_attr("cond"), op.get_attr("body"), op.get_attr("maximum_iterations"))
    nb = cotangent_batch_ndim(op, dys)
    ins = list(op.inputs)
    init = ins[:n_vars]
    ctx = context()
    if ctx.trace is not None and not (ctx.tapes or ctx.accumulators or ctx.watchers):
        # In a trace, with nothing recording this backward pass: one WhileGrad equation that
        # keeps every state when it runs, O(n) (as while_v2 accumulates them); differentiated
        # again, it falls back on the recomputing form below.
        lead = lead_axes(dys, nb)
        cotangents = [or_zeros(d, t, lead) for d, t in zip(dys, init)]
        grads = apply(WHILE_GRAD, tuple(ins) + tuple(cotangents),
                      {"cond": loop[0], "body": loop[1], "maximum_iterations": loop[2],
                       "n_vars": n_vars, "nb": nb})
        grads = iter(grads)
        return [next(grads) if is_float(t) else None for t in ins]
    return _while_grad_recomputing(loop, ins, n_vars, list(dys), nb)


WHILE = def_primitive("While", _while_forward, num_outputs=None, stateful=True,
                      grad=_while_grad, saves="inputs", vectorized=True)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (and fewer than
    ``maximum_iterations`` times); in a trace, one ``While`` equation.

    ``loop_vars`` is a tuple or list (``cond`` and ``body`` take its items as
    arguments) or a single tensor; the result has its structure.  ``body``
    returns the same structure, a list and a tuple being one at the top level
    (as TensorFlow compares them).  In a trace every loop variable must keep its
    shape and dtype.
    """
    if shape_invariants is not None:
        raise NotImplementedError("tf.while_loop: shape_invariants are not supported; loop "
                                  "variables keep their shapes")
    spread = isinstance(loop_vars, (list, tuple))
    flat = [_as_tensor(v) for v in nest.flatten(loop_vars, expand_composites=True)]
    structure = nest.pack_sequence_as(loop_vars, flat, expand_composites=True)
    trace = context().trace
    if trace is None:
        return _eager_while(cond, body, structure, spread, maximum_iterations)
    maximum_iterations = _static_int(maximum_iterations)
    carried = []
    sized = False
    # Retrace once more for each Variable the body turns out to assign, for loop variables
    # that take their type from the body (a TensorArray's element shape, from its first write),
    # and once the arrays that grow have been given the size the loop reaches.
    for _ in range(8):
        with recording(sizing=False):
            c_tr, c_res, c_flat = _trace("while_cond", cond, flat, trace, structure, carried,
                                         assignable=False)
            b_tr, b_res, b_flat = _trace("while_body", body, flat, trace, structure, carried)
        refined = nest.refine_composites(structure, _one_var_body(structure, b_res, b_flat)[0])
        if refined is None and not sized:
            sized = True
            refined = _sized(cond, body, structure, spread, carried, trace, maximum_iterations)
        if refined is not None:
            flat = [_as_tensor(v) for v in nest.flatten(refined, expand_composites=True)]
            structure = nest.pack_sequence_as(refined, flat, expand_composites=True)
            continue
        new = [v for v in _assigned([b_tr]) if all(v is not w for w in carried)]
        if not new:
            break
        carried += new
    b_res, b_flat = _one_var_body(structure, b_res, b_flat)
    if len(c_flat) != 1 or _types(c_flat)[0] != ((), np.dtype(bool)):
        got = ", ".join(_describe(*t) for t in _types(c_flat))
        raise TypeError(f"tf.while_loop: cond must return one scalar bool tensor, got {got}")
    _check_same("tf.while_loop", "loop_vars", _as_list(structure), flat, "body", _as_list(b_res),
                b_flat)
    c_out = c_flat
    b_out = b_flat + [b_tr.read(v) for v in carried]
    n_vars = len(flat) + len(carried)
    caps, (cond_g, body_g) = _finish([c_tr, b_tr], [n_vars, n_vars], [c_out, b_out])
    init = flat + [trace.read(v) for v in carried]
    outs = _emit(WHILE, init + caps, {"cond": cond_g, "body": body_g, "n_vars": n_vars,
                                      "maximum_iterations": maximum_iterations})
    _assign_after(carried, outs[len(flat):])
    return nest.pack_sequence_as(structure, outs[:len(flat)], expand_composites=True)


def _sized(cond, body, structure, spread, carried, trace, maximum_iterations):
    """``structure`` with each growing TensorArray given the size the loop reaches (see
    ``loop_sizing``), or None if it has none that needs more."""
    leaves = nest.flatten(structure)
    tags = [k for k, leaf in enumerate(leaves) if growing(leaf)]
    if not tags:
        return None
    tagged = list(leaves)
    for tag, k in enumerate(tags):
        tagged[k] = leaves[k]._tagged(tag)
    items = _as_list(nest.pack_sequence_as(structure, tagged)) if spread else [
        nest.pack_sequence_as(structure, tagged)]
    highs = [convert_to_tensor(np.int32(leaves[k]._size)) for k in tags]
    n_items = len(items)

    def user(values):
        return list(values[:n_items]) if spread else [values[0]]

    def sizing_cond(*values):
        return cond(*user(values))

    def sizing_body(*values):
        with recording(sizing=True) as rec:
            res = body(*user(values))
        res = _one_var_body(structure, res, None)[0]
        new_highs = list(values[n_items:])
        for tag, index in rec.writes:
            if _is_symbolic(index) and index._tracer is not context().trace:
                raise ValueError(
                    "tf.TensorArray(dynamic_size=True) is written inside a tf.cond or an inner "
                    "loop of a traced tf.while_loop's body: how far it grows is not known when "
                    "tracing; give it a size= that covers the writes")
            new_highs[tag] = maximum(new_highs[tag], add(cast(index, "int32"), 1))
        return (list(res) if spread else [res]) + new_highs

    args = items + highs
    flat = [_as_tensor(v) for v in nest.flatten(args, expand_composites=True)]
    c_tr, _, c_flat = _trace("while_cond", sizing_cond, flat, trace, args, carried,
                             assignable=False)
    b_tr, _, b_flat = _trace("while_body", sizing_body, flat, trace, args, carried)
    init = flat + [trace.read(v) for v in carried]
    n_vars = len(init)
    caps, (cond_g, body_g) = _finish([c_tr, b_tr], [n_vars, n_vars],
                                     [c_flat, b_flat + [b_tr.read(v) for v in carried]])
    high_ids = list(range(len(flat) - len(highs), len(flat)))
    if not _is_static(cond_g, body_g, init, caps, high_ids, trace):
        if all(leaves[k]._size for k in tags):
            return None  # sized by the user: a write past it raises when the graph runs
        raise ValueError(
            "tf.TensorArray(dynamic_size=True, size=0) grows in a traced tf.while_loop whose "
            "number of writes depends on the function's data (or on a value computed inside "
            "it): a traced graph keeps static shapes.  Bound the loop by constants or by an "
            "integer argument of the tf.function (it is then traced once per value), or give "
            "the TensorArray a size= that covers the writes")
    cond_g, body_g = _without_effects(cond_g), _without_effects(body_g)  # no prints now
    state = [example(t) for t in init]
    cap_values = [example(c) for c in caps]
    trips = 0
    while maximum_iterations is None or trips < maximum_iterations:
        if not bool(_run(cond_g, state + cap_values)[0]):
            break
        state = list(_run(body_g, state + cap_values))
        trips += 1
    sizes = [int(backend.to_host(state[k])) for k in high_ids]
    if all(size <= leaves[k]._size for size, k in zip(sizes, tags)):
        return None
    grown = list(leaves)
    for size, k in zip(sizes, tags):
        grown[k] = leaves[k]._grown(size)
    return nest.pack_sequence_as(structure, grown)


def _without_effects(graph):
    """``graph`` without its effects (prints, assertions): a sizing run only counts."""
    out = SubGraph(graph.name)
    out.__dict__.update({k: v for k, v in graph.__dict__.items() if k != "_runs"})
    out.eqns = [e for e in graph.eqns if not is_effect(e.op)]
    return out


def _is_static(cond_g, body_g, init, caps, high_ids, trace):
    """Whether the loop's trip count and written indices are the same at every call,
    pinning the function's integer arguments they depend on (the function then traces
    once per value of them)."""
    n = len(init)
    pinnable = {id(c) for c in caps if _is_symbolic(c) and c._tracer is trace
                and getattr(trace, "pinned_inputs", None) is not None
                and c._vid in trace.graph.inputs and c._example.dtype.kind in "iu"
                and c._example.size == 1}
    for pinned in (set(), pinnable):
        # inputs by position: loop variables that start from constants, constant captures
        static = {p for p, t in enumerate(init + caps) if t.__class__ is Tensor or id(t) in pinned}
        while True:  # a loop variable stays static if the body computes it from static values
            outs = static_outputs(body_g, {body_g.inputs[p] for p in static})
            keep = {p for p in static if p >= n or outs[p]}
            if keep == static:
                break
            static = keep
        if static_outputs(cond_g, {cond_g.inputs[p] for p in static})[0] and \
                all(p in static for p in high_ids):
            trace.pinned_inputs.update(c._vid for c in caps if id(c) in pinned)
            return True
    return False


def _one_var_body(structure, res, flat):
    """``body`` may return a lone tensor for a single loop variable, as in TensorFlow."""
    if isinstance(structure, (list, tuple)) and len(structure) == 1 and \
            not isinstance(res, (list, tuple)):
        res = type(structure)([res]) if not hasattr(structure, "_fields") else res
    return res, flat


def _as_list(structure):
    """As TensorFlow compares a body's result with the loop variables: lists at the top level
    (a body may return a tuple for a list of loop variables), nested structures as they are."""
    return list(structure) if isinstance(structure, (list, tuple)) else structure


def _eager_while(cond, body, state, spread, maximum_iterations):
    i = 0
    while maximum_iterations is None or i < int(maximum_iterations):
        if not bool(cond(*state) if spread else cond(state)):
            break
        new = body(*state) if spread else body(state)
        new, _ = _one_var_body(state, new, None)
        _check_structure("tf.while_loop", "loop_vars", _as_list(state), "body", _as_list(new))
        flat = [_as_tensor(v) for v in nest.flatten(new, expand_composites=True)]
        # the body's values (its TensorArrays too) in the loop variables' containers
        state = nest.pack_sequence_as(_containers_of(state, new), flat, expand_composites=True)
        i += 1
    return state


def _containers_of(state, new):
    """``new`` in ``state``'s top-level container: a body may return a tuple for a list."""
    if isinstance(state, (list, tuple)) and not hasattr(state, "_fields") and \
            type(new) is not type(state):
        return type(state)(new)
    return new


def _static_int(n):
    if n is None:
        return None
    if isinstance(n, Tensor):
        if _is_symbolic(n):
            raise TypeError("tf.while_loop: maximum_iterations must be known when tracing (a "
                            "Python int or a concrete tensor), not a traced tensor")
        n = n.numpy()
    return int(n)


def _while_grad_recomputing(loop, ins, n_vars, dys, nb):
    """The gradient as ops a tape or a trace records (so it can be differentiated again):
    unrolled at run time eagerly; in a trace, a While that recomputes each state, O(n^2)."""
    init, caps = ins[:n_vars], ins[n_vars:]
    back = _while_grad_unrolled if context().trace is None else _while_grad_traced
    g_vars, g_caps = back(*loop, init, caps, dys, nb)
    return [g if is_float(t) else None for g, t in zip(g_vars + g_caps, ins)]


def _while_grad_forward(*operands, cond, body, maximum_iterations, n_vars, nb):
    """WhileGrad: the operands of a While, then its outputs' cotangents; the gradients of its
    float operands.  Runs the compiled loop again keeping every state, then walks back through
    the body's compiled vector-Jacobian product, one call a step: O(n)."""
    ins, dys = list(operands[:-n_vars]), list(operands[-n_vars:])
    lead = tuple(dys[0].shape[:nb]) if nb else ()
    float_ins = [is_inexact_dtype(a.dtype) for a in ins]
    if context().trace is not None:  # shape inference: each gradient has its operand's type
        return tuple(backend.array_module(a).zeros(lead + a.shape, a.dtype)
                     for a, f in zip(ins, float_ins) if f)
    state, caps = ins[:n_vars], ins[n_vars:]
    states = [state]
    while maximum_iterations is None or len(states) <= maximum_iterations:
        if not bool(_run(cond, state + caps)[0]):
            break
        state = list(_run(body, state + caps))
        states.append(state)
    vjp = _compiled_body_vjp(body, states[0] + caps, float_ins[:n_vars], dys, nb)
    ct = [d for d, f in zip(dys, float_ins) if f]
    acc = None
    n_ct = len(ct)
    for state in reversed(states[:-1]):
        out = vjp(*(state + caps + ct))
        ct, g_caps = list(out[:n_ct]), out[n_ct:]
        acc = list(g_caps) if acc is None else [a + g for a, g in zip(acc, g_caps)]
    if acc is None:  # no trip: the captured values get zeros
        acc = [backend.array_module(c).zeros(lead + c.shape, c.dtype)
               for c, f in zip(caps, float_ins[n_vars:]) if f]
    return tuple(ct) + tuple(acc)


def _compiled_body_vjp(body, example_ins, float_vars, example_dys, nb):
    """``vjp(*state, *caps, *float cotangents) -> (float state cotangents, float caps
    gradients)`` of one step of ``body``: graph_vjp traced once into a graph and compiled,
    cached on the body per types and device."""
    ctx = PER_THREAD.context
    key = (ctx.device, nb, tuple((a.shape, a.dtype.str) for a in example_ins),
           tuple((d.shape, d.dtype.str) for d in example_dys))
    cache = body.__dict__.setdefault("_vjps", {})
    run = cache.get(key)
    if run is None:
        tracer = Tracer(f"{body.name}_vjp")
        with tracing(tracer):
            ins = [tracer.placeholder(a) for a in example_ins]
            cts = [tracer.placeholder(d) if f else None for d, f in zip(example_dys, float_vars)]
            grads = graph_vjp(body, ins, cts, nb)
            tracer.graph.outputs = [tracer.value_of(g)[0] for g, a in zip(grads, example_ins)
                                    if is_inexact_dtype(a.dtype)]
        tracer.graph.inputs = [vid for _, vid in tracer.captures] + tracer.graph.inputs
        run = cache[key] = compile_graph(optimize(tracer.graph), xp=ctx.xp)
    return run


def _while_grad_grad(op, *gs):
    """Second order: the recomputing form of the same gradient, differentiated on a tape (a
    batch of cotangents, a jacobian's, one row at a time)."""
    nb = gs[0]._value.ndim - len(op.output_shape(0))
    if nb:
        return per_row(lambda rows: _while_grad_grad(op, *rows), list(gs), nb)
    n_vars = op.get_attr("n_vars")
    loop = (op.get_attr("cond"), op.get_attr("body"), op.get_attr("maximum_iterations"))
    with GradientTape(persistent=False) as tape:
        # one fresh tensor per operand position: a tensor that is both a loop variable and a
        # captured value gets each position's share, not the sum twice
        operands = [identity(t) for t in op.inputs]
        tape.watch([t for t in operands if is_float(t)])
        ins, dys = operands[:-n_vars], operands[-n_vars:]
        grads = _while_grad_recomputing(loop, ins, n_vars, dys, op.get_attr("nb"))
        outs = [g for g in grads if g is not None]
    return tape.gradient(outs, operands, output_gradients=list(gs))


WHILE_GRAD = def_primitive("WhileGrad", _while_grad_forward, num_outputs=None,
                           grad=_while_grad_grad, saves="inputs")


def _while_grad_unrolled(cond_g, body_g, maxit, init, caps, dys, nb):
    """Run time unrolling: the loop again, every state kept, then back through each step."""
    states = [init]
    while maxit is None or len(states) <= maxit:
        if not bool(call_graph(cond_g, states[-1] + caps)[0]):
            break
        states.append(call_graph(body_g, states[-1] + caps))
    lead = lead_axes(dys, nb)
    ct, g_caps = dys, [None] * len(caps)
    n = len(init)
    for state in reversed(states[:-1]):
        g = graph_vjp(body_g, state + caps, ct, nb)
        ct = [or_zeros(g[k], state[k], lead) for k in range(n)]
        g_caps = [add_cotangents(a, b) for a, b in zip(g_caps, g[n:])]
    return ct, [or_zeros(g, c, lead) if is_float(c) else None for g, c in zip(g_caps, caps)]


def _while_grad_traced(cond_g, body_g, maxit, init, caps, dys, nb):
    """In a trace: count the trips with a While, then walk back with a While whose body
    recomputes the state before its step with an inner While from the start."""
    n = len(init)
    lead = lead_axes(dys, nb)

    def more(i, state):
        ok = call_graph(cond_g, list(state) + caps)[0]
        return ok if maxit is None else logical_and(less(i, maxit), ok)

    def step(i, state):
        return [add(i, 1)] + call_graph(body_g, list(state) + caps)

    trips = while_loop(lambda i, *s: more(i, s), lambda i, *s: step(i, s),
                       [convert_to_tensor(0)] + init)[0]
    fcaps = [k for k, c in enumerate(caps) if is_float(c)]

    def back(j, *carry):
        ct, acc = list(carry[:n]), list(carry[n:])
        before = subtract(j, 1)
        state = while_loop(lambda i, *s: less(i, before), lambda i, *s: step(i, s),
                           [convert_to_tensor(0)] + init)[1:]
        g = graph_vjp(body_g, list(state) + caps, ct, nb)
        ct = [or_zeros(g[k], state[k], lead) for k in range(n)]
        acc = [add_cotangents(a, g[n + k]) for a, k in zip(acc, fcaps)]
        return [before] + ct + acc

    out = while_loop(lambda j, *c: greater(j, 0), back,
                     [trips] + [or_zeros(d, t, lead) for d, t in zip(dys, init)] +
                     [zeros_cotangent(caps[k], lead) for k in fcaps])
    g_caps = [None] * len(caps)
    for k, g in zip(fcaps, out[1 + n:]):
        g_caps[k] = g
    return list(out[1:1 + n]), g_caps


# =================================================================================================
# tf.map_fn
# =================================================================================================
def _map_forward(*operands, fn, n_elems):
    elems, captured = operands[:n_elems], operands[n_elems:]
    rows = [_run(fn, tuple(e[i, ...] for e in elems) + captured) for i in range(elems[0].shape[0])]
    xp = backend.array_module(*elems)
    if not rows:
        return tuple(xp.zeros((0,) + fn.types[o][0], fn.types[o][1]) for o in fn.outputs)
    return tuple(xp.stack([r[k] for r in rows]) for k in range(len(fn.outputs)))


def _map_grad(op, *dys):
    nb = cotangent_batch_ndim(op, dys)
    if nb:  # a jacobian's cotangents: one row of them at a time
        return per_row(lambda row: _map_grad(op, *row), dys, nb)
    n_elems, fn_g = op.get_attr("n_elems"), op.get_attr("fn")
    ins = list(op.inputs)
    elems, caps = ins[:n_elems], ins[n_elems:]
    diff = [k for k, t in enumerate(ins) if is_float(t)]
    grads = [None] * len(ins)
    if not diff:
        return grads

    def row_vjp(rows):
        rows = list(rows)
        g = graph_vjp(fn_g, rows[:n_elems] + caps, rows[n_elems:])
        return [g[k] for k in diff]

    row_grads = map_fn(row_vjp, tuple(elems) + tuple(dys))
    for k, g in zip(diff, row_grads):
        grads[k] = g if k < n_elems else reduce_sum(g, axis=0)
    return grads


MAP_FN = def_primitive("MapFn", _map_forward, num_outputs=None, stateful=True,
                       grad=_map_grad, saves="inputs", vectorized=True)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """``fn`` on each row (index on axis 0) of ``elems``, results stacked; in a trace, one
    ``MapFn`` equation.

    ``elems`` is a tensor or a nested structure of tensors with the same number of
    rows (``fn`` gets the structure of rows).  ``fn_output_signature`` (or the
    older ``dtype``), a dtype or TensorSpec per output, is checked against what
    ``fn`` returns.
    """
    flat = [_as_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("tf.map_fn: elems is empty")
    rows = [example(e).shape[0] if example(e).ndim else None for e in flat]
    if None in rows:
        raise ValueError("tf.map_fn: elems must have at least one dimension")
    if len(set(rows)) != 1:
        raise ValueError(f"tf.map_fn: all elems need the same number of rows, got {rows}")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    trace = context().trace
    if trace is None and rows[0] > 0:
        results = [fn(nest.pack_sequence_as(elems, [e[i] for e in flat])) for i in range(rows[0])]
        outs = [[_as_tensor(r) for r in nest.flatten(res)] for res in results]
        _check_signature(signature, outs[0])
        stacked = [stack([o[k] for o in outs]) for k in range(len(outs[0]))]
        return nest.pack_sequence_as(results[0], stacked)
    examples = [_row_example(e) for e in flat]
    tracer, res, out = _trace("map_fn", lambda *r: fn(nest.pack_sequence_as(elems, list(r))),
                              [Tensor(x) for x in examples], trace, list(examples),
                              assignable=False)
    _check_signature(signature, out)
    caps, (fn_g,) = _finish([tracer], [len(flat)], [out])
    outs = _emit(MAP_FN, flat + caps, {"fn": fn_g, "n_elems": len(flat)})
    return nest.pack_sequence_as(res, outs)


def _row_example(t):
    ex = example(t)
    if ex.shape[0]:
        return ex[0, ...]
    return backend.array_module(ex).zeros(ex.shape[1:], ex.dtype)


def _check_signature(signature, outs):
    if signature is None:
        return
    from ..dtypes import as_dtype
    specs = nest.flatten(signature)
    if len(specs) != len(outs):
        raise ValueError(f"tf.map_fn: fn_output_signature has {len(specs)} entries, fn returned "
                         f"{len(outs)} tensors")
    for k, (spec, o) in enumerate(zip(specs, outs)):
        want = as_dtype(getattr(spec, "dtype", spec))
        if want != o.dtype:
            raise TypeError(f"tf.map_fn: output {k} of fn is {o.dtype.name}, "
                            f"fn_output_signature says {want.name}")


