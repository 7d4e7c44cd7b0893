"""Conv1DTranspose / Conv2DTranspose and tf.nn.conv1d_transpose / conv2d_transpose against the
definition of a transposed convolution (every input position adds ``kernel @ input`` into the
output window a convolution would read it from), Keras's output shapes and kernel layout,
gradients to second order, errors.  (Config, checkpoint, traced = eager and fit: the battery.)"""
import itertools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import layers
from tests.ops.gradcheck import check_grads


def _rng(seed=0):
    return np.random.default_rng(seed)


def _same_pad_before(n, k, s, d):
    """TensorFlow's SAME padding before the data, for a convolution of length n."""
    total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2


def conv_transpose_reference(x, kernel, strides, dilations, out_spatial, pad_before):
    """Channels-last transposed convolution by scatter-add: input position p adds
    ``kernel[k] @ x[p]`` (kernel (*k, filters, in)) at output position p * s + k * d - pad."""
    rank = x.ndim - 2
    out = np.zeros((x.shape[0],) + tuple(out_spatial) + (kernel.shape[-2],))
    for p in itertools.product(*(range(n) for n in x.shape[1:-1])):
        for k in itertools.product(*(range(n) for n in kernel.shape[:rank])):
            q = tuple(pi * s + ki * d - pb
                      for pi, ki, s, d, pb in zip(p, k, strides, dilations, pad_before))
            if all(0 <= qi < n for qi, n in zip(q, out_spatial)):
                out[(slice(None),) + q] += x[(slice(None),) + p] @ kernel[k].T
    return out


# --- the ops --------------------------------------------------------------------------------------
@pytest.mark.parametrize("strides,dilations,padding", list(itertools.product(
    [(1, 1), (2, 3)], [(1, 1), (2, 1)], ["VALID", "SAME"])))
def test_conv2d_transpose_is_the_scatter_add(strides, dilations, padding):
    rng = _rng(1)
    x, w = rng.standard_normal((2, 3, 4, 3)), rng.standard_normal((3, 2, 5, 3))  # (kh, kw, out, in)
    kh, kw = w.shape[:2]
    spatial = [n * s + (max((k - 1) * d + 1 - s, 0) if padding == "VALID" else 0)
               for n, s, k, d in zip(x.shape[1:3], strides, (kh, kw), dilations)]
    got = tf.nn.conv2d_transpose(x, w, [2] + spatial + [5], strides, padding,
                                 dilations=dilations).numpy()
    pads = [0, 0] if padding == "VALID" else [
        _same_pad_before(n, k, s, d) for n, k, s, d in zip(spatial, (kh, kw), strides, dilations)]
    want = conv_transpose_reference(x, w, strides, dilations, spatial, pads)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_conv1d_transpose_is_conv2d_transpose_on_one_row_and_takes_ncw():
    rng = _rng(2)
    x, w = rng.standard_normal((2, 5, 3)), rng.standard_normal((3, 4, 3))
    got = tf.nn.conv1d_transpose(x, w, [2, 10, 4], 2, "SAME").numpy()
    want = conv_transpose_reference(x, w, (2,), (1,), (10,), (_same_pad_before(10, 3, 2, 1),))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    ncw = tf.nn.conv1d_transpose(x.transpose(0, 2, 1), w, [2, 4, 10], 2, "SAME",
                                 data_format="NCW").numpy()
    np.testing.assert_allclose(ncw, got.transpose(0, 2, 1), rtol=1e-12, atol=1e-12)


def test_conv_transpose_ops_to_second_order():
    rng = _rng(3)
    check_grads(lambda x, w: tf.nn.tanh(tf.nn.conv2d_transpose(x, w, [2, 5, 4, 2], (2, 1), "SAME")),
                [rng.standard_normal((2, 3, 4, 3)) * 0.5, rng.standard_normal((2, 2, 2, 3)) * 0.5],
                order=2)
    check_grads(lambda x, w: tf.nn.tanh(tf.nn.conv1d_transpose(x, w, [1, 7, 2], 2, "VALID")),
                [rng.standard_normal((1, 3, 2)) * 0.5, rng.standard_normal((3, 2, 2)) * 0.5],
                order=2)


def test_op_errors_name_the_problem():
    x, w = np.zeros((2, 3, 3, 3)), np.zeros((3, 3, 5, 3))
    with pytest.raises(ValueError, match="disagree"):
        tf.nn.conv2d_transpose(x, w, [2, 6, 6, 4], 2, "SAME")  # 4 channels, filters say 5
    with pytest.raises(ValueError, match="disagree"):
        tf.nn.conv2d_transpose(x, w, [3, 6, 6, 5], 2, "SAME")  # batch 3 of 2
    with pytest.raises(ValueError, match="4 entries"):
        tf.nn.conv2d_transpose(x, w, [6, 6, 5], 2, "SAME")
    with pytest.raises(ValueError, match="convolves to"):
        tf.nn.conv2d_transpose(x, w, [2, 9, 6, 5], 2, "SAME")
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.conv2d_transpose(x, w[0], [2, 6, 6, 5], 2, "SAME")
    with pytest.raises(TypeError, match="output_shape"):
        tf.nn.conv2d_transpose(x, w, "2665", 2, "SAME")
    with pytest.raises(ValueError, match="rank 3"):
        tf.nn.conv1d_transpose(x, w, [2, 6, 5], 2, "SAME")


# --- the layers -----------------------------------------------------------------------------------
# (kernel, strides, padding, output_padding, dilation) -> Keras's output size for an input of 5
KERAS_SIZES = [(3, 2, "same", None, 1, 10), (3, 2, "valid", None, 1, 11),
               (2, 2, "valid", None, 1, 10), (1, 3, "valid", None, 1, 15),
               (3, 1, "valid", None, 2, 9), (3, 1, "same", None, 2, 5),
               (3, 2, "valid", 1, 1, 12), (3, 3, "same", 2, 1, 15), (4, 3, "valid", 0, 1, 16)]


@pytest.mark.parametrize("k,s,padding,output_padding,d,size", KERAS_SIZES)
def test_conv2d_transpose_layer_is_the_scatter_add_with_keras_sizes(k, s, padding,
                                                                    output_padding, d, size):
    rng = _rng(4)
    layer = layers.Conv2DTranspose(3, (k, 3), strides=(s, 1), padding=padding, dtype="float64",
                                   output_padding=None if output_padding is None else
                                   (output_padding, 0), dilation_rate=(d, 1),
                                   bias_initializer="random_normal")
    x = rng.standard_normal((2, 5, 4, 2))
    y = layer(x).numpy()
    width = 6 if padding == "valid" else 4
    assert y.shape == (2, size, width, 3) == layer.compute_output_shape((2, 5, 4, 2))
    assert layer.kernel.shape == (k, 3, 3, 2)  # Keras's (kh, kw, filters, in_channels)
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    pads = [0, 0] if padding == "valid" else [_same_pad_before(size, k, s, d),
                                              _same_pad_before(width, 3, 1, 1)]
    want = conv_transpose_reference(x, kernel, (s, 1), (d, 1), (size, width), pads) + bias
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def test_channels_first_and_conv1d_transpose():
    rng = _rng(5)
    x = rng.standard_normal((2, 4, 5, 3))
    last = layers.Conv2DTranspose(2, 3, strides=2, padding="same", dtype="float64")
    first = layers.Conv2DTranspose(2, 3, strides=2, padding="same", dtype="float64",
                                   data_format="channels_first")
    y = last(x)
    first(np.moveaxis(x, -1, 1))
    first.set_weights(last.get_weights())
    np.testing.assert_allclose(first(np.moveaxis(x, -1, 1)).numpy(), np.moveaxis(y.numpy(), -1, 1),
                               rtol=1e-12)
    assert first.compute_output_shape((None, 3, 4, 5)) == (None, 2, 8, 10)
    one = layers.Conv1DTranspose(2, 3, strides=2, output_padding=1, dtype="float64")
    x1 = rng.standard_normal((2, 5, 3))
    y1 = one(x1).numpy()
    assert y1.shape == (2, 12, 2) == one.compute_output_shape(x1.shape)
    want = conv_transpose_reference(x1, one.kernel.numpy(), (2,), (1,), (12,), (0,))
    np.testing.assert_allclose(y1, want + one.bias.numpy(), rtol=1e-12, atol=1e-12)


def test_layer_gradients_to_second_order():
    rng = _rng(6)
    layer = layers.Conv2DTranspose(2, (2, 3), strides=(2, 1), padding="same", activation="tanh",
                                   dtype="float64", bias_initializer="random_normal")
    x = rng.uniform(-1, 1, (2, 3, 3, 2))
    layer(x)
    check_grads(lambda x: layer(x), [x], order=2)

    def via_op(x, kernel, bias):
        return tf.nn.tanh(tf.nn.conv2d_transpose(x, kernel, [2, 6, 3, 2], (2, 1), "SAME") + bias)

    check_grads(via_op, [x, layer.kernel.numpy(), layer.bias.numpy()], order=2)


def test_names_aliases_and_errors():
    tf.keras.backend.clear_session()
    assert [layers.Conv2DTranspose(1, 1).name, layers.Conv1DTranspose(1, 1).name] == \
        ["conv2d_transpose", "conv1d_transpose"]
    assert tf.keras.layers.Convolution2DTranspose is layers.Conv2DTranspose
    assert "groups" not in layers.Conv2DTranspose(1, 1).get_config()
    with pytest.raises(ValueError, match="smaller than the strides"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="output_padding"):
        layers.Conv2DTranspose(2, 3, output_padding=(1, 1, 1))
    with pytest.raises(ValueError, match="padding"):
        layers.Conv1DTranspose(2, 3, padding="causal")
    with pytest.raises(ValueError, match="rank 4"):
        layers.Conv2DTranspose(2, 3)(np.zeros((2, 5, 5), np.float32))
