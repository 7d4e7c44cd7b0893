"""Building and inspecting models: Sequential, subclassed Model, variables, config, summary."""
import json
import re

import numpy as np
import pytest

import tapeflow as tf

from .helpers import assert_same_weights, regression_data, small_model, weights_differ

Dense = tf.keras.layers.Dense


class TwoLayer(tf.keras.Model):
    """A subclassed model, written as in the Keras guide; records the training flags it sees."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = Dense(8, activation="relu")
        self.out = Dense(1)
        self.seen_training = []

    def call(self, inputs, training=None):
        self.seen_training.append(training)
        return self.out(self.hidden(inputs))


# --- building -----------------------------------------------------------------------------------
def test_input_first_builds_immediately():
    model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), Dense(30), Dense(1)])
    assert model.built
    assert [tuple(v.shape) for v in model.weights] == [(8, 30), (30,), (30, 1), (1,)]
    assert len(model.layers) == 2  # the Input is not a layer of the model, as in Keras


def test_input_shape_on_first_layer_builds_immediately():
    model = tf.keras.Sequential([Dense(30, activation="relu", input_shape=(8,)), Dense(1)])
    assert model.built
    assert model.count_params() == 301


def test_without_input_builds_on_first_call_with_single_scope():
    model = tf.keras.Sequential([Dense(3), Dense(1)])
    assert not model.built and model.weights == []
    model(np.zeros((5, 2), np.float32))
    assert model.built
    first, second = model.layers
    assert [v.path for v in model.weights] == [
        f"{model.name}/{first.name}/kernel", f"{model.name}/{first.name}/bias",
        f"{model.name}/{second.name}/kernel", f"{model.name}/{second.name}/bias"]


def test_built_by_fit_has_no_doubled_scope_and_summary_has_none_batch():
    model = tf.keras.Sequential([Dense(30), Dense(1)])
    model.compile("sgd", "mse")
    x = np.zeros((40, 8), np.float32)
    model.fit(x, np.zeros((40, 1), np.float32), batch_size=32, verbose=0)
    assert all(v.path.count(model.name + "/") == 1 for v in model.weights)
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "(None, 30)" in text and "(32, 30)" not in text


def test_default_names_follow_keras():
    model = tf.keras.Sequential([Dense(30, input_shape=(8,)), Dense(1)])
    assert re.fullmatch(r"sequential(_\d+)?", model.name)
    pattern = r"sequential(_\d+)?/dense(_\d+)?/(kernel|bias)"
    assert all(re.fullmatch(pattern, v.path) for v in model.variables)
    # Keras 3: the name is add_weight's, the path the hierarchical one
    assert all(v.name == v.path.rsplit("/", 1)[-1] for v in model.variables)


def test_sequential_add_and_pop():
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,))])
    model.add(Dense(3))
    assert model.built and len(model.weights) == 2
    model.add(Dense(2))
    assert model(np.ones((1, 4), np.float32)).shape == (1, 2)
    popped = model.pop()
    assert popped.units == 2 and len(model.layers) == 1
    assert model(np.ones((1, 4), np.float32)).shape == (1, 3)


def test_input_must_come_first():
    model = tf.keras.Sequential([Dense(3)])
    with pytest.raises(ValueError, match="Input must come first"):
        model.add(tf.keras.Input(shape=(4,)))


# --- variables: names and order -----------------------------------------------------------------
def test_variable_names_and_documented_order():
    model = tf.keras.Sequential([Dense(30, input_shape=(8,), name="hidden"), Dense(1, name="out")],
                                name="net")
    expected = ["net/hidden/kernel", "net/hidden/bias", "net/out/kernel", "net/out/bias"]
    assert [v.path for v in model.trainable_variables] == expected
    assert [v.name for v in model.trainable_variables] == ["kernel", "bias"] * 2  # Keras 3
    assert [v.path for v in model.weights] == expected
    assert model.non_trainable_variables == []
    assert [layer.name for layer in model.layers] == ["hidden", "out"]


def test_non_trainable_variables_and_frozen_layers():
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), Dense(4, name="d0"),
                                 tf.keras.layers.BatchNormalization(name="bn"), Dense(1, name="d1")],
                                name="m")
    assert [v.path for v in model.trainable_variables] == [
        "m/d0/kernel", "m/d0/bias", "m/bn/gamma", "m/bn/beta", "m/d1/kernel", "m/d1/bias"]
    assert [v.path for v in model.non_trainable_variables] == ["m/bn/moving_mean",
                                                                "m/bn/moving_variance"]
    # weights: each layer's own, in creation order, layer by layer
    assert [v.path for v in model.weights] == [
        "m/d0/kernel", "m/d0/bias", "m/bn/gamma", "m/bn/beta", "m/bn/moving_mean",
        "m/bn/moving_variance", "m/d1/kernel", "m/d1/bias"]
    model.layers[0].trainable = False
    assert [v.path for v in model.trainable_variables] == ["m/bn/gamma", "m/bn/beta",
                                                            "m/d1/kernel", "m/d1/bias"]
    assert "m/d0/kernel" in [v.path for v in model.non_trainable_variables]


def test_frozen_layer_does_not_train():
    x, y = regression_data(32)
    model = small_model()
    model.layers[0].trainable = False
    before = model.get_weights()
    model.fit(x, y, epochs=2, verbose=0)
    after = model.get_weights()
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert weights_differ(before[2:], after[2:])


def test_subclassed_model_layers_and_variables():
    model = TwoLayer(name="two")
    assert not model.built
    out = model(np.ones((3, 4), np.float32))
    assert out.shape == (3, 1)
    assert model.layers == [model.hidden, model.out]
    assert [v.path for v in model.trainable_variables] == [
        f"two/{model.hidden.name}/kernel", f"two/{model.hidden.name}/bias",
        f"two/{model.out.name}/kernel", f"two/{model.out.name}/bias"]
    assert model.count_params() == 4 * 8 + 8 + 8 + 1


def test_subclassed_model_gets_training_flag_from_each_loop():
    x, y = regression_data(16)
    model = TwoLayer()
    model.compile("sgd", "mse")
    model.fit(x, y, batch_size=16, verbose=0)
    assert True in model.seen_training and False not in model.seen_training[1:]
    model.seen_training.clear()
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    assert model.seen_training and set(model.seen_training) == {False}


def test_dropout_active_only_while_training():
    x, y = regression_data(64)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(16),
                                 tf.keras.layers.Dropout(0.5), Dense(1)])
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))
    a = model(x, training=True).numpy()
    b = model(x, training=True).numpy()
    assert not np.array_equal(a, b)


# --- weights as arrays --------------------------------------------------------------------------
def test_get_set_weights_round_trip():
    x, _ = regression_data(8)
    a, b = small_model(seed=1), small_model(seed=2)
    assert weights_differ(a.get_weights(), b.get_weights())
    weights = a.get_weights()
    assert [w.shape for w in weights] == [(4, 8), (8,), (8, 1), (1,)]
    assert all(isinstance(w, np.ndarray) and w.dtype == np.float32 for w in weights)
    b.set_weights(weights)
    assert_same_weights(a, b)
    np.testing.assert_array_equal(a.predict(x, verbose=0), b.predict(x, verbose=0))
    weights[0][...] = 0  # a copy: changing it leaves the model alone
    assert np.any(a.get_weights()[0] != 0)


def test_set_weights_wrong_count_or_shape():
    model = small_model()
    with pytest.raises(ValueError, match="expected 4 arrays"):
        model.set_weights(model.get_weights()[:3])
    bad = model.get_weights()
    bad[2] = np.zeros((1, 8), np.float32)
    with pytest.raises(ValueError, match=r"dense.*/kernel has shape \(8, 1\)"):
        model.set_weights(bad)


# --- config --------------------------------------------------------------------------------------
def test_sequential_config_round_trip_same_predictions():
    x, _ = regression_data(10)
    model = tf.keras.Sequential([Dense(30, activation="relu", input_shape=(4,)),
                                 tf.keras.layers.Dropout(0.2), Dense(1, activation="linear")])
    config = model.get_config()
    json.dumps(config)  # plain data
    clone = tf.keras.Sequential.from_config(config)
    assert clone.built
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert clone.layers[0].units == 30 and clone.layers[1].rate == 0.2
    assert [v.shape for v in clone.weights] == [v.shape for v in model.weights]
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=0, atol=0)


def test_config_of_a_model_built_from_data_rebuilds_for_any_batch():
    model = tf.keras.Sequential([Dense(3), Dense(2)])
    model(np.zeros((32, 5), np.float32))
    clone = tf.keras.Sequential.from_config(model.get_config())
    assert clone.built
    assert clone(np.zeros((7, 5), np.float32)).shape == (7, 2)


# --- summary -------------------------------------------------------------------------------------
def _summary(model):
    lines = []
    model.summary(print_fn=lines.append)
    return lines


def test_summary_shapes_and_counts():
    model = tf.keras.Sequential([Dense(30, activation="relu", input_shape=(8,), name="hidden"),
                                 Dense(1, name="out")], name="housing")
    lines = _summary(model)
    assert lines[0] == 'Model: "housing"'
    hidden = next(line for line in lines if line.startswith("hidden (Dense)"))
    out = next(line for line in lines if line.startswith("out (Dense)"))
    assert hidden.split()[2:] == ["(None,", "30)", "270"]
    assert out.split()[2:] == ["(None,", "1)", "31"]
    assert "Total params: 301" in lines
    assert "Trainable params: 301" in lines
    assert "Non-trainable params: 0" in lines


def test_summary_prints_to_stdout(capsys):
    small_model().summary()
    out = capsys.readouterr().out
    assert "Total params: 49" in out and "(None, 8)" in out


def test_summary_non_trainable_and_long_names_stay_in_columns():
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), Dense(4),
                                 tf.keras.layers.BatchNormalization(name="batch_normalization_x")])
    lines = _summary(model)
    bn = next(line for line in lines if line.startswith("batch_normalization_x"))
    assert "(BatchNormalization) " in bn and bn.split()[-1] == "16"
    assert "Total params: 32" in lines
    assert "Trainable params: 24" in lines
    assert "Non-trainable params: 8" in lines


def test_summary_unbuilt():
    lines = _summary(tf.keras.Sequential([Dense(3)]))
    assert any("0 (unbuilt)" in line for line in lines)
    assert "Total params: 0" in lines


# --- predict and call --------------------------------------------------------------------------
def test_predict_in_batches_matches_call():
    x, _ = regression_data(50)
    model = small_model()
    out = model.predict(x, batch_size=7, verbose=0)
    assert isinstance(out, np.ndarray) and out.shape == (50, 1) and out.dtype == np.float32
    np.testing.assert_allclose(out, model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_predict_accepts_lists_and_float64():
    x, _ = regression_data(5)
    model = small_model()
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(model.predict(x.astype(np.float64).tolist(), verbose=0), expected,
                               rtol=1e-6)


def test_predict_on_unbuilt_subclassed_model():
    model = TwoLayer()
    assert model.predict(np.ones((3, 4), np.float32), verbose=0).shape == (3, 1)
