"""``LayerNorm`` and ``LayerNormGrad`` through numba's row kernels (``ops/_norm_numba.py``, the
``jit`` extra) on large float32 arrays, against numpy's route and a float64 formula.  Skipped
without numba."""
import numpy as np
import pytest

pytest.importorskip("numba")

from tapeflow.ops import jit  # noqa: E402 - after the skip
from tapeflow.ops import layer_norm as ln  # noqa: E402

NORM = "tapeflow.ops._norm_numba"


def _case(shape, axes_count, seed=0):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    # Keras's LayerNormalizationTest::test_correctness data: mean 5, scale 10
    x = (5.0 + 10.0 * rng.normal(size=shape)).astype(f32)
    features = shape[-axes_count:]
    gamma, beta = rng.normal(size=features).astype(f32), rng.normal(size=features).astype(f32)
    return x, gamma, beta


def _both(fn, monkeypatch):
    """``fn()`` through the compiled kernels, then through numpy's route."""
    compiled = fn()
    monkeypatch.setattr(jit, "_LOADED", {NORM: None})
    numpy_ = fn()
    monkeypatch.undo()
    return compiled, numpy_


@pytest.mark.parametrize("shape, axes_count", [((32, 64, 128), 1), ((16, 40, 8, 7), 2)])
def test_forward_and_gradient_equal_numpys_route(shape, axes_count, monkeypatch):
    x, gamma, beta = _case(shape, axes_count)
    assert ln._compiled(x, gamma, beta) is not None
    y, mean, rstd = ln._layer_norm_forward(x, gamma, beta, axes_count=axes_count, epsilon=1e-3)
    rng = np.random.default_rng(1)
    dy = rng.normal(size=shape).astype(np.float32)
    dmean, drstd = (rng.normal(size=mean.shape).astype(np.float32) for _ in range(2))

    def run():
        return ln._layer_norm_forward(x, gamma, beta, axes_count=axes_count, epsilon=1e-3) + \
            ln._layer_norm_grad_forward(x, gamma, mean, rstd, dy, dmean, drstd,
                                        axes_count=axes_count, epsilon=1e-3)
    compiled, numpy_ = _both(run, monkeypatch)
    for got, want in zip(compiled, numpy_):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())
    # against float64
    x64 = x.astype(np.float64).reshape(-1, int(np.prod(shape[-axes_count:])))
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    np.testing.assert_allclose(compiled[1].reshape(-1), mu, rtol=1e-6)
    np.testing.assert_allclose(compiled[2].reshape(-1), 1 / np.sqrt(var + 1e-3), rtol=1e-5)


def test_a_broadcast_cotangent(monkeypatch):
    """W4's mean over the sequence sends a broadcast view as ``dy``."""
    x, gamma, beta = _case((32, 64, 128), 1, seed=2)
    _, mean, rstd = ln._layer_norm_forward(x, gamma, beta, axes_count=1, epsilon=1e-3)
    row = np.random.default_rng(3).normal(size=(32, 1, 128)).astype(np.float32)
    dy = np.broadcast_to(row, x.shape)
    zeros = np.zeros_like(mean)

    def run():
        return ln._layer_norm_grad_forward(x, gamma, mean, rstd, dy, zeros, zeros,
                                           axes_count=1, epsilon=1e-3)
    for got, want in zip(*_both(run, monkeypatch)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_only_large_float32_numpy_arrays():
    x, gamma, beta = _case((32, 64, 128), 1)
    assert ln._compiled(x.astype(np.float64), gamma, beta) is None
    assert ln._compiled(x[:2], gamma, beta) is None


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract")
def test_softmax_rows_equal_numpys_route_with_special_rows(monkeypatch):
    """Rows of 64 (attention's scores) in a large float32 array: ordinary rows as accurate as
    float64 allows, and the rows TF's softmax tests care about (overflowing, underflowing,
    infinite, NaN) as numpy's route gives them."""
    from tapeflow.ops import nn
    rng = np.random.default_rng(4)
    x = (3.0 * rng.normal(size=(1024, 64))).astype(np.float32)
    x[0, 5] = np.nan
    x[1] = np.float32(np.finfo(np.float32).max)  # TF: softmax_op_test _testOverflow
    x[1, :32] = 0.0
    x[2] -= 1e4  # the maximum far below 0: shifted
    x[3, 7] = np.inf
    x[4] = -np.inf
    x[5] += 87.0  # near exp's overflow: shifted
    assert jit.kernels(NORM) is not None
    compiled, numpy_ = _both(lambda: nn._softmax_forward(x, -1), monkeypatch)
    np.testing.assert_allclose(compiled, numpy_, rtol=2e-6, atol=1e-30, equal_nan=True)
    ordinary = x[6:].astype(np.float64)
    e = np.exp(ordinary - ordinary.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(compiled[6:], e / e.sum(axis=-1, keepdims=True), rtol=1e-6)
