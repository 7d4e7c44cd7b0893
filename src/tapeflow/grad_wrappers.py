"""Function wrappers that change how gradients flow through a function, built on
``custom_gradient``: ``grad_pass_through`` and ``recompute_grad``.

``recompute_grad(f)`` trades compute for memory: the forward pass runs ``f``
with every tape paused, so none of ``f``'s intermediate tensors are kept for the
backward pass; only its inputs are.  When a gradient is asked for, ``f`` runs
again under a fresh tape and that tape's gradient is returned.  That gradient
is itself a recomputed function of the inputs and the cotangents, so a tape
recording the backward pass can differentiate it again (to any order).
"""
import functools

from .core import nest
from .core.custom_gradient import custom_gradient
from .core.tape import GradientTape, paused_tapes
from .core.tensor import Tensor
from .dtypes import is_inexact_dtype

__all__ = ["grad_pass_through", "recompute_grad"]


def grad_pass_through(f):
    """``f`` forward, the identity backward: ``d f(x) / dx`` is taken as 1.

    As TensorFlow's, for a straight-through estimator (``grad_pass_through(tf.round)``) or
    to let a gradient through an assignment (``grad_pass_through(v.assign)``).  Variables
    ``f`` reads get no gradient.
    """
    @custom_gradient
    def _pass_through(*args, **kwargs):
        def grad(*dys, variables=None):
            if variables is not None:
                return list(dys), [None] * len(variables)
            return list(dys)
        return f(*args, **kwargs), grad

    return functools.wraps(f)(_pass_through)


def recompute_grad(f):
    """``f`` whose intermediates are recomputed in the backward pass instead of stored.

    ``f(*args, **kwargs)`` returns a tensor or a structure of tensors; the tensors in
    ``args`` (which may be lists, tuples or dicts of them, as TensorFlow allows) are
    differentiated, ``kwargs`` are not.  Trainable Variables ``f`` reads get their
    gradients too.  ``f`` should compute the same thing when run again: random ops
    inside it draw anew (pass the randomness in as an argument to keep it).
    """
    flat = _recompute_flat(f)

    @functools.wraps(f)
    def recomputed(*args, **kwargs):
        if all(isinstance(a, Tensor) for a in args):
            return flat(*args, **kwargs)
        leaves = nest.flatten(args)
        where = [k for k, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]

        def on_leaves(*tensors, **kw):  # f again, on the structure it was called with
            filled = list(leaves)
            for k, t in zip(where, tensors):
                filled[k] = t
            return f(*nest.pack_sequence_as(args, filled), **kw)

        on_leaves.__name__ = getattr(f, "__name__", "f")
        return _recompute_flat(on_leaves)(*[leaves[k] for k in where], **kwargs)

    return recomputed


def _recompute_flat(f):
    """recompute_grad for an ``f`` whose positional arguments are tensors."""
    @custom_gradient
    def _recomputed(*args, **kwargs):
        with paused_tapes():  # record nothing: f's intermediates die here
            result = f(*args, **kwargs)

        def grad(*dys, variables=None):
            variables = list(variables or [])
            floats = [is_inexact_dtype(a._value.dtype) for a in args]
            # The vector-Jacobian product is itself a recomputed function of (args, dys): a tape
            # recording this backward pass sees one node from them, and differentiating it again
            # re-runs f once more (to any order).
            vjp = _recompute_flat(_vjp_of(f, kwargs, floats, variables))
            grads = nest.flatten(vjp(*args, *dys))
            grads = iter(grads)
            input_grads = [next(grads) if is_float else None for is_float in floats]
            if variables:
                return input_grads, list(grads)
            return input_grads

        return result, grad

    return functools.wraps(f)(_recomputed)


def _vjp_of(f, kwargs, floats, variables):
    """``vjp(*args, *dys)``: the gradients of ``sum(f(*args) * dys)`` with respect to the float
    ``args`` and then ``variables``, computed on a fresh tape from fresh copies of ``args``."""
    n = len(floats)

    def vjp(*args_and_dys):
        args, dys = args_and_dys[:n], args_and_dys[n:]
        fresh = [_source(a, args[:i]) if is_float else a
                 for i, (a, is_float) in enumerate(zip(args, floats))]
        sources = [t for t, is_float in zip(fresh, floats) if is_float] + list(variables)
        with GradientTape() as tape:
            tape.watch(sources)
            again = nest.flatten(f(*fresh, **kwargs))
        return tape.gradient(again, sources, output_gradients=list(dys),
                             unconnected_gradients="zero")

    vjp.__name__ = vjp.__qualname__ = f"vjp_of_{getattr(f, '__name__', 'f')}"
    return vjp


def _source(arg, earlier):
    """``arg`` as a source for a new tape.  An argument another tape recorded gets a copy without
    a graph node (a new tape records ops only on its own nodes and on node-less tensors it
    watches), as does a repeated one (each argument gets its own gradient).  A node-less
    argument is used as it is, so that a tape recording this call (a higher derivative, one
    recomputation down) still sees the computation reach it."""
    if arg._node is not None or any(e is arg for e in earlier):
        return Tensor(arg._value)
    return arg
