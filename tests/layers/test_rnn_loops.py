"""Recurrent layers run as one whole-sequence op (ops/rnn.py), or with ``unroll=True`` as one
fused cell op a step: the same outputs and gradients as the steps in elementwise ops, and
Keras's values with Keras's weights.

The op battery (tests/ops/op_cases.py) checks the ops themselves to second order."""
import numpy as np
import pytest

import tapeflow as tf

LAYERS = {"SimpleRNN": tf.keras.layers.SimpleRNN, "LSTM": tf.keras.layers.LSTM,
          "GRU": tf.keras.layers.GRU}
MASK = np.array([[True, True, False, True, False], [False, True, True, False, False]])


def _layers(kind, **kwargs):
    """Three layers with the same (random) weights, float64: the default (one fused op over
    the sequence), ``unroll=True`` (one fused cell op a step) and the steps in elementwise ops
    (the cells' ``step_ops``, as before the fused ops)."""
    x = np.random.default_rng(0).normal(size=(2, 5, 3))
    layers = [LAYERS[kind](4, dtype="float64", unroll=unroll, **kwargs)
              for unroll in (False, True, True)]
    layers[2].cell.fused = lambda: None  # the composite ops, as before
    rng = np.random.default_rng(1)
    weights = None
    for layer in layers:
        layer(x[:, :1])
        weights = weights or [rng.normal(scale=0.5, size=w.shape) for w in layer.get_weights()]
        layer.set_weights(weights)
    return layers, x


def _values_and_gradients(layer, x, **call):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        outs = tf.nest.flatten(layer(x, **call))
        loss = tf.add_n([tf.reduce_sum(tf.sin(o * (k + 1.0))) for k, o in enumerate(outs)])
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    return [o.numpy() for o in outs] + [g.numpy() for g in grads]


@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("options", [
    {}, {"return_sequences": True, "return_state": True, "go_backwards": True},
    {"masked": True, "return_sequences": True, "zero_output_for_mask": True},
    {"masked": True, "return_state": True, "go_backwards": True, "initial": True},
], ids=["plain", "sequences_states_backwards", "masked_zero_output", "masked_initial_state"])
def test_fused_equals_unrolled(kind, options):
    options = dict(options)
    call = {}
    if options.pop("masked", False):
        call["mask"] = MASK
    initial = options.pop("initial", False)
    layers, x = _layers(kind, **options)
    if initial:
        n = 2 if kind == "LSTM" else 1
        call["initial_state"] = [np.full((2, 4), 0.1 * (k + 1)) for k in range(n)]
    want = _values_and_gradients(layers[2], x, **call)
    for layer in layers[:2]:
        got = _values_and_gradients(layer, x, **call)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_a_traced_step_is_one_equation_per_layer_not_per_timestep():
    layers, _ = _layers("LSTM", return_sequences=True)
    ops = []
    for layer in layers:
        step = tf.function(lambda v, layer=layer: layer(v))
        graph = step.get_concrete_function(tf.TensorSpec((None, 5, 3), "float64")).graph
        ops.append([e.op.name for e in graph.eqns])
    assert [names.count("LSTMSequence") for names in ops] == [1, 5, 0]  # 5 steps
    assert len(ops[0]) <= 6 < 5 * 6 <= len(ops[2])  # a few equations, not a few per step


def test_other_activations_and_recurrent_dropout_unroll():
    """Only Keras's default activations have a fused op; the rest unroll, with the same API."""
    x = np.ones((2, 3, 2), "float32")
    layer = tf.keras.layers.LSTM(2, activation="relu")
    assert layer.cell.fused() is None and layer(x).shape == (2, 2)
    assert tf.keras.layers.GRU(2, reset_after=False).cell.fused() is None
    assert tf.keras.layers.GRU(2).cell.fused() == "gru"
    dropped = tf.keras.layers.SimpleRNN(2, recurrent_dropout=0.5, seed=1)
    assert dropped(x, training=True).shape == (2, 2)


# --- Keras's values, on the fused path: keras/src/layers/rnn/{lstm,gru}_test.py ----------------
def _constant(layer_class, units, **kwargs):
    init = tf.keras.initializers.Constant
    return layer_class(units, kernel_initializer=init(0.01), recurrent_initializer=init(0.02),
                       bias_initializer=init(0.03), **kwargs)


def test_lstm_correctness():  # Keras: LSTMTest::test_correctness
    sequence = np.arange(72).reshape((3, 6, 4)).astype("float32")
    cases = [({}, [0.6288687, 0.86899155, 0.9460773]),
             ({"go_backwards": True}, [0.35622165, 0.74789524, 0.8872726]),
             ({"unroll": True}, [0.6288687, 0.86899155, 0.9460773]),
             ({"unit_forget_bias": False}, [0.57019705, 0.8661914, 0.9459622]),
             ({"use_bias": False}, [0.54986924, 0.86226785, 0.9443936])]
    for kwargs, rows in cases:
        output = _constant(tf.keras.layers.LSTM, 3, **kwargs)(sequence)
        np.testing.assert_allclose(output.numpy(), np.repeat(np.array(rows)[:, None], 3, 1),
                                   atol=1e-5, rtol=1e-5, err_msg=str(kwargs))


def test_lstm_pass_initial_state():  # Keras: LSTMTest::test_pass_initial_state
    sequence = np.arange(24).reshape((2, 4, 3)).astype("float32")
    initial_state = [np.arange(4).reshape((2, 2)).astype("float32")] * 2
    for kwargs, want in (({}, [[0.20574439, 0.3558822], [0.64930826, 0.66276]]),
                         ({"go_backwards": True}, [[0.13281618, 0.2790356],
                                                   [0.5839337, 0.5992567]])):
        output = _constant(tf.keras.layers.LSTM, 2, **kwargs)(sequence,
                                                              initial_state=initial_state)
        np.testing.assert_allclose(output.numpy(), want, atol=1e-5, rtol=1e-5)


def test_lstm_masking():  # Keras: LSTMTest::test_masking
    sequence = np.arange(24).reshape((2, 4, 3)).astype("float32")
    mask = np.array([[True, True, True, False], [True, True, False, False]])
    lstm = tf.keras.layers.LSTM
    output = _constant(lstm, 2, return_sequences=True)(sequence, mask=mask).numpy()
    np.testing.assert_allclose(output[0, :, 0], [0.0158891, 0.05552048, 0.11755939, 0.11755939],
                               atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(output[1, :, 0], [0.14185596, 0.28556206, 0.28556206, 0.28556206],
                               atol=1e-5, rtol=1e-5)
    output = _constant(lstm, 2, return_sequences=True, zero_output_for_mask=True)(
        sequence, mask=mask).numpy()
    np.testing.assert_allclose(output[:, :, 1], [[0.0158891, 0.05552048, 0.11755939, 0.0],
                                                 [0.14185596, 0.28556206, 0.0, 0.0]],
                               atol=1e-5, rtol=1e-5)
    backwards_mask = np.array([[False, True, True, True], [False, False, True, True]])
    output = _constant(lstm, 2, go_backwards=True)(sequence, mask=backwards_mask)
    np.testing.assert_allclose(output.numpy(), [[0.15341201] * 2, [0.3844719] * 2],
                               atol=1e-5, rtol=1e-5)


def test_gru_correctness():  # Keras: GRUTest::test_correctness
    sequence = np.arange(72).reshape((3, 6, 4)).astype("float32")
    cases = [({}, [0.5217289, 0.6371659, 0.39384964]),
             ({"go_backwards": True}, [0.24406259, 0.611516, 0.3928808]),
             ({"reset_after": False}, [0.51447755, 0.6426879, 0.40208298]),
             ({"use_bias": False}, [0.49988455, 0.64701194, 0.4103359])]
    for kwargs, rows in cases:
        output = _constant(tf.keras.layers.GRU, 3, **kwargs)(sequence)
        np.testing.assert_allclose(output.numpy(), np.repeat(np.array(rows)[:, None], 3, 1),
                                   atol=1e-5, rtol=1e-5, err_msg=str(kwargs))


def test_gru_pass_return_state():  # Keras: GRUTest::test_pass_return_state
    sequence = np.arange(24).reshape((2, 4, 3)).astype("float32")
    initial_state = np.arange(4).reshape((2, 2)).astype("float32")
    for kwargs, want in (({}, [[0.23774096, 0.33508456], [0.83659905, 1.0227708]]),
                         ({"go_backwards": True}, [[0.13486053, 0.23261218],
                                                   [0.78257304, 0.9691353]])):
        layer = _constant(tf.keras.layers.GRU, 2, return_state=True, **kwargs)
        output, state = layer(sequence, initial_state=initial_state)
        np.testing.assert_allclose(output.numpy(), want, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(state.numpy(), want, atol=1e-5, rtol=1e-5)


def test_gru_masking():  # Keras: GRUTest::test_masking
    sequence = np.arange(24).reshape((2, 4, 3)).astype("float32")
    mask = np.array([[True, True, False, True], [True, False, False, True]])
    gru = tf.keras.layers.GRU
    output = _constant(gru, 2, return_sequences=True, zero_output_for_mask=True)(
        sequence, mask=mask).numpy()
    np.testing.assert_allclose(output[:, :, 0], [[0.03606692, 0.09497581, 0.0, 0.19393763],
                                                 [0.16051409, 0.0, 0.0, 0.30818558]],
                               atol=1e-5, rtol=1e-5)
    output = _constant(gru, 2, go_backwards=True)(sequence, mask=mask)
    np.testing.assert_allclose(output.numpy(), [[0.11669192] * 2, [0.28380975] * 2],
                               atol=1e-5, rtol=1e-5)


def test_the_sequence_op_names_bad_operands():
    from tapeflow.ops.rnn import recurrent_sequence
    with pytest.raises(ValueError, match=r"takes projected inputs \(batch, time, 8\)"):
        recurrent_sequence("lstm", tf.zeros((2, 3, 7)), tf.zeros((2, 8)))
    with pytest.raises(TypeError, match="mask must be bool"):
        recurrent_sequence("lstm", tf.zeros((2, 3, 8)), tf.zeros((2, 8)), mask=tf.ones((2, 3)))
    with pytest.raises(ValueError, match="kind must be one of"):
        recurrent_sequence("rnn", tf.zeros((2, 3, 8)), tf.zeros((2, 8)))


@pytest.mark.parametrize("kind", ["simple_rnn", "lstm", "gru"])
@pytest.mark.parametrize("masked", [False, True], ids=["plain", "masked"])
def test_the_sequence_ops_leave_their_operands_unchanged(kind, masked):
    """The steps write into buffers of their own (out=, in place): every operand, the
    cotangents of the last states included, is as it was after the forward and the backward."""
    from tapeflow.ops.rnn import recurrent_sequence
    rng = np.random.default_rng(2)
    gates, n_states = {"simple_rnn": (1, 1), "lstm": (4, 2), "gru": (3, 1)}[kind]
    arrays = [rng.normal(size=(2, 5, 3 * gates)), rng.normal(size=(3, 3 * gates))]
    arrays += [rng.normal(size=(3 * gates,))] if kind == "gru" else []
    initial = [rng.normal(size=(2, 3)) for _ in range(n_states)]
    d_last = [rng.normal(size=(2, 3)) for _ in range(n_states)]
    d_seq = rng.normal(size=(2, 5, 3))
    kept = [a.copy() for a in arrays + initial + d_last + [d_seq]]
    tensors = [tf.constant(a) for a in arrays + initial]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        seq, last = recurrent_sequence(kind, tensors[0], tensors[1],
                                       tensors[2] if kind == "gru" else None,
                                       tensors[-n_states:],
                                       tf.constant(MASK) if masked else None)
    cotangents = [tf.constant(d) for d in d_last + [d_seq]]
    grads = tape.gradient([seq] + last, tensors,
                          output_gradients=cotangents[-1:] + cotangents[:-1])
    assert all(g is not None for g in grads)
    for before, after in zip(kept, tensors + cotangents):
        np.testing.assert_array_equal(before, after.numpy())
