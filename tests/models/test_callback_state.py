"""Callback state across a resume: ``state_key``, ``get_state()`` and ``set_state()``.

No Keras or TensorFlow test covers this (Keras saves no callback state); the analogue is
Lightning's ``tests/callbacks/test_early_stopping.py::test_resume_early_stopping_from_checkpoint``:
a fit split in two, its callback's state carried from the first half to a new callback in
the second (as JSON, arrays apart), ends as the uninterrupted fit does; a new callback
without the state (the negative control) ends otherwise.
"""
import json

import numpy as np

import tapeflow as tf

from .helpers import Scripted, regression_data, small_model

cb = tf.keras.callbacks


def _as_saved(state):
    """``state`` through JSON, as a checkpoint keeps it (lists of arrays kept apart)."""
    arrays = {k: v for k, v in state.items() if isinstance(v, list)}
    doc = json.loads(json.dumps({k: v for k, v in state.items() if k not in arrays}))
    return dict(doc, **arrays)


def _fit(values, callback, model=None, initial_epoch=0, epochs=None):
    x, y = regression_data(16)
    model = model or small_model(optimizer=tf.keras.optimizers.SGD(0.5))
    history = model.fit(x, y, epochs=epochs or len(values), initial_epoch=initial_epoch,
                        verbose=0, callbacks=[Scripted("val_loss", values), callback])
    return model, history


def _split(values, make, at, carry=True):
    """Fit ``at`` epochs, then the rest with a new callback given the first one's state."""
    first = make()
    model, _ = _fit(values, first, epochs=at)
    second = make()
    if carry:
        second.set_state(_as_saved(first.get_state()))
    model, history = _fit(values, second, model=model, initial_epoch=at)
    return model, history, second


def test_reduce_lr_on_plateau_goes_on_counting_after_a_resume():
    values = [5, 4, 4, 4, 4, 4, 4]

    def make():
        return cb.ReduceLROnPlateau(factor=0.5, patience=2)
    whole, _ = _fit(values, make())
    # epochs 2 and 3 did not improve: the rate halved after epoch 3 and again after 5
    assert float(whole.optimizer.learning_rate) == 0.125
    resumed, _, _ = _split(values, make, at=3)   # one epoch into the patience
    assert float(resumed.optimizer.learning_rate) == 0.125
    fresh, _, _ = _split(values, make, at=3, carry=False)
    assert float(fresh.optimizer.learning_rate) == 0.25


def test_early_stopping_stops_and_restores_as_the_uninterrupted_fit():
    values = [5, 4, 4.5, 4.6, 4.7, 4.8, 3, 3, 3]

    def make():
        return cb.EarlyStopping(patience=3, restore_best_weights=True)
    whole_model, whole = _fit(values, make())
    assert len(whole.epoch) == 5  # best at epoch 1, three epochs without: stopped after epoch 4
    model, history, second = _split(values, make, at=3)
    assert history.epoch == [3, 4] and second.stopped_epoch == 4 and second.best_epoch == 1
    for a, b in zip(whole_model.get_weights(), model.get_weights()):  # epoch 1's weights
        np.testing.assert_array_equal(a, b)
    _, fresh, _ = _split(values, make, at=3, carry=False)
    assert fresh.epoch == [3, 4, 5, 6, 7, 8]


def test_model_checkpoint_keeps_its_best_score(tmp_path):
    values = [3, 2, 2.5, 1]

    def make():
        return cb.ModelCheckpoint(str(tmp_path / "m-{epoch}.keras"), save_best_only=True)
    _split(values, make, at=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-1.keras", "m-2.keras", "m-4.keras"]
    for p in tmp_path.iterdir():
        p.unlink()
    _split(values, make, at=2, carry=False)  # a new callback's first epoch always "improves"
    assert "m-3.keras" in {p.name for p in tmp_path.iterdir()}


def test_state_key_tells_callbacks_apart_and_stays_the_same():
    a = cb.EarlyStopping(monitor="val_loss", patience=2)
    assert a.state_key == "EarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"
    assert a.state_key == cb.EarlyStopping(monitor="val_loss", patience=5).state_key
    assert a.state_key != cb.EarlyStopping(monitor="val_accuracy").state_key
    assert cb.History().state_key == "History" and cb.History().get_state() == {}
