"""Mistakes a Keras user makes get one clear error, raised before any training happens."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import regression_data, single_error, small_model

Dense = tf.keras.layers.Dense


def _raises(exc, fn, *words):
    with pytest.raises(exc) as excinfo:
        fn()
    message = single_error(excinfo)
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize("method", ["fit", "evaluate"])
def test_training_before_compile(method):
    x, y = regression_data(8)
    model = small_model(compile=False)
    _raises(RuntimeError, lambda: getattr(model, method)(x, y, verbose=0), "compile()",
            f"{method}()", model.name)


def test_predict_needs_no_compile():
    x, _ = regression_data(8)
    assert small_model(compile=False).predict(x, verbose=0).shape == (8, 1)


def test_mismatched_lengths():
    x, y = regression_data(10)
    model = small_model()
    _raises(ValueError, lambda: model.fit(x, y[:9], verbose=0), "x has 10 samples", "y has 9")
    _raises(ValueError, lambda: model.fit(x, y, sample_weight=np.ones(3), verbose=0),
            "sample_weight has 3")
    _raises(ValueError, lambda: model.evaluate(x[:4], y, verbose=0), "x has 4 samples",
            "y has 10")
    _raises(ValueError, lambda: model.fit(x, y, validation_data=(x, y[:5]), verbose=0),
            "validation_data", "y has 5")


def test_mismatch_leaves_the_model_untouched():
    x, y = regression_data(10)
    model = small_model()
    before = model.get_weights()
    with pytest.raises(ValueError):
        model.fit(x, y[:9], verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert model.optimizer.iterations == 0


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, "32", True])
def test_bad_batch_size(batch_size):
    x, y = regression_data(8)
    model = small_model()
    _raises(ValueError, lambda: model.fit(x, y, batch_size=batch_size, verbose=0),
            "batch_size must be a positive integer", repr(batch_size))
    _raises(ValueError, lambda: model.evaluate(x, y, batch_size=batch_size, verbose=0),
            "batch_size")
    _raises(ValueError, lambda: model.predict(x, batch_size=batch_size, verbose=0), "batch_size")


@pytest.mark.parametrize("split", [1.0, 1.5, -0.1])
def test_validation_split_out_of_range(split):
    x, y = regression_data(8)
    _raises(ValueError, lambda: small_model().fit(x, y, validation_split=split, verbose=0),
            "validation_split", str(split))


def test_validation_split_leaving_nothing():
    x, y = regression_data(3)
    _raises(ValueError, lambda: small_model().fit(x, y, validation_split=0.9, verbose=0),
            "validation_split=0.9", "3")


def test_bad_validation_data():
    x, y = regression_data(8)
    _raises(ValueError, lambda: small_model().fit(x, y, validation_data=x, verbose=0),
            "validation_data must be a tuple (x_val, y_val)")


@pytest.mark.parametrize("epochs", [-1, 1.5, "3"])
def test_bad_epochs(epochs):
    x, y = regression_data(8)
    _raises(ValueError, lambda: small_model().fit(x, y, epochs=epochs, verbose=0), "epochs")


def test_fit_without_targets():
    x, _ = regression_data(8)
    _raises(ValueError, lambda: small_model().fit(x, verbose=0), "no y was given")


def test_unknown_strings_in_compile():
    model = small_model(compile=False)
    _raises(ValueError, lambda: model.compile("adam", "mean_sqared_error"),
            "Unknown loss 'mean_sqared_error'", "mean_squared_error")
    _raises(ValueError, lambda: model.compile("adamm", "mse"), "Unknown optimizer 'adamm'", "adam")
    _raises(ValueError, lambda: model.compile("adam", "mse", metrics=["maee"]),
            "Unknown metric 'maee'", "mae")


def test_wrong_input_width():
    model = small_model()
    _raises(ValueError, lambda: model.predict(np.zeros((2, 5), np.float32), verbose=0),
            "last dimension 4", "(2, 5)")


def test_scalar_input():
    _raises(ValueError, lambda: small_model().predict(np.float32(1.0), verbose=0),
            "batch axis")


def test_empty_predict():
    _raises(ValueError, lambda: small_model().predict(np.zeros((0, 4), np.float32), verbose=0),
            "no samples")


def test_a_functional_model_of_something_else_than_tensors_is_refused():
    inputs = tf.keras.Input(shape=(4,))
    _raises(TypeError, lambda: tf.keras.Model(inputs, "outputs"), "outputs must be")
