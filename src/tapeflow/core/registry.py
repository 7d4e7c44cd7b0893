"""The op registry: every differentiable primitive by name, and its gradient rule.

A primitive is a name, a forward function written in array code (it gets
numpy or CuPy arrays and returns arrays), and a gradient rule registered under
the same name.  Rules are written in tapeflow ops on Tensors, so gradients are
themselves differentiable (Hessians, Newton steps, input-gradient penalties).
tapeflow's own ops are declared whole, in one ``def_primitive`` statement each:
forward, gradient (a rule right above it, ``not_differentiable=True``, or the
reason there is none) and compiled-graph kernel, as JAX keeps ``defjvp`` under
each primitive (tests/core/test_primitive_declarations.py checks).

A rule has TensorFlow's signature ``rule(op, *output_grads) -> input grads``;
``op`` is the recorded node (``op.inputs``, ``op.outputs``, ``op.get_attr``,
``op.needs_input_grad``).  It declares what it reads, so that a record keeps
nothing else alive, and whether it holds for cotangents with extra leading
axes (``vectorized``): that is what lets a jacobian run as one backward pass.

Public entry points: ``RegisterGradient``, ``NotDifferentiable`` and
``gradient_override_map``; ``dispatch.primitive`` makes a new op from array code
(its gradient given with it, or registered later).
"""
import contextlib

from .context import context

__all__ = [
    "Primitive", "GradientRule", "NOT_DIFFERENTIABLE", "def_primitive", "define_primitive",
    "RegisterGradient", "NotDifferentiable", "gradient_override_map", "registered_primitives",
    "lookup_gradient", "lookup_primitive", "Inline",
]

NOT_DIFFERENTIABLE = object()  # a rule slot that says: gradients stop here (None)

_PRIMITIVES = {}
_GRADIENTS = {}


class GradientRule:
    """A registered gradient function and what it needs from the forward pass."""

    __slots__ = ("fn", "saves_inputs", "saves_outputs", "vectorized", "origin")

    def __init__(self, fn, saves, vectorized):
        saves = (saves,) if isinstance(saves, str) else tuple(saves)
        unknown = set(saves) - {"inputs", "outputs"}
        if unknown:
            raise ValueError(f"saves= takes 'inputs' and/or 'outputs', not {sorted(unknown)}")
        self.fn = fn
        self.saves_inputs = "inputs" in saves
        self.saves_outputs = "outputs" in saves
        self.vectorized = bool(vectorized)
        self.origin = _origin(fn)

    def __call__(self, op, *grads):
        return self.fn(op, *grads)

    def __repr__(self):
        return f"<GradientRule {self.origin}>"


class Primitive:
    """A named op: its forward in array code and how many outputs it makes.

    ``stateful`` ops (random draws) give new results at every run: a traced graph
    never folds, merges or drops them.  An ``effect`` op (``tf.print``) is there for
    what it does, not what it returns: it has no outputs, and a trace records it
    without running it, so it happens at every call of the graph and never while tracing.  ``specialize(in_types, attrs)``, when the op's
    declaration gives it, returns a kernel for inputs of known (shape, dtype) that computes
    exactly what ``forward`` does, with less dispatch (or None): compiled graphs use it.
    It may return an ``Inline`` expression instead, which a compiled graph writes in
    place of a call.  ``no_gradient`` is the declared reason an op has no rule (None
    when it has one, or is not differentiable).
    """

    __slots__ = ("name", "forward", "num_outputs", "origin", "stateful", "effect", "specialize",
                 "no_gradient")

    def __init__(self, name, forward, num_outputs=1, stateful=False, effect=False,
                 specialize=None, no_gradient=None):
        self.name = name
        self.origin = _origin(forward)
        self.forward = _quiet_while_tracing(forward) if effect else forward
        self.num_outputs = 0 if effect else num_outputs
        self.stateful = stateful or effect
        self.effect = effect
        self.specialize = specialize
        self.no_gradient = no_gradient

    def gradient_rule(self, attrs=None):
        """This op's rule now: a GradientRule, NOT_DIFFERENTIABLE, or None (none registered)."""
        name = self.name
        overrides = context().overrides
        if overrides:
            for mapping in reversed(overrides):
                if name in mapping:
                    name = mapping[name]
                    break
        return _GRADIENTS.get(name)

    def __repr__(self):
        return f"<Primitive {self.name}>"


def _quiet_while_tracing(forward):
    # A trace runs ops on example arrays to learn shapes; a branch graph of tf.cond run so
    # would print or assert on them.  An effect happens only when no trace is recording.
    def effect(*arrays, **attrs):
        if context().trace is not None:
            return ()
        return forward(*arrays, **attrs)
    effect.__wrapped__ = forward
    return effect


class Inline(str):
    """A Python expression over the operands ``{0}``, ``{1}``... that computes an op's forward
    (``"{0} + {1}"`` for ``operator.add``); it may name ``np`` (numpy, whose ufuncs CuPy
    arrays dispatch to CuPy).  Written by op modules only: a compiled graph fills in its own
    variable names, never text from a graph."""

    __slots__ = ()


def _origin(fn):
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def def_primitive(name, forward, *, grad=None, saves=(), vectorized=True,
                  not_differentiable=False, no_gradient=None, specialize=None,
                  num_outputs=1, stateful=False, effect=False):
    """Declare a primitive op in one statement: its forward, its gradient, its kernel.

    The gradient is exactly one of ``grad=rule`` (``rule(op, *grads)``, keeping what
    ``saves`` names; ``vectorized=False`` where it cannot take extra leading cotangent
    axes), ``not_differentiable=True`` (gradients through it are None) or
    ``no_gradient="why"`` (no rule: a gradient through it raises LookupError naming it).
    ``specialize`` is the compiled graphs' kernel maker (``Primitive``).  The same
    name from different code is an error.
    """
    rule = _declared_rule(name, grad, saves, vectorized, not_differentiable, no_gradient)
    op = define_primitive(name, forward, num_outputs=num_outputs, stateful=stateful,
                          effect=effect, specialize=specialize, no_gradient=no_gradient)
    if rule is not None:
        _store_rule(name, rule, override=False)
    return op


def _declared_rule(name, grad, saves, vectorized, not_differentiable, no_gradient):
    """What a declaration stores as ``name``'s gradient: a rule, NOT_DIFFERENTIABLE, or None."""
    given = [kind for kind, present in (("grad=", grad is not None),
                                        ("not_differentiable=True", not_differentiable),
                                        ("no_gradient=", no_gradient is not None)) if present]
    if len(given) != 1:
        raise TypeError(
            f"def_primitive('{name}') declares its gradient with exactly one of grad=, "
            f"not_differentiable=True or no_gradient='why'; "
            f"got {' and '.join(given) if given else 'none'}")
    if no_gradient is not None and not (isinstance(no_gradient, str) and no_gradient):
        raise TypeError(f"def_primitive('{name}'): no_gradient= is the reason (a string), "
                        f"not {no_gradient!r}")
    if grad is not None and not callable(grad):
        raise TypeError(f"def_primitive('{name}'): grad= is a rule(op, *grads), not {grad!r}")
    if grad is None and (saves or not vectorized):
        raise TypeError(f"def_primitive('{name}'): saves= and vectorized= describe grad=, "
                        f"which is not given")
    if grad is not None:
        return GradientRule(grad, saves, vectorized)
    return NOT_DIFFERENTIABLE if not_differentiable else None


def define_primitive(name, forward, *, num_outputs=1, stateful=False, effect=False,
                     specialize=None, no_gradient=None):
    """Register a primitive whose gradient is registered apart (``tf.primitive``'s users do,
    with ``RegisterGradient``); tapeflow's own ops are declared whole by ``def_primitive``."""
    existing = _PRIMITIVES.get(name)
    if existing is not None and existing.origin != _origin(forward):
        raise ValueError(f"An op named '{name}' is already registered by {existing.origin}")
    op = _PRIMITIVES[name] = Primitive(name, forward, num_outputs, stateful, effect,
                                       specialize, no_gradient)
    return op


def _store_rule(name, rule, override):
    existing = _GRADIENTS.get(name)
    if existing is not None and not override:
        existing_origin = "NotDifferentiable" if existing is NOT_DIFFERENTIABLE else existing.origin
        new_origin = "NotDifferentiable" if rule is NOT_DIFFERENTIABLE else rule.origin
        if existing_origin != new_origin:
            raise KeyError(
                f"A gradient for op '{name}' is already registered ({existing_origin}). "
                f"Pass override=True to replace it everywhere, or use "
                f"tapeflow.gradient_override_map({{'{name}': 'YourGradName'}}) to replace it in a scope.")
    _GRADIENTS[name] = rule


class RegisterGradient:
    """Register a gradient function for an op type, as ``tf.RegisterGradient``.

    The function is ``grad_fn(op, *grads)`` and returns one gradient (or None)
    per input.  By default the record keeps the op's inputs and outputs so the
    function may read ``op.inputs`` and ``op.outputs``; pass ``saves=`` to keep
    less.  ``vectorized=True`` promises the function works when each ``grad``
    carries extra leading axes (jacobians then take one pass).  Registering a
    name that already has a gradient from other code raises unless
    ``override=True``; for a scoped change use ``gradient_override_map``.
    """

    def __init__(self, op_type, *, saves=("inputs", "outputs"), vectorized=False, override=False):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type
        self._saves = saves
        self._vectorized = vectorized
        self._override = override

    def __call__(self, fn):
        _store_rule(self._op_type, GradientRule(fn, self._saves, self._vectorized), self._override)
        return fn


def NotDifferentiable(op_type):  # noqa: N802 - TensorFlow's name
    """Declare that ``op_type`` has no gradient: gradients through it are None."""
    _store_rule(op_type, NOT_DIFFERENTIABLE, override=False)


@contextlib.contextmanager
def gradient_override_map(mapping):
    """Within the block, ops record the gradient registered under another name.

    ``with tf.gradient_override_map({"Relu": "MyReluGrad"}): y = model(x)``
    makes every Relu recorded inside use the rule registered as "MyReluGrad",
    also for layers and models built before the block.
    """
    for op_name, grad_name in mapping.items():
        if grad_name not in _GRADIENTS:
            raise LookupError(f"gradient_override_map: no gradient registered under '{grad_name}' "
                              f"(to use for '{op_name}')")
    context().overrides.append(dict(mapping))
    try:
        yield
    finally:
        context().overrides.pop()


def lookup_gradient(name):
    return _GRADIENTS.get(name)


def lookup_primitive(name):
    """The registered Primitive named ``name``, or None."""
    return _PRIMITIVES.get(name)


def registered_primitives():
    """{name: Primitive} for every registered op."""
    return dict(_PRIMITIVES)
