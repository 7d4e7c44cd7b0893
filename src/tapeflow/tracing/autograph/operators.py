"""The run-time side of converted code: each ``if``/``while``/``for`` calls one of these.

A statement runs as Python unless its condition (or the iterated value) is a tensor inside
a trace; then it becomes ``tf.cond`` / ``tf.while_loop`` over the statement's *state*, the
variables it assigns that are read afterwards (or in the loop).  The converted code hands
over ``get_state``/``set_state`` closures over those variables, so the branch and body
functions can be re-run on the graph's values.

A tensor loop that defines a variable used after it (nothing before it gives one) starts it
at zeros of the type one traced iteration gives it, and checks at every call that the loop ran
at least once (an Assert: TensorFlow's "loop must iterate at least once to initialize ..."
InvalidArgumentError, naming the variable and the line).

Iterating a ``tf.data.Dataset`` is Python: tapeflow's datasets live on the host, so a
``for batch in dataset`` loop inside a ``tf.function`` is unrolled at trace time.
"""
import builtins

import numpy as np

from ...core import nest
from ...core.context import context
from ...core.tensor import Tensor, Variable, convert_to_tensor
from ...errors import InvalidArgumentError
from ...ops.arithmetic import add, greater, less, logical_and, logical_not, logical_or
from ...ops.assertion import assert_that
from ...ops.creation import range_, zeros
from ...ops.shape import gather, shape
from ..control_flow import _trace as trace_nested
from ..control_flow import cond, while_loop
from .errors import located
from .values import Undefined, UndefinedReturnValue, is_undefined

__all__ = ["if_stmt", "while_stmt", "for_stmt", "if_exp", "not_", "and_", "or_",
           "range_aware", "SymbolicRange"]

_RETVAL = "ag_retval"


def _is_graph(value):
    """A tensor inside a trace: the statement becomes graph control flow."""
    return isinstance(value, Tensor) and context().trace is not None


def _condition(value, where):
    """A tensor condition of a statement: it must be a scalar bool, as for tf.cond."""
    shape_, dtype = tuple(value.shape), value.dtype.name
    if shape_ or dtype != "bool":
        raise located(where, f"the condition is a {dtype}{list(shape_)} tensor; a Python `if`, "
                             "`while` or `and`/`or`/`not` on a tensor needs a scalar bool "
                             "(reduce it, e.g. with tf.reduce_all, or use tf.where)", TypeError)
    return value


def _label(name):
    return "the return value" if name == _RETVAL else f"'{name}'"


# --- expressions ---------------------------------------------------------------------------------
def not_(value):
    return logical_not(value) if _is_graph(value) else not value


def and_(*operands):
    """``a and b and ...`` with each operand a thunk: Python short-circuits; tensors combine."""
    value = operands[0]()
    for thunk in operands[1:]:
        if _is_graph(value):
            value = logical_and(value, _bool_tensor(thunk()))
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*operands):
    value = operands[0]()
    for thunk in operands[1:]:
        if _is_graph(value):
            value = logical_or(value, _bool_tensor(thunk()))
        elif value:
            return value
        else:
            value = thunk()
    return value


def _bool_tensor(value):
    return value if isinstance(value, Tensor) else convert_to_tensor(bool(value))


def if_exp(test, body, orelse, where):
    if not _is_graph(test):
        return body() if test else orelse()
    _condition(test, where)
    try:
        return cond(test, body, orelse)
    except ValueError as e:
        raise located(where, f"the two values of the conditional expression must return the "
                             f"same nested structure in both branches ({e})") from None


# --- if ------------------------------------------------------------------------------------------
def if_stmt(test, body, orelse, get_state, set_state, names, live, assigned, where):
    """``if test: body() else: orelse()``.  ``names``: the variables the branches assign (the
    state); ``live``: those read after the statement; ``assigned``: each branch's names."""
    if not _is_graph(test):
        if test:
            body()
        else:
            orelse()
        return
    _graph_if(test, body, orelse, get_state, set_state, names, live, assigned, where)


def _graph_if(test, body, orelse, get_state, set_state, names, live, assigned, where):
    _condition(test, where)
    init = get_state()
    # the outputs: variables read afterwards that have a value before or get one in a branch
    keep = [k for k, n in enumerate(names) if n in live and (
        not is_undefined(init[k]) or n in assigned[0] or n in assigned[1])]
    seen = {}

    def branch(fn, label):
        def run():
            set_state(init)
            fn()
            state = get_state()
            out = []
            for k in keep:
                _check_branch_value(names[k], state[k], label, where)
                out.append(state[k])
            if "main" in seen:
                # an array the else branch leaves empty takes the element shape the main
                # branch's write gave it (`if c: ta = ta.write(i, x)` with no else)
                out = [nest.refine_composites(b, a) or b for a, b in zip(seen["main"], out)]
                for k, a, b in zip(keep, seen["main"], out):
                    _check_same(names[k], a, b, "in the main branch", "in the else branch", where)
            seen[label] = out
            return out
        return run

    outs = cond(test, branch(body, "main"), branch(orelse, "else"))
    final = list(init)
    for k, v in zip(keep, outs or ()):
        final[k] = v
    set_state(tuple(final))


def _check_branch_value(name, value, label, where):
    if value.__class__ is UndefinedReturnValue:
        raise located(where, f"the {label} branch must also have a return statement.")
    if value.__class__ is Undefined:
        raise located(where, f"'{name}' must also be initialized in the {label} branch")
    if any(v is None for v in nest.flatten(value)):
        raise located(where, f"{_label(name)} is None in the {label} branch of an `if` on a "
                             "tensor: both branches must give it a tensor value")


def _types(value, name, where):
    types = []
    for v in nest.flatten(value):
        if isinstance(v, nest.Composite):
            # a TensorArray, described without flattening it here (a branch's array would be
            # stacked in the other branch's graph); cond and while_loop carry its buffer
            types.append(((type(v).__name__,), str(v._structure_key())))
            continue
        try:
            t = v.value() if isinstance(v, Variable) else v if isinstance(v, Tensor) \
                else convert_to_tensor(v)
        except (TypeError, ValueError):
            raise located(where, f"{_label(name)} holds {type(value).__name__} {value!r}, which "
                                 "is not a tensor: a tensor `if`/loop can only carry tensors",
                          TypeError) from None
        types.append((tuple(t.shape), t.dtype.name))
    return types


def _check_same(name, a, b, a_where, b_where, where, loop=False):
    if loop and nest.refine_composites(a, b) is not None:
        return  # a TensorArray learning its element shape: tf.while_loop traces again
    if nest.structure_key(a) != nest.structure_key(b):
        what = "nested structure" if name != _RETVAL else "structure (a tensor-dependent " \
            "`return` of different structures)"
        raise located(where, f"{_label(name)} must have the same {what} {a_where} and "
                             f"{b_where}: got {_sketch(a)} and {_sketch(b)}")
    for (sa, da), (sb, db) in zip(_types(a, name, where), _types(b, name, where)):
        if da != db or sa != sb:
            hint = (" (give it an initial value of the dtype the loop computes, "
                    "e.g. 0.0 rather than 0)" if loop and da != db else "")
            raise located(where, f"{_label(name)} is {db}{list(sb)} {b_where} but {da}{list(sa)} "
                                 f"{a_where}; it must keep its dtype and shape{hint}")


def _sketch(value):
    """``value`` with each tensor shown as 'T' (a TensorArray as itself: its element shape)."""
    leaves = nest.flatten(value)
    return repr(nest.pack_sequence_as(value, [_Shown(repr(v)) if isinstance(v, nest.Composite)
                                              else "T" for v in leaves]))


class _Shown(str):
    def __repr__(self):
        return str(self)


# --- while ---------------------------------------------------------------------------------------
def while_stmt(test, body, get_state, set_state, names, carry, live, where):
    """``while test(): body()``.  ``names``: the variables the loop assigns; ``carry``: those
    it reads or that are read after it (the loop variables); ``live``: those read after it."""
    while True:
        value = test()
        if _is_graph(value):   # (possibly after Python iterations made a variable a tensor)
            _condition(value, where)
            _graph_while(test, body, get_state, set_state, names, carry, live, where)
            return
        if not value:
            return
        body()


def _graph_while(test, body, get_state, set_state, names, carry, live, where):
    init = list(get_state())
    carried = [k for k, n in enumerate(names) if n in carry and not is_undefined(init[k])]
    created = [k for k in range(len(names)) if is_undefined(init[k]) and names[k] in live]
    if created:
        # Made inside the loop and used after it (a `return` in the loop, say): trace the
        # body once, thrown away, to learn its type, and start from zeros of it (as
        # TensorFlow's AutoGraph; the loop must run at least once for the value to be real,
        # which an Assert after the loop checks at every call).
        for k, value in zip(created, _probe(body, init, set_state, get_state, created)):
            _check_branch_value(names[k], value, "first iteration's", where)
            init[k] = nest.map_structure(_zeros_like, value)
        carried = sorted(carried + created)
    loop_vars = [init[k] for k in carried]
    for k, v in zip(carried, loop_vars):
        _types(v, names[k], where)

    def restore(values):
        state = list(init)
        for k, v in zip(carried, values):
            state[k] = v
        set_state(tuple(state))

    def loop_cond(*values):
        restore(values[1:])
        return _bool_tensor(test())

    def loop_body(*values):
        restore(values[1:])
        body()
        state = get_state()
        out = []
        for k, before in zip(carried, values[1:]):
            value = state[k]
            _check_branch_value(names[k], value, "loop body's", where)
            _check_same(names[k], before, value, "before the loop",
                        "after one iteration", where, loop=True)
            out.append(value)
        return [convert_to_tensor(True) if created else values[0]] + out

    # The first loop variable says whether the body ran (where it must have: ``created``);
    # it is there anyway, so that a loop over nothing but Variables has one.
    first = convert_to_tensor(False) if created else convert_to_tensor(0)
    result = while_loop(loop_cond, loop_body, [first] + loop_vars)
    if created:
        assert_that(result[0], [_zero_trips_message([names[k] for k in created], where)], ())
    restore(list(result)[1:])


def _zero_trips_message(names, where):
    """TensorFlow's message for a loop that ran no times but had to define ``names``."""
    labels = ["the function return value" if n == _RETVAL else n for n in names]
    return f"{where}: loop must iterate at least once to initialize {', '.join(labels)}"


def _probe(body, init, set_state, get_state, created):
    def once():
        set_state(tuple(init))
        body()
        state = get_state()
        return [state[k] for k in created]
    _, values, _ = trace_nested("autograph_probe", once, (), context().trace)
    set_state(tuple(init))
    return values


def _zeros_like(value):
    t = value if isinstance(value, Tensor) else convert_to_tensor(value)
    return zeros(tuple(t.shape), t.dtype)


# --- for -----------------------------------------------------------------------------------------
class SymbolicRange:
    """``range``/``tf.range`` inside a trace: iterated by a ``tf.while_loop`` on its index."""

    def __init__(self, start, limit, delta):
        self.start, self.limit, self.delta = start, limit, delta


def range_aware(func, *args, **kwargs):
    """The iterated value of ``for x in func(...)``: a ``tf.range`` in a trace, or a Python
    ``range`` of a traced tensor, is iterated in the graph rather than materialized."""
    if context().trace is not None:
        if func is range_ or (func is builtins.range and any(_is_graph(a) for a in args)):
            if kwargs.get("dtype") is None and len(args) <= 3 and set(kwargs) <= {"dtype"}:
                start, limit, delta = (0, args[0], 1) if len(args) == 1 else \
                    (tuple(args) + (1,))[:3]
                return SymbolicRange(start, limit, delta)
    return func(*args, **kwargs)


def for_stmt(iterable, extra_test, body, get_state, set_state, names, carry, live, where,
             target=None):
    """``for x in iterable: body(x)`` while ``extra_test()`` (break, return) holds; the names
    as for ``while_stmt``; ``target``: the loop variable's name where it is a plain name."""
    if isinstance(iterable, SymbolicRange) or _is_graph(iterable):
        _graph_for(iterable, extra_test, body, get_state, set_state, names, carry, live, where,
                   target)
        return
    for item in iterable:
        if extra_test is not None:
            go_on = extra_test()
            if _is_graph(go_on):   # a break on a tensor condition: guard the rest in the graph
                _graph_if(go_on, lambda item=item: body(item), lambda: None, get_state,
                          set_state, names, carry, (names, ()), where)
                continue
            if not go_on:
                break
        body(item)


def _graph_for(iterable, extra_test, body, get_state, set_state, names, carry, live, where,
               target):
    index = [None]
    # A range's loop variable is its index: if the loop defines it, it has the range's start
    # before (TensorFlow's, which needs no iteration for it: `for i in tf.range(0)` leaves 0).
    target_k = names.index(target) if isinstance(iterable, SymbolicRange) and \
        target in names else None
    if isinstance(iterable, SymbolicRange):
        start, limit, delta = iterable.start, iterable.limit, iterable.delta
        index[0] = _range_start(start, limit, delta)

        def in_range():
            i = index[0]
            if isinstance(delta, Tensor):
                return logical_or(logical_and(greater(delta, 0), less(i, limit)),
                                  logical_and(less(delta, 0), greater(i, limit)))
            return less(i, limit) if delta > 0 else greater(i, limit)

        def item():
            return index[0]
    else:
        tensor = iterable.value() if isinstance(iterable, Variable) else iterable
        if not tuple(tensor.shape):
            raise located(where, "cannot iterate over a scalar tensor", TypeError)
        if tuple(tensor.shape)[0] == 0:   # no rows in this trace's shape: it runs no times
            state = get_state()
            created = [n for n, v in zip(names, state) if is_undefined(v) and n in live]
            if created:    # as the Assert after a loop would at every call
                raise InvalidArgumentError(None, None, _zero_trips_message(created, where))
            return
        index[0] = convert_to_tensor(0)
        length = shape(tensor)[0]

        def in_range():
            return less(index[0], length)

        def item():
            return gather(tensor, index[0])

    def test():
        ok = in_range()
        return ok if extra_test is None else and_(lambda: ok, extra_test)

    def step():
        body(item())
        index[0] = add(index[0], _one_like(index[0]))

    def get():
        state = tuple(get_state())
        if target_k is not None and is_undefined(state[target_k]):
            state = state[:target_k] + (index[0],) + state[target_k + 1:]
        return state + (index[0],)

    def set_(values):
        set_state(tuple(values[:-1]))
        index[0] = values[-1]

    index_name = ("ag_for_index",)
    _graph_while(test, step, get, set_, tuple(names) + index_name, tuple(carry) + index_name,
                 live, where)


def _range_start(start, limit, delta):
    # the index takes the dtype tf.range would give: float if any bound is a Python float
    floats = any(isinstance(a, (float, np.floating)) for a in (start, limit, delta))
    dtypes = [a.dtype for a in (start, limit, delta) if isinstance(a, Tensor)]
    if dtypes:
        return convert_to_tensor(start, dtype=dtypes[0])
    return convert_to_tensor(float(start) if floats else start)


def _one_like(index):
    return convert_to_tensor(1, dtype=index.dtype)
