"""The source-to-source rewrite of one function's AST (after ``lowering``).

Each ``if``/``while``/``for`` becomes small local functions plus one call::

    if x > 0:            def ag__if_body_1():            def ag__get_state_1():
        y = x                nonlocal y                      return (ag__.ld_state(lambda: y, 'y'),)
    else:                    y = x                       def ag__set_state_1(ag__vars):
        y = -x           def ag__else_body_1(): ...          nonlocal y
                                                             (y,) = ag__vars
                         ag__.if_stmt(x > 0, ag__if_body_1, ag__else_body_1, ag__get_state_1,
                                      ag__set_state_1, ('y',), ('y',), (('y',), ('y',)),
                                      'f.py, line 2, `if` statement')

Attributes and items the statement assigns on objects from before it (``self.x = ...``,
``d['k'] = ...``, ``l[0] = ...``) are part of its state too, as TensorFlow's "composite
symbols": the getter reads them (``ag__.ld_composite``), the setter writes them back
(``ag__.set_attr`` / ``ag__.set_item``).

``not``, ``and``/``or`` and ``a if c else b`` become ``ag__.not_``, ``ag__.and_``,
``ag__.or_`` and ``ag__.if_exp`` (tensors combine in the graph).  Every generated node takes
the location of the statement it replaces, so tracebacks and errors show the user's lines.
Nested functions and lambdas of the user are left as they are.
"""
import ast
import copy
import itertools

from .analysis import (GENERATED_PREFIX, annotate_liveness, assigned_composites, assigned_names,
                       read_names)

__all__ = ["ControlFlowTransformer", "is_generated"]

_AG = "ag__"


def _ag(attr):
    return ast.Attribute(value=ast.Name(id=_AG, ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _call(attr, *args):
    return ast.Call(func=_ag(attr), args=list(args), keywords=[])


def _thunk(expr):
    lam = ast.Lambda(args=_no_args(), body=expr)
    lam.ag_generated = True
    return lam


def is_generated(node):
    """A def or lambda the converter made (user ones are left as they are)."""
    if isinstance(node, ast.Lambda):
        return getattr(node, "ag_generated", False)
    return node.name.startswith(GENERATED_PREFIX)


def _no_args(*names):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _str_tuple(names):
    return ast.Tuple(elts=[ast.Constant(value=n) for n in names], ctx=ast.Load())


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


class ControlFlowTransformer(ast.NodeTransformer):
    """Rewrites the body of ``fn`` (an ast.FunctionDef); ``filename`` names lines in errors."""

    def __init__(self, fn, filename):
        self._fn = fn
        self._filename = filename
        self._ids = itertools.count(1)
        self._globals = {n for node in ast.walk(fn) if isinstance(node, ast.Global)
                         for n in node.names}
        # names the user declared nonlocal live in an enclosing function: never declared here
        self._outer = {n for node in ast.walk(fn) if isinstance(node, ast.Nonlocal)
                       for n in node.names}
        self._declared = set()       # names the converted statements share (declared up front)

    def convert(self):
        fn = self._fn
        annotate_liveness(fn.body)
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        self._params = params
        fn.body = self._block(fn.body)
        declared = sorted(self._declared - params - self._globals - self._outer)
        if declared:
            head = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                               value=_call("Undefined", ast.Constant(value=n))) for n in declared]
            for node in head:
                ast.copy_location(node, fn.body[0])
            fn.body = head + fn.body
            _LoadGuard(set(declared)).visit_body(fn)
        ast.fix_missing_locations(fn)
        return fn

    # --- blocks and statements -----------------------------------------------------------------
    def _block(self, stmts):
        out = []
        for stmt in stmts:
            new = self.visit(stmt)
            if new is None:
                continue
            out.extend(new if isinstance(new, list) else [new])
        return out or [ast.Pass()]

    def _where(self, node, form):
        return ast.Constant(value=f"{self._filename}, line {node.lineno}, `{form}` statement")

    def visit_FunctionDef(self, node):      # a nested def of the user: left as it is
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node):
        return node

    def _scope_decl(self, names):
        names = [n for n in names if not n.startswith(GENERATED_PREFIX)]
        local = [n for n in names if n not in self._globals]
        glob = [n for n in names if n in self._globals]
        self._declared.update(local)
        decl = []
        if local:
            decl.append(ast.Nonlocal(names=local))
        if glob:
            decl.append(ast.Global(names=glob))
        return decl

    def _def(self, name, args, body, names):
        return ast.FunctionDef(name=name, args=_no_args(*args),
                               body=self._scope_decl(names) + (body or [ast.Pass()]),
                               decorator_list=[], returns=None)

    def _state_fns(self, k, names, composites=None):
        """The state's getter and setter: ``names`` are variables, ``composites`` the attribute
        and subscript targets (label -> target node) the statement carries after them."""
        composites = composites or {}
        reads = [_call("ld_state", _thunk(_load(n)), ast.Constant(value=n)) for n in names]
        reads += [_call("ld_composite", _thunk(_as_load(t)), ast.Constant(value=label))
                  for label, t in composites.items()]
        getter = ast.FunctionDef(
            name=f"ag__get_state_{k}", args=_no_args(), decorator_list=[], returns=None,
            body=[ast.Return(value=ast.Tuple(elts=reads, ctx=ast.Load()))])
        target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
        values = _load("ag__vars")
        if composites:
            values = ast.Subscript(value=values, slice=ast.Slice(lower=None, upper=ast.Constant(len(names)),
                                                             step=None),
                                   ctx=ast.Load())
        setter_body = [ast.Assign(targets=[target], value=values)] if names else []
        for j, t in enumerate(composites.values()):
            value = ast.Subscript(value=_load("ag__vars"), slice=ast.Constant(len(names) + j),
                                  ctx=ast.Load())
            setter_body.append(ast.Expr(value=_store_composite(t, value)))
        setter = self._def(f"ag__set_state_{k}", ["ag__vars"], setter_body, names)
        return [getter, setter]

    def visit_If(self, node):
        node.body = self._block(node.body)
        node.orelse = self._block(node.orelse) if node.orelse else []
        test = self.visit(node.test)
        k = next(self._ids)
        # every variable the branches assign is reset before each branch; those read after
        # the statement (``live``) are its outputs
        modified = assigned_names(node.body + node.orelse)
        # attributes and items of objects from before (``self.x``, ``d['k']``) are carried as
        # variables are; the object may be read anywhere afterwards, so they are always outputs
        composites = assigned_composites(node.body + node.orelse)
        live = [n for n in modified if n in node.live_out] + list(composites)
        body_names = assigned_names(node.body) + [
            c for c in assigned_composites(node.body) if c in composites]
        else_names = assigned_names(node.orelse) + [
            c for c in assigned_composites(node.orelse) if c in composites]
        stmts = [self._def(f"ag__if_body_{k}", [], node.body, modified),
                 self._def(f"ag__else_body_{k}", [], node.orelse, modified)]
        stmts += self._state_fns(k, modified, composites)
        stmts.append(ast.Expr(value=_call(
            "if_stmt", test, _load(f"ag__if_body_{k}"), _load(f"ag__else_body_{k}"),
            _load(f"ag__get_state_{k}"), _load(f"ag__set_state_{k}"),
            _str_tuple(modified + list(composites)), _str_tuple(live),
            ast.Tuple(elts=[_str_tuple(body_names), _str_tuple(else_names)], ctx=ast.Load()),
            self._where(node, "if"))))
        return self._located(stmts, node)

    def _loop_state(self, node):
        """All names the loop assigns; those it carries (read after it or in it); those read
        after it."""
        modified = assigned_names([node])
        reads = read_names([node])
        carry = [n for n in modified if n in node.live_out or n in reads]
        live = [n for n in carry if n in node.live_out]
        composites = assigned_composites([node])     # always carried and live (see visit_If)
        return modified, composites, carry + list(composites), live + list(composites)

    def _extra_tests(self, node):
        flags = getattr(node, "ag_extra_tests", [])
        return [_call("not_", _load(f)) for f in flags]

    def _flag_inits(self, node):
        flag = getattr(node, "ag_break_flag", None)
        if flag is None:
            return []
        return [ast.Assign(targets=[ast.Name(id=flag, ctx=ast.Store())],
                           value=ast.Constant(value=False))]

    def visit_While(self, node):
        node.body = self._block(node.body)
        test = self.visit(node.test)
        k = next(self._ids)
        extra = self._extra_tests(node)
        if extra:
            test = _call("and_", *[_thunk(e) for e in extra + [test]])
        modified, composites, carry, live = self._loop_state(node)
        stmts = self._flag_inits(node)
        stmts.append(self._def(f"ag__loop_test_{k}", [], [ast.Return(value=test)], []))
        stmts.append(self._def(f"ag__loop_body_{k}", [], node.body, modified))
        stmts += self._state_fns(k, modified, composites)
        stmts.append(ast.Expr(value=_call(
            "while_stmt", _load(f"ag__loop_test_{k}"), _load(f"ag__loop_body_{k}"),
            _load(f"ag__get_state_{k}"), _load(f"ag__set_state_{k}"),
            _str_tuple(modified + list(composites)),
            _str_tuple(carry), _str_tuple(live), self._where(node, "while"))))
        return self._located(stmts, node)

    def visit_For(self, node):
        node.body = self._block(node.body)
        iterable = self.visit(node.iter)
        if isinstance(iterable, ast.Call) and not any(
                isinstance(a, ast.Starred) for a in iterable.args):
            iterable = ast.Call(func=_ag("range_aware"), args=[iterable.func] + iterable.args,
                                keywords=iterable.keywords)
        k = next(self._ids)
        extra = self._extra_tests(node)
        modified, composites, carry, live = self._loop_state(node)
        stmts = self._flag_inits(node)
        if extra:
            stmts.append(self._def(f"ag__extra_test_{k}", [], [ast.Return(
                value=_call("and_", *[_thunk(e) for e in extra]) if len(extra) > 1
                else extra[0])], []))
            extra_fn = _load(f"ag__extra_test_{k}")
        else:
            extra_fn = ast.Constant(value=None)
        bind = ast.Assign(targets=[node.target], value=_load("ag__item"))
        ast.copy_location(bind, node)
        stmts.append(self._def(f"ag__loop_body_{k}", ["ag__item"], [bind] + node.body, modified))
        stmts += self._state_fns(k, modified, composites)
        stmts.append(ast.Expr(value=_call(
            "for_stmt", iterable, extra_fn, _load(f"ag__loop_body_{k}"),
            _load(f"ag__get_state_{k}"), _load(f"ag__set_state_{k}"),
            _str_tuple(modified + list(composites)),
            _str_tuple(carry), _str_tuple(live), self._where(node, "for"),
            ast.Constant(value=node.target.id if isinstance(node.target, ast.Name) else None))))
        return self._located(stmts, node)

    def _located(self, stmts, node):
        for s in stmts:
            _locate(s, node)
        return stmts

    # --- expressions ---------------------------------------------------------------------------
    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", node.operand), node)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(name, *[_thunk(v) for v in node.values]), node)

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(_call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse),
                                       ast.Constant(value=f"{self._filename}, line {node.lineno}, "
                                                          "conditional expression")), node)


def _as_load(target):
    """A copy of an assignment target ``a.b`` / ``a[k]`` that reads it."""
    node = copy.deepcopy(target)
    node.ctx = ast.Load()
    return node


def _store_composite(target, value):
    """``ag__.set_attr(a, 'b', value)`` / ``ag__.set_item(a, k, value)`` for target ``a.b`` /
    ``a[k]`` (a value that is Undefined deletes it again)."""
    obj = copy.deepcopy(target.value)
    if isinstance(target, ast.Attribute):
        return _call("set_attr", obj, ast.Constant(value=target.attr), value)
    return _call("set_item", obj, copy.deepcopy(target.slice), value)


def _locate(new, old):
    """Give ``new`` and its generated descendants ``old``'s location; the user's nodes inside
    keep theirs (and are not walked again)."""
    stack = [new]
    while stack:
        node = stack.pop()
        if "lineno" in node._attributes:
            if getattr(node, "lineno", None) is not None and node is not new:
                continue                                 # a user's node: located already
            ast.copy_location(node, old)
        stack.extend(ast.iter_child_nodes(node))


class _LoadGuard(ast.NodeTransformer):
    """Reads of a variable declared up front go through ``ag__.ld``: still an error if unbound."""

    def __init__(self, names):
        self._names = names

    def visit_body(self, fn):
        fn.body = [self.visit(s) for s in fn.body]

    def visit_FunctionDef(self, node):
        if node.name.startswith("ag__get_state_") or not is_generated(node):
            return node    # reads the state as it is, unbound included; user defs as they are
        self.generic_visit(node)
        return node

    def visit_Lambda(self, node):
        if is_generated(node):
            self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self._names:
            return ast.copy_location(_call("ld", node), node)
        return node
