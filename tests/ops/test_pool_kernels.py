"""MaxPoolGrad's kernel (ops/pooling.py) on TensorFlow's own expected values and against a loop
where windows tile the input, leave gaps, overlap, or reach into SAME padding."""
import itertools

import numpy as np
import pytest

from tapeflow.ops import pooling
from tapeflow.ops.window_args import explicit_pads
from tapeflow.ops.windows import out_hw

# TF: python/kernel_tests/nn_ops/pooling_ops_test.py::PoolingTest::testMaxPoolGradDirect
# (_testMaxPoolGradDirect1_1, 1_2 and 1_3): input, output backprop, window, stride, padding
GRAD_DIRECT = {
    "1_1": ([1.0] * 16, [11, 12, 13, 15, 16, 17, 19, 20, 21], 2, 1, "VALID",
            [11, 12, 13, 0, 15, 16, 17, 0, 19, 20, 21, 0, 0, 0, 0, 0]),
    "1_2": ([1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1], [11, 12, 13, 15, 16, 17, 19, 20, 21],
            2, 1, "VALID", [11, 0, 25, 0, 0, 31, 0, 17, 19, 0, 41, 0, 0, 0, 0, 0]),
    "1_3": ([1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1], list(range(11, 27)), 3, 1, "SAME",
            [54, 0, 62, 0, 0, 60, 0, 22, 47, 0, 51, 0, 0, 0, 0, 0]),
}


@pytest.mark.parametrize("name", GRAD_DIRECT)
def test_max_pool_grad_has_tensorflows_values(name):
    x, dy, k, s, padding, expected = GRAD_DIRECT[name]
    x = np.array(x, np.float32).reshape(1, 4, 4, 1)
    dy = np.array(dy, np.float32).reshape(1, *out_hw((4, 4), (k, k), (s, s), (1, 1), explicit_pads(
        padding, (4, 4), (k, k), (s, s), (1, 1), "NHWC", "test")), 1)
    pads = explicit_pads(padding, (4, 4), (k, k), (s, s), (1, 1), "NHWC", "test")
    got = pooling._max_pool_grad_forward(x, dy, (k, k), (s, s), pads)
    np.testing.assert_allclose(got.ravel(), expected, rtol=1e-6, atol=1e-6)


def _max_pool_grad_loop(x, dy, k, s, pads):
    """Each window's dy added at its first maximum, padding (-inf) never one."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], constant_values=-np.inf)
    out = np.zeros(dy.shape[:-3] + xp.shape[-3:])
    for n, a, b, c in itertools.product(range(x.shape[0]), *(range(d) for d in dy.shape[-3:])):
        window = xp[n, a * s[0]:a * s[0] + k[0], b * s[1]:b * s[1] + k[1], c]
        i, j = np.unravel_index(np.argmax(window), window.shape)
        out[..., n, a * s[0] + i, b * s[1] + j, c] += dy[..., n, a, b, c]
    return out[..., pt:pt + x.shape[1], pl:pl + x.shape[2], :]


@pytest.mark.parametrize("shape,ksize,strides,padding", [
    ((2, 8, 8, 3), (2, 2), (2, 2), "VALID"),   # tiled: written, no zero fill
    ((2, 7, 7, 3), (2, 2), (2, 2), "SAME"),    # disjoint, the last windows half padding
    ((2, 7, 9, 2), (2, 2), (3, 3), "SAME"),    # disjoint with gaps between windows
    ((2, 7, 6, 2), (3, 3), (2, 2), "SAME"),    # overlapping, into the padding
    ((1, 5, 5, 2), (3, 2), (1, 2), "VALID"),   # overlapping rows, disjoint columns
    ((1, 6, 6, 2), (2, 2), (2, 2), [[0, 0], [1, 0], [0, 1], [0, 0]]),  # padded, yet the
])                                             # last input row is in no window
def test_max_pool_grad_matches_the_loop(shape, ksize, strides, padding):
    """Ties included (values rounded after a relu), and a cotangent with a leading (jacobian)
    axis."""
    rng = np.random.default_rng(5)
    x = np.maximum(np.round(rng.standard_normal(shape)), 0)
    pads = explicit_pads(padding, shape[1:3], ksize, strides, (1, 1), "NHWC", "test")
    hw = out_hw(shape[1:3], ksize, strides, (1, 1), pads)
    for dy in (rng.standard_normal((shape[0],) + hw + shape[-1:]),
               rng.standard_normal((3, shape[0]) + hw + shape[-1:])):
        got = pooling._max_pool_grad_forward(x, dy, ksize, strides, pads)
        np.testing.assert_allclose(got, _max_pool_grad_loop(x, dy, ksize, strides, pads),
                                   rtol=1e-12, atol=1e-15)  # overlaps add in another order
