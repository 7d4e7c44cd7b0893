"""SimpleRNN, LSTM, GRU and Bidirectional: outputs against the recurrences written in numpy,
masking as Keras's, gradients against finite differences in float64 (second order on a tiny
LSTM and GRU), config / save round trips, traced equal to eager."""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import layers
from tests.ops.gradcheck import check_grads


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# --- references: Keras's recurrences in numpy ------------------------------------------------------
def simple_rnn_ref(x, kernel, recurrent, bias):
    h = np.zeros((x.shape[0], recurrent.shape[0]))
    outs = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        outs.append(h)
    return np.stack(outs, 1), [h]


def lstm_ref(x, kernel, recurrent, bias):
    u = recurrent.shape[0]
    h = c = np.zeros((x.shape[0], u))
    outs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = z[:, :u], z[:, u:2 * u], z[:, 2 * u:3 * u], z[:, 3 * u:]
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), [h, c]


def gru_ref(x, kernel, recurrent, bias, reset_after=True):
    u = recurrent.shape[0]
    h = np.zeros((x.shape[0], u))
    outs = []
    for t in range(x.shape[1]):
        if reset_after:
            xm = x[:, t] @ kernel + bias[0]
            hm = h @ recurrent + bias[1]
            z = _sigmoid(xm[:, :u] + hm[:, :u])
            r = _sigmoid(xm[:, u:2 * u] + hm[:, u:2 * u])
            hh = np.tanh(xm[:, 2 * u:] + r * hm[:, 2 * u:])
        else:
            xm = x[:, t] @ kernel + bias
            z = _sigmoid(xm[:, :u] + h @ recurrent[:, :u])
            r = _sigmoid(xm[:, u:2 * u] + h @ recurrent[:, u:2 * u])
            hh = np.tanh(xm[:, 2 * u:] + (r * h) @ recurrent[:, 2 * u:])
        h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, 1), [h]


REFS = [
    (lambda **kw: layers.SimpleRNN(3, **kw), simple_rnn_ref),
    (lambda **kw: layers.LSTM(3, **kw), lstm_ref),
    (lambda **kw: layers.GRU(3, **kw), gru_ref),
    (lambda **kw: layers.GRU(3, reset_after=False, **kw),
     lambda *a: gru_ref(*a, reset_after=False)),
]
IDS = ["SimpleRNN", "LSTM", "GRU", "GRU-reset-before"]


def _randomize(layer, rng):
    """Weights away from their initial values (a random bias too), so every term counts."""
    layer.set_weights([rng.uniform(-0.8, 0.8, w.shape) for w in layer.get_weights()])
    return [w.astype(np.float64) for w in layer.get_weights()]


@pytest.mark.parametrize("make, ref", REFS, ids=IDS)
def test_outputs_and_states_match_the_numpy_recurrence(make, ref):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 4))
    layer = make(return_sequences=True, return_state=True, dtype="float64")
    layer(x)
    weights = _randomize(layer, rng)
    seq, *states = layer(x)
    want_seq, want_states = ref(x, *weights)
    np.testing.assert_allclose(seq.numpy(), want_seq, rtol=1e-12, atol=1e-12)
    for got, want in zip(states, want_states, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    last = make(dtype="float64")
    last(x)
    last.set_weights(weights)
    np.testing.assert_allclose(last(x).numpy(), want_seq[:, -1], rtol=1e-12, atol=1e-12)
    backwards = make(return_sequences=True, go_backwards=True, dtype="float64")
    backwards(x)
    backwards.set_weights(weights)
    np.testing.assert_allclose(backwards(x).numpy(), ref(x[:, ::-1], *weights)[0],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make, ref", REFS, ids=IDS)
def test_without_bias_is_the_recurrence_with_zero_bias(make, ref):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 3))
    layer = make(return_sequences=True, use_bias=False, dtype="float64")
    layer(x)
    kernel, recurrent = _randomize(layer, rng)
    reset_after = getattr(layer.cell, "reset_after", False)
    bias = np.zeros((2, kernel.shape[1]) if reset_after else kernel.shape[1])
    np.testing.assert_allclose(layer(x).numpy(), ref(x, kernel, recurrent, bias)[0],
                               rtol=1e-12, atol=1e-12)


def test_keras_weight_layout_and_initial_values():
    tf.keras.backend.clear_session()
    tf.keras.utils.set_random_seed(0)
    lstm = layers.LSTM(4)
    lstm(np.zeros((1, 2, 3), np.float32))
    assert [w.path for w in lstm.weights] == ["lstm/lstm_cell/kernel",
                                              "lstm/lstm_cell/recurrent_kernel",
                                              "lstm/lstm_cell/bias"]
    assert [tuple(w.shape) for w in lstm.weights] == [(3, 16), (4, 16), (16,)]
    np.testing.assert_array_equal(lstm.cell.bias.numpy(), [0] * 4 + [1] * 4 + [0] * 8)
    recurrent = lstm.cell.recurrent_kernel.numpy()  # orthogonal: orthonormal rows
    np.testing.assert_allclose(recurrent @ recurrent.T, np.eye(4), atol=1e-6)
    gru = layers.GRU(2)
    gru(np.zeros((1, 2, 3), np.float32))
    assert [tuple(w.shape) for w in gru.weights] == [(3, 6), (2, 6), (2, 6)]
    tf.keras.backend.clear_session()
    assert [layer.name for layer in (layers.SimpleRNN(1), layers.GRU(1))] == ["simple_rnn",
                                                                             "gru"]


def test_initial_state_continues_a_sequence_and_cells_step_alone():
    x = np.random.default_rng(9).standard_normal((2, 5, 3)).astype(np.float32)
    lstm = layers.LSTM(4, return_state=True)
    y, h, c = lstm(x)
    _, h1, c1 = lstm(x[:, :3])
    y2, h2, c2 = lstm(x[:, 3:], initial_state=[h1, c1])  # the second half from the first's states
    for a, b in ((y, y2), (h, h2), (c, c2)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    cell = lstm.cell
    states = cell.get_initial_state(batch_size=2)
    assert [tuple(s.shape) for s in states] == [(2, 4), (2, 4)]
    for t in range(5):  # Keras's cell API: output, states = cell(x_t, states)
        out, states = cell(x[:, t], states)
    np.testing.assert_allclose(out.numpy(), y.numpy(), rtol=1e-6, atol=1e-7)


# --- masking --------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, ref", REFS[:3], ids=IDS[:3])
def test_masked_steps_keep_the_state_and_repeat_the_output(make, ref):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 2))
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 0, 1, 1, 0, 1], [0, 0, 1, 1, 1, 1]], bool)
    layer = make(return_sequences=True, return_state=True, dtype="float64")
    layer(x)
    weights = _randomize(layer, rng)
    seq, *states = layer(x, mask=mask)
    for b in range(3):  # each row is the recurrence over its unmasked steps alone
        kept = np.flatnonzero(mask[b])
        want, want_states = ref(x[b:b + 1, kept], *weights)
        got = seq.numpy()[b]
        first = kept[0]
        np.testing.assert_allclose(got[:first], 0.0)  # before the first real step: zeros
        for k, t in enumerate(kept):
            end = kept[k + 1] if k + 1 < len(kept) else x.shape[1]
            np.testing.assert_allclose(got[t:end], np.repeat(want[:, k], end - t, 0),
                                       rtol=1e-12, atol=1e-12)
        for s, w in zip(states, want_states, strict=True):
            np.testing.assert_allclose(s.numpy()[b], w[0], rtol=1e-12, atol=1e-12)


def test_zero_output_for_mask():
    x = np.random.default_rng(11).standard_normal((2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1], [1, 0, 0, 0]], bool)
    repeat = layers.GRU(2, return_sequences=True, return_state=True)
    zero = layers.GRU(2, return_sequences=True, return_state=True, zero_output_for_mask=True)
    repeat(x)
    zero(x)
    zero.set_weights(repeat.get_weights())
    (seq, state), (zseq, zstate) = repeat(x, mask=mask), zero(x, mask=mask)
    np.testing.assert_array_equal(zseq.numpy()[~mask], 0.0)
    np.testing.assert_array_equal(zseq.numpy()[mask], seq.numpy()[mask])
    np.testing.assert_array_equal(zstate.numpy(), state.numpy())  # the states carry on alike


def test_embedding_mask_reaches_the_rnn_through_sequential():
    tf.keras.utils.set_random_seed(3)
    ids = np.array([[4, 2, 0, 0], [1, 3, 5, 0]])
    emb = layers.Embedding(6, 3, mask_zero=True)
    middle = layers.LSTM(2, return_sequences=True)
    model = tf.keras.Sequential([emb, middle, layers.LSTM(2)])
    out = model(ids)
    seq = middle(emb(ids))
    assert np.array_equal(seq._keras_mask.numpy(), ids != 0)  # return_sequences passes it on
    np.testing.assert_array_equal(seq.numpy()[0, 2:], np.repeat(seq.numpy()[0, 1:2], 2, 0))
    assert getattr(out, "_keras_mask", None) is None  # the last LSTM consumes it
    # padding at the end changes nothing: the same outputs as the unpadded prefix
    np.testing.assert_allclose(out.numpy()[0], model(ids[:1, :2]).numpy()[0], rtol=1e-6)
    np.testing.assert_allclose(out.numpy()[1], model(ids[1:, :3]).numpy()[0], rtol=1e-6)


@pytest.mark.parametrize("between", [
    lambda: layers.Dense(3), lambda: layers.Dropout(0.5), lambda: layers.Activation("tanh"),
    lambda: layers.LayerNormalization(), lambda: layers.BatchNormalization()])
def test_the_mask_passes_through_elementwise_layers_to_the_rnn(between):
    tf.keras.utils.set_random_seed(4)
    ids = np.array([[4, 2, 0, 0], [1, 3, 5, 0]])
    model = tf.keras.Sequential([layers.Embedding(6, 3, mask_zero=True), between(),
                                 layers.GRU(2)])
    out = model(ids)
    np.testing.assert_allclose(out.numpy()[0], model(ids[:1, :2]).numpy()[0], rtol=1e-5)


def test_masking_layer():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    x[0, 1] = 0.0
    x[1, 2] = 0.0
    masking = layers.Masking(mask_value=0.0)
    y = masking(x)
    np.testing.assert_array_equal(y._keras_mask.numpy(), [[True, False, True],
                                                           [True, True, False]])
    np.testing.assert_array_equal(y.numpy(), x)
    rnn = layers.SimpleRNN(2)
    full = rnn(masking(x))
    np.testing.assert_allclose(full.numpy()[1], rnn(x[1:, :2]).numpy()[0], rtol=1e-6)
    assert layers.Masking.from_config(masking.get_config()).mask_value == 0.0


# --- gradients ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, ref", REFS, ids=IDS)
def test_gradients_against_finite_differences(make, ref):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 2))
    layer = make(return_sequences=True, dtype="float64")
    layer(x)
    weights = _randomize(layer, rng)
    mask = tf.constant(np.array([[1, 1, 0], [0, 1, 1]], bool))
    # the weights as inputs: finite differences over every input and weight element
    check_grads(lambda x, *ws: _with_weights(layer, ws, x, mask), [x] + weights, order=1)


def _with_weights(layer, ws, x, mask):
    """The layer's function with its weights given as tensors (so gradients reach them)."""
    cell = layer.cell
    saved = cell.kernel, cell.recurrent_kernel, cell.bias
    cell.kernel, cell.recurrent_kernel, cell.bias = ws
    try:
        return layer.call(x, mask=mask)
    finally:
        cell.kernel, cell.recurrent_kernel, cell.bias = saved


@pytest.mark.parametrize("make, ref", [REFS[1], REFS[2]], ids=["LSTM", "GRU"])
def test_second_order_on_a_tiny_cell(make, ref):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 2, 2))
    layer = make(return_sequences=True, dtype="float64")
    layer(x)
    weights = _randomize(layer, rng)
    mask = tf.constant(np.array([[True, False], [True, True]]))  # through a masked step too
    check_grads(lambda x, k, r, b: _with_weights(layer, (k, r, b), x, mask),
                [x] + weights, order=2)


def test_bidirectional_gradients_and_variables():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 2))
    bi = layers.Bidirectional(layers.GRU(2, return_sequences=True, dtype="float64"),
                              merge_mode="sum", dtype="float64")
    bi(x)
    check_grads(lambda x: bi(x), [x], order=1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(bi(x) ** 2)
    grads = tape.gradient(loss, bi.trainable_variables)
    assert len(grads) == 6 and all(g is not None for g in grads)


# --- Bidirectional --------------------------------------------------------------------------------
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_is_forward_and_reversed_backward(merge_mode):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 3))
    bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True, dtype="float64"),
                              merge_mode=merge_mode, dtype="float64")
    out = bi(x)
    fw, bw = bi.forward_layer, bi.backward_layer
    assert fw.name.startswith("forward_lstm") and bw.name.startswith("backward_lstm")
    assert bw.go_backwards and not fw.go_backwards
    y = lstm_ref(x, *fw.get_weights())[0]
    y_rev = lstm_ref(x[:, ::-1], *bw.get_weights())[0][:, ::-1]
    want = {"concat": lambda: [np.concatenate([y, y_rev], -1)], "sum": lambda: [y + y_rev],
            "mul": lambda: [y * y_rev], "ave": lambda: [(y + y_rev) / 2],
            None: lambda: [y, y_rev]}[merge_mode]()
    got = out if isinstance(out, list) else [out]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)
    shape = bi.compute_output_shape((None, 4, 3))
    shapes = shape if isinstance(shape, list) else [shape]
    assert [tuple(s[1:]) for s in shapes] == [tuple(g.shape[1:]) for g in got]


def test_bidirectional_return_state():
    x = np.random.default_rng(7).standard_normal((2, 3, 2)).astype(np.float32)
    out = layers.Bidirectional(layers.LSTM(2, return_state=True))(x)
    assert [tuple(t.shape) for t in out] == [(2, 4)] + [(2, 2)] * 4


# --- config, saving, tracing ----------------------------------------------------------------------
CONFIGS = [
    lambda: layers.SimpleRNN(3, activation="relu", use_bias=False, return_sequences=True,
                             dropout=0.1, name="s"),
    lambda: layers.LSTM(2, recurrent_activation="tanh", unit_forget_bias=False,
                        kernel_regularizer="l2", go_backwards=True, return_state=True),
    lambda: layers.GRU(4, reset_after=False, recurrent_initializer="glorot_uniform",
                       recurrent_dropout=0.2, seed=3),
    lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="ave"),
    lambda: layers.RNN(layers.LSTMCell(3), return_sequences=True),
    lambda: layers.Masking(-1.0),
]


@pytest.mark.parametrize("make", CONFIGS)
def test_config_round_trip(make):
    layer = make()
    config = layer.get_config()
    again = type(layer).from_config(json.loads(json.dumps(config)))
    assert again.get_config() == config


def _text_model(rnn, run_eagerly=False, seed=0):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(6,), dtype="int32"),
        layers.Embedding(8, 4, mask_zero=True),
        rnn(),
        layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  run_eagerly=run_eagerly)
    return model


def _ids(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 8, (n, 6))
    for row, length in zip(x, rng.integers(2, 7, n)):
        row[length:] = 0
    return x, (x[:, 0] > 4).astype(np.int64)


RNNS = [lambda: layers.LSTM(3), lambda: layers.GRU(3, reset_after=False),
        lambda: layers.Bidirectional(layers.SimpleRNN(2))]
RNN_IDS = ["LSTM", "GRU-reset-before", "Bidirectional"]


@pytest.mark.parametrize("rnn", RNNS, ids=RNN_IDS)
def test_traced_fit_equals_eager_fit(rnn):
    x, y = _ids()
    traced, eager = _text_model(rnn), _text_model(rnn, run_eagerly=True)
    h1 = traced.fit(x, y, epochs=2, batch_size=16, verbose=0, shuffle=False)
    h2 = eager.fit(x, y, epochs=2, batch_size=16, verbose=0, shuffle=False)
    for a, b in zip(traced.get_weights(), eager.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)


@pytest.mark.parametrize("rnn", RNNS, ids=RNN_IDS)
def test_save_and_load_round_trip(rnn, tmp_path):
    x, y = _ids()
    model = _text_model(rnn)
    model.fit(x, y, epochs=1, batch_size=20, verbose=0)
    path = str(tmp_path / "text.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    for a, b in zip(model.get_weights(), loaded.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))
    # a batch size the traced predict has not seen
    np.testing.assert_array_equal(model.predict(x[:7], verbose=0), loaded.predict(x[:7], verbose=0))


@pytest.mark.parametrize("kwargs", [dict(dropout=0.5), dict(recurrent_dropout=0.5)])
def test_dropout_only_while_training(kwargs):
    x = np.random.default_rng(8).standard_normal((4, 5, 3)).astype(np.float32)
    dropped = layers.GRU(3, seed=1, **kwargs)
    plain = layers.GRU(3)
    dropped(x)
    plain(x)
    plain.set_weights(dropped.get_weights())
    np.testing.assert_array_equal(dropped(x, training=False).numpy(), plain(x).numpy())
    assert not np.allclose(dropped(x, training=True).numpy(), plain(x).numpy())
    model = _text_model(lambda: layers.LSTM(3, **kwargs))
    history = model.fit(*_ids(), epochs=2, batch_size=20, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


def test_a_keras_2_config_loads():
    config = {"name": "lstm_9", "trainable": True, "dtype": "float32", "return_sequences": False,
              "return_state": False, "go_backwards": False, "stateful": False, "unroll": False,
              "time_major": False, "units": 3, "activation": "tanh",
              "recurrent_activation": "sigmoid", "use_bias": True,
              "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
              "recurrent_initializer": {"class_name": "Orthogonal",
                                        "config": {"gain": 1.0, "seed": None}},
              "bias_initializer": {"class_name": "Zeros", "config": {}},
              "unit_forget_bias": True, "kernel_regularizer": None,
              "recurrent_regularizer": None, "bias_regularizer": None,
              "activity_regularizer": None, "dropout": 0.0, "recurrent_dropout": 0.0,
              "implementation": 2, "zero_output_for_mask": True}
    lstm = layers.LSTM.from_config(config)
    assert lstm.units == 3 and lstm(np.zeros((1, 2, 4), np.float32)).shape == (1, 3)


def test_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="dropout"):
        layers.GRU(2, dropout=1.0)
    with pytest.raises(ValueError, match="stateful=True.*batch size must be static"):
        layers.LSTM(2, stateful=True).build((None, 3, 4))
    with pytest.raises(ValueError, match="RNN is stateful, the batch size"):  # a free batch
        layers.LSTM(2, stateful=True)(tf.keras.Input((3, 4)))
    with pytest.raises(ValueError, match="timesteps, features"):
        layers.LSTM(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(TypeError, match="recurrent layer"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="initial_state needs 2"):
        layers.LSTM(2)(np.zeros((1, 2, 3), np.float32), initial_state=[np.zeros((1, 2))])
