"""``MaxPool`` and ``MaxPoolGrad`` through numba's loops (``ops/_pool_numba.py``, the ``jit``
extra) on large float32 arrays, overlapping windows included: numpy's route's values bit for bit
(ties, NaN windows, signed zeros and non-finite cotangents included), and TensorFlow's expected
values on the compiled path.  Skipped without numba."""
import numpy as np
import pytest

pytest.importorskip("numba")

import tapeflow as tf  # noqa: E402 - after the skip
from tapeflow.ops import jit, pooling  # noqa: E402
from tapeflow.ops.window_args import explicit_pads  # noqa: E402
from tapeflow.ops.windows import out_hw  # noqa: E402

from .test_pool_kernels import GRAD_DIRECT  # noqa: E402

POOL = "tapeflow.ops._pool_numba"


@pytest.fixture
def compiled_calls(monkeypatch):
    """The names of the kernels called, each call delegated to numba's."""
    kernels, calls = jit.kernels(POOL), []
    assert kernels is not None

    def spy(name):
        def call(*args):
            calls.append(name)
            return getattr(kernels, name)(*args)
        return call
    monkeypatch.setattr(jit, "_LOADED", {POOL: type("Spy", (), {
        name: staticmethod(spy(name)) for name in ("max_pool", "max_pool_grad")})})
    return calls


def _numpys_route(fn, *args):
    saved = jit._LOADED.get(POOL)
    jit._LOADED[POOL] = None
    try:
        return fn(*args)
    finally:
        jit._LOADED[POOL] = saved


def _assert_same_bits(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    differ = got.view(np.uint32) != expected.view(np.uint32)
    assert not differ.any(), (np.argwhere(differ)[:5], got[differ][:5], expected[differ][:5])


@pytest.mark.parametrize("shape, ksize, strides, pads", [
    ((4, 28, 28, 32), (3, 3), (2, 2), ((0, 0), (0, 0))),     # a ResNet stem's pool, VALID
    ((4, 28, 28, 32), (3, 3), (2, 2), ((0, 1), (0, 1))),     # the same, SAME
    ((4, 27, 27, 32), (3, 3), (2, 2), ((1, 1), (1, 1))),     # SAME on an odd size
    ((4, 17, 19, 32), (3, 3), (1, 1), ((1, 1), (1, 1))),     # stride 1: 9 windows per input
    ((4, 15, 16, 48), (3, 2), (1, 2), ((1, 1), (0, 0))),     # overlapping rows, tiled columns
    ((16, 11, 11, 32), (2, 2), (2, 2), ((0, 0), (0, 0))),    # an odd size: a row left out
    ((8, 15, 15, 32), (3, 3), (3, 3), ((1, 1), (1, 1))),     # disjoint, SAME padding
    ((8, 14, 13, 40), (3, 2), (4, 2), ((1, 1), (0, 1))),     # uneven windows, gaps, padding
])  # 48 and 40 channels: the loops' scalar remainder after 32 vectorized
def test_equal_to_numpys_route_bit_for_bit(shape, ksize, strides, pads, compiled_calls):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    x[0, 0, 0, :4] = x[0, 0, 1, :4]          # ties: the first in row-major order wins
    x[1, 2, 2, 3] = np.nan                   # a NaN window sends nothing
    x[1, 5, 5, 4:6] = np.nan, np.float32(np.inf)
    x[2] = np.round(x[2])                    # many ties
    x[3] = np.where(rng.random(shape[1:]) < 0.5, -0.0, 0.0)  # signed zeros: maximum keeps
    ho, wo = out_hw(shape[1:3], ksize, strides, (1, 1), pads)  # the later, ties the first
    dy = rng.normal(size=(shape[0], ho, wo, shape[3])).astype(np.float32)
    dy[3, 1, 1, :2] = np.inf, np.nan         # numpy's route spreads NaN (its product with 0)
    with np.errstate(invalid="ignore"):
        args = (x, ksize, strides, pads)
        _assert_same_bits(pooling._max_pool_forward(*args),
                          _numpys_route(pooling._max_pool_forward, *args))
        args = (x, dy, ksize, strides, pads)
        compiled = pooling._max_pool_grad_forward(*args)
        reference = _numpys_route(pooling._max_pool_grad_forward, *args)
    assert compiled_calls == ["max_pool", "max_pool_grad"]
    _assert_same_bits(compiled, reference)


def test_tiled_windows_equal_numpys_transpose():
    """Where windows tile the input numpy's route transposes dy * hit (-0 where dy < 0); the
    kernel adds into zeros (+0): equal values."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 16, 16, 32)).astype(np.float32)
    dy = rng.normal(size=(8, 8, 8, 32)).astype(np.float32)
    args = (x, dy, (2, 2), (2, 2), ((0, 0), (0, 0)))
    assert jit.kernels(POOL) is not None
    np.testing.assert_array_equal(pooling._max_pool_grad_forward(*args),
                                  _numpys_route(pooling._max_pool_grad_forward, *args))


def _tf_input(input_sizes, negative=False):
    """TensorFlow's test input: 1, 2, ... wrapping round to -127 after 127."""
    size = int(np.prod(input_sizes))
    x = [((f + 128) % 255) - 127 for f in range(size)]
    return np.array(x, np.float32).reshape(input_sizes) * (-1 if negative else 1)


# TF: python/kernel_tests/nn_ops/pooling_ops_test.py::PoolingTest::testMaxPoolSamePaddingPacket8_
PACKET8 = [
    81, 82, 83, 84, 85, 86, 87, 88, 97, 98, 99, 100, 101, 102, 103, 104, 113, 114, 115, 116,
    117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 120, 18, 19, 20, 21, 22, 23, 24, 25,
    34, 35, 36, 37, 38, 39, 40, 41, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64,
    65, 82, 83, 84, 85, 86, 87, 88, 89, 98, 99, 100, 101, 102, 103, 104, 105, 114, 115, 116, 117,
    118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 120, 121, -45, -44, -43, -42, -41, -40,
    -39, -38, -29, -28, -27, -26, -25, -24, -23, -22, -13, -12, -11, -10, -9, -8, -7, -6, -5,
    -4, -3, -2, -1, 0, 1, 2]
# TF: ...::testMaxPoolExplicitPaddingAdvanced and testMaxPoolNegativeInputExpPaddingAdv
EXPLICIT = [[0, 0], [1, 2], [2, 1], [0, 0]]
ADVANCED = [7, 9, 11, 12, 19, 21, 23, 24, 31, 33, 35, 36, 31, 33, 35, 36]
ADVANCED_NEGATIVE = [-1, -1, -3, -5, -7, -7, -9, -11, -19, -19, -21, -23, -31, -31, -33, -35]


@pytest.mark.parametrize("input_sizes, padding, negative, expected", [
    ((1, 8, 8, 8), "SAME", False, PACKET8),
    ((1, 6, 6, 1), EXPLICIT, False, ADVANCED),
    ((1, 6, 6, 1), EXPLICIT, True, ADVANCED_NEGATIVE),
])
def test_tensorflows_max_pool_values(input_sizes, padding, negative, expected, compiled_calls):
    """3x3 windows, stride 2: TensorFlow's input tiled over 64 images and 32 channels (the
    compiled path's size)."""
    one = _tf_input(input_sizes, negative)
    channels = 32 // input_sizes[3]
    x = np.tile(one, (64, 1, 1, channels))
    with tf.device("/CPU:0"):  # numpy's arrays on the strict device's run too: jit's are
        got = tf.nn.max_pool2d(tf.constant(x), 3, 2, padding).numpy()
    assert compiled_calls == ["max_pool"]
    want = np.tile(np.array(expected, np.float32).reshape((1,) + got.shape[1:3] + (-1,)),
                   (64, 1, 1, channels))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", GRAD_DIRECT)
def test_tensorflows_max_pool_grad_values(name, compiled_calls):
    """TF: pooling_ops_test.py::testMaxPoolGradDirect (1_1, 1_2: 2x2 windows, stride 1; 1_3:
    3x3, SAME), their overlapping windows tiled over 64 images and 128 channels."""
    x, dy, k, s, padding, expected = GRAD_DIRECT[name]
    pads = explicit_pads(padding, (4, 4), (k, k), (s, s), (1, 1), "NHWC", "test")
    hw = out_hw((4, 4), (k, k), (s, s), (1, 1), pads)
    tile = (64, 1, 1, 128)
    x = np.tile(np.array(x, np.float32).reshape(1, 4, 4, 1), tile)
    dy = np.tile(np.array(dy, np.float32).reshape((1,) + hw + (1,)), tile)
    got = pooling._max_pool_grad_forward(x, dy, (k, k), (s, s), pads)
    assert compiled_calls == ["max_pool_grad"]
    np.testing.assert_array_equal(
        got, np.tile(np.array(expected, np.float32).reshape(1, 4, 4, 1), tile))


@pytest.mark.parametrize("padding, firsts", [
    ("VALID", [0, 2, 4, 6]),      # windows start at 0, 2, 4, 6
    ("SAME", [0, 1, 3, 5, 7]),    # at -1, 1, 3, 5, 7: padding is never a window's maximum
])
def test_equal_values_send_each_window_to_its_first_element(padding, firsts, compiled_calls):
    """All inputs tie: each 3x3/2 window's cotangent goes to its first input element, in
    row-major order, as TensorFlow's (overlapping windows share none here)."""
    with tf.device("/CPU:0"):
        x = tf.zeros((8, 9, 9, 64))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.max_pool2d(x, 3, 2, padding)
        got = tape.gradient(y, x).numpy()
    assert compiled_calls == ["max_pool", "max_pool_grad"]
    want = np.zeros((9, 9), np.float32)
    want[np.ix_(firsts, firsts)] = 1
    np.testing.assert_array_equal(got, np.broadcast_to(want[None, :, :, None], got.shape))


def test_small_or_other_arrays_keep_numpys_route():
    """Below TILE_FROM elements or the channels the loops vectorize, float64, and a cotangent
    with a leading (jacobian) axis or another batch."""
    x = np.ones((8, 28, 28, 32), np.float32)
    dy = np.ones((8, 13, 13, 32), np.float32)
    assert pooling._compiled(32, x, dy) is not None
    assert pooling._compiled(32, x[:1, :8]) is None
    assert pooling._compiled(33, x) is None
    assert pooling._compiled(32, x.astype(np.float64)) is None
    assert pooling._compiled(32, x, dy[None]) is None
    assert pooling._compiled(32, x, dy[:1]) is None
