"""Normalization's statistics are Variables that traced calls read, not constants baked in."""
import numpy as np

import tapeflow as tf


def _model(data):
    norm = tf.keras.layers.Normalization()
    norm.adapt(data)
    model = tf.keras.Sequential([tf.keras.Input(shape=(1,)), norm])
    model.compile(loss="mse")
    return model


def test_predict_after_load_weights_uses_the_loaded_statistics(tmp_path):
    a = _model(np.array([[0.0], [2.0]], np.float32))
    b = _model(np.array([[10.0], [12.0]], np.float32))
    x = np.ones((1, 1), np.float32)
    assert b.predict(x, verbose=0)[0, 0] == -10.0   # traced with b's own statistics
    a.save_weights(tmp_path / "a.weights.h5")
    b.load_weights(tmp_path / "a.weights.h5")
    np.testing.assert_array_equal(b.predict(x, verbose=0), a.predict(x, verbose=0))
    np.testing.assert_array_equal(b.predict(x, verbose=0), b(x).numpy())


def test_a_traced_call_sees_a_later_adapt():
    model = _model(np.array([[0.0], [2.0]], np.float32))
    call = tf.function(lambda x: model(x))
    x = tf.constant([[1.0]])
    assert call(x).numpy()[0, 0] == 0.0
    model.layers[0].adapt(np.array([[3.0], [5.0]], np.float32))
    assert call(x).numpy()[0, 0] == -3.0
