"""tf.nn's convolutions and pools against explicit loops, TensorFlow's padding rules, and the
gradient rules where the op battery (op_cases.py) does not reach: leading (jacobian) axes on
filters, Hessians through a network of convolutions, traced graphs fitting any batch."""
import itertools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import registry

from .gradcheck import check_grads, check_jacobian


def _rng(seed=0):
    return np.random.default_rng(seed)


def same_pads(n, k, s, d=1):
    """TensorFlow's SAME: output ceil(n / s); the odd padding element goes to the end."""
    total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def conv2d_reference(x, w, strides, dilations, pads):
    """Cross-correlation by loops over output positions and kernel offsets (NHWC, HWIO)."""
    (pt, pb), (pl, pr) = pads
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)])
    kh, kw, _, co = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    ho = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    wo = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((x.shape[0], ho, wo, co))
    for a, b, i, j in itertools.product(range(ho), range(wo), range(kh), range(kw)):
        out[:, a, b, :] += xp[:, a * sh + i * dh, b * sw + j * dw, :] @ w[i, j]
    return out


def pool_reference(x, k, s, pads, kind):
    (pt, pb), (pl, pr) = pads
    fill = -np.inf if kind == "max" else np.nan
    xp = np.pad(x, [(0, 0), (pt, pb), (pl, pr), (0, 0)], constant_values=fill)
    ho = (xp.shape[1] - k[0]) // s[0] + 1
    wo = (xp.shape[2] - k[1]) // s[1] + 1
    out = np.zeros((x.shape[0], ho, wo, x.shape[3]))
    for a, b in itertools.product(range(ho), range(wo)):
        win = xp[:, a * s[0]:a * s[0] + k[0], b * s[1]:b * s[1] + k[1], :]
        out[:, a, b, :] = win.max(axis=(1, 2)) if kind == "max" else np.nanmean(win, axis=(1, 2))
    return out


GEOMETRIES = list(itertools.product([(1, 1), (2, 1), (2, 3)], [(1, 1), (2, 1), (1, 3)],
                                    ["VALID", "SAME", "explicit"]))


@pytest.mark.parametrize("strides,dilations,padding", GEOMETRIES)
def test_conv2d_matches_the_loop(strides, dilations, padding):
    rng = _rng(1)
    x, w = rng.standard_normal((2, 7, 9, 3)), rng.standard_normal((3, 2, 3, 4))
    if padding == "SAME":
        pads = tuple(same_pads(n, k, s, d) for n, k, s, d in zip((7, 9), (3, 2), strides, dilations))
    elif padding == "VALID":
        pads = ((0, 0), (0, 0))
    else:
        pads = ((2, 1), (0, 3))
        padding = [[0, 0], list(pads[0]), list(pads[1]), [0, 0]]
    got = tf.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations).numpy()
    want = conv2d_reference(x, w, strides, dilations, pads)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_same_padding_puts_the_odd_element_at_the_end_as_tensorflow():
    x = np.arange(1.0, 5.0).reshape(1, 1, 4, 1)  # width 4, kernel 2, stride 1: pad (0, 1)
    w = np.ones((1, 2, 1, 1))
    np.testing.assert_array_equal(tf.nn.conv2d(x, w, 1, "SAME").numpy().ravel(), [3, 5, 7, 4])
    # width 5, kernel 4, stride 2: out 3, total padding (3-1)*2+4-5 = 3 -> (1, 2)
    x = np.arange(1.0, 6.0).reshape(1, 1, 5, 1)
    w = np.ones((1, 4, 1, 1))
    np.testing.assert_array_equal(tf.nn.conv2d(x, w, 2, "SAME").numpy().ravel(), [6, 14, 9])


def test_float32_in_float32_out_and_the_argument_forms():
    rng = _rng(2)
    x = rng.standard_normal((2, 6, 6, 2)).astype(np.float32)
    w = rng.standard_normal((3, 3, 2, 5)).astype(np.float32)
    a = tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME", dilations=[1, 1, 1, 1])
    b = tf.nn.conv2d(x, w, strides=2, padding="same")
    c = tf.nn.conv2d(x, w, strides=[2], padding="SAME")
    assert a.dtype == tf.float32 and a.shape == (2, 3, 3, 5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_allclose(a.numpy(), conv2d_reference(x.astype(np.float64), w, (2, 2), (1, 1),
                                                           ((0, 1), (0, 1))), rtol=1e-4, atol=1e-5)


def test_nchw_is_nhwc_transposed():
    rng = _rng(3)
    x, w = rng.standard_normal((2, 5, 6, 3)), rng.standard_normal((2, 3, 3, 4))
    nhwc = tf.nn.conv2d(x, w, (2, 1), "SAME", dilations=(1, 2)).numpy()
    nchw = tf.nn.conv2d(x.transpose(0, 3, 1, 2), w, [1, 1, 2, 1], "SAME", data_format="NCHW",
                        dilations=[1, 1, 1, 2]).numpy()
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-12, atol=1e-12)


def test_grouped_convolution_is_per_group_convolutions():
    rng = _rng(4)
    x, w = rng.standard_normal((2, 5, 5, 6)), rng.standard_normal((3, 3, 2, 9))
    got = tf.nn.conv2d(x, w, 1, "VALID").numpy()
    parts = [conv2d_reference(x[..., 2 * g:2 * g + 2], w[..., 3 * g:3 * g + 3], (1, 1), (1, 1),
                              ((0, 0), (0, 0))) for g in range(3)]
    np.testing.assert_allclose(got, np.concatenate(parts, -1), rtol=1e-12, atol=1e-12)


def test_extra_batch_axes_are_folded():
    rng = _rng(5)
    x, w = rng.standard_normal((2, 3, 5, 5, 2)), rng.standard_normal((3, 3, 2, 2))
    got = tf.nn.conv2d(x, w, 1, "SAME").numpy()
    want = tf.nn.conv2d(x.reshape(6, 5, 5, 2), w, 1, "SAME").numpy().reshape(2, 3, 5, 5, 2)
    np.testing.assert_array_equal(got, want)


def test_conv1d_is_conv2d_on_one_row_and_convolution_dispatches_by_rank():
    rng = _rng(6)
    x, w = rng.standard_normal((2, 9, 3)), rng.standard_normal((3, 3, 4))
    got = tf.nn.conv1d(x, w, stride=2, padding="SAME", dilations=2).numpy()
    want = conv2d_reference(x[:, None], w[None], (1, 2), (1, 2), ((0, 0), same_pads(9, 3, 2, 2)))
    np.testing.assert_allclose(got, want[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(tf.nn.convolution(x, w, 2, "SAME", dilations=2).numpy(), got)
    ncw = tf.nn.conv1d(x.transpose(0, 2, 1), w, 2, "SAME", data_format="NCW", dilations=2)
    np.testing.assert_allclose(ncw.numpy(), got.transpose(0, 2, 1), rtol=1e-12, atol=1e-12)


def test_conv2d_transpose_is_the_input_gradient():
    rng = _rng(7)
    x, w = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 4))
    xt = tf.constant(x)
    dy = rng.standard_normal(tf.nn.conv2d(x, w, 2, "SAME").shape)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.nn.conv2d(xt, w, 2, "SAME")
    want = tape.gradient(y, xt, output_gradients=tf.constant(dy)).numpy()
    got = tf.nn.conv2d_transpose(dy, w, [2, 7, 6, 3], 2, "SAME").numpy()
    np.testing.assert_array_equal(got, want)
    # <conv(x), dy> == <x, conv^T(dy)>: the adjoint, checked against the loop
    lhs = np.sum(conv2d_reference(x, w, (2, 2), (1, 1), (same_pads(7, 3, 2), same_pads(6, 3, 2))) * dy)
    assert np.isclose(lhs, np.sum(x * got), rtol=1e-12)
    with pytest.raises(ValueError, match="convolves to"):
        tf.nn.conv2d_transpose(dy, w, [2, 9, 6, 3], 2, "SAME")


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,s,padding", [((2, 2), (2, 2), "VALID"), ((3, 3), (2, 2), "SAME"),
                                         ((3, 2), (1, 3), "SAME"), ((2, 3), (3, 1), "VALID")])
def test_pools_match_the_loop(kind, k, s, padding):
    x = _rng(8).standard_normal((2, 7, 8, 3))
    pads = ((0, 0), (0, 0)) if padding == "VALID" else tuple(
        same_pads(n, kk, ss) for n, kk, ss in zip((7, 8), k, s))
    pool = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    got = pool(x, k, s, padding).numpy()
    np.testing.assert_allclose(got, pool_reference(x, k, s, pads, kind), rtol=1e-12, atol=1e-12)
    one_d = tf.nn.max_pool1d if kind == "max" else tf.nn.avg_pool1d
    got1 = one_d(x[:, 0], k[1], s[1], padding).numpy()
    np.testing.assert_allclose(got1, pool_reference(x[:, :1], (1, k[1]), (1, s[1]),
                                                    ((0, 0), pads[1]), kind)[:, 0], rtol=1e-12)


def test_same_average_pool_averages_only_the_inputs_it_holds():
    x = np.ones((1, 3, 3, 1))
    np.testing.assert_array_equal(tf.nn.avg_pool2d(x, 2, 2, "SAME").numpy(), np.ones((1, 2, 2, 1)))


def test_max_pool_sends_a_ties_gradient_to_the_first_maximum():
    x = tf.constant(np.array([[1.0, 3.0], [3.0, 2.0]]).reshape(1, 2, 2, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [0, 1, 0, 0])


def test_errors_name_the_problem():
    x = np.zeros((1, 3, 3, 2))
    with pytest.raises(ValueError, match="does not fit"):
        tf.nn.conv2d(x, np.zeros((4, 4, 2, 1)), 1, "VALID")
    with pytest.raises(ValueError, match="cannot split into groups"):
        tf.nn.conv2d(x, np.zeros((1, 1, 3, 1)), 1, "VALID")
    with pytest.raises(ValueError, match="padding must be"):
        tf.nn.conv2d(x, np.zeros((1, 1, 2, 1)), 1, "FULL")
    with pytest.raises(ValueError, match="batch or channel"):
        tf.nn.conv2d(x, np.zeros((1, 1, 2, 1)), [2, 1, 1, 1], "SAME")
    with pytest.raises(TypeError, match="float32"):
        tf.nn.conv2d(tf.constant(x, tf.float32), tf.constant(np.zeros((1, 1, 2, 1))), 1, "SAME")
    with pytest.raises(ValueError, match="smaller than the window"):
        tf.nn.max_pool2d(x, 2, 1, [[0, 0], [2, 0], [0, 0], [0, 0]])


# --- gradients beyond the battery ------------------------------------------------------------------
def _small_cnn(x, w1, w2):
    h = tf.nn.tanh(tf.nn.conv2d(x, w1, 1, "SAME"))
    h = tf.nn.avg_pool2d(tf.nn.max_pool2d(h, 2, 1, "VALID"), 2, 1, "SAME")
    return tf.nn.conv2d(h, w2, 2, "VALID", dilations=1)


def test_a_small_cnn_to_second_order():
    rng = _rng(9)
    x = rng.uniform(-1, 1, (2, 5, 5, 2))
    check_grads(_small_cnn, [x, rng.standard_normal((3, 3, 2, 3)) * 0.5,
                             rng.standard_normal((2, 2, 3, 2)) * 0.5], order=2)


def test_jacobians_carry_leading_axes_through_every_rule():
    """The battery's jacobians pass leading axes through a cotangent; here they reach filters
    (FilterGrad's rule) and both operands of the backprop primitives (a Hessian's jacobian)."""
    rng = _rng(10)
    x, w = rng.standard_normal((2, 4, 4, 2)), rng.standard_normal((2, 2, 2, 2))
    check_jacobian(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), [x, w], chunk_sizes=(None,))
    xt, wt = tf.constant(x), tf.constant(w)

    def gradient_of_loss(w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            y = tf.nn.conv2d(xt, w, (2, 1), "SAME")
            loss = tf.reduce_sum(tf.nn.tanh(y) ** 2)
        return tape.gradient(loss, w)

    with tf.GradientTape() as outer:
        outer.watch(wt)
        g = gradient_of_loss(wt)
    hessian = outer.jacobian(g, wt).numpy().reshape(16, 16)
    eps = 1e-6
    numeric = np.zeros((16, 16))
    for k in range(16):
        d = np.zeros(16)
        d[k] = eps
        plus = gradient_of_loss(tf.constant(w + d.reshape(w.shape))).numpy().ravel()
        minus = gradient_of_loss(tf.constant(w - d.reshape(w.shape))).numpy().ravel()
        numeric[:, k] = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(hessian, numeric, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-10, atol=1e-12)


def test_conv_rules_are_vectorized():
    for name in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool",
                 "MaxPoolGrad", "MaxPoolGradGrad", "AvgPool", "AvgPoolGrad"):
        assert registry.lookup_gradient(name).vectorized, name


def test_a_traced_convolution_fits_any_batch_and_matches_eager():
    """No attribute holds the batch size: one graph serves every batch (the cotangent is an
    argument, as reductions' gradients do bake in their shapes)."""
    rng = _rng(11)
    w = tf.Variable(rng.standard_normal((3, 3, 1, 4)).astype(np.float32))

    def forward(x):
        return tf.nn.avg_pool2d(tf.nn.max_pool2d(tf.nn.conv2d(x, w, 1, "SAME"), 2, 1, "SAME"),
                                2, 2, "VALID")

    @tf.function(input_signature=[tf.TensorSpec((None, 6, 6, 1), "float32"),
                                  tf.TensorSpec((None, 3, 3, 4), "float32")])
    def step(x, dy):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        return (y,) + tuple(tape.gradient(y, [x, w], output_gradients=dy))

    counts = []
    for n in (3, 5, 7):
        x = tf.constant(rng.standard_normal((n, 6, 6, 1)).astype(np.float32))
        dy = tf.constant(rng.standard_normal((n, 3, 3, 4)).astype(np.float32))
        traced = step(x, dy)
        counts.append(step.experimental_get_tracing_count())
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        eager = (y,) + tuple(tape.gradient(y, [x, w], output_gradients=dy))
        for a, b in zip(traced, eager, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert counts[0] == counts[-1], "the graph baked in the batch size: traced again per size"


# --- max-pool gradients where windows tie --------------------------------------------------------
def max_pool_grad_reference(x, dy, k, s):
    """VALID max pool's gradient by loops: each window's dy added at its first maximum (the
    first in row-major order, numpy's argmax), as TensorFlow and torch do."""
    out = np.zeros(dy.shape[:-3] + x.shape[-3:])
    for n, a, b, c in itertools.product(range(x.shape[0]), *(range(d) for d in dy.shape[-3:])):
        window = x[n, a * s[0]:a * s[0] + k[0], b * s[1]:b * s[1] + k[1], c]
        i, j = np.unravel_index(np.argmax(window), window.shape)
        out[..., n, a * s[0] + i, b * s[1] + j, c] += dy[..., n, a, b, c]
    return out


@pytest.mark.parametrize("shape,ksize,strides", [((2, 8, 8, 3), (2, 2), (2, 2)),
                                                 ((2, 7, 9, 2), (2, 3), (2, 3)),
                                                 ((1, 6, 6, 1), (3, 3), (3, 3)),
                                                 ((2, 5, 4, 2), (2, 2), (1, 1))])
def test_max_pool_gradients_where_windows_tie(shape, ksize, strides):
    """Values rounded to a few levels after a relu (many ties, whole windows of zeros): the
    gradient goes to each window's first maximum, for windows that tile the input, leave a
    remainder no window reaches, or overlap; leading (jacobian) axes of the cotangent carry
    through; MaxPoolGradGrad reads g where MaxPoolGrad writes."""
    from tapeflow.ops import pooling
    rng = _rng(12)
    x = np.maximum(np.round(rng.standard_normal(shape)), 0)
    attrs = (ksize, strides, ((0, 0), (0, 0)))
    out_shape = tuple(tf.nn.max_pool2d(x, ksize, strides, "VALID").shape)
    for dy in (rng.standard_normal(out_shape), rng.standard_normal((3,) + out_shape)):
        np.testing.assert_allclose(pooling._max_pool_grad_forward(x, dy, *attrs),
                                   max_pool_grad_reference(x, dy, ksize, strides), rtol=1e-12)
    g = rng.standard_normal((2,) + shape)
    dy = rng.standard_normal((2,) + out_shape)
    # <MaxPoolGrad(x, dy), g> = <dy, MaxPoolGradGrad(x, g)>: each other's adjoint in dy and g
    np.testing.assert_allclose(np.sum(pooling._max_pool_grad_forward(x, dy, *attrs) * g),
                               np.sum(dy * pooling._max_pool_grad_grad_forward(x, g, *attrs)),
                               rtol=1e-12)


def test_a_window_of_equal_values_sends_its_gradient_to_its_first_element():
    """All-zero windows (common after a relu): TensorFlow and torch pick the first element."""
    for shape, k, s in (((1, 2, 2, 1), 2, 2), ((1, 3, 3, 1), 2, 1)):  # tiled, overlapping
        x = tf.constant(np.zeros(shape))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.nn.max_pool2d(x, k, s, "VALID"))
        grad = tape.gradient(y, x).numpy()[0, ..., 0]
        want = np.zeros(shape[1:3])
        want[:shape[1] - k + 1:s, :shape[2] - k + 1:s] = 1
        np.testing.assert_array_equal(grad, want)
