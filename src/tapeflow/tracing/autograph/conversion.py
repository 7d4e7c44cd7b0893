"""Converting a Python function: source -> AST -> rewritten AST -> a new function object.

The rewritten def is compiled with the original file name and line numbers, inside a factory
``def ag__factory(ag__, <free variables>)`` so that the new function's free variables are
the original's: it is built with the original's closure cells (a closure keeps seeing the
variables it closes over) and its globals (the module, live).  Conversions are cached per
code object.  Left unconverted (called as they are): lambdas, generators, functions of the
tapeflow package (its own internals, e.g. ``Model.train_step``) or of the standard library
and installed packages, functions marked ``do_not_convert``, and functions whose source is
unavailable (a debug-level log line says so).  A user's Keras layer has its ``call``
converted when a trace that converts calls it (``layer_call``, kept per class), as Keras does.
"""
import ast
import functools
import inspect
import logging
import os
import sysconfig
import textwrap
import types
import warnings
import weakref

from . import operators, values
from .errors import ConversionError
from .lowering import lower_loop_jumps, lower_returns
from .status import is_converting
from .transformer import ControlFlowTransformer, is_generated

__all__ = ["convert", "converted_call", "do_not_convert", "to_code", "is_marked_do_not_convert",
           "layer_call"]

_log = logging.getLogger("tapeflow.autograph")
_SKIP_ATTR = "__tapeflow_do_not_convert__"
_CONVERTED_ATTR = "__tapeflow_autograph_converted__"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIBRARY_DIRS = tuple({os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib",
                                                                "platlib")
                       if (p := sysconfig.get_paths().get(key))})
# builtins that look at the calling frame: a call through converted_call would break them
_FRAME_BUILTINS = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})

_converted_code = {}                            # code object -> (code, its ast) or None
_converted_fns = weakref.WeakKeyDictionary()    # function -> its converted function
_user_code = {}                                 # code object -> whether it is the user's
_layer_calls = weakref.WeakKeyDictionary()      # Layer class -> (its call, as converted)


class _Namespace:
    """What converted code calls ``ag__``: the run-time operators, written out."""
    if_stmt = staticmethod(operators.if_stmt)
    while_stmt = staticmethod(operators.while_stmt)
    for_stmt = staticmethod(operators.for_stmt)
    if_exp = staticmethod(operators.if_exp)
    not_ = staticmethod(operators.not_)
    and_ = staticmethod(operators.and_)
    or_ = staticmethod(operators.or_)
    range_aware = staticmethod(operators.range_aware)
    Undefined = values.Undefined
    UndefinedReturnValue = values.UndefinedReturnValue
    ld = staticmethod(values.ld)
    ld_state = staticmethod(values.ld_state)
    ld_composite = staticmethod(values.ld_composite)
    set_attr = staticmethod(values.set_attr)
    set_item = staticmethod(values.set_item)
    retval = staticmethod(values.retval)


def do_not_convert(func=None):
    """``tf.autograph.experimental.do_not_convert``: ``func`` runs as written inside
    ``tf.function`` (its Python ``if`` on a tensor is still an error there)."""
    if func is None:
        return do_not_convert
    try:
        setattr(func, _SKIP_ATTR, True)
        return func
    except (AttributeError, TypeError):     # a bound method, a partial: wrap it
        @functools.wraps(func)
        def unconverted(*args, **kwargs):
            return func(*args, **kwargs)
        setattr(unconverted, _SKIP_ATTR, True)
        return unconverted


def is_marked_do_not_convert(func):
    return getattr(func, _SKIP_ATTR, False)


def convert(func):
    """``func`` with its control flow converted, or ``func`` itself where it is left alone."""
    if is_marked_do_not_convert(func) or getattr(func, _CONVERTED_ATTR, False):
        return func
    if isinstance(func, functools.partial):
        inner = convert(func.func)
        return func if inner is func.func else functools.partial(inner, *func.args,
                                                                 **func.keywords)
    if isinstance(func, types.MethodType):
        inner = convert(func.__func__)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if not isinstance(func, types.FunctionType):
        # a callable object of the user's class (tapeflow's Layers and Modules are not)
        call = getattr(type(func), "__call__", None)
        if isinstance(call, types.FunctionType) and not isinstance(func, type) \
                and _user_function(call):
            inner = convert(call)
            return func if inner is call else types.MethodType(inner, func)
        return func
    if not _user_function(func):
        return func
    done = _converted_fns.get(func)
    if done is not None:
        return done
    entry = _convert_code(func)
    if entry is None:
        return func
    new = _rebuild(func, entry[0])
    _converted_fns[func] = new
    return new


def converted_call(func, *args, **kwargs):
    """A call made by converted code: user functions it calls are converted too.  One that
    cannot be converted runs as written, with a warning (as in TensorFlow)."""
    return _convert_or_warn(func, 3)(*args, **kwargs)


def _convert_or_warn(func, stacklevel):
    try:
        return convert(func)
    except (NotImplementedError, ValueError, SyntaxError) as e:
        warnings.warn(f"AutoGraph could not convert {getattr(func, '__qualname__', func)!r} "
                      f"and runs it as written: {e}", stacklevel=stacklevel)
        _give_up(func)
        return func


def layer_call(layer):
    """``layer.call`` as a traced step calls it: converted where the trace converts and the
    layer's class is the user's (Keras converts a subclassed layer's ``call`` with
    ``tf_convert``); tapeflow's own layers' and a ``call`` set on the instance as they are.
    The converted function is kept per class."""
    if not is_converting() or "call" in layer.__dict__:
        return layer.call
    cls = type(layer)
    call = cls.call
    cached = _layer_calls.get(cls)
    if cached is None or cached[0] is not call:
        converted = call
        if isinstance(call, types.FunctionType) and _user_function(call):
            converted = _convert_or_warn(call, 4)
        cached = _layer_calls[cls] = (call, converted)
    return types.MethodType(cached[1], layer)


def _give_up(func):
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    if code is not None:
        _converted_code[code] = None


def to_code(func):
    """The source of ``func`` as converted (``tf.autograph.to_code``)."""
    target = func.__func__ if isinstance(func, types.MethodType) else func
    entry = _convert_code(target) if isinstance(target, types.FunctionType) else None
    if entry is None:
        raise ValueError(f"{func!r} cannot be converted: its source is unavailable or it is a "
                         "lambda or generator")
    return ast.unparse(entry[1])


def _user_function(func):
    code = func.__code__
    user = _user_code.get(code)
    if user is None:
        path = os.path.abspath(code.co_filename)
        user = _user_code[code] = not (
            code.co_name == "<lambda>"
            or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                | inspect.CO_ASYNC_GENERATOR)
            or path.startswith(_PACKAGE_DIR + os.sep) or path.startswith(_LIBRARY_DIRS))
    return user


def _convert_code(func):
    code = func.__code__
    if code in _converted_code:
        return _converted_code[code]
    try:
        source = inspect.getsource(func)
    except (OSError, TypeError):
        _log.debug("AutoGraph: the source of %s is unavailable; it runs unconverted",
                   func.__qualname__)
        entry = None
    else:
        entry = _transform(func, source)
    _converted_code[code] = entry
    return entry


def _transform(func, source):
    code = func.__code__
    if "ag__" in code.co_freevars:
        return None        # made by a conversion already (a def nested in converted code)
    filename = code.co_filename
    first_line = source.splitlines()[0]
    indent = len(first_line) - len(first_line.lstrip())
    tree = ast.parse(textwrap.dedent(source))
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, ast.FunctionDef) or fn.name != code.co_name:
        _log.debug("AutoGraph: %s is not a plain def; it runs unconverted", func.__qualname__)
        return None
    fn.decorator_list = []
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    for node in ast.walk(tree):       # columns as in the file (tracebacks underline them)
        if getattr(node, "col_offset", None) is not None:
            node.col_offset += indent
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent
    try:
        lower_returns(fn)
        lower_loop_jumps(fn)
        ControlFlowTransformer(fn, os.path.basename(filename)).convert()
        _CallConverter().visit_body(fn)
    except ConversionError as e:
        raise e.kind(f"{filename}, line {e.lineno}: {e.message}") from None
    if "__class__" in code.co_freevars:     # zero-argument super() needs the cell
        keep = ast.Expr(value=ast.Name(id="__class__", ctx=ast.Load()))
        fn.body.insert(0, ast.copy_location(keep, fn.body[0]))
    factory = ast.FunctionDef(
        name="ag__factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in
                                                 ("ag__",) + code.co_freevars],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fn, ast.Return(value=ast.Name(id=fn.name, ctx=ast.Load()))],
        decorator_list=[], returns=None)
    ast.copy_location(factory, fn)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    module_code = compile(module, filename, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    fn_code = next(c for c in factory_code.co_consts
                   if isinstance(c, types.CodeType) and c.co_name == fn.name)
    return fn_code, fn


def _rebuild(func, code):
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    cells["ag__"] = types.CellType(_Namespace)
    closure = tuple(cells[name] for name in code.co_freevars)
    new = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__, closure)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__qualname__ = func.__qualname__
    new.__module__ = func.__module__
    new.__doc__ = func.__doc__
    new.__dict__.update(func.__dict__)   # (no __wrapped__: the cache's value would keep its key)
    setattr(new, _CONVERTED_ATTR, True)
    return new


class _CallConverter(ast.NodeTransformer):
    """``f(a, b)`` -> ``ag__.converted_call(f, a, b)``, so that called user functions are
    converted too (not calls of ag__ itself, nor frame-dependent builtins)."""

    def visit_body(self, fn):
        fn.body = [self.visit(s) for s in fn.body]

    def visit_FunctionDef(self, node):     # a user's nested def or lambda: as it is
        if is_generated(node):
            self.generic_visit(node)
        return node

    visit_Lambda = visit_FunctionDef

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "ag__":
            return node
        new = ast.Call(func=ast.Attribute(value=ast.Name(id="ag__", ctx=ast.Load()),
                                          attr="converted_call", ctx=ast.Load()),
                       args=[func] + node.args, keywords=node.keywords)
        return ast.copy_location(new, node)


_Namespace.converted_call = staticmethod(converted_call)
