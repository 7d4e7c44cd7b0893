"""``tapeflow.random``: seedable random tensors."""
from .ops.random import Generator, normal, set_seed, shuffle, truncated_normal, uniform  # noqa: F401
from .ops.random import categorical  # noqa: F401
