"""reduce_retracing: a signature relaxed to free sizes runs one graph for every size, so no
kernel specialized for the sizes of its first trace may run at another size."""
import numpy as np
import pytest

import tapeflow as tf


def _pair(rng, inner):
    return (rng.rand(3, inner).astype("float32"), rng.rand(inner, 3).astype("float32"))


def test_a_matmul_first_traced_over_an_inner_size_of_one_multiplies_at_every_size():
    """The first relaxed trace sees an inner size of 1 (an outer product's fast path); the
    later sizes run the same graph and must still multiply matrices."""
    f = tf.function(tf.matmul, reduce_retracing=True)
    rng = np.random.RandomState(0)
    for inner in (2, 1, 3, 4, 1):
        a, b = _pair(rng, inner)
        np.testing.assert_allclose(f(a, b).numpy(), a @ b, rtol=1e-6)
    assert f.experimental_get_tracing_count() == 2  # the exact first call, then one relaxed


@pytest.mark.parametrize("rows", [(5, 1, 4, 7), (1, 6, 2, 1)])
def test_a_mean_over_relaxed_rows_divides_by_each_count(rows):
    """The compiled mean holds its count: the relaxed graph's must be each call's."""
    f = tf.function(lambda x: tf.reduce_mean(x, axis=0), reduce_retracing=True)
    rng = np.random.RandomState(1)
    for n in rows:
        x = rng.randn(n, 3).astype("float32")
        np.testing.assert_allclose(f(x).numpy(), x.mean(axis=0), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 2
