"""fit / evaluate / predict accept a tf.data.Dataset, as Keras's."""
import numpy as np
import pytest

import tapeflow as tf


def _data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))                     # float64: fit makes it the model's float32
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.1).astype(np.float32)
    return x, y


def _model():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    return model


def test_a_batched_dataset_trains_as_the_same_arrays_do():
    x, y = _data()
    a, b = _model(), _model()
    a.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = b.fit(ds, epochs=3, verbose=0, validation_data=ds)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6)
    assert set(history.history) == {"loss", "mae", "val_loss", "val_mae"}
    assert b.evaluate(ds, verbose=0, return_dict=True) == pytest.approx(
        a.evaluate(x, y, verbose=0, return_dict=True), rel=1e-5)
    np.testing.assert_allclose(b.predict(ds), a.predict(x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b.predict(tf.data.Dataset.from_tensor_slices(x).batch(5)),
                               a.predict(x), rtol=1e-6, atol=1e-6)


def test_an_endless_dataset_needs_steps_per_epoch():
    x, y = _data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(8).repeat()
    model = _model()
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(ds, epochs=1, verbose=0)
    history = model.fit(ds, epochs=4, steps_per_epoch=5, verbose=0)
    assert model.optimizer.iterations.numpy() == 20
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_a_dataset_replaces_y_batch_size_and_validation_split():
    x, y = _data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
    for extra in ({"y": y}, {"batch_size": 8}, {"validation_split": 0.2}):
        with pytest.raises(ValueError, match="yields its own batches"):
            _model().fit(ds, verbose=0, **extra)


def test_sample_weights_and_class_weight_from_a_dataset():
    x, _ = _data()
    labels = (x[:, 0] > 0).astype(np.int32)
    weights = np.where(labels == 1, 3.0, 1.0).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    with_w = tf.data.Dataset.from_tensor_slices((x, labels, weights)).batch(64)
    plain = tf.data.Dataset.from_tensor_slices((x, labels)).batch(64)
    expected = model.evaluate(x, labels, sample_weight=weights, verbose=0)
    assert model.evaluate(with_w, verbose=0) == pytest.approx(expected, rel=1e-6)
    # class_weight on a dataset of (x, y) trains as those weights given in the dataset
    w0 = model.get_weights()
    model.fit(plain, class_weight={0: 1.0, 1: 3.0}, epochs=1, verbose=0)
    w_class = model.get_weights()
    model.set_weights(w0)
    model.optimizer.iterations.assign(0)
    model.fit(with_w, epochs=1, verbose=0)
    for a_, b_ in zip(w_class, model.get_weights()):
        np.testing.assert_allclose(a_, b_, rtol=1e-6)
