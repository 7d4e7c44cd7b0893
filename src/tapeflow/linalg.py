"""``tapeflow.linalg``: TensorFlow's linear-algebra namespace."""
from .ops.clip import global_norm  # noqa: F401
from .ops.creation import eye  # noqa: F401
from .ops.linalg import (  # noqa: F401
    band_part, det, einsum, inv, matmul, matvec, solve, tensordot, trace,
)
from .ops.linalg_decompositions import (  # noqa: F401
    cholesky, cholesky_solve, eigh, eigvalsh, logdet, lstsq, pinv, qr, slogdet, svd,
    triangular_solve,
)
from .ops.nn import l2_normalize  # noqa: F401
from .ops.rearrange import matrix_diag as diag, matrix_diag_part as diag_part  # noqa: F401
from .ops.reduce import norm  # noqa: F401
from .ops.shape import matrix_transpose  # noqa: F401

adjoint = matrix_transpose
