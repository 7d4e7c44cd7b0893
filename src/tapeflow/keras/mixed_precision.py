"""``keras.mixed_precision``: dtype policies and loss scaling (tapeflow's, the same objects).

``set_global_policy("mixed_float16")`` makes layers compute in float16 with float32
variables; ``Model.compile`` then wraps the optimizer in a ``LossScaleOptimizer``.
"""
from ..dtype_policy import DTypePolicy, Policy, get, global_policy, set_global_policy
from ..optimizers import LossScaleOptimizer

# Keras 3's other names for the same functions
dtype_policy = global_policy
set_dtype_policy = set_global_policy

__all__ = ["DTypePolicy", "Policy", "LossScaleOptimizer", "set_global_policy", "global_policy",
           "dtype_policy", "set_dtype_policy", "get"]
