"""The steps every backward walk shares, done once, here.

Two walks run gradient rules in reverse: the tape's (``core/backprop.py``, over
the nodes recorded on a tape) and a nested graph's (``tracing/graph_vjp.py``,
over the equations of a Graph run again on Tensors).  Each walk supplies only
how to visit its nodes and read their inputs, outputs and attributes; these
functions do the rest the same way for both:

* ``rule_fn``: an op's rule, the one "No gradient defined" LookupError when it
  has none (``no_gradient_error``, also used by forward mode);
* ``fill_zeros``: zero cotangents for the outputs nothing flowed into, when
  another output of the same node did get one;
* ``run_rule``: call the rule, then each input's cotangent is converted, cast
  back to the input's dtype, summed back to its shape (``unbroadcast``, leading
  jacobian axes kept) and accumulated (``accumulate``).
"""
import math

import numpy as np

from .. import backend
from .array_rows import sums_rows_by_blas
from .dispatch import apply
from .installed_ops import OPS
from .registry import NOT_DIFFERENTIABLE, Inline, def_primitive
from .tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import is_float_dtype

__all__ = ["no_gradient_error", "rule_fn", "fill_zeros", "run_rule", "accumulate",
           "unbroadcast", "lead_shape"]


def no_gradient_error(op_name, why=None):
    """The error for an op with no registered gradient; ``why`` replaces the hint to add one."""
    hint = why or f"Register one with tapeflow.RegisterGradient('{op_name}')."
    return LookupError(
        f"No gradient defined for operation '{op_name}' (op type: {op_name}). {hint}")


def rule_fn(op, rule):
    """The function of ``op``'s gradient ``rule``; None where gradients stop (NOT_DIFFERENTIABLE),
    the LookupError where ``op`` has no rule at all."""
    if rule is None:
        raise no_gradient_error(op.name)
    return None if rule is NOT_DIFFERENTIABLE else rule.fn


def fill_zeros(out_grads, out_meta, lead, like):
    """``out_grads`` with zeros (``lead`` axes + the output's (shape, dtype) in ``out_meta``)
    where an output got no cotangent; ``like`` is an array on the device they belong on."""
    return [g if g is not None else OPS.zeros_on(tuple(lead) + tuple(meta[0]), meta[1], like)
            for g, meta in zip(out_grads, out_meta)]


def run_rule(fn, op, out_grads, in_keys, in_meta, needs, grads, batch_ndim, lazy=False):
    """Call rule ``fn(op, *out_grads)`` and add the cotangent it returns for each input that
    ``needs`` one to ``grads[in_keys[k]]``, cast to and summed back to ``in_meta[k]``
    (shape, dtype) behind ``batch_ndim`` leading axes."""
    in_grads = fn(op, *out_grads)
    if in_grads.__class__ is not tuple and in_grads.__class__ is not list:
        in_grads = (in_grads,)
    if len(in_grads) != len(in_keys):
        raise ValueError(f"The gradient of '{op.op.name}' returned {len(in_grads)} gradients "
                         f"for {len(in_keys)} inputs")
    for k, g in enumerate(in_grads):
        if g is None or not needs[k]:
            continue
        shape, dtype = in_meta[k]
        if g.__class__ is not Tensor:
            g = _as_tensor(g, dtype)
        value = g._value
        if value.dtype != dtype:
            g = OPS.cast(g, dtype)  # e.g. back to an integer source's dtype: dropped at the end
        if (value.shape[batch_ndim:] if batch_ndim else value.shape) != shape:
            g = unbroadcast(g, shape, batch_ndim)
        accumulate(grads, in_keys[k], g, lazy)


def _as_tensor(g, dtype):
    if isinstance(g, Variable):
        return g.value()  # its value now: a later assign must not change the gradient
    if isinstance(g, Tensor):
        return g  # a traced tensor, say; cast below if its dtype differs
    return convert_to_tensor(g, dtype=dtype)


def accumulate(grads, key, g, lazy=False):
    """Add cotangent ``g`` to ``grads[key]``.  ``lazy`` collects a list instead of adding (the
    caller sums it in one go when needed), for a pass that nothing records."""
    prev = grads.get(key)
    if prev is None:
        grads[key] = g
    elif not lazy:
        grads[key] = prev + g
    elif prev.__class__ is list:
        prev.append(g)
    else:
        grads[key] = [prev, g]


# --- summing a cotangent back to a broadcast input's shape ---------------------------------------
def unbroadcast(g, shape, batch_ndim=0):
    """Sum ``g`` (batch axes + a broadcast shape) back down to batch axes + ``shape``."""
    return apply(_SUM_TO_SHAPE, (g,), {"shape": tuple(shape), "batch_ndim": batch_ndim})


def _summed_axes(gshape, shape, batch_ndim):
    extra = len(gshape) - batch_ndim - len(shape)
    axes = list(range(batch_ndim, batch_ndim + extra))
    for i, d in enumerate(shape):
        if d == 1 and gshape[batch_ndim + extra + i] != 1:
            axes.append(batch_ndim + extra + i)
    return axes


def _blas_rows(gshape, axes, batch_ndim, dtype):
    """How many rows a large float sum over ``axes`` adds up as a product with ones (the axes
    right after the batch ones, ``array_rows``), or 0 for numpy's sum."""
    if not sums_rows_by_blas(dtype, math.prod(gshape)) or \
            list(axes) != list(range(batch_ndim, batch_ndim + len(axes))):
        return 0
    return math.prod(gshape[batch_ndim:batch_ndim + len(axes)])


def _sum_to_shape(g, shape, batch_ndim):
    gshape = g.shape
    axes = _summed_axes(gshape, shape, batch_ndim)
    rows = _blas_rows(gshape, axes, batch_ndim, g.dtype) if axes else 0
    if rows:  # (N, C) -> (C,) and the like: BLAS's gemv, as the compiled kernel runs it
        g = backend.array_module(g).ones(rows, g.dtype) @ g.reshape(
            gshape[:batch_ndim] + (rows, -1))
    elif axes:
        g = g.sum(axis=tuple(axes), dtype=g.dtype)
    return g.reshape(gshape[:batch_ndim] + tuple(shape))


def _sum_to_shape_grad(op, g):
    in_shape, nb, shape = op.input_shape(), op.get_attr("batch_ndim"), op.get_attr("shape")
    lead = lead_shape(g, len(op.output_shape()))
    extra = len(in_shape) - nb - len(shape)
    kept = lead + tuple(in_shape[:nb]) + (1,) * extra + shape
    return OPS.broadcast_to(OPS.reshape(g, kept), lead + tuple(in_shape))


def _sum_to_shape_kernel(in_types, attrs):
    """With the cotangent's shape known, the axes ``_sum_to_shape`` would sum are fixed."""
    ((gshape, dtype),) = in_types
    shape, batch_ndim = attrs["shape"], attrs["batch_ndim"]
    if None in gshape:
        return None
    axes = _summed_axes(gshape, shape, batch_ndim)
    out_shape = tuple(gshape[:batch_ndim]) + tuple(shape)
    if not axes:
        return lambda g: g.reshape(out_shape)
    rows = _blas_rows(gshape, axes, batch_ndim, dtype)
    if rows:
        ones = np.ones(rows, dtype)  # read only, shared by every call
        stacked = tuple(gshape[:batch_ndim]) + (rows, math.prod(gshape) // rows // max(
            math.prod(gshape[:batch_ndim]), 1))
        return lambda g: (ones @ g.reshape(stacked)).reshape(out_shape)
    axes = tuple(axes)
    summed = tuple(d for i, d in enumerate(gshape) if i not in axes)
    if summed == out_shape and is_float_dtype(dtype):
        # (32, 30) -> (30,): the sum has the shape already, and a float array sums in its
        # own dtype by default; the axes are ints, so the expression holds nothing but them.
        return Inline(f"{{0}}.sum(axis={tuple(int(a) for a in axes)!r})")
    return lambda g: g.sum(axis=axes, dtype=dtype).reshape(out_shape)


_SUM_TO_SHAPE = def_primitive("SumToShape", _sum_to_shape, grad=_sum_to_shape_grad,
                              specialize=_sum_to_shape_kernel)


def lead_shape(g, out_ndim):
    """The extra leading (jacobian) axes of cotangent ``g`` for an output of rank ``out_ndim``."""
    shape = g._value.shape
    return tuple(shape[:len(shape) - out_ndim])
