"""Keras code tapeflow does not run yet says so, and what to write instead."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import single_error

Dense = tf.keras.layers.Dense


def test_calling_a_layer_on_a_layer_says_to_call_it_on_a_tensor():
    input_layer = tf.keras.layers.InputLayer(shape=(8,), name="features")
    dense = Dense(3, name="hidden")
    with pytest.raises(TypeError) as excinfo:
        dense(input_layer)
    message = single_error(excinfo)
    assert "hidden was called on a layer (InputLayer 'features')" in message
    assert "tf.keras.Input(shape=...)" in message and ".output" in message
    assert "cannot convert" not in message.lower()
    assert not dense.built


@pytest.mark.parametrize("pack", [list, tuple, lambda xs: {"a": xs[0], "b": xs[1]}])
def test_calling_a_layer_on_several_layers_says_to_call_it_on_tensors(pack):
    inputs = [tf.keras.layers.InputLayer(shape=(4,)), tf.keras.layers.InputLayer(shape=(4,))]
    with pytest.raises(TypeError, match="was called on a layer"):
        Dense(2)(pack(inputs))


@pytest.mark.parametrize("call", [
    lambda i, o: tf.keras.Model(i, o),
    lambda i, o: tf.keras.Model(inputs=i, outputs=o),
    lambda i, o: tf.keras.Model(inputs=i, outputs=o, name="net"),
])
def test_model_of_inputs_and_outputs_is_a_functional_model(call):
    inputs = tf.keras.Input(shape=(8,))
    model = call(inputs, Dense(2)(inputs))
    assert isinstance(model, tf.keras.Model)
    assert model.predict(np.ones((3, 8), np.float32), verbose=0).shape == (3, 2)


def test_input_inside_sequential_still_builds_the_model():
    model = tf.keras.Sequential([tf.keras.Input(shape=(8,)), Dense(4, activation="relu"), Dense(1)])
    assert model.built
    x = np.ones((5, 8), np.float32)
    assert model.predict(x, verbose=0).shape == (5, 1)
    model.compile("sgd", "mse")
    model.fit(x, np.zeros((5, 1), np.float32), verbose=0)


def test_layers_still_take_arrays_lists_of_numbers_and_variables():
    dense = Dense(2, kernel_initializer="ones")
    np.testing.assert_allclose(dense(np.ones((1, 3), np.float32)).numpy(), [[3.0, 3.0]])
    np.testing.assert_allclose(dense([[1.0, 1.0, 1.0]]).numpy(), [[3.0, 3.0]])
    np.testing.assert_allclose(dense(tf.Variable(np.ones((1, 3), np.float32))).numpy(),
                               [[3.0, 3.0]])
