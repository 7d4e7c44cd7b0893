"""Keras code tapeflow does not run yet says so, and what to write instead."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import single_error

Dense = tf.keras.layers.Dense


def _functional_api_error(fn):
    with pytest.raises(TypeError) as excinfo:
        fn()
    message = single_error(excinfo)
    for words in ("functional API", "not supported yet", "tf.keras.Input",
                  "tf.keras.Sequential([tf.keras.Input(shape=...)", "subclass tf.keras.Model"):
        assert words in message, message
    return message


def test_calling_a_layer_on_an_input_names_the_functional_api():
    inputs = tf.keras.Input(shape=(8,), name="features")
    dense = Dense(3, name="hidden")
    message = _functional_api_error(lambda: dense(inputs))
    assert "hidden was called on a layer (InputLayer 'features')" in message
    assert "cannot convert" not in message.lower()
    assert not dense.built


@pytest.mark.parametrize("pack", [list, tuple, lambda xs: {"a": xs[0], "b": xs[1]}])
def test_calling_a_layer_on_several_inputs_names_the_functional_api(pack):
    inputs = [tf.keras.Input(shape=(4,)), tf.keras.Input(shape=(4,))]
    _functional_api_error(lambda: Dense(2)(pack(inputs)))


@pytest.mark.parametrize("call", [
    lambda i, o: tf.keras.Model(i, o),
    lambda i, o: tf.keras.Model(inputs=i, outputs=o),
    lambda i, o: tf.keras.Model(inputs=i, outputs=o, name="net"),
])
def test_model_of_inputs_and_outputs_names_the_functional_api(call):
    inputs = tf.keras.Input(shape=(8,))
    _functional_api_error(lambda: call(inputs, inputs))


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
