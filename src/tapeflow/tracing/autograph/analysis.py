"""Which names a statement assigns and reads, and which are read after it.

A deliberately simple, conservative analysis (no kill sets): a name is *live
after* a statement if any later statement of its block, or of an enclosing
block, reads it, or if an enclosing loop reads it anywhere (the next
iteration may).  Over-approximating only means a variable is carried through
a ``tf.cond``/``tf.while_loop`` that did not need to be.
"""
import ast

__all__ = ["assigned_names", "read_names", "annotate_liveness", "GENERATED_PREFIX"]

GENERATED_PREFIX = "ag__"

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes):
    """The nodes of ``nodes``, not descending into nested functions, classes or comprehensions
    (their own names are local to them); a nested def or class is itself yielded."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES) and not (  # a converted inner statement's functions
                isinstance(node, ast.FunctionDef) and node.name.startswith(GENERATED_PREFIX)):
            continue
        stack.extend(list(ast.iter_child_nodes(node))[::-1])


def assigned_names(nodes):
    """Names bound (or deleted) by ``nodes`` in the enclosing function's scope, in order."""
    out = {}
    for node in _walk_scope(nodes):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.setdefault(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.setdefault(node.name)
        elif isinstance(node, ast.Nonlocal):      # a converted inner statement's body
            for name in node.names:
                out.setdefault(name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.setdefault((alias.asname or alias.name).split(".")[0])
    return [n for n in out if not n.startswith(GENERATED_PREFIX)]


def read_names(nodes):
    """Names read anywhere in ``nodes``, nested functions and lambdas included (closures)."""
    out = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                out.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
    return out


def annotate_liveness(body, live_after=frozenset()):
    """Set ``node.live_out`` (names possibly read after it) on every compound statement of
    ``body`` and of its nested blocks (not inside nested functions)."""
    for k, stmt in enumerate(body):
        later = read_names(body[k + 1:])
        live = frozenset(live_after | later)
        stmt.live_out = live
        if isinstance(stmt, (ast.While, ast.For)):
            inner = live | read_names([stmt])
            annotate_liveness(stmt.body, inner)
            annotate_liveness(stmt.orelse, live)
        elif isinstance(stmt, ast.If):
            annotate_liveness(stmt.body, live)
            annotate_liveness(stmt.orelse, live)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            annotate_liveness(stmt.body, live)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                annotate_liveness(block, live)
            for handler in stmt.handlers:
                annotate_liveness(handler.body, live)
