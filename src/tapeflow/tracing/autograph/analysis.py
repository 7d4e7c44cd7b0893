"""Which names a statement assigns and reads, and which are read after it.

A simple, conservative liveness analysis: a name is *live after* a statement if a later
statement may read it before binding it again (a plain assignment binds for sure; a loop may
run no times; an ``if`` binds what both branches bind), the next iteration of an enclosing
loop included.  Over-approximating means a variable is carried through a
``tf.cond``/``tf.while_loop`` that did not need to be, or, for one a tensor loop defines,
that the loop is checked to run at least once.
"""
import ast

__all__ = ["assigned_names", "assigned_composites", "read_names", "annotate_liveness",
           "GENERATED_PREFIX"]

GENERATED_PREFIX = "ag__"

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _targets(stmt):
    """The expressions a statement binds or deletes."""
    if isinstance(stmt, (ast.Assign, ast.Delete)):
        return stmt.targets
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    return []


def assigned_names(nodes):
    """Names bound (or deleted) by the statements ``nodes`` in the enclosing function's scope,
    in order (not those of nested functions, classes or comprehensions; the converter's own
    functions count with the names they declare ``nonlocal``)."""
    out = {}
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFS):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(GENERATED_PREFIX):
                stack.extend(node.body[::-1])      # a converted inner statement's functions
            else:
                out.setdefault(node.name)
            continue
        if isinstance(node, ast.Nonlocal):
            for name in node.names:
                out.setdefault(name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.setdefault((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.setdefault(node.name)
        for target in _targets(node):
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    out.setdefault(sub.id)
        for field in _BLOCKS:
            stack.extend(getattr(node, field, ())[::-1])
    return [n for n in out if not n.startswith(GENERATED_PREFIX)]


def _walk_statements(nodes):
    """The statements of ``nodes`` and of their blocks, the converter's functions included (not
    the user's nested functions or classes)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        if isinstance(node, _DEFS):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(GENERATED_PREFIX):
                stack.extend(node.body[::-1])
            continue
        yield node
        for field in _BLOCKS:
            stack.extend(getattr(node, field, ())[::-1])


def _composite_parts(target):
    """The names a composite target ``a.b``, ``a[k]``, ``a.b['c']`` is made of (its object and
    any key that is a name), or None if it is not one AutoGraph tracks (a slice, a computed
    key, an object that is not a name)."""
    names = []
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Name):
                names.append(key.id)
            elif not isinstance(key, ast.Constant):
                return None
        node = node.value
    if not isinstance(node, ast.Name) or node.id.startswith(GENERATED_PREFIX):
        return None
    return names + [node.id]


def assigned_composites(nodes):
    """The attribute and subscript targets (``self.x``, ``d['k']``, ``l[0]``) the statements
    ``nodes`` assign or delete, as ``{label: target node}`` in order: as TensorFlow's AutoGraph,
    only those whose object (and key, if a name) is defined before the statements, i.e. not
    bound by them (an object made inside a loop body is the body's own)."""
    bound = set(assigned_names(nodes))
    out = {}
    for stmt in _walk_statements(nodes):
        for target in _targets(stmt):
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for elt in elts:
                parts = _composite_parts(elt)
                if parts and not bound.intersection(parts):
                    out.setdefault(ast.unparse(elt), elt)
    return out


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


def annotate_liveness(body, live_after=frozenset(), reads=None):
    """Set ``node.live_out`` (names possibly read after it) on every statement of ``body`` and
    of its nested blocks (not inside nested functions); return the names ``body`` may read
    before binding them."""
    reads = {} if reads is None else reads     # statement -> the names it reads, once each
    live = frozenset(live_after)
    for stmt in reversed(body):     # built backwards: what the statements after each read
        stmt.live_out = live
        live = _live_in(stmt, live, reads)
    return live


def _reads(stmt, reads):
    if stmt not in reads:
        reads[stmt] = frozenset(read_names([stmt]))
    return reads[stmt]


def _live_in(stmt, live, reads):
    """The names live before ``stmt`` given those live after it (``live``): what it may read
    before binding, and what it does not bind for sure (a loop may run no times, a branch
    binds what both branches bind).  Annotates its blocks on the way."""
    if isinstance(stmt, (ast.While, ast.For)):
        is_for = isinstance(stmt, ast.For)
        header = frozenset(read_names([stmt.iter if is_for else stmt.test]))
        target = _plain_names(stmt.target) if is_for else set()  # bound as an iteration starts
        else_in = annotate_liveness(stmt.orelse, live, reads)
        # after the body comes the next iteration (a while's test first) or what follows the
        # loop: iterated to a fixed point
        at_end = live | else_in | (frozenset() if is_for else header)
        while True:
            body_in = annotate_liveness(stmt.body, at_end, reads) - target
            if body_in <= at_end:
                break
            at_end |= body_in
        return header | body_in | else_in | live
    if isinstance(stmt, ast.If):
        return (frozenset(read_names([stmt.test])) | annotate_liveness(stmt.body, live, reads)
                | annotate_liveness(stmt.orelse, live, reads))
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        bound = set()
        for item in stmt.items:
            if item.optional_vars is not None:
                bound |= _plain_names(item.optional_vars)
        body_in = annotate_liveness(stmt.body, live, reads) - bound
        return frozenset(read_names([item.context_expr for item in stmt.items])) | body_in
    if isinstance(stmt, ast.Try):
        for block in (stmt.body, stmt.orelse, stmt.finalbody):
            annotate_liveness(block, live, reads)
        for handler in stmt.handlers:
            annotate_liveness(handler.body, live, reads)
        return _reads(stmt, reads) | live
    return _reads(stmt, reads) | (live - _bound(stmt))


def _plain_names(target):
    """The names an assignment target binds itself (``a``, ``a, *b``; not ``a.b`` or ``a[k]``,
    which bind nothing)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_plain_names(e) for e in target.elts))
    if isinstance(target, ast.Starred):
        return _plain_names(target.value)
    return set()


def _bound(stmt):
    """The names a simple statement binds whenever it completes."""
    if isinstance(stmt, ast.Assign):
        return set().union(*(_plain_names(t) for t in stmt.targets))
    if isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.AnnAssign) and stmt.value):
        return _plain_names(stmt.target)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, _DEFS):
        return {stmt.name}
    return set()
