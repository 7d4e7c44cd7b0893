"""``tapeflow.math``: TensorFlow's math namespace."""
from .ops.arithmetic import (  # noqa: F401
    abs_ as abs, add, add_n, divide, equal, floordiv, floormod, greater, greater_equal, less,
    less_equal, logical_and, logical_not, logical_or, logical_xor, maximum, minimum, multiply,
    negative, not_equal, pow, squared_difference, subtract,
)
from .ops.elementwise import (  # noqa: F401
    acos, asin, asinh, atan, atanh, ceil, cos, cosh, erf, exp, expm1, floor, is_finite, is_inf,
    is_nan, log, log1p, reciprocal, round, rsqrt, sigmoid, sign, sin, sinh, softplus, softsign,
    sqrt, square, tan, tanh,
)
from .ops.reduce import (  # noqa: F401
    argmax, argmin, count_nonzero, cumprod, cumsum, reduce_all, reduce_any, reduce_logsumexp,
    reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance,
)
from .ops.nn import l2_normalize  # noqa: F401
from .ops.confusion import confusion_matrix  # noqa: F401
from .ops.sorting import in_top_k, top_k  # noqa: F401
from .ops.segment import (  # noqa: F401
    segment_max, segment_mean, segment_min, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_sum,
)
from .ops.special import (  # noqa: F401
    acosh, atan2, divide_no_nan, multiply_no_nan, nextafter, reduce_euclidean_norm, xdivy, xlog1py,
    xlogy,
)

truediv = divide
mod = floormod
