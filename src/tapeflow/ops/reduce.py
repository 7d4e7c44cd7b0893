"""Reductions (sum, mean, max, min, prod, logsumexp, variance, norm) and cumulative sums.

Axes are normalized to negative numbers before recording, so that a rule can
put the reduced axes back with a reshape whatever leading axes the cotangent has.
"""
import math

import numpy as np

from ..core.symbolic_dispatch import dispatches_symbols
from ..core.dispatch import apply
from ..core.registry import Inline, def_primitive

from ..core.tensor import Tensor
from ._util import array_module, as_tensor, lead_shape, module_of, norm_axes, one_axis
# The op families stack one way: shape < elementwise < arithmetic < reduce; a family's
# ops and rules use only the families below it (tests/test_import_graph.py checks).
from . import arithmetic as arithmetic_ops, elementwise as elementwise_ops, shape as shape_ops
from .creation import zeros_like
from ..dtypes import is_float_dtype

__all__ = [
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_logsumexp",
    "reduce_variance", "reduce_std", "reduce_any", "reduce_all", "argmax", "argmin",
    "cumsum", "cumprod", "norm", "count_nonzero",
]


def _kept_shape(in_shape, axes):
    """``in_shape`` with the reduced axes (negative, or None for all) set to 1."""
    if axes is None:
        return (1,) * len(in_shape)
    n = len(in_shape)
    return tuple(1 if (i - n) in axes else d for i, d in enumerate(in_shape))


def _reduction(opname, fn, **declaration):
    """Declare a reduction over ``axes``; ``declaration`` is def_primitive's gradient and kernel."""
    def forward(x, axes, keepdims):
        return fn(array_module(x), x, axes, keepdims)
    forward.__qualname__ = f"{opname}.forward"
    return def_primitive(opname, forward, **declaration)


def _sum(xp, x, axes, keepdims):
    if (axes is not None and len(axes) == 1 and axes[0] != -1 and is_float_dtype(x.dtype)
            and x.size >= 65536 and xp is np and x.flags.c_contiguous):
        # Summing one middle axis of a large array: a product with a ones vector runs on BLAS,
        # several times faster than numpy's strided reduction (jacobian cotangents hit this).
        a = axes[0] + x.ndim
        k = x.shape[a]
        out = xp.ones(k, dtype=x.dtype) @ x.reshape(int(np.prod(x.shape[:a])), k, -1)
        kept = x.shape[:a] + ((1,) if keepdims else ()) + x.shape[a + 1:]
        return out.reshape(kept)
    return x.sum(axis=axes, keepdims=keepdims, dtype=x.dtype)


def _mean(xp, x, axes, keepdims):
    # sum / count, not numpy.mean: the same result without numpy.mean's Python-level overhead
    total = _sum(xp, x, axes, keepdims)
    count = x.size // max(total.size, 1) if x.size else 0
    if x.dtype.kind in "iu":  # TensorFlow's integer mean truncates toward zero
        return xp.trunc(total / max(count, 1)).astype(x.dtype)
    if count == 0:
        return xp.full(total.shape, np.nan, dtype=x.dtype)
    if x.dtype.itemsize < 4:  # float16 cannot even hold a count above 65504
        return (total.astype(np.float32) / np.float32(count)).astype(x.dtype)
    return (total / x.dtype.type(count)).astype(x.dtype, copy=False)


def _mean_kernel(in_types, attrs):
    """For a float32/64 input of known shape: ``_mean``'s one sum and one division, with
    the count fixed (compiled graphs; the BLAS path of ``_sum`` is left to ``_mean``)."""
    ((shape, dtype),) = in_types
    axes, keepdims = attrs["axes"], attrs["keepdims"]
    if None in shape or not is_float_dtype(dtype) or dtype.itemsize < 4:
        return None
    size = math.prod(shape)
    if axes is not None and len(axes) == 1 and axes[0] != -1 and size >= 65536:
        return None
    reduced = range(len(shape)) if axes is None else [a + len(shape) for a in axes]
    kept = math.prod(d for i, d in enumerate(shape) if i not in reduced)
    count = size // max(kept, 1) if size else 0
    if count == 0:
        return None
    divisor = dtype.type(count)
    if axes is None and not keepdims and dtype.name in ("float32", "float64"):
        # The whole-array mean of a loss: a float array sums in its own dtype by default, and
        # numpy 2 divides a scalar of that dtype by a Python float in that dtype (NEP 50: the
        # same bits as by ``dtype.type(count)``, without making that scalar every call).
        # np.add.reduce is what ndarray.sum calls, without its Python wrapper (~0.5 us a call).
        # The expression holds nothing but the count, an int.
        return Inline(f"(np.add.reduce({{0}}, None) / {float(int(count))!r})")
    return lambda x: (np.add.reduce(x, axes, dtype, None, keepdims) / divisor).astype(
        dtype, copy=False)


def _restore_reduced(op, t):
    """A reduction's result (or cotangent) reshaped so it broadcasts over the input again."""
    lead = lead_shape(t, len(op.output_shape()))
    return shape_ops.reshape(t, lead + _kept_shape(op.input_shape(), op.get_attr("axes")))


def _spread_forward(g, out_shape, kept, shape, scale):
    lead = g.shape[:g.ndim - len(out_shape)]
    if out_shape != kept:
        g = g.reshape(lead + kept)
    if scale != 1.0:
        g = g * g.dtype.type(scale)
    if math.prod(shape) * math.prod(lead) > 4096:
        return array_module(g).broadcast_to(g, lead + shape)  # a view of a large cotangent
    out = array_module(g).empty(lead + shape, dtype=g.dtype)
    out[...] = g
    return out


def _spread_grad(op, gg):
    out_shape, kept, shape = op.get_attr("out_shape"), op.get_attr("kept"), op.get_attr("shape")
    n = len(shape)
    axes = [i - n for i, (k, d) in enumerate(zip(kept, shape)) if k != d]
    total = reduce_sum(gg, axis=axes, keepdims=True) if axes else gg
    total = shape_ops.reshape(total, lead_shape(gg, n) + out_shape)
    scale = op.get_attr("scale")
    return total * scale if scale != 1.0 else total


# The gradient of Sum and Mean as one op: the cotangent reshaped to keep the reduced axes,
# scaled (by 1/count for a mean) and broadcast over the input's shape.
SPREAD = def_primitive("SpreadReduced", _spread_forward, grad=_spread_grad)


def _spread(op, g, scale=1.0):
    """The cotangent of a sum (times ``scale``): ``g`` broadcast back over the reduced axes."""
    shape = tuple(op.input_shape())
    return apply(SPREAD, (g,), {"out_shape": tuple(op.output_shape()),
                                "kept": _kept_shape(shape, op.get_attr("axes")),
                                "shape": shape, "scale": scale})


def _sum_grad(op, g):
    return _spread(op, g)


def _mean_grad(op, g):
    count = math.prod(op.input_shape()) // max(math.prod(op.output_shape()), 1)
    return _spread(op, g, 1.0 / max(count, 1))


def _extremum_grad(op, g):
    # As TensorFlow: the cotangent is shared equally between tied extreme elements.
    (x,) = op.inputs
    (y,) = op.outputs
    hit = shape_ops.cast(arithmetic_ops.equal(x, _restore_reduced(op, y)), g._value.dtype)
    count = reduce_sum(hit, axis=op.get_attr("axes"), keepdims=True)
    return _restore_reduced(op, g) * hit / count


def _prod_grad(op, g):
    # d prod / d x_j is the product of the other elements (see _products_of_others).
    (x,) = op.inputs
    axes = op.get_attr("axes")
    n = len(op.in_shapes[0])
    axes = tuple(range(-n, 0)) if axes is None else axes
    kept = [a for a in range(-n, 0) if a not in axes]
    perm = [a + n for a in kept] + [a + n for a in axes]
    xt = shape_ops.transpose(x, perm)
    others = _products_of_others(shape_ops.reshape(xt, xt._value.shape[:len(kept)] + (-1,)))
    others = shape_ops.transpose(shape_ops.reshape(others, xt._value.shape), [int(i) for i in np.argsort(perm)])
    return _restore_reduced(op, g) * others


_BLOCK = 64


def _products_of_others(flat):
    """For each element along the last axis, the product of all the others.

    No division, so zeros are exact, and built from Prod itself, so it can be
    differentiated again to any order.  Up to _BLOCK elements: a Prod of a
    K x K array with the element masked to 1.  Longer: blocks of _BLOCK, each
    element's product-of-others within its block times its block's
    product-of-others among the block products (recursively), O(K * _BLOCK).
    """
    k = flat._value.shape[-1]
    if k <= _BLOCK:
        off_diagonal = Tensor(~module_of(flat._value).eye(k, dtype=bool))
        return reduce_prod(shape_ops.where(off_diagonal, shape_ops.expand_dims(flat, -2), 1.0), axis=-1)
    nblocks = -(-k // _BLOCK)
    lead = flat._value.shape[:-1]
    padding = [[0, 0]] * len(lead) + [[0, nblocks * _BLOCK - k]]
    blocks = shape_ops.reshape(shape_ops.pad(flat, padding, constant_values=1.0), lead + (nblocks, _BLOCK))
    within = _products_of_others(blocks)
    between = _products_of_others(reduce_prod(blocks, axis=-1))
    whole = shape_ops.reshape(within * shape_ops.expand_dims(between, -1), lead + (nblocks * _BLOCK,))
    return whole[..., :k]


SUM = _reduction("Sum", _sum, grad=_sum_grad)
MEAN = _reduction("Mean", _mean, grad=_mean_grad, specialize=_mean_kernel)
MAX = _reduction("Max", lambda xp, x, a, k: x.max(axis=a, keepdims=k),
                 grad=_extremum_grad, saves=("inputs", "outputs"))
MIN = _reduction("Min", lambda xp, x, a, k: x.min(axis=a, keepdims=k),
                 grad=_extremum_grad, saves=("inputs", "outputs"))
PROD = _reduction("Prod", lambda xp, x, a, k: x.prod(axis=a, keepdims=k, dtype=x.dtype),
                  grad=_prod_grad, saves="inputs")
ANY = _reduction("Any", lambda xp, x, a, k: xp.any(x, axis=a, keepdims=k),
                 not_differentiable=True)
ALL = _reduction("All", lambda xp, x, a, k: xp.all(x, axis=a, keepdims=k),
                 not_differentiable=True)


def _reduce(op, input_tensor, axis, keepdims):
    x = as_tensor(input_tensor)
    axes = norm_axes(axis, x._value.ndim)
    if axes is not None and len(axes) == 0:
        return x
    return apply(op, (x,), {"axes": axes, "keepdims": bool(keepdims)})


@dispatches_symbols("math.reduce_sum")
def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(SUM, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_mean")
def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MEAN, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_max")
def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MAX, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_min")
def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(MIN, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_prod")
def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(PROD, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_any")
def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(ANY, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_all")
def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _reduce(ALL, input_tensor, axis, keepdims)


@dispatches_symbols("math.reduce_logsumexp")
def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    x = as_tensor(input_tensor)
    m = elementwise_ops.stop_gradient(reduce_max(x, axis=axis, keepdims=True))
    m = shape_ops.where(elementwise_ops.is_finite(m), m, zeros_like(m))
    out = elementwise_ops.log(reduce_sum(elementwise_ops.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else squeeze_axes(out, x._value.ndim, axis)


def squeeze_axes(t, ndim, axis):
    axes = norm_axes(axis, ndim)
    keep = [d for i, d in enumerate(t._value.shape) if axes is not None and (i - ndim) not in axes]
    return shape_ops.reshape(t, keep)


@dispatches_symbols("math.reduce_variance")
def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    x = as_tensor(input_tensor)
    mean = reduce_mean(x, axis=axis, keepdims=True)
    d = x - mean
    return reduce_mean(d * d, axis=axis, keepdims=keepdims)


@dispatches_symbols("math.reduce_std")
def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return elementwise_ops.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


@dispatches_symbols("norm")
def norm(tensor, ord="euclidean", axis=None, keepdims=False, name=None):  # noqa: A002
    """Vector norms (euclidean, 1, inf, or any p > 0) over ``axis``; 'fro' for matrices."""
    x = as_tensor(tensor)
    if not (axis is None or isinstance(axis, int)) and len(axis) == 2 and \
            ord not in ("euclidean", "fro"):
        raise NotImplementedError(f"norm: matrix norm ord={ord!r} over two axes (only 'fro' and "
                                  f"'euclidean' are supported)")
    if ord in ("euclidean", "fro", 2, 2.0):
        return elementwise_ops.sqrt(reduce_sum(x * x, axis=axis, keepdims=keepdims))
    if ord in (1, 1.0):
        return reduce_sum(abs(x), axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return reduce_max(abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and ord > 0:
        return reduce_sum(abs(x) ** float(ord), axis=axis, keepdims=keepdims) ** (1.0 / ord)
    raise ValueError(f"norm: unsupported ord {ord!r}")


def _arg(fn):
    def forward(x, axis):
        return fn(array_module(x), x, axis).astype(np.int64)
    return forward


_INTEGER_RESULT = "an integer result: never recorded, so no rule"
ARGMAX = def_primitive("ArgMax", _arg(lambda xp, x, a: xp.argmax(x, axis=a)),
                       no_gradient=_INTEGER_RESULT)
ARGMIN = def_primitive("ArgMin", _arg(lambda xp, x, a: xp.argmin(x, axis=a)),
                       no_gradient=_INTEGER_RESULT)


@dispatches_symbols("math.argmax")
def argmax(input, axis=None, output_type=np.int64, name=None):  # noqa: A002
    x = as_tensor(input)
    return shape_ops.cast(apply(ARGMAX, (x,), {"axis": 0 if axis is None else int(axis)}), output_type)


@dispatches_symbols("math.argmin")
def argmin(input, axis=None, output_type=np.int64, name=None):  # noqa: A002
    x = as_tensor(input)
    return shape_ops.cast(apply(ARGMIN, (x,), {"axis": 0 if axis is None else int(axis)}), output_type)


def count_nonzero(input, axis=None, keepdims=False, dtype=np.int64, name=None):  # noqa: A002
    x = as_tensor(input)
    return reduce_sum(shape_ops.cast(arithmetic_ops.not_equal(x, 0), dtype), axis=axis, keepdims=keepdims)


# --- cumulative sums and products ----------------------------------------------------------
def _cumulative(x, axis, exclusive, reverse, kind):
    xp = array_module(x)
    if reverse:
        x = xp.flip(x, axis)
    fn = xp.cumsum if kind == "sum" else xp.cumprod
    out = fn(x, axis=axis, dtype=x.dtype)
    if exclusive:
        fill = 0 if kind == "sum" else 1
        pad = [(0, 0)] * x.ndim
        pad[axis] = (1, 0)
        out = xp.pad(out, pad, constant_values=fill)
        out = xp.take(out, xp.arange(x.shape[axis]), axis=axis)
    if reverse:
        out = xp.flip(out, axis)
    return out


def _cumsum_grad(op, g):
    return cumsum(g, axis=op.get_attr("axis"), exclusive=op.get_attr("exclusive"),
                  reverse=not op.get_attr("reverse"))


def _cumprod_grad(op, g):
    # TensorFlow's rule (divides by x, so it is nan where x == 0, as there)
    (x,) = op.inputs
    (y,) = op.outputs
    axis, exclusive, reverse = (op.get_attr(k) for k in ("axis", "exclusive", "reverse"))
    return cumsum(g * y, axis=axis, exclusive=exclusive, reverse=not reverse) / x


CUMSUM = def_primitive("Cumsum", lambda x, axis, exclusive, reverse: _cumulative(
    x, axis, exclusive, reverse, "sum"), grad=_cumsum_grad)
CUMPROD = def_primitive("Cumprod", lambda x, axis, exclusive, reverse: _cumulative(
    x, axis, exclusive, reverse, "prod"), grad=_cumprod_grad, saves=("inputs", "outputs"))


@dispatches_symbols("math.cumsum")
def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    x = as_tensor(x)
    axis = one_axis(axis, x._value.ndim, "cumsum")
    return apply(CUMSUM, (x,), {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse)})


@dispatches_symbols("math.cumprod")
def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    x = as_tensor(x)
    axis = one_axis(axis, x._value.ndim, "cumprod")
    return apply(CUMPROD, (x,), {"axis": axis, "exclusive": bool(exclusive), "reverse": bool(reverse)})

