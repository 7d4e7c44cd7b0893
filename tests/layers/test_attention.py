"""Attention and MultiHeadAttention against plain numpy written from Keras's formulas, their
masks, options and errors; MultiHeadAttention (which the layer battery cannot call: it takes
(query, value)) through the battery's checks here: config and checkpoint round trips, eager =
traced, gradients to second order in float64, a fit step."""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers
from tests.training_methods.differences import central_differences

RNG = np.random.default_rng(0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def data(*shapes, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def causal(tq, tk):
    return np.tril(np.ones((tq, tk), dtype=bool))[None]


# --- numpy references ----------------------------------------------------------------------------
def attention_reference(q, v, k=None, scale=None, concat_weight=None, q_mask=None, v_mask=None,
                        use_causal_mask=False):
    k = v if k is None else k
    if concat_weight is None:
        scores = q @ k.transpose(0, 2, 1) * (1.0 if scale is None else scale)
    else:
        pairs = (q[:, :, None, :] + k[:, None, :, :]) * (1.0 if scale is None else scale)
        scores = concat_weight * np.tanh(pairs).sum(-1)
    keep = np.ones(scores.shape, dtype=bool)
    if v_mask is not None:
        keep &= v_mask[:, None, :]
    if use_causal_mask:
        keep &= causal(*scores.shape[1:])
    weights = softmax(scores - 1e9 * ~keep)
    out = weights @ v
    if q_mask is not None:
        out = out * q_mask[..., None]
    return out, weights


def attention_heads(layer, q, v, k=None, keep=None):
    """The softmax weights (b, h, q, s) and the projected values (b, s, h, v) of Keras's
    MultiHeadAttention with biases, from its EinsumDense kernels, in numpy."""
    k = v if k is None else k
    qk, qb, kk, kb, vk, vb = [np.asarray(w.numpy()) for w in layer.weights[:6]]
    query = np.einsum("btd,dhk->bthk", q, qk) + qb
    key = np.einsum("btd,dhk->bthk", k, kk) + kb
    value = np.einsum("btd,dhk->bthk", v, vk) + vb
    scores = np.einsum("bshk,bqhk->bhqs", key, query) / np.sqrt(layer.key_dim)
    if keep is not None:
        scores = scores - 1e9 * ~keep[:, None]
    return softmax(scores), value


def mha_reference(layer, q, v, k=None, keep=None):
    """Keras's MultiHeadAttention, in numpy: the output and the attention weights."""
    weights, value = attention_heads(layer, q, v, k, keep)
    ok, ob = [np.asarray(w.numpy()) for w in layer.weights[6:]]
    heads = np.einsum("bhqs,bshv->bqhv", weights, value)
    return np.einsum("bqhv,hv...->bq...", heads, ok) + ob, weights


# --- gradients against central differences (scalar weights too) ----------------------------------
def _tape(fn, sources):
    with tf.GradientTape() as tape:
        value = fn()
    return tape.gradient(value, sources, unconnected_gradients="zero")


def check_layer_gradients(call, layer, arrays, rtol=1e-6, atol=1e-8):
    """The gradient of <call(inputs), w> w.r.t. the inputs and the layer's trainable weights,
    and the Hessian-vector product (the gradient of <gradient, u>), against differences."""
    inputs = [tf.Variable(a) for a in arrays]
    sources = inputs + list(layer.trainable_variables)
    rng = np.random.default_rng(5)
    w = rng.standard_normal(tuple(call(*inputs).shape))
    us = [rng.standard_normal(tuple(s.shape)) for s in sources]

    def first():
        return tf.reduce_sum(call(*inputs) * tf.constant(w))

    def directional():
        grads = _tape(first, sources)
        return tf.add_n([tf.reduce_sum(g * tf.constant(u)) for g, u in zip(grads, us)])
    for fn, tol in ((first, 1), (directional, 10)):
        for s, got, want in zip(sources, _tape(fn, sources), central_differences(fn, sources)):
            np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=rtol * tol,
                                       atol=atol * tol, err_msg=f"{fn.__name__} w.r.t. {s.name}")


# --- Attention -----------------------------------------------------------------------------------
def test_attention_dot_matches_numpy_with_key_and_scores():
    q, v, k = data((2, 3, 4), (2, 5, 6), (2, 5, 4))
    layer = layers.Attention()
    out, scores = layer([q, v, k], return_attention_scores=True)
    want, want_scores = attention_reference(q, v, k)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape([(None, 3, 4), (None, 5, 6)]) == (None, 3, 6)
    assert layer.weights == []


def test_attention_scale_and_concat_weights():
    q, v = data((2, 3, 4), (2, 5, 4))
    layer = layers.Attention(use_scale=True, score_mode="concat")
    layer([q, v])
    assert [w.path for w in layer.weights] == ["attention/scale",
                                               "attention/concat_score_weight"]
    layer.scale.assign(0.7)
    layer.concat_score_weight.assign(1.3)
    want, _ = attention_reference(q, v, scale=0.7, concat_weight=1.3)
    np.testing.assert_allclose(layer([q, v]).numpy(), want, rtol=1e-5, atol=1e-6)
    dot = layers.Attention(use_scale=True)
    dot([q, v])
    dot.scale.assign(0.5)
    np.testing.assert_allclose(dot([q, v]).numpy(), attention_reference(q, v, scale=0.5)[0],
                               rtol=1e-5, atol=1e-6)


def test_attention_masks_and_causal():
    q, v = data((2, 4, 3), (2, 4, 3))
    q_mask = np.array([[True, True, True, False], [True, False, True, True]])
    v_mask = np.array([[True, False, True, True], [True, True, True, False]])
    layer = layers.Attention()
    out = layer([q, v], mask=[q_mask, v_mask], use_causal_mask=True)
    want, _ = attention_reference(q, v, q_mask=q_mask, v_mask=v_mask, use_causal_mask=True)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert np.array_equal(out._keras_mask, q_mask)  # the query's mask is the output's


def test_attention_scores_carry_no_mask_and_the_output_keeps_the_whole_query_mask():
    q, v = data((2, 4, 3), (2, 4, 3))
    q_mask = np.array([[True, True, True, False], [True, False, True, True]])
    out, scores = layers.Attention()([q, v], mask=[q_mask, None], return_attention_scores=True)
    assert np.array_equal(out._keras_mask, q_mask)  # not one row of it per output
    assert getattr(scores, "_keras_mask", None) is None


def test_attention_dropout_only_in_training():
    q, v = data((2, 3, 4), (2, 6, 4))
    layer = layers.Attention(dropout=0.5, seed=3)
    infer = layer([q, v], training=False).numpy()
    np.testing.assert_allclose(infer, attention_reference(q, v)[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(layer([q, v], training=True).numpy(), infer)


def test_attention_scalar_weights_gradients_to_second_order():
    q, v, k = data((2, 2, 3), (2, 3, 2), (2, 3, 3), dtype=np.float64, seed=1)
    for kwargs in (dict(use_scale=True), dict(use_scale=True, score_mode="concat")):
        layer = layers.Attention(dtype="float64", **kwargs)
        layer([q, v, k])
        for w in layer.weights:
            w.assign(0.8)
        check_layer_gradients(lambda *xs: layer(list(xs)), layer, [q, v, k])


@pytest.mark.parametrize("call, match", [
    (lambda layer, q: layer(q), "list \\[query, value\\]"),
    (lambda layer, q: layer([q]), "list \\[query, value\\]"),
    (lambda layer, q: layer([q, q], mask=q), "mask must be a list"),
])
def test_attention_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call(layers.Attention(), tf.constant(np.ones((1, 2, 3), np.float32)))
    with pytest.raises(ValueError, match="score_mode"):
        layers.Attention(score_mode="additive")


# --- MultiHeadAttention --------------------------------------------------------------------------
def make_mha(dtype=None, **kwargs):
    kwargs = {"num_heads": 2, "key_dim": 3, "bias_initializer": "random_normal", **kwargs}
    return layers.MultiHeadAttention(dtype=dtype, **kwargs)


def test_mha_keras_layout_names_and_numpy():
    tf.keras.backend.clear_session()
    q, v = data((2, 3, 4), (2, 5, 6))
    layer = make_mha(value_dim=2)
    out, scores = layer(q, v, return_attention_scores=True)
    assert layer.name == "multi_head_attention"
    assert [(w.path, tuple(w.shape)) for w in layer.weights] == [
        ("multi_head_attention/query/kernel", (4, 2, 3)),
        ("multi_head_attention/query/bias", (2, 3)),
        ("multi_head_attention/key/kernel", (6, 2, 3)),
        ("multi_head_attention/key/bias", (2, 3)),
        ("multi_head_attention/value/kernel", (6, 2, 2)),
        ("multi_head_attention/value/bias", (2, 2)),
        ("multi_head_attention/attention_output/kernel", (2, 2, 4)),
        ("multi_head_attention/attention_output/bias", (4,))]
    want, want_scores = mha_reference(layer, q, v)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 3, 4)) == (None, 3, 4)


def test_mha_key_output_shape_and_no_bias():
    q, v, k = data((2, 3, 4), (2, 5, 2), (2, 5, 3))
    layer = make_mha(output_shape=7, use_bias=False)
    out = layer(q, v, key=k)
    assert tuple(out.shape) == (2, 3, 7) and len(layer.weights) == 4
    weights = [np.asarray(w.numpy()) for w in layer.weights]
    qk, kk, vk, ok = weights
    query = np.einsum("btd,dhk->bthk", q, qk)
    key = np.einsum("btd,dhk->bthk", k, kk)
    value = np.einsum("btd,dhk->bthk", v, vk)
    w = softmax(np.einsum("bshk,bqhk->bhqs", key, query) / np.sqrt(3))
    want = np.einsum("bqhv,hvo->bqo", np.einsum("bhqs,bshv->bqhv", w, value), ok)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    assert layer.compute_output_shape((None, 3, 4)) == (None, 3, 7)
    wide = make_mha(output_shape=(2, 5))  # an output of several axes: the kernel (2, 3, 2, 5)
    out = wide(q, v, key=k)
    assert tuple(out.shape) == (2, 3, 2, 5) == (2,) + wide.compute_output_shape((None, 3, 4))[1:]
    np.testing.assert_allclose(out.numpy(), mha_reference(wide, q, v, k)[0], rtol=1e-5,
                               atol=1e-5)


def test_mha_attention_mask_causal_and_keras_masks():
    q, v = data((2, 4, 3), (2, 4, 3))
    mask = RNG.random((2, 4, 4)) > 0.3
    mask[:, :, 0] = True  # every row sees something
    layer = make_mha()
    out = layer(q, v, attention_mask=mask, use_causal_mask=True)
    np.testing.assert_allclose(out.numpy(), mha_reference(layer, q, v, keep=mask & causal(4, 4))[0],
                               rtol=1e-5, atol=1e-5)
    # an Embedding's mask (mask_zero) on the value hides its padded positions
    ids = np.array([[1, 2, 0, 0], [3, 1, 2, 0]])
    embedded = layers.Embedding(5, 3, mask_zero=True)(ids)
    x = tf.constant(q)
    out = layer(x, embedded)
    keep = np.broadcast_to((ids != 0)[:, None, :], (2, 4, 4))
    np.testing.assert_allclose(out.numpy(), mha_reference(layer, q, embedded.numpy(),
                                                           keep=keep)[0], rtol=1e-5, atol=1e-5)


def test_mha_dropout_only_in_training():
    q, = data((2, 3, 4))
    layer = make_mha(dropout=0.5, seed=1)
    infer = layer(q, q).numpy()
    np.testing.assert_allclose(infer, mha_reference(layer, q, q)[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(layer(q, q, training=True).numpy(), infer)


@pytest.mark.parametrize("make, call, error, match", [
    (lambda: make_mha(), lambda l, x: l(x), TypeError, "value is required"),
    (lambda: make_mha(), lambda l, x: l(x[0], x[0]), ValueError, "batch, time, features"),
    (lambda: layers.MultiHeadAttention(0, 2), None, ValueError, "num_heads must be a positive"),
    (lambda: layers.MultiHeadAttention(2, 2.5), None, ValueError, "key_dim must be a positive"),
    (lambda: layers.MultiHeadAttention(2, 2, attention_axes=(1, 2)), lambda l, x: l(x, x),
     NotImplementedError, "attention_axes"),
    (lambda: _built_mha(), lambda l, x: l(x, x[..., :2]), ValueError,
     "built for values of 3 features"),
    (lambda: _built_mha(), lambda l, x: l(x, x, key=x[:, :1]), ValueError,
     "same number of positions"),
])
def test_mha_errors(make, call, error, match):
    x = tf.constant(np.ones((1, 2, 3), np.float32))
    with pytest.raises(error, match=match):
        layer = make()
        call(layer, x)


def _built_mha():
    layer = make_mha()
    x = np.ones((1, 2, 3), np.float32)
    layer(x, x)
    return layer


def test_attention_shape_errors():
    q = np.ones((1, 2, 3), np.float32)
    with pytest.raises(ValueError, match="query's and the key's last dimensions must be equal"):
        layers.Attention()([q, q, q[..., :2]])
    with pytest.raises(ValueError, match="value must have shape \\(batch, time, features\\)"):
        layers.Attention()([q, q[0]])


def test_mha_gradients_to_second_order():
    q, v = data((2, 2, 3), (2, 3, 2), dtype=np.float64, seed=2)
    layer = make_mha(dtype="float64", num_heads=2, key_dim=2, value_dim=1)
    check_layer_gradients(lambda a, b: layer(a, b, use_causal_mask=True), layer, [q, v])


def test_mha_config_round_trip_and_traced_equals_eager():
    q, v = data((2, 3, 4), (2, 5, 6))
    layer = make_mha(value_dim=2, output_shape=[5], kernel_regularizer="l2")
    want = layer(q, v).numpy()
    config = json.loads(json.dumps(layer.get_config()))
    clone = layers.MultiHeadAttention.from_config(config)
    clone(q, v)
    clone.set_weights(layer.get_weights())
    assert clone.get_config() == layer.get_config()
    np.testing.assert_allclose(clone(q, v).numpy(), want, rtol=1e-6)
    traced = tf.function(lambda a, b: layer(a, b, use_causal_mask=True))
    np.testing.assert_allclose(traced(q, v).numpy(), layer(q, v, use_causal_mask=True).numpy(),
                               rtol=1e-6, atol=1e-7)
    assert len(layer.losses) == 4  # the four kernels' penalties


def test_mha_rows_are_independent_of_their_batch():
    q, v = data((4, 3, 4), (4, 5, 6))
    layer = make_mha()
    layer(q[:2], v[:2])  # built on a batch of 2
    whole = layer(q, v).numpy()
    for i in range(4):
        np.testing.assert_allclose(layer(q[i:i + 1], v[i:i + 1]).numpy()[0], whole[i],
                                   rtol=1e-5, atol=1e-6)


def test_mha_correctness():
    """Keras: MultiHeadAttentionTest::test_correctness (flash attention disabled; its values
    and tolerance): identity kernels, zero biases, query = key = I, so each score row is
    softmax(I / sqrt(8)), and value = arange / 100."""
    num_heads, key_dim = 8, 8
    query = key = np.identity(key_dim, dtype=np.float32)[np.newaxis]
    value = (np.arange(key_dim * key_dim, dtype=np.float32) / 100.0).reshape(1, key_dim, key_dim)
    layer = layers.MultiHeadAttention(num_heads=num_heads, key_dim=key_dim)
    layer.build(query.shape, value.shape, key.shape)
    kernel = np.repeat(np.identity(key_dim)[:, np.newaxis, :], num_heads, axis=1)
    bias = np.zeros((num_heads, key_dim))
    layer.set_weights([kernel, bias] * 3 + [kernel, np.zeros((key_dim,))])
    output, scores = layer(query=query, value=value, key=key, return_attention_scores=True)
    expected_output = np.tile(np.array([2.406, 2.440, 2.473, 2.504, 2.535, 2.568, 2.602,
                                        2.633])[np.newaxis, :, np.newaxis], (1, 1, key_dim))
    expected_score = np.array([[0.1187] * i + [0.1691] + [0.1187] * (7 - i) for i in range(8)])
    expected_score = np.tile(expected_score[np.newaxis, np.newaxis], (1, key_dim, 1, 1))
    np.testing.assert_allclose(output.numpy(), expected_output, atol=1e-2)
    np.testing.assert_allclose(scores.numpy(), expected_score, atol=1e-2)


def test_mha_on_long_sequences_matches_numpy():
    """Scores of 2 x 4 x 64 x 64 (the size from which softmax skips its per-row maximum), a
    causal mask (row 0 sees one key) and a key position masked for every query: numpy's
    Keras formulas, eagerly and traced."""
    q = data((2, 64, 16), seed=3)[0]
    layer = make_mha(num_heads=4, key_dim=8)
    keep = np.broadcast_to(causal(64, 64), (2, 64, 64)).copy()
    keep[:, :, 1] = False
    out, scores = layer(q, q, attention_mask=keep, return_attention_scores=True)
    want, want_scores = mha_reference(layer, q, q, keep=keep)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-5, atol=1e-6)
    traced = tf.function(lambda a: layer(a, a, attention_mask=keep))(q)
    np.testing.assert_allclose(traced.numpy(), out.numpy(), rtol=1e-6, atol=1e-6)


def functional_model():
    query = tf.keras.Input(shape=(3, 4))
    value = tf.keras.Input(shape=(5, 2))
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=3)(query, value)
    mixed = layers.Attention(use_scale=True)([attended, query])
    return tf.keras.Model([query, value], layers.Dense(2)(mixed))


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_functional_model_fit_save_and_load(tmp_path, suffix):
    tf.keras.utils.set_random_seed(0)
    model = functional_model()
    x = data((8, 3, 4), (8, 5, 2))
    y = np.random.default_rng(1).standard_normal((8, 3, 2)).astype(np.float32)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    before = [np.array(w.numpy()) for w in model.trainable_variables]
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert all(not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_variables))
    want = model.predict(x, verbose=0)
    path = str(tmp_path / f"attention{suffix}")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert [type(l).__name__ for l in loaded.layers if "ttention" in type(l).__name__] == \
        ["MultiHeadAttention", "Attention"]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), want, rtol=1e-6, atol=1e-7)
