"""``tapeflow.custom_gradient``: a function whose gradient you write yourself.

The function runs normally (its inner ops are recorded, so a ``grad_fn``
written in tapeflow ops that reads forward intermediates stays differentiable:
second and higher derivatives work).  Its outputs are then replaced by fresh
tensors recorded as one ``CustomGradient`` node from the inputs, and any
Variables the function read, to those outputs; the tape never looks inside.
The ``grad_fn`` lives only in that node: once the outputs and tapes are gone,
nothing of it remains.
"""
import functools
import inspect

from . import nest
from .context import context
from .graph import record
from .registry import GradientRule
from .tensor import Tensor, convert_to_tensor

__all__ = ["custom_gradient"]


class _VariableWatcher:
    """Collects the Variables that ops read while the user's function runs."""

    def __init__(self):
        self.variables = []
        self._ids = set()

    def saw(self, variable):
        if variable._id not in self._ids:
            self._ids.add(variable._id)
            self.variables.append(variable)


def custom_gradient(f=None):
    """Decorator: ``f(*x, **kwargs)`` returns ``(y, grad_fn)``; ``grad_fn(*dy)`` returns dx.

    As TensorFlow's: the arguments may be nested lists, tuples and dicts of tensors, and
    ``grad_fn`` returns one gradient per *flattened* input (flat, or in the arguments'
    structure).  If ``f`` reads trainable Variables, ``grad_fn`` must accept ``variables=``
    and return ``(input_grads, variable_grads)``, one per variable, in the order of
    ``variables``.  Keyword arguments of ``f`` are passed through and are not
    differentiated.  On a method, the instance is passed through, not differentiated.
    """
    if f is None:
        return custom_gradient
    return _CustomGradientFunction(f, {})


class _CustomGradientFunction:
    """A function decorated with ``custom_gradient``; bound to an instance, a method.

    It is a descriptor, as TensorFlow's ``Bind``: ``instance.method`` wraps the bound
    method, so ``self`` reaches ``f`` untouched and only the other arguments are inputs.
    Its own state lives in slots: ``functools.wraps(decorated)(other)`` copies the
    ``__dict__`` of one into the other, which must not replace ``other``'s function.
    """

    __slots__ = ("_f", "_cache", "__dict__", "__weakref__")

    def __init__(self, f, cache):
        functools.update_wrapper(self, f)
        self._f = f
        self._cache = cache  # shared with the bound copies: does grad_fn take variables=?

    def __get__(self, instance, owner=None):
        bind = getattr(type(self._f), "__get__", None)
        if instance is None or bind is None:  # a callable object that does not bind stays as is
            return self
        return _CustomGradientFunction(bind(self._f, instance, owner), self._cache)

    def __call__(self, *args, **kwargs):
        return _call(self._f, self._cache, args, kwargs)

    def __repr__(self):
        return f"<custom_gradient {getattr(self._f, '__qualname__', self._f)!r}>"


def _call(f, cache, args, kwargs):
    fname = getattr(f, "__name__", "f")
    flat_args = nest.flatten(args)
    inputs = [a if isinstance(a, Tensor) else convert_to_tensor(a) for a in flat_args]
    watcher = _VariableWatcher()
    ctx = context()
    ctx.watchers.append(watcher)
    ctx.refresh()
    try:
        result, grad_fn = f(*nest.pack_sequence_as(args, inputs), **kwargs)
    finally:
        ctx.watchers.remove(watcher)
        ctx.refresh()
    # Variables passed as arguments (or keyword arguments) are not extra variables.
    input_ids = {t._id for t in inputs}
    input_ids.update(t._id for t in nest.flatten(kwargs) if isinstance(t, Tensor))
    variables = [v for v in watcher.variables if v.trainable and v._id not in input_ids]
    flat = [r if isinstance(r, Tensor) else convert_to_tensor(r) for r in nest.flatten(result)]
    if variables:
        takes_variables = cache.get("takes_variables")
        if takes_variables is None:
            takes_variables = cache["takes_variables"] = _accepts_variables(grad_fn)
        if not takes_variables:
            raise TypeError(
                f"@custom_gradient function '{fname}' reads Variable(s) "
                f"{[v.name for v in variables]}, so its grad_fn must accept a keyword "
                f"argument 'variables' and return (input_grads, variable_grads)")
    flat_grad_fn = _flat_grad_fn(fname, grad_fn, len(inputs), variables)
    if ctx.trace is not None:  # one equation carrying grad_fn traced as a graph of its own
        outputs = ctx.trace.custom_gradient(fname, inputs, variables, flat, flat_grad_fn)
    else:
        outputs = tuple(Tensor(t._value) for t in flat)
    if ctx.tapes or ctx.watchers or ctx.accumulators:  # forward mode's JVP comes from grad_fn too
        rule = GradientRule(_rule_for(fname, flat_grad_fn, variables), saves=(), vectorized=False)
        record(_CustomOp(rule), tuple(inputs) + tuple(variables), outputs, None)
    return nest.pack_sequence_as(result, list(outputs))


class _CustomOp:
    """The op of one custom-gradient call: the shared primitive with this call's rule."""

    __slots__ = ("_rule",)
    name = "CustomGradient"

    def __init__(self, rule):
        self._rule = rule

    def gradient_rule(self, attrs=None):
        return self._rule


def _flat_grad_fn(fname, grad_fn, n_inputs, variables):
    """``grad_fn`` checked and flattened: one gradient per flattened input, then per variable.

    It keeps ``grad_fn``'s calling convention (``variables=`` when there are variables),
    so a trace can call it as it would call ``grad_fn``.
    """
    def flat_grad_fn(*grads, variables=None):
        if variables:
            result = grad_fn(*grads, variables=list(variables))
            if not (isinstance(result, (list, tuple)) and len(result) == 2):
                raise ValueError(f"grad_fn of '{fname}' was given variables=, so it must return "
                                 f"(input_grads, variable_grads)")
            input_grads, var_grads = result
            var_grads = list(var_grads) if isinstance(var_grads, (list, tuple)) else [var_grads]
            if len(var_grads) != len(variables):
                raise ValueError(
                    f"grad_fn of '{fname}' returned {len(var_grads)} variable gradient(s) for "
                    f"{len(variables)} variable(s) {[v.name for v in variables]}; missing for "
                    f"{[v.name for v in variables[len(var_grads):]]}")
        else:
            input_grads, var_grads = grad_fn(*grads), []
        input_grads = nest.flatten(input_grads)
        if len(input_grads) != n_inputs:
            raise ValueError(f"grad_fn of '{fname}' returned {len(input_grads)} gradient(s) for "
                             f"{n_inputs} input(s) (one per flattened input)")
        return (input_grads, var_grads) if variables else input_grads
    flat_grad_fn.__name__ = flat_grad_fn.__qualname__ = getattr(grad_fn, "__name__", "grad_fn")
    return flat_grad_fn


def _rule_for(fname, flat_grad_fn, variables):
    def rule(op, *grads):
        if variables:
            input_grads, var_grads = flat_grad_fn(*grads, variables=variables)
            return input_grads + var_grads
        return flat_grad_fn(*grads)
    rule.__qualname__ = f"custom_gradient({fname})"
    return rule


def _accepts_variables(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "variables" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
