"""``MaxPoolGrad`` through numba's loop (``ops/_pool_numba.py``, the ``jit`` extra) on large
float32 arrays: numpy's route's values bit for bit, ties and NaN windows included.  Skipped
without numba."""
import numpy as np
import pytest

pytest.importorskip("numba")

from tapeflow.ops import jit, pooling  # noqa: E402 - after the skip
from tapeflow.ops.windows import out_hw  # noqa: E402

POOL = "tapeflow.ops._pool_numba"


@pytest.mark.parametrize("shape, ksize, strides, pads", [
    ((64, 26, 26, 32), (2, 2), (2, 2), ((0, 0), (0, 0))),    # W2's first pool: Keras's default
    ((32, 11, 11, 16), (2, 2), (2, 2), ((0, 0), (0, 0))),    # an odd size: a row left out
    ((16, 15, 15, 16), (3, 3), (3, 3), ((1, 1), (1, 1))),    # "SAME" padding
    ((16, 14, 13, 24), (3, 2), (4, 2), ((1, 1), (0, 1))),    # uneven windows, gaps, padding
])
def test_equal_to_numpys_route(shape, ksize, strides, pads, monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    x[0, 0, 0, :4] = x[0, 0, 1, :4]          # ties: the first in row-major order wins
    x[1, 2, 2, 3] = np.nan                   # a NaN window sends nothing
    x[2] = np.round(x[2])                    # many ties
    ho, wo = out_hw(shape[1:3], ksize, strides, (1, 1), pads)
    dy = rng.normal(size=(shape[0], ho, wo, shape[3])).astype(np.float32)
    assert jit.kernels(POOL) is not None and x.size >= pooling.TILE_FROM
    compiled = pooling._max_pool_grad_forward(x, dy, ksize, strides, pads)
    monkeypatch.setattr(jit, "_LOADED", {POOL: None})
    np.testing.assert_array_equal(compiled,
                                  pooling._max_pool_grad_forward(x, dy, ksize, strides, pads))


def test_overlapping_windows_keep_numpys_route(monkeypatch):
    """Their sums would add in another order (not numpy's bits): the kernel is not called."""
    called = []
    spy = type("Kernels", (), {"max_pool_grad": staticmethod(lambda *args: called.append(args))})
    monkeypatch.setattr(jit, "_LOADED", {POOL: spy})
    x = np.ones((16, 15, 15, 16), np.float32)
    dy = np.ones((16, 7, 7, 16), np.float32)
    pooling._max_pool_grad_forward(x, dy, (3, 3), (2, 2), ((0, 0), (0, 0)))
    assert not called
