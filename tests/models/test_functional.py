"""The functional API: ``tf.keras.Input``, layer calls on symbolic tensors, ``tf.keras.Model(inputs,
outputs)`` with several inputs and outputs, shared layers and nested models; the graph's
replay against the layers called by hand, and its errors."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.layers.symbolic import KerasTensor
from tapeflow.models.functional import Functional

L = tf.keras.layers


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def two_inputs_model():
    """a (4,) and b (3,) -> a shared Dense on each -> Concatenate -> Dense(2)."""
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((3,), name="b")
    shared = L.Dense(5, activation="tanh", name="shared")
    ha, hb = shared(L.Dense(5, name="proj_a")(a)), shared(L.Dense(5, name="proj_b")(b))
    out = L.Dense(2, name="out")(L.Concatenate(name="cat")([ha, hb]))
    return tf.keras.Model([a, b], out, name="two"), shared


# --- symbolic tensors ---------------------------------------------------------------------------
def test_input_is_a_symbolic_tensor_with_a_batch_of_none():
    x = tf.keras.Input(shape=(8,), name="features")
    assert isinstance(x, KerasTensor)
    assert x.shape == (None, 8) and x.dtype == tf.float32 and x.ndim == 2
    assert x.name == "features"
    assert tf.keras.Input((2, 3), batch_size=4, dtype="int32").shape == (4, 2, 3)
    assert tf.keras.Input(batch_shape=(None, 5)).shape == (None, 5)
    with pytest.raises(ValueError, match="positive sizes"):
        tf.keras.Input(shape=(0,))


def test_layer_calls_give_shapes_and_dtypes_unknown_sizes_stay_unknown():
    x = tf.keras.Input((None, 3))
    y = L.Dense(4)(x)
    assert isinstance(y, KerasTensor) and y.shape == (None, None, 4)
    ids = tf.keras.Input((5,), dtype="int32")
    assert L.Flatten()(ids).dtype == tf.int32
    z = L.Flatten()(tf.keras.Input((2, 3)))
    assert z.shape == (None, 6)


def test_symbolic_tensors_refuse_conversions_to_values():
    """Operators on symbolic tensors are layer calls (tests/models/test_symbolic_ops.py);
    what needs values is refused, with what to write instead."""
    x = tf.keras.Input((3,))
    for op in (lambda: np.asarray(x), lambda: bool(x), lambda: float(x), lambda: list(x),
               lambda: x.numpy()):
        with pytest.raises(TypeError, match=r"it has no values.*recorded as layer calls.*"
                                            r"tf.keras.layers.Lambda"):
            op()


def test_a_layer_called_twice_records_two_nodes_and_shares_its_weights():
    model, shared = two_inputs_model()
    assert len(shared._inbound_nodes) == 2
    assert [v.path for v in model.trainable_variables].count(shared.kernel.path) == 1
    assert model.count_params() == (4 * 5 + 5) + (3 * 5 + 5) + (5 * 5 + 5) + (10 * 2 + 2)


# --- the model ------------------------------------------------------------------------------
def test_the_model_computes_what_its_layers_compute_by_hand():
    model, _ = two_inputs_model()
    assert isinstance(model, Functional) and isinstance(model, tf.keras.Model)
    a, b = _data((6, 4), (6, 3))
    get = model.get_layer
    by_hand = get("out")(get("cat")([get("shared")(get("proj_a")(a)),
                                     get("shared")(get("proj_b")(b))]))
    np.testing.assert_array_equal(model([a, b]).numpy(), by_hand.numpy())
    np.testing.assert_array_equal(model({"a": a, "b": b}).numpy(), by_hand.numpy())
    np.testing.assert_array_equal(model((tf.constant(a), tf.constant(b))).numpy(),
                                  by_hand.numpy())
    np.testing.assert_allclose(model.predict([a, b], batch_size=4, verbose=0), by_hand.numpy(),
                               rtol=1e-6)


def test_layers_inputs_outputs_shapes_and_get_layer():
    model, shared = two_inputs_model()
    assert [l.name for l in model.layers] == ["a", "b", "proj_a", "shared", "proj_b", "cat", "out"]
    assert model.input_shape == [(None, 4), (None, 3)] and model.output_shape == (None, 2)
    assert [t.shape for t in model.inputs] == [(None, 4), (None, 3)]
    assert len(model.outputs) == 1 and model.output_names == ["out"]
    assert model.get_layer("shared") is shared and model.get_layer(index=3) is shared
    assert model.get_layer(index=-1).name == "out"
    with pytest.raises(ValueError, match="no layer named 'nope'"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="one of them"):
        model.get_layer()
    with pytest.raises(ValueError, match="not an index"):
        model.get_layer(index=7)


def test_dict_inputs_and_outputs():
    a, b = tf.keras.Input((2,), name="left"), tf.keras.Input((2,), name="right")
    total = L.Add()([a, b])
    model = tf.keras.Model({"x": a, "y": b}, {"sum": total, "diff": L.Subtract()([a, b])})
    u, v = _data((3, 2), (3, 2))
    out = model({"x": u, "y": v})
    assert set(out) == {"sum", "diff"}
    np.testing.assert_allclose(out["sum"].numpy(), u + v)
    np.testing.assert_allclose(out["diff"].numpy(), u - v)
    assert model.input_names == ["x", "y"]
    predicted = model.predict({"x": u, "y": v}, verbose=0)
    np.testing.assert_allclose(predicted["diff"], u - v)


def test_a_model_is_a_layer_of_another_model():
    inner_in = tf.keras.Input((3,))
    inner = tf.keras.Model(inner_in, L.Dense(2, activation="tanh")(inner_in), name="inner")
    x = tf.keras.Input((3,))
    outer = tf.keras.Model(x, L.Dense(1)(inner(x)), name="outer")
    assert outer.layers[1] is inner and len(outer.trainable_variables) == 4
    (d,) = _data((5, 3))
    np.testing.assert_allclose(outer(d).numpy(), outer.layers[2](inner(d)).numpy())
    seq = tf.keras.Sequential([tf.keras.Input((3,)), L.Dense(2)])
    y = seq(x)
    assert y.shape == (None, 2)
    np.testing.assert_array_equal(tf.keras.Model(x, y)(d).numpy(), seq(d).numpy())


def test_training_reaches_every_layer_and_can_be_fixed_in_a_call():
    x = tf.keras.Input((50,))
    mc = L.Dropout(0.5, seed=3)(x, training=True)  # Monte Carlo dropout: always on
    plain = L.Dropout(0.5, seed=4)(x)
    model = tf.keras.Model(x, [mc, plain])
    ones = np.ones((4, 50), np.float32)
    mc_out, plain_out = model(ones, training=False)
    assert (mc_out.numpy() == 0).any() and (plain_out.numpy() == 1).all()
    assert (model(ones, training=True)[1].numpy() == 0).any()


def test_sequential_still_takes_an_input_and_input_layer():
    model = tf.keras.Sequential([tf.keras.Input((8,)), L.Dense(1)])
    assert model.built and model.predict(np.ones((2, 8), np.float32), verbose=0).shape == (2, 1)
    model = tf.keras.Sequential([L.InputLayer(shape=(8,)), L.Dense(1)])
    assert model.built
    with pytest.raises(TypeError, match="not the output of a layer call"):
        tf.keras.Sequential([L.Dense(3)(tf.keras.Input((2,)))])


def test_sequential_input_and_output_shapes():
    model = tf.keras.Sequential([tf.keras.Input((8,)), L.Dense(3), L.Dense(1)])
    assert model.input_shape == (None, 8) and model.output_shape == (None, 1)
    late = tf.keras.Sequential([L.Dense(2)])
    with pytest.raises(AttributeError, match="no input shape yet"):
        late.input_shape
    late(np.ones((4, 5), np.float32))
    assert late.input_shape == (None, 5) and late.output_shape == (None, 2)


# --- errors ---------------------------------------------------------------------------------
def test_inputs_given_wrongly_are_one_clear_error():
    model, _ = two_inputs_model()
    a, b = _data((2, 4), (2, 3))
    with pytest.raises(ValueError, match=r"takes 2 input\(s\) \['a', 'b'\], got a list of 3"):
        model([a, b, b])
    with pytest.raises(ValueError, match=r"lacks \['b'\] and has unexpected keys \['c'\]"):
        model({"a": a, "c": b})
    with pytest.raises(ValueError, match=r"input 'b' expects shape \(None, 3\), got \(2, 4\)"):
        model([a, a])
    with pytest.raises(ValueError, match="pass a list in that order or a dict"):
        model(a)


def test_graph_disconnected_names_the_missing_input():
    a, b = tf.keras.Input((2,), name="first"), tf.keras.Input((2,), name="second")
    with pytest.raises(ValueError, match="Graph disconnected.*'second'"):
        tf.keras.Model(a, L.Add()([a, b]))


@pytest.mark.parametrize("make, error, words", [
    (lambda x: tf.keras.Model(x, L.Dense(1)), TypeError, "outputs must be"),
    (lambda x: tf.keras.Model(np.ones((2, 2)), L.Dense(1)(x)), TypeError, "inputs must be"),
    (lambda x: tf.keras.Model(L.Dense(2)(x), x), ValueError, "must be a tf.keras.Input"),
    (lambda x: tf.keras.Model([x, x], x), ValueError, "given twice"),
    (lambda x: tf.keras.Model(x, [L.Dense(1, name="same")(x), L.Dense(1, name="same")(x)]),
     ValueError, "names must be unique"),
])
def test_bad_models_are_refused(make, error, words):
    with pytest.raises(error, match=words):
        make(tf.keras.Input((2,)))


def test_a_subclass_passing_inputs_to_init_is_a_functional_model():
    # Keras 3 makes it one (tests/models/test_subclassed_functional.py has the rest)
    class Net(tf.keras.Model):
        def __init__(self, x, y):
            super().__init__(inputs=x, outputs=y)
    x = tf.keras.Input((2,))
    net = Net(x, L.Dense(1)(x))
    assert isinstance(net, Functional) and net(np.ones((3, 2))).shape == (3, 1)


def test_a_layer_that_fails_on_symbolic_inputs_says_where():
    dense = L.Dense(2)
    dense(tf.keras.Input((3,)))
    with pytest.raises(ValueError, match=r"last dimension 3.*symbolic inputs of shape \(None, 4\)"):
        dense(tf.keras.Input((4,)))


# --- eager = traced -----------------------------------------------------------------------------
def test_tf_function_of_the_model_equals_its_eager_call():
    model, _ = two_inputs_model()
    a, b = _data((5, 4), (5, 3))
    eager = model([a, b], training=False).numpy()
    traced = tf.function(lambda u, v: model([u, v], training=False))
    np.testing.assert_allclose(traced(tf.constant(a), tf.constant(b)).numpy(), eager, rtol=1e-6)
