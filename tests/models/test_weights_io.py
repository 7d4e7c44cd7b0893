"""save_weights / load_weights: real HDF5 files in Keras 3's layout (the layer tree's positions)."""
import os

import h5py
import numpy as np
import pytest

import tapeflow as tf

from .helpers import assert_same_weights, regression_data, single_error, small_model

Dense = tf.keras.layers.Dense


def _datasets(path):
    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.__setitem__(name, obj[()])
                     if isinstance(obj, h5py.Dataset) else None)
    return found


def test_file_is_hdf5_keyed_by_layer_position(tmp_path):
    model = tf.keras.Sequential([Dense(30, activation="relu", input_shape=(8,), name="hidden"),
                                 Dense(1, name="out")], name="net")
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    assert h5py.is_hdf5(path)
    stored = _datasets(path)
    # the class's name, not the layer's: Keras 3 keys by position, names may differ
    assert sorted(stored) == ["layers/dense/vars/0", "layers/dense/vars/1",
                              "layers/dense_1/vars/0", "layers/dense_1/vars/1"]
    for key, v in zip(sorted(stored), [model.weights[i] for i in (0, 1, 2, 3)]):
        assert stored[key].dtype == np.float32
        np.testing.assert_array_equal(stored[key], v.numpy())
    with h5py.File(path, "r") as f:
        assert f["layers/dense/vars"].attrs["name"] == b"hidden"  # Keras 3's metadata, fixed-length
        assert f["vars"].attrs["name"] == b"net"


def test_default_names_are_keyed_as_a_fresh_process_names_them(tmp_path):
    # whatever the counters say now (sequential_7/dense_12/...), the keys are the first names
    model = tf.keras.Sequential([Dense(3, input_shape=(2,)), Dense(3), Dense(1)])
    path = tmp_path / "w.h5"
    model.save_weights(path)
    assert sorted(_datasets(path)) == [
        f"layers/{layer}/vars/{i}" for layer in ("dense", "dense_1", "dense_2") for i in (0, 1)]


def test_round_trip_into_a_model_built_again(tmp_path):
    x, y = regression_data(32)
    trained = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    trained.fit(x, y, epochs=3, verbose=0)
    path = tmp_path / "w.h5"
    trained.save_weights(str(path))
    rebuilt = small_model(seed=123)  # other initial values, other variable names
    assert rebuilt.weights[0].path != trained.weights[0].path
    with pytest.warns(UserWarning, match="optimizer state of class Adam.*only the weights"):
        rebuilt.load_weights(str(path))  # compiled with SGD: Adam's state is not its own
    assert_same_weights(trained, rebuilt)
    np.testing.assert_array_equal(rebuilt.predict(x, verbose=0), trained.predict(x, verbose=0))


def test_round_trip_subclassed_model_and_non_trainable_state(tmp_path):
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = Dense(4)
            self.norm = tf.keras.layers.BatchNormalization()
            self.head = Dense(1)

        def call(self, inputs, training=None):
            return self.head(self.norm(self.dense(inputs), training=training))

    x, y = regression_data(32)
    model = Net()
    model.compile("adam", "mse")
    model.fit(x, y, epochs=2, verbose=0)  # moves the batch-norm statistics
    path = tmp_path / "net.h5"
    model.save_weights(path)
    other = Net()
    other(x[:1])
    other.load_weights(path)
    assert_same_weights(model, other)
    # attributes by name: dense, head, norm (gamma, beta, then the moving statistics)
    assert sorted(k for k in _datasets(path) if not k.startswith("optimizer/")) == ["dense/vars/0", "dense/vars/1", "head/vars/0",
                                       "head/vars/1", "norm/vars/0", "norm/vars/1",
                                       "norm/vars/2", "norm/vars/3"]
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_save_overwrites_and_leaves_no_temporary_files(tmp_path):
    model = small_model()
    path = tmp_path / "w.h5"
    model.save_weights(path)
    model.set_weights([w + 1 for w in model.get_weights()])
    model.save_weights(path)
    assert os.listdir(tmp_path) == ["w.h5"]
    other = small_model(seed=9)
    other.load_weights(path)
    assert_same_weights(model, other)


def test_load_into_other_shapes_names_the_variable(tmp_path):
    path = tmp_path / "w.h5"
    small_model(hidden=8).save_weights(path)
    wider = small_model(hidden=16)
    before = wider.get_weights()
    with pytest.raises(ValueError) as excinfo:
        wider.load_weights(path)
    message = single_error(excinfo)
    assert "layers/dense/vars/0" in message and "(4, 16)" in message and "(4, 8)" in message
    assert_same_weights(before, wider.get_weights())  # nothing half-loaded


def test_load_into_other_layers_names_them(tmp_path):
    path = tmp_path / "w.h5"
    small_model().save_weights(path)
    deeper = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(8, activation="tanh"),
                                  Dense(8), Dense(1)])
    with pytest.raises(ValueError) as excinfo:
        deeper.load_weights(path)
    message = single_error(excinfo)
    # by position: the second Dense is (8, 8) here but (8, 1) in the file
    assert "layers/dense_1/vars/0" in message and "(8, 8)" in message and "(8, 1)" in message
    assert "and 1 more" in message  # the third Dense, which the file lacks

    renamed = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(8, name="hidden"),
                                   Dense(1, name="head")])
    renamed.load_weights(path)  # names do not matter, positions do (Keras 3)
    np.testing.assert_array_equal(renamed.layers[0].kernel.numpy(), _datasets(path)[
        "layers/dense/vars/0"])


def test_load_into_an_unbuilt_model(tmp_path):
    path = tmp_path / "w.h5"
    small_model().save_weights(path)
    with pytest.raises(ValueError, match="no weights yet; build it first"):
        tf.keras.Sequential([Dense(8), Dense(1)]).load_weights(path)


def test_save_an_unbuilt_model(tmp_path):
    with pytest.raises(ValueError, match="no weights yet"):
        tf.keras.Sequential([Dense(8)]).save_weights(tmp_path / "w.h5")
    assert os.listdir(tmp_path) == []


def test_load_missing_or_foreign_file(tmp_path):
    model = small_model()
    with pytest.raises(FileNotFoundError, match="no file at"):
        model.load_weights(tmp_path / "nope.h5")
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["data"] = np.zeros(3)
    with pytest.raises(ValueError, match="holds no tapeflow weights"):
        model.load_weights(foreign)
