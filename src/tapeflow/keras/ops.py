"""``keras.ops``: Keras 3's numpy-like op names that tapeflow's ops already answer.

Only names whose positional arguments mean the same here and in Keras, with the same
defaults where both have one (a call Keras takes and tapeflow does not fails loudly,
never computes something else).  Left out on purpose, though tapeflow has an op of the
name: ``argmax``/``argmin``/``cumsum`` (Keras's ``axis=None`` flattens, TensorFlow's means
axis 0), ``where`` (one argument: numpy's tuple against TensorFlow's index rows), ``gelu``
(Keras approximates by default), ``one_hot``/``eye``/``linspace`` (their third positional
argument differs), ``tile``/``pad``/``split``/``norm``/``trace``/``svd``/``qr``/``shape``
(numpy's conventions, not TensorFlow's).
"""
from ..core.tensor import convert_to_tensor, is_tensor
from ..ops.arithmetic import abs_ as abs  # noqa: A004 - Keras's name
from ..ops.arithmetic import abs_ as absolute
from ..ops.arithmetic import (
    add, divide, equal, greater, greater_equal, less, less_equal, logical_and, logical_not,
    logical_or, logical_xor, maximum, minimum, multiply, negative, not_equal, subtract,
)
from ..ops.arithmetic import divide as true_divide
from ..ops.arithmetic import floordiv as floor_divide
from ..ops.arithmetic import floormod as mod
from ..ops.arithmetic import pow as power
from ..ops.clip import clip_by_value as clip
from ..ops.creation import ones, ones_like, zeros, zeros_like
from ..ops.elementwise import acos as arccos
from ..ops.elementwise import asin as arcsin
from ..ops.elementwise import asinh as arcsinh
from ..ops.elementwise import atan as arctan
from ..ops.elementwise import atanh as arctanh
from ..ops.elementwise import (
    ceil, cos, cosh, elu, erf, exp, expm1, floor, leaky_relu, log, log1p, reciprocal, relu, relu6,
    round, rsqrt, selu, sigmoid, sign, sin, sinh, softplus, softsign, sqrt, square, stop_gradient,
    tan, tanh,
)
from ..ops.linalg import det, einsum, inv, matmul, solve, tensordot
from ..ops.linalg_decompositions import cholesky, eigh, slogdet
from ..ops.nn import log_softmax, silu, softmax
from ..ops.nn import silu as swish
from ..ops.rearrange import meshgrid, repeat
from ..ops.reduce import count_nonzero
from ..ops.reduce import reduce_all as all  # noqa: A004 - Keras's name
from ..ops.reduce import reduce_any as any  # noqa: A004
from ..ops.reduce import reduce_logsumexp as logsumexp
from ..ops.reduce import reduce_max as max  # noqa: A004
from ..ops.reduce import reduce_mean as mean
from ..ops.reduce import reduce_min as min  # noqa: A004
from ..ops.reduce import reduce_prod as prod
from ..ops.reduce import reduce_std as std
from ..ops.reduce import reduce_sum as sum  # noqa: A004
from ..ops.reduce import reduce_variance as var
from ..ops.shape import broadcast_to, cast, expand_dims, reshape, squeeze, stack, transpose, unstack
from ..ops.shape import concat as concatenate
from ..ops.sorting import argsort, in_top_k, searchsorted, sort, top_k
from ..ops.special import acosh as arccosh
from ..ops.special import atan2 as arctan2
from ..ops.special import divide_no_nan
from ..tracing.control_flow import cond

__all__ = [
    # elementwise
    "abs", "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "ceil",
    "cos", "cosh", "erf", "exp", "expm1", "floor", "log", "log1p", "negative", "reciprocal",
    "round", "rsqrt", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh",
    # two arguments
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod", "power",
    "arctan2", "divide_no_nan", "maximum", "minimum", "clip", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_not",
    "logical_xor",
    # reductions
    "sum", "mean", "max", "min", "prod", "std", "var", "all", "any", "logsumexp",
    "count_nonzero",
    # shapes, creation, sorting
    "reshape", "transpose", "expand_dims", "squeeze", "stack", "unstack", "concatenate",
    "broadcast_to", "cast", "repeat", "meshgrid", "zeros", "ones", "zeros_like", "ones_like",
    "sort", "argsort", "top_k", "in_top_k", "searchsorted",
    # linear algebra
    "matmul", "einsum", "tensordot", "det", "inv", "solve", "cholesky", "eigh", "slogdet",
    # neural network
    "relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "elu", "selu",
    "leaky_relu", "softmax", "log_softmax",
    # tensors and control flow
    "convert_to_tensor", "is_tensor", "stop_gradient", "cond",
]
