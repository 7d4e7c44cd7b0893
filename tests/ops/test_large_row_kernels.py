"""Softmax and LayerNormGrad on large arrays of short rows, where their numpy kernels take other
routes than on the op battery's small shapes (``ops/nn.py``: softmax without the per-row
maximum; ``ops/layer_norm.py``: the backward's sums as BLAS products): values against numpy in
float64, the edge rows of each route, and traced = eager.  numba's row kernels (the jit extra,
``tests/ops/test_norm_jit.py``) would take these float32 arrays over, so they are switched off
here: these are the routes every install without numba runs."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops import jit
from tapeflow.ops.layer_norm import layer_norm

LARGE = (8, 64, 64)  # 32,768 elements: the size from which the row routes apply


@pytest.fixture(autouse=True)
def numpy_routes(monkeypatch):
    monkeypatch.setitem(jit._LOADED, "tapeflow.ops._norm_numba", None)


def np_softmax(x, axis=-1):
    """TF: python/kernel_tests/nn_ops/softmax_op_test.py::SoftmaxTest._npSoftmax."""
    e = np.exp(x - np.amax(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("dims", [129, 256])
def test_softmax_large_dims(dims):
    """TF: python/kernel_tests/nn_ops/softmax_op_test.py::SoftmaxTest::testLargeDims (its
    tolerance, assertAllClose's 1e-6), with _testSoftmax's bonus check: rows sum to one.
    256 x 256 takes the large-array route, 129 x 129 the small one."""
    ones = np.random.default_rng(dims).random((dims, dims)).astype(np.float32)
    out = tf.nn.softmax(tf.constant(ones)).numpy()
    np.testing.assert_allclose(out, np_softmax(ones), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.sum(-1), np.ones(dims), rtol=1e-6, atol=1e-6)


def _edge_rows(dtype):
    x = np.random.default_rng(0).normal(scale=3.0, size=LARGE).astype(dtype)
    x[0, 0] = -1e9          # a fully masked row: uniform weights, as Keras's masked softmax
    x[0, 1, 5:] -= 1e9      # masked entries: exactly zero weight
    x[1, 2] -= 300.0        # a row whose exponentials underflow unless it is shifted
    x[1, 3, 0] = 60.0       # large but safe: exp(60) sums without overflow
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_large_array_edge_rows_match_numpy(dtype):
    x = _edge_rows(dtype)
    want = np_softmax(x.astype(np.float64))
    got = tf.nn.softmax(tf.constant(x)).numpy()
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[0, 0], np.full(64, 1 / 64, dtype))
    assert not got[0, 1, 5:].any()
    traced = tf.function(lambda t: tf.nn.softmax(t))(tf.constant(x)).numpy()
    np.testing.assert_array_equal(traced, got)


@pytest.mark.parametrize("spoiler", ["overflow", "nan"])
def test_softmax_large_array_overflow_and_nan(spoiler):
    """TF: softmax_op_test.py::SoftmaxTest::_testOverflow's row [max, 1, 2, 3] (float32's
    largest value) in a large array: all its weight on the maximum, the other rows exact.
    A NaN spoils its own row only, as the shifted softmax does."""
    x = np.random.default_rng(1).normal(size=LARGE).astype(np.float32)
    row = (3, 7)
    if spoiler == "overflow":
        x[row] = 0.0
        x[row][:4] = [np.finfo(np.float32).max, 1.0, 2.0, 3.0]
    else:
        x[row][2] = np.nan
    got = tf.nn.softmax(tf.constant(x)).numpy()
    if spoiler == "overflow":
        np.testing.assert_array_equal(got[row], np.eye(64, dtype=np.float32)[0])
    else:
        assert np.isnan(got[row]).all()
    rest = np.ones(LARGE[:2], bool)
    rest[row] = False
    np.testing.assert_allclose(got[rest], np_softmax(x[rest].astype(np.float64)),
                               rtol=1e-6, atol=1e-6)


# --- LayerNormGrad ---------------------------------------------------------------------------
def np_layer_norm_grad(x, gamma, dy, dmean, drstd, epsilon):
    """d/dx, d/dgamma, d/dbeta of <y, dy> + <mean, dmean> + <rstd, drstd> for layer norm over
    the last axis, in float64 by its textbook formula."""
    n = x.shape[-1]
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + epsilon)
    xhat = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    dx += dmean / n - drstd * rstd ** 2 * xhat / n
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(rows), dy.sum(rows)


@pytest.mark.parametrize("spread", [False, True], ids=["dense", "spread"])
def test_layer_norm_grad_large_array_matches_numpy(spread):
    """The statistics' cotangents too, on offset data (Keras's test_correctness: mean 5, scale
    10); ``spread``: the cotangent of a mean over the sequence, a broadcast view (W4's head)."""
    rng = np.random.default_rng(2)
    x64 = rng.normal(loc=5.0, scale=10.0, size=(4, 64, 128))
    gamma64, beta64 = rng.normal(1.0, 0.2, 128), rng.normal(size=128)
    dy64 = rng.normal(size=(4, 1, 128) if spread else x64.shape)
    dmean64, drstd64 = rng.normal(size=(2, 4, 64, 1))
    x, gamma, beta = (tf.constant(a.astype(np.float32)) for a in (x64, gamma64, beta64))
    dy, dmean, drstd = (tf.constant(a.astype(np.float32)) for a in (dy64, dmean64, drstd64))

    def gradients(x, gamma, beta):
        with tf.GradientTape() as tape:
            tape.watch([x, gamma, beta])
            y, mean, rstd = layer_norm(x, gamma, beta, 1, 1e-3)
            y = tf.reduce_mean(y, axis=1, keepdims=True) * 64.0 if spread else y
            loss = tf.reduce_sum(y * dy) + tf.reduce_sum(mean * dmean) + \
                tf.reduce_sum(rstd * drstd)
        return tape.gradient(loss, [x, gamma, beta])
    want = np_layer_norm_grad(x64, gamma64, np.broadcast_to(dy64, x64.shape), dmean64, drstd64,
                              1e-3)
    got = [g.numpy() for g in gradients(x, gamma, beta)]
    for name, g, w in zip(("x", "gamma", "beta"), got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5 * np.abs(w).max(), err_msg=name)
    traced = tf.function(gradients)(x, gamma, beta)
    for g, t in zip(got, traced):
        np.testing.assert_allclose(t.numpy(), g, rtol=1e-6, atol=1e-7)
