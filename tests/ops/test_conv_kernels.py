"""The convolution kernels (ops/conv.py) on TensorFlow's own expected values, with both im2col
layouts (the window view's copy, and one copy per kernel offset for few channels) and the
input gradient's col2im by accumulation over every geometry."""
import itertools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops import conv
from tapeflow.ops.window_args import explicit_pads
from tapeflow.ops.windows import im2col, im2col_by_offsets

from .test_conv import GEOMETRIES, conv2d_reference, same_pads


@pytest.fixture(params=["view", "offsets"])
def layout(request, monkeypatch):
    """Run a test with each im2col layout, whatever the channel count."""
    monkeypatch.setattr(conv, "FEW_CHANNELS", 0 if request.param == "view" else 1 << 30)
    return request.param


@pytest.fixture(params=["per_offset", "flipped"])
def input_grad_kernel(request, monkeypatch):
    """Run a test with each input-gradient kernel (the flipped convolution where it applies:
    stride 1, padding within the kernel's reach)."""
    monkeypatch.setattr(conv, "_per_offset_pays", lambda *shapes: request.param == "per_offset")
    return request.param


def _numbered(shape, dtype):
    """TF's _CreateNumpyTensor: 1, 2, 3, ... in the shape."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape).astype(dtype)


def _geometry(input_hw, filter_hw, strides, padding):
    pads = explicit_pads(padding, input_hw, filter_hw, strides, (1, 1), "NHWC", "test")
    return {"strides": tuple(strides), "dilations": (1, 1), "pads": pads}


# TF: python/kernel_tests/nn_ops/conv_ops_test.py, Conv2DTest's ...BackpropInput tests
BACKPROP_INPUT = {
    "testConv2D2x2Depth1ValidBackpropInput": (
        [1, 2, 3, 1], [2, 2, 1, 1], [1, 1, 2, 1], [1, 1], "VALID", [1, 4, 4, 3, 10, 8]),
    "testConv2DEmptyBackpropInput": ([0, 2, 3, 1], [2, 2, 1, 1], [0, 1, 2, 1], [1, 1], "VALID", []),
    "testConv2D2x2Depth3ValidBackpropInput": (
        [1, 2, 3, 3], [2, 2, 3, 3], [1, 1, 2, 3], [1, 1], "VALID",
        [14, 32, 50, 100, 163, 226, 167, 212, 257, 122, 140, 158, 478, 541, 604, 437, 482, 527]),
    "testConv2D2x2Depth3ValidBackpropInputStride1x2": (
        [1, 3, 6, 1], [2, 2, 1, 1], [1, 2, 3, 1], [1, 2], "VALID",
        [1, 2, 2, 4, 3, 6, 7, 12, 11, 18, 15, 24, 12, 16, 15, 20, 18, 24]),
    "testConv2DStrideTwoFilterOneSameBackpropInput": (
        [1, 4, 4, 1], [1, 1, 1, 1], [1, 2, 2, 1], [2, 2], "SAME",
        [1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0]),
    "testConv2DKernelSizeMatchesInputSizeBackpropInput": (
        [1, 2, 2, 1], [2, 2, 1, 2], [1, 1, 1, 2], [1, 1], "VALID", [5, 11, 17, 23]),
    "testConv2DBackpropInputDegenerateBackpropInput": (
        [3, 1, 1, 2], [1, 3, 2, 3], [3, 1, 0, 3], [1, 2], "VALID", [0] * 6),
}

# TF: python/kernel_tests/nn_ops/conv_ops_test.py, Conv2DTest's ...BackpropFilter tests
BACKPROP_FILTER = {
    "testConv2D2x2Depth1ValidBackpropFilter": (
        [1, 2, 3, 1], [2, 2, 1, 1], [1, 1, 2, 1], [1, 1], "VALID", [5, 8, 14, 17]),
    "testConv2DEmptyBackpropFilter": (
        [1, 2, 3, 1], [2, 2, 1, 0], [1, 1, 2, 0], [1, 1], "VALID", []),
    "testConv2DBackpropFilterWithEmptyInput": (
        [0, 2, 3, 1], [2, 2, 1, 1], [0, 1, 2, 1], [1, 1], "VALID", [0, 0, 0, 0]),
    "testConv2D2x2Depth3ValidBackpropFilter": (
        [1, 2, 3, 3], [2, 2, 3, 3], [1, 1, 2, 3], [1, 1], "VALID",
        [17, 22, 27, 22, 29, 36, 27, 36, 45, 32, 43, 54, 37, 50, 63, 42, 57, 72, 62, 85, 108, 67,
         92, 117, 72, 99, 126, 77, 106, 135, 82, 113, 144, 87, 120, 153]),
    "testConv2D2x2Depth3ValidBackpropFilterStride1x2": (
        [1, 3, 6, 1], [2, 2, 1, 1], [1, 2, 3, 1], [1, 2], "VALID", [161, 182, 287, 308]),
    "testConv2DStrideTwoFilterOneSameBackpropFilter": (
        [1, 4, 4, 1], [1, 1, 1, 1], [1, 2, 2, 1], [2, 2], "SAME", [78]),
    "testConv2DKernelSizeMatchesInputSizeBackpropFilter": (
        [1, 2, 2, 1], [2, 2, 1, 2], [1, 1, 1, 2], [1, 1], "VALID", [1, 2, 2, 4, 3, 6, 4, 8]),
}

DTYPES = [np.float32, np.float16, np.float64]  # TF's _DtypesToTest on a CPU


@pytest.mark.parametrize("name", BACKPROP_INPUT)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backprop_input_has_tensorflows_values(name, dtype, input_grad_kernel):
    input_sizes, filter_sizes, output_sizes, strides, padding, expected = BACKPROP_INPUT[name]
    w, dy = _numbered(filter_sizes, dtype), _numbered(output_sizes, dtype)
    got = conv._conv2d_backprop_input_forward(
        dy, w, tuple(input_sizes[1:3]), **_geometry(input_sizes[1:3], filter_sizes[:2], strides,
                                                    padding))
    assert got.dtype == dtype and got.shape == tuple(input_sizes)
    np.testing.assert_allclose(got.ravel(), expected, rtol=1e-3 if dtype == np.float16 else 1e-6,
                               atol=1e-5)


@pytest.mark.parametrize("name", BACKPROP_FILTER)
@pytest.mark.parametrize("dtype", DTYPES)
def test_backprop_filter_has_tensorflows_values(name, dtype, layout):
    input_sizes, filter_sizes, output_sizes, strides, padding, expected = BACKPROP_FILTER[name]
    x, dy = _numbered(input_sizes, dtype), _numbered(output_sizes, dtype)
    got = conv._conv2d_backprop_filter_forward(
        x, dy, tuple(filter_sizes[:2]), **_geometry(input_sizes[1:3], filter_sizes[:2], strides,
                                                    padding))
    assert got.dtype == dtype and got.shape == tuple(filter_sizes)
    np.testing.assert_allclose(got.ravel(), expected, rtol=1e-3 if dtype == np.float16 else 1e-6,
                               atol=1e-5)


@pytest.mark.parametrize("strides,dilations,padding", GEOMETRIES)
def test_both_im2col_layouts_are_the_same_patches(strides, dilations, padding):
    """One copy per kernel offset into the transpose, zeros where the padding falls, equals the
    padded window view's copy, leading (jacobian) axes included."""
    x = np.random.default_rng(2).standard_normal((2, 2, 7, 9, 3))
    pads = ((2, 1), (0, 3)) if padding == "explicit" else explicit_pads(
        padding, (7, 9), (3, 2), strides, dilations, "NHWC", "test")
    view, hw = im2col(x, (3, 2), strides, dilations, pads)
    by_offsets, hw2 = im2col_by_offsets(x, (3, 2), strides, dilations, pads)
    assert hw == hw2
    np.testing.assert_array_equal(np.swapaxes(by_offsets, -1, -2), view)


def _input_grad_reference(dy, w, x_shape, strides, dilations, pads):
    """conv2d's adjoint by loops: each output position's dy @ w[i, j]^T added at the input
    position its (i, j) window element reads, dropped where that is padding."""
    (pt, _), (pl, _) = pads
    kh, kw = w.shape[:2]
    out = np.zeros(x_shape)
    for a, b, i, j in itertools.product(range(dy.shape[1]), range(dy.shape[2]), range(kh),
                                        range(kw)):
        r, c = a * strides[0] + i * dilations[0] - pt, b * strides[1] + j * dilations[1] - pl
        if 0 <= r < x_shape[1] and 0 <= c < x_shape[2]:
            out[:, r, c, :] += dy[:, a, b, :] @ w[i, j].T
    return out


@pytest.mark.parametrize("strides,dilations,padding", GEOMETRIES)
def test_the_input_gradient_is_the_loops_adjoint(strides, dilations, padding,
                                                 input_grad_kernel):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 7, 9, 3)), rng.standard_normal((3, 2, 3, 4))
    if padding == "explicit":
        pads = ((2, 1), (0, 3))
        padding = [[0, 0], list(pads[0]), list(pads[1]), [0, 0]]
    else:
        pads = tuple(same_pads(n, k, s, d) for n, k, s, d in
                     zip((7, 9), (3, 2), strides, dilations)) if padding == "SAME" \
            else ((0, 0), (0, 0))
    dy = rng.standard_normal(conv2d_reference(x, w, strides, dilations, pads).shape)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.conv2d(xt, w, strides=strides, padding=padding, dilations=dilations)
    got = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    want = _input_grad_reference(dy, w, x.shape, strides, dilations, pads)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_half_precision_input_gradients_sum_in_float32(input_grad_kernel):
    """Nine products rounded once, not at every partial sum: float16's error stays one
    rounding's, as the float32 GEMM it replaces gave."""
    rng = np.random.default_rng(4)
    dy, w = rng.standard_normal((2, 6, 6, 8)), rng.standard_normal((3, 3, 5, 8))
    geometry = _geometry((8, 8), (3, 3), (1, 1), "VALID")
    want = conv._conv2d_backprop_input_forward(dy, w, (8, 8), **geometry)
    got = conv._conv2d_backprop_input_forward(dy.astype(np.float16), w.astype(np.float16), (8, 8),
                                              **geometry)
    exact16 = conv._conv2d_backprop_input_forward(dy.astype(np.float16).astype(np.float64),
                                                  w.astype(np.float16).astype(np.float64), (8, 8),
                                                  **geometry)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, exact16.astype(np.float16))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
