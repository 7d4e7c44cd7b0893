"""Lowering ``return``, ``break`` and ``continue`` to boolean flags, so that every ``if``,
``while`` and ``for`` left is a single-entry, single-exit statement the control-flow
conversion can turn into ``tf.cond``/``tf.while_loop``.

* ``return x`` inside a branch or loop becomes ``ag_do_return = True; ag_retval = x``;
  the statements after one that may return are guarded by ``if not ag_do_return:``, the
  loops around it also stop on it, and the function ends with ``return ag_retval``.
  First, as AutoGraph does, ``if c: return a`` followed by more statements moves those
  statements into the ``else`` branch, so that both branches return.
* ``break`` becomes ``ag_break_N = True``, the loop's condition also tests it;
  ``continue`` becomes ``ag_continue_N = True``, reset at the start of each iteration.
"""
import ast
import itertools

from .errors import ConversionError

__all__ = ["lower_returns", "lower_loop_jumps", "DO_RETURN", "RETVAL"]

DO_RETURN = "ag_do_return"
RETVAL = "ag_retval"

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.While, ast.For)


def _contains(node, kind, into_loops):
    """Whether ``node`` holds a ``kind`` statement of its own function (and, unless
    ``into_loops`` is false, not one belonging to a nested loop)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kind):
            return True
        for child in ast.iter_child_nodes(n):
            if isinstance(child, _NESTED) or (not into_loops and isinstance(child, _LOOPS)):
                continue
            stack.append(child)
    return False


def _located(new, old):
    for node in new:
        ast.copy_location(node, old)
        ast.fix_missing_locations(node)
    return new


def _set(name, value_node):
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value_node)


def _not(name):
    return ast.UnaryOp(op=ast.Not(), operand=ast.Name(id=name, ctx=ast.Load()))


def _guard(block, kind, replace, flag, into_loops, on_loop=None):
    """``block`` with each ``kind`` statement replaced by ``replace(stmt)`` and the statements
    after one that may jump wrapped in ``if not flag:``."""
    out = []
    for k, stmt in enumerate(block):
        if isinstance(stmt, kind):
            out += _located(replace(stmt), stmt)
            return out           # the rest of the block is unreachable
        may_jump = _contains(stmt, kind, into_loops)
        if may_jump:
            _guard_inside(stmt, kind, replace, flag, into_loops, on_loop)
        out.append(stmt)
        if may_jump and block[k + 1:]:
            rest = _guard(block[k + 1:], kind, replace, flag, into_loops, on_loop)
            out += _located([ast.If(test=_not(flag), body=rest, orelse=[])], block[k + 1])
            return out
    return out


def _guard_inside(stmt, kind, replace, flag, into_loops, on_loop):
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            setattr(stmt, field, _guard(block, kind, replace, flag, into_loops, on_loop))
    for handler in getattr(stmt, "handlers", ()):
        handler.body = _guard(handler.body, kind, replace, flag, into_loops, on_loop)
    if isinstance(stmt, _LOOPS) and on_loop is not None:
        on_loop(stmt)


def _always_returns(block):
    for stmt in block:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and stmt.orelse and _always_returns(stmt.body) \
                and _always_returns(stmt.orelse):
            return True
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and _always_returns(stmt.body):
            return True
    return False


def _move_tails(block):
    """``if c: ...return`` followed by statements: the statements go into the other branch."""
    out = []
    for k, stmt in enumerate(block):
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if inner and not isinstance(stmt, _NESTED):
                setattr(stmt, field, _move_tails(inner))
        out.append(stmt)
        rest = block[k + 1:]
        if isinstance(stmt, ast.If) and rest:
            body_returns, else_returns = _always_returns(stmt.body), _always_returns(stmt.orelse)
            if body_returns and not else_returns:
                stmt.orelse = _move_tails(stmt.orelse + rest)
                return out
            if else_returns and stmt.orelse and not body_returns:
                stmt.body = _move_tails(stmt.body + rest)
                return out
    return out


def _stop_on(flag):
    def mark(loop):
        loop.ag_extra_tests = getattr(loop, "ag_extra_tests", []) + [flag]
    return mark


def lower_returns(fn):
    """Lower the returns of ``fn`` (an ast.FunctionDef) if one sits inside a compound
    statement; a function whose returns are all at its top level is left as it is."""
    nested = any(_contains(s, ast.Return, True) for s in fn.body
                 if not isinstance(s, (ast.Return,) + _NESTED))
    if not nested:
        return
    fn.body = _move_tails(fn.body)

    def replace(ret):
        value = ret.value if ret.value is not None else ast.Constant(value=None)
        return [_set(DO_RETURN, ast.Constant(value=True)), _set(RETVAL, value)]

    body = _guard(fn.body, ast.Return, replace, DO_RETURN, True, _stop_on(DO_RETURN))
    first = fn.body[0]
    start = _located([
        _set(DO_RETURN, ast.Constant(value=False)),
        _set(RETVAL, _ag_call("UndefinedReturnValue", []))], first)
    end = _located([ast.Return(value=_ag_call("retval", [ast.Name(id=RETVAL, ctx=ast.Load())]))],
                   fn.body[-1])
    fn.body = start + body + end


def _ag_call(name, args):
    return ast.Call(func=ast.Attribute(value=ast.Name(id="ag__", ctx=ast.Load()), attr=name,
                                       ctx=ast.Load()), args=args, keywords=[])


def lower_loop_jumps(fn):
    """Lower every loop's ``break`` and ``continue`` (innermost loops first)."""
    counter = itertools.count(1)
    for loop in _loops_innermost_first(fn):
        if loop.orelse:
            form = "while/else" if isinstance(loop, ast.While) else "for/else"
            raise ConversionError(loop, f"{form} is not supported by AutoGraph "
                                  "(NotImplementedError in TensorFlow): move the else block "
                                  "after the loop, guarded by a flag", NotImplementedError)
        if _contains_own(loop, ast.Continue):
            flag = f"ag_continue_{next(counter)}"
            body = _guard(loop.body, ast.Continue,
                          lambda s, f=flag: [_set(f, ast.Constant(value=True))], flag, False)
            loop.body = _located([_set(flag, ast.Constant(value=False))], loop.body[0]) + body
        if _contains_own(loop, ast.Break):
            flag = f"ag_break_{next(counter)}"
            loop.body = _guard(loop.body, ast.Break,
                               lambda s, f=flag: [_set(f, ast.Constant(value=True))], flag, False)
            loop.ag_break_flag = flag
            _stop_on(flag)(loop)


def _contains_own(loop, kind):
    return any(_contains(s, kind, False) for s in loop.body)


def _loops_innermost_first(fn):
    found = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _NESTED):
                continue
            visit(child)
            if isinstance(child, _LOOPS):
                found.append(child)
    visit(fn)
    return found
