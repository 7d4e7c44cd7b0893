"""Conv1D/2D and the pooling layers: outputs against scipy and numpy references, gradients
against finite differences, config and checkpoint round trips, traced fit equal to eager fit,
and a small CNN learning sklearn's digits."""
import itertools

import numpy as np
import pytest
from scipy.signal import correlate

import tapeflow as tf
from tapeflow import layers
from tests.ops.gradcheck import check_grads


def _rng(seed=0):
    return np.random.default_rng(seed)


# --- references ---------------------------------------------------------------------------------
def _same_pads(n, k, s, d=1):
    total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def _dilate(kernel, rates):
    """A kernel with rate - 1 zeros between its taps along each spatial axis."""
    shape = tuple((k - 1) * r + 1 for k, r in zip(kernel.shape, rates))
    out = np.zeros(shape)
    out[tuple(slice(None, None, r) for r in rates)] = kernel
    return out


def conv_reference(x, kernel, bias, strides, padding, dilations, groups=1):
    """channels-last Conv (any rank) by scipy.signal.correlate per (example, group, in, out)."""
    rank = x.ndim - 2
    spatial = x.shape[1:-1]
    ks = kernel.shape[:rank]
    if padding == "same":
        pads = [_same_pads(n, k, s, d) for n, k, s, d in zip(spatial, ks, strides, dilations)]
    elif padding == "causal":
        pads = [((ks[0] - 1) * dilations[0], 0)]
    else:
        pads = [(0, 0)] * rank
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)])
    cin, cout = kernel.shape[-2], kernel.shape[-1]
    per_group = cout // groups
    outs = []
    for n in range(x.shape[0]):
        channels = []
        for o in range(cout):
            g = o // per_group
            acc = sum(correlate(xp[n, ..., g * cin + c], _dilate(kernel[..., c, o], dilations),
                                mode="valid") for c in range(cin))
            channels.append(acc[tuple(slice(None, None, s) for s in strides)] + bias[o])
        outs.append(np.stack(channels, -1))
    return np.stack(outs)


def pool_reference(x, pool, strides, padding, kind):
    """channels-last 2-D pooling by loops; "same" windows hold only input elements."""
    _, h, w, _ = x.shape
    pads = [_same_pads(n, k, s) for n, k, s in zip((h, w), pool, strides)] \
        if padding == "same" else [(0, 0), (0, 0)]
    xp = np.pad(x, [(0, 0)] + pads + [(0, 0)], constant_values=np.nan)
    ho = (xp.shape[1] - pool[0]) // strides[0] + 1
    wo = (xp.shape[2] - pool[1]) // strides[1] + 1
    out = np.zeros((x.shape[0], ho, wo, x.shape[3]))
    reduce = np.nanmax if kind == "max" else np.nanmean
    for a, b in itertools.product(range(ho), range(wo)):
        win = xp[:, a * strides[0]:a * strides[0] + pool[0], b * strides[1]:b * strides[1] + pool[1]]
        out[:, a, b] = reduce(win, axis=(1, 2))
    return out


# --- outputs ------------------------------------------------------------------------------------
CONV2D = [  # strides, padding, dilation, groups
    ((1, 1), "valid", (1, 1), 1), ((1, 1), "same", (1, 1), 1), ((2, 2), "same", (1, 1), 1),
    ((2, 1), "valid", (1, 1), 1), ((1, 1), "same", (2, 2), 1), ((1, 2), "valid", (2, 1), 1),
    ((2, 2), "same", (1, 1), 2), ((1, 1), "valid", (1, 2), 3),
]


@pytest.mark.parametrize("strides,padding,dilation,groups", CONV2D)
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_conv2d_matches_scipy(strides, padding, dilation, groups, data_format):
    rng = _rng(1)
    x = rng.standard_normal((2, 9, 8, 6))
    layer = layers.Conv2D(6, (3, 2), strides=strides, padding=padding, dilation_rate=dilation,
                          groups=groups, data_format=data_format, dtype="float64",
                          bias_initializer="random_normal")
    inputs = x if data_format == "channels_last" else x.transpose(0, 3, 1, 2)
    got = layer(inputs).numpy()
    assert layer.kernel.shape == (3, 2, 6 // groups, 6)
    want = conv_reference(x, layer.kernel.numpy(), layer.bias.numpy(), strides, padding, dilation,
                          groups)
    if data_format == "channels_first":
        want = want.transpose(0, 3, 1, 2)
    assert got.shape == want.shape == layer.compute_output_shape(inputs.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("strides,padding,dilation", [
    (1, "valid", 1), (2, "same", 1), (1, "same", 2), (1, "causal", 1), (2, "causal", 2),
    (3, "valid", 2)])
def test_conv1d_matches_scipy(strides, padding, dilation):
    x = _rng(2).standard_normal((3, 11, 2))
    layer = layers.Conv1D(4, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          activation="tanh", dtype="float64", bias_initializer="ones")
    got = layer(x).numpy()
    want = np.tanh(conv_reference(x, layer.kernel.numpy(), layer.bias.numpy(), (strides,),
                                  padding, (dilation,)))
    assert got.shape == want.shape
    assert layer.compute_output_shape((None, 11, 2)) == (None,) + want.shape[1:]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_causal_output_step_sees_only_the_past():
    layer = layers.Conv1D(1, 3, padding="causal", dtype="float64")
    x = _rng(3).standard_normal((1, 8, 1))
    y = layer(x).numpy()
    x2 = x.copy()
    x2[0, 5:] += 1.0
    np.testing.assert_array_equal(layer(x2).numpy()[0, :5], y[0, :5])


@pytest.mark.parametrize("pool,strides,padding", [
    ((2, 2), None, "valid"), ((3, 3), (2, 2), "same"), ((2, 3), (1, 2), "valid"),
    ((3, 2), (3, 1), "same")])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_2d_matches_the_loop(pool, strides, padding, kind):
    x = _rng(4).standard_normal((2, 7, 8, 3))
    cls = layers.MaxPooling2D if kind == "max" else layers.AveragePooling2D
    layer = cls(pool, strides=strides, padding=padding, dtype="float64")
    got = layer(x).numpy()
    want = pool_reference(x, pool, strides or pool, padding, kind)
    assert got.shape == want.shape and layer.compute_output_shape((None, 7, 8, 3))[1:] == want.shape[1:]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    first = cls(pool, strides=strides, padding=padding, data_format="channels_first",
                dtype="float64")(x.transpose(0, 3, 1, 2)).numpy()
    np.testing.assert_array_equal(first, got.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pooling_1d_is_2d_on_one_row(kind, padding):
    x = _rng(5).standard_normal((2, 9, 3))
    cls = layers.MaxPooling1D if kind == "max" else layers.AveragePooling1D
    got = cls(3, strides=2, padding=padding, dtype="float64")(x).numpy()
    want = pool_reference(x[:, None], (1, 3), (1, 2), padding, kind)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    first = cls(3, strides=2, padding=padding, data_format="channels_first",
                dtype="float64")(x.transpose(0, 2, 1)).numpy()
    np.testing.assert_array_equal(first, got.transpose(0, 2, 1))


@pytest.mark.parametrize("cls,reduce,axes", [
    (layers.GlobalAveragePooling1D, np.mean, (1,)), (layers.GlobalMaxPooling1D, np.max, (1,)),
    (layers.GlobalAveragePooling2D, np.mean, (1, 2)), (layers.GlobalMaxPooling2D, np.max, (1, 2))])
def test_global_pooling(cls, reduce, axes):
    x = _rng(6).standard_normal((2,) + (5,) * len(axes) + (3,))
    np.testing.assert_allclose(cls(dtype="float64")(x).numpy(), reduce(x, axis=axes), rtol=1e-12)
    kept = cls(keepdims=True, dtype="float64")(x)
    assert kept.shape == reduce(x, axis=axes, keepdims=True).shape
    first = np.moveaxis(x, -1, 1)
    np.testing.assert_allclose(cls(data_format="channels_first", dtype="float64")(first).numpy(),
                               reduce(x, axis=axes), rtol=1e-12)
    assert cls().compute_output_shape(x.shape) == (2, 3)


def test_default_names_are_keras_names():
    tf.keras.backend.clear_session()
    names = [layers.Conv2D(1, 1).name, layers.Conv2D(1, 1).name, layers.Conv1D(1, 1).name,
             layers.MaxPooling2D().name, layers.GlobalAveragePooling1D().name,
             layers.AveragePooling1D(name="mine").name]
    assert names == ["conv2d", "conv2d_1", "conv1d", "max_pooling2d", "global_average_pooling1d",
                     "mine"]


def test_keras_aliases():
    assert tf.keras.layers.MaxPool2D is layers.MaxPooling2D
    assert tf.keras.layers.AvgPool1D is layers.AveragePooling1D
    assert tf.keras.layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D
    assert tf.keras.layers.Convolution2D is layers.Conv2D


# --- gradients ------------------------------------------------------------------------------------
def test_conv_layer_gradients_to_second_order():
    rng = _rng(7)
    conv = layers.Conv2D(3, 2, strides=(2, 1), padding="same", activation="tanh", dtype="float64")
    x = rng.uniform(-1, 1, (2, 5, 4, 2))
    conv(x)

    def via_variables(x, kernel, bias):
        return tf.nn.tanh(tf.nn.conv2d(x, kernel, (2, 1), "SAME") + bias)

    check_grads(via_variables, [x, conv.kernel.numpy(), rng.standard_normal(3)], order=2)
    check_grads(lambda x: conv(x), [x], order=2)
    # and the variables' gradient from the tape equals finite differences through the layer
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(conv(x) ** 2)
    grad = tape.gradient(loss, conv.kernel).numpy()
    k0, eps = conv.kernel.numpy(), 1e-6
    numeric = np.zeros_like(k0)
    for idx in np.ndindex(k0.shape):
        for sign in (1, -1):
            k = k0.copy()
            k[idx] += sign * eps
            conv.kernel.assign(k)
            numeric[idx] += sign * float(tf.reduce_sum(conv(x) ** 2).numpy()) / (2 * eps)
    conv.kernel.assign(k0)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_pooling_layers_gradients_to_second_order():
    x = (_rng(8).permutation(2 * 6 * 5 * 2) * 0.1).reshape(2, 6, 5, 2)  # no ties
    for layer in (layers.MaxPooling2D(2, padding="same", dtype="float64"),
                  layers.AveragePooling2D(3, strides=2, padding="same", dtype="float64"),
                  layers.GlobalMaxPooling2D(dtype="float64")):
        check_grads(lambda x: layer(x) ** 2, [x], order=2)


# --- config, errors -------------------------------------------------------------------------------
ALL = [
    lambda: layers.Conv2D(4, (3, 2), strides=2, padding="same", dilation_rate=1, groups=2,
                          activation="relu", use_bias=False, kernel_initializer="he_normal",
                          kernel_regularizer="l2", name="c2"),
    lambda: layers.Conv1D(2, 5, padding="causal", dilation_rate=2, data_format="channels_last"),
    lambda: layers.MaxPooling2D((2, 3), strides=(1, 2), padding="same"),
    lambda: layers.AveragePooling1D(3, data_format="channels_first"),
    lambda: layers.MaxPooling1D(), lambda: layers.AveragePooling2D(),
    lambda: layers.GlobalAveragePooling2D(keepdims=True), lambda: layers.GlobalMaxPooling1D(),
    lambda: layers.GlobalAveragePooling1D(), lambda: layers.GlobalMaxPooling2D(),
]


@pytest.mark.parametrize("make", ALL)
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    import json
    again = type(layer).from_config(json.loads(json.dumps(config)))  # tuples become lists
    assert again.get_config() == config


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="groups"):
        layers.Conv2D(5, 3, groups=2)
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(5, 3, padding="causal")
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(5, (3, 3, 3))
    with pytest.raises(ValueError, match="rank 4"):
        layers.Conv2D(2, 3)(np.zeros((2, 5, 5), np.float32))
    with pytest.raises(ValueError, match="split into 2 groups"):
        layers.Conv2D(2, 1, groups=2)(np.zeros((1, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="does not fit"):
        layers.Conv2D(2, 4)(np.zeros((1, 3, 3, 1), np.float32))


# --- models ---------------------------------------------------------------------------------------
def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    return train_test_split(x, d.target, test_size=0.25, random_state=0, stratify=d.target)


def _cnn(run_eagerly=False, seed=0):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], run_eagerly=run_eagerly)
    return model


def test_a_small_cnn_learns_digits_in_six_epochs():
    """Its speed is benchmarks/bench_cnn.py's figure against PyTorch, not a test's."""
    x_train, x_test, y_train, y_test = _digits()
    model = _cnn()
    model.fit(x_train, y_train, epochs=6, batch_size=32, verbose=0)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy > 0.90, accuracy


def test_save_and_load_round_trip_bitwise(tmp_path):
    x_train, x_test, y_train, _ = _digits()
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(8, 8, 1)),
        tf.keras.layers.Conv2D(4, 3, strides=2, padding="same", dilation_rate=1, activation="relu"),
        tf.keras.layers.AveragePooling2D(2, padding="same"),
        tf.keras.layers.Conv2D(4, 1, groups=2),
        tf.keras.layers.GlobalMaxPooling2D(),
        tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    model.fit(x_train[:200], y_train[:200], epochs=1, batch_size=50, verbose=0)
    path = str(tmp_path / "cnn.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.predict(x_test, verbose=0), loaded.predict(x_test, verbose=0))
    assert [type(layer).__name__ for layer in loaded.layers] == \
        [type(layer).__name__ for layer in model.layers]
    # training goes on identically from the loaded copy
    model.fit(x_train[:100], y_train[:100], epochs=1, batch_size=50, verbose=0, shuffle=False)
    loaded.fit(x_train[:100], y_train[:100], epochs=1, batch_size=50, verbose=0, shuffle=False)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_traced_fit_equals_eager_fit():
    x_train, _, y_train, _ = _digits()
    x, y = x_train[:300], y_train[:300]
    traced, eager = _cnn(), _cnn(run_eagerly=True)
    h1 = traced.fit(x, y, epochs=2, batch_size=64, verbose=0, shuffle=False)
    h2 = eager.fit(x, y, epochs=2, batch_size=64, verbose=0, shuffle=False)
    for a, b in zip(traced.get_weights(), eager.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert h1.history["loss"] == h2.history["loss"]
