"""ReduceLROnPlateau, with Keras 3's rules: patience, factor, cooldown, min_lr, min_delta."""
import pytest

import tapeflow as tf

from .helpers import Scripted, regression_data, small_model


def _rates(values, **kwargs):
    x, y = regression_data(16)
    model = small_model(optimizer=tf.keras.optimizers.SGD(1.0))
    history = model.fit(x, y, epochs=len(values), verbose=0, callbacks=[
        Scripted("val_loss", values), tf.keras.callbacks.ReduceLROnPlateau(**kwargs)])
    return [round(v, 6) for v in history.history["learning_rate"]], model


def test_reduces_after_patience_epochs_without_improvement():
    rates, model = _rates([5, 4, 4, 4, 4, 3, 3, 3], factor=0.5, patience=2)
    # the rate logged at an epoch's end is the one that epoch trained with
    assert rates == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]
    assert float(model.optimizer.learning_rate) == 0.25


def test_cooldown_and_min_lr():
    rates, model = _rates([5] * 9, factor=0.1, patience=1, cooldown=2, min_lr=0.005)
    # reduced at epochs 1, 3 and 5; two epochs of cooldown after each, never below min_lr
    assert rates == [1.0, 1.0, 0.1, 0.1, 0.01, 0.01, 0.005, 0.005, 0.005]
    assert float(model.optimizer.learning_rate) == pytest.approx(0.005)


def test_min_delta_counts_small_gains_as_none():
    rates, _ = _rates([1.0, 0.99995, 0.9999, 0.99985], factor=0.5, patience=2)
    assert rates[-1] == 0.5    # gains under 1e-4 are not improvements


def test_bad_factor_and_unknown_monitor():
    with pytest.raises(ValueError, match="factor"):
        tf.keras.callbacks.ReduceLROnPlateau(factor=1.5)
    x, y = regression_data(16)
    with pytest.raises(ValueError, match="val_los"):
        small_model().fit(x, y, epochs=1, verbose=0, callbacks=[
            tf.keras.callbacks.ReduceLROnPlateau(monitor="val_los")])
