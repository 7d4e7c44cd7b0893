"""tapeflow: TensorFlow's GradientTape API on its own reverse-mode autodiff, over numpy.

``import tapeflow as tf`` runs code written for ``tf.GradientTape``.
"""
from .allocator import keep_freed_memory as _keep_freed_memory
_keep_freed_memory()  # before the first large array: glibc keeps what a step frees (allocator.py)
from . import dtypes, image, linalg, math, nn, random  # noqa: F401
from . import optimizers  # noqa: F401
from . import losses, metrics  # noqa: F401
from . import activations, callbacks, initializers, layers, models, regularizers  # noqa: F401
from . import constraints  # noqa: F401
from . import keras  # noqa: F401
from . import autodiff  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .core import nest  # noqa: F401
from .core.custom_gradient import custom_gradient  # noqa: F401
from .core.functional import flatten, gradient, hessian, hessian_vector_product, unflatten  # noqa: F401
from .core.dispatch import primitive  # noqa: F401
from .core.registry import (  # noqa: F401
    NotDifferentiable, RegisterGradient, gradient_override_map, registered_primitives,
)
from .core.tape import GradientTape, UnconnectedGradients  # noqa: F401
from .core.context import init_scope  # noqa: F401
from .tracing import TensorSpec, TraceError, function  # noqa: F401
from .tracing import autograph  # noqa: F401
from .tracing.control_flow import cond, map_fn, while_loop  # noqa: F401
from .tracing.switch import case, switch_case  # noqa: F401
from . import debugging, errors  # noqa: F401
from .tensor_array import TensorArray  # noqa: F401
from .debugging import Assert, assert_equal, assert_greater, assert_less, assert_rank  # noqa: F401
from . import config  # noqa: F401
from .device import device  # noqa: F401  (tf.device("/GPU:0"): where new tensors are born)
from . import distribute  # noqa: F401  (MPIStrategy; mpi4py imported only when one is made)
from . import data  # noqa: F401
from .module import Module  # noqa: F401
from .saving import saved_model  # noqa: F401
from .core.tensor import Tensor, TensorShape, Variable, constant, convert_to_tensor, is_tensor  # noqa: F401
from .dtypes import (  # noqa: F401
    DType, as_dtype, bool, complex64, complex128, double, float16, float32, float64, half, int8,
    int16, int32, int64, string, uint8,
)
from .ops.arithmetic import (  # noqa: F401
    abs_ as abs, add, add_n, divide, equal, greater, greater_equal, less, less_equal, logical_and,
    logical_not, logical_or, maximum, minimum, multiply, negative, not_equal, pow, subtract,
)
from .ops.clip import clip_by_global_norm, clip_by_norm, clip_by_value, global_norm  # noqa: F401
from .ops.creation import eye, fill, linspace, one_hot, ones, ones_like, range_ as range, zeros, zeros_like  # noqa: F401
from .ops.elementwise import exp, identity, round, sign, sqrt, square, stop_gradient  # noqa: F401
from .ops.linalg import einsum, matmul, tensordot  # noqa: F401
from .ops.reduce import (  # noqa: F401
    argmax, argmin, cumsum, norm, reduce_all, reduce_any, reduce_logsumexp, reduce_max,
    reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum, reduce_variance,
)
from .ops.shape import (  # noqa: F401
    boolean_mask, broadcast_to, cast, concat, expand_dims, gather, pad, rank, reshape, reverse,
    shape, size, split, squeeze, stack, tile, transpose, unstack, where,
)

# --- TensorFlow's other top-level names: math, sorting, printing, gradient wrappers ------------
# tf.sin, tf.sort, tf.print, ... as TensorFlow 2 exports them at the top level; tf.log and
# tf.ceil are TensorFlow 1's (tf.compat.v1) names, kept for code written against it.
from .grad_wrappers import grad_pass_through, recompute_grad  # noqa: F401
from .math import truediv  # noqa: F401
from .ops.elementwise import (  # noqa: F401
    acos, asin, asinh, atan, atanh, ceil, cos, cosh, floor, log, sigmoid, sin, sinh, tan, tanh,
)
from .ops.rearrange import meshgrid, repeat, roll  # noqa: F401
from .ops.sorting import argsort, searchsorted, sort  # noqa: F401
from .ops.special import acosh, atan2  # noqa: F401
from .printing import print_v2 as print  # noqa: F401, A001 - TensorFlow's name
# --- end of the top-level TensorFlow names block -----------------------------------------------

newaxis = None  # tf.newaxis: x[tf.newaxis, i] adds an axis, as numpy's None does

__version__ = "0.1.0"


def train(config, **kwargs):
    """Train the model a run config describes (a YAML path, a dict or a RunConfig) and return
    a ``Run``: ``model, history = tapeflow.train("configs/housing.yaml")``; its ``test_metrics``
    and ``run_dir`` too.  The keyword arguments are ``tapeflow.training.run.train``'s
    (``output``, ``resume``, ``overrides``, ``seed``, ``device``, ``allow_builder``, ``verbose``).

    The trainer (scikit-learn, pydantic, matplotlib) is imported on the first call only.
    """
    from .training.run import train as run_training
    return run_training(config, **kwargs)


# tf.train's checkpoint names (TensorFlow's namespace), on the trainer's entry point, which has
# the same name: tf.train.Checkpoint, tf.train.CheckpointManager, tf.train.latest_checkpoint.
from .saving.checkpoint import Checkpoint as _Checkpoint  # noqa: E402
from .saving.checkpoint_management import (  # noqa: E402
    CheckpointManager as _CheckpointManager, get_checkpoint_state as _get_checkpoint_state,
    latest_checkpoint as _latest_checkpoint,
)

train.Checkpoint = _Checkpoint
train.CheckpointManager = _CheckpointManager
train.latest_checkpoint = _latest_checkpoint
train.get_checkpoint_state = _get_checkpoint_state


def __getattr__(name):
    # tf.bfloat16 imports ml_dtypes (the optional [bfloat16] extra) on first use only
    if name == "bfloat16":
        return dtypes.bfloat16
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
