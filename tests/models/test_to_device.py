"""``Model.to_device``: a built, trained model moves to another device whole (weights,
optimizer slots, metric state) and goes on training and predicting there, with the same result."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend
from strict_device.strict_array import MODULE, StrictArray


@pytest.fixture
def strict_gpu():
    previous = backend.use_gpu_module(MODULE, StrictArray)
    yield
    backend.use_gpu_module(*previous)


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("float32")
    return x, (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")


def _trained_on_cpu(x, y):
    with tf.device("/CPU:0"):
        tf.keras.utils.set_random_seed(1)
        model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    return model


def _all_variables(model):
    return model.variables + model.optimizer.variables + [v for m in model.metrics for v in m.variables]


def test_to_device_moves_every_variable_and_training_goes_on_there(strict_gpu):
    x, y = _data()
    stay, move = _trained_on_cpu(x, y), _trained_on_cpu(x, y)
    assert len(move.optimizer.variables) > 1  # adam's slots exist and move too
    assert move.to_device("/GPU:0") is move
    assert all(isinstance(v._value, StrictArray) for v in _all_variables(move))
    with tf.device("/CPU:0"):
        stay.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        expected = stay.predict(x, verbose=0)
    with tf.device("/GPU:0"):
        move.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        got = move.predict(x, verbose=0)
    np.testing.assert_allclose(backend.to_host(got), expected, rtol=1e-5, atol=1e-6)

    move.to_device("/CPU:0")  # and back
    assert all(type(v._value) is np.ndarray for v in _all_variables(move))
    with tf.device("/CPU:0"):
        np.testing.assert_allclose(move.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)


def test_to_device_refuses_an_unknown_device():
    x, y = _data()
    with pytest.raises(ValueError, match="unknown device"):
        _trained_on_cpu(x, y).to_device("/TPU:0")
