"""A scalar function's gradient with respect to Variables, against central differences."""
import numpy as np

import tapeflow as tf


def central_differences(fn, variables, eps=1e-6):
    """(fn(v + eps) - fn(v - eps)) / 2 eps for each entry of each Variable (0-d ones too),
    every Variable left as it was."""
    out = []
    for v in variables:
        base = np.array(v.numpy())  # a copy that is an array even for a 0-d weight
        numeric = np.zeros_like(base)
        for idx in np.ndindex(*base.shape):
            for sign in (1, -1):
                bumped = base.copy()
                bumped[idx] += sign * eps
                v.assign(bumped)
                numeric[idx] += sign * float(fn()) / (2 * eps)
        v.assign(base)
        out.append(numeric)
    return out


def assert_gradients_match_differences(fn, variables, eps=1e-6, rtol=1e-6, atol=1e-9):
    """``tape.gradient(fn(), variables)`` equals (fn(v + eps) - fn(v - eps)) / 2 eps, entry by entry."""
    with tf.GradientTape() as tape:
        value = fn()
    grads = tape.gradient(value, variables)
    for g, numeric in zip(grads, central_differences(fn, variables, eps)):
        np.testing.assert_allclose(g.numpy(), numeric, rtol=rtol, atol=atol)
