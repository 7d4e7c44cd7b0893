"""numba's Adam update in place, float32 (imported by ``ops/jit.kernels`` only where numba is):
one pass over a variable where numpy's in-place update makes twelve.

Without fast-math every operation rounds to float32 as numpy's does, in the order of
``adam._apply_adam_in_place`` (no fused multiply-add: LLVM contracts only when told to; sqrt and
division are correctly rounded in both), so the two give the same bits: the compiled kernel may
be taken or not without changing a result.
"""
import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def adam_in_place(var, m, v, g, one_minus_beta_1, one_minus_beta_2, alpha, epsilon):
    """var, m, v (1-D, C-contiguous) updated from the gradient g; the scalars are float32."""
    for k in range(var.size):
        gk = g[k]
        mk = m[k] + (gk - m[k]) * one_minus_beta_1
        vk = v[k] + (gk * gk - v[k]) * one_minus_beta_2
        m[k] = mk
        v[k] = vk
        var[k] = var[k] - (mk * alpha) / (np.sqrt(vk) + epsilon)
