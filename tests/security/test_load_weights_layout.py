"""Issue 21 groups 1 and 3: ``load_weights`` compares the file's whole layout (paths, shapes,
dtypes, from the HDF5 metadata) with the model before it reads any array, and assigns nothing
until every array is read; a dataset far larger than the variable it claims to be is refused
unread, in each layout it reads (Keras 3's, tapeflow's older keyed one, a whole-model save).

Keras's own mismatch test, with the values it asserts, is ported in
tests/models/test_weights_io.py (``saving_lib_test.py::test_load_weights_mismatched_shape``);
these add the reading order that the issue asks for."""
import tracemalloc

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.models.weights_io import weight_keys
from tapeflow.saving import format as fmt

BIG = (1000, 1000)  # 4 MB of float32: a dataset that reading would show
PEAK_BYTES = 1 << 20


def _model(units=3, compiled=False):
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(units),
                                 tf.keras.layers.Dense(1)])
    if compiled:
        model.compile(optimizer="adam", loss="mse")
        model.optimizer.build(model.trainable_variables)
    return model


def _replace(path, name, array):
    with h5py.File(path, "r+") as f:
        group, _, leaf = name.rpartition("/")
        attrs = dict(f[name].attrs)  # an optimizer variable's name
        del f[name]
        fmt.create_checked_dataset(f[group], leaf, array)
        f[name].attrs.update(attrs)


def _refused_unread(model, path, match):
    before = [w.numpy() for w in model.weights]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            model.load_weights(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.1f} MiB before the refusal"
    for old, new in zip(before, model.weights):
        np.testing.assert_array_equal(old, new.numpy())


def test_a_huge_dataset_in_the_last_layer_is_refused_before_anything_is_read(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    _model().save_weights(path)
    _replace(path, "layers/dense_1/vars/0", np.zeros(BIG, np.float32))
    _refused_unread(_model(), path, r"layers/dense_1/vars/0 \('sequential.*/kernel'\): the "
                    r"shapes must match, but the model expects \(3, 1\) and the file holds "
                    r"\(1000, 1000\)")


def test_a_complex_kernel_is_refused_not_cast(tmp_path):
    """Issue 21 group 3: a complex kernel lost its imaginary part, silently."""
    path = str(tmp_path / "m.weights.h5")
    _model().save_weights(path)
    _replace(path, "layers/dense/vars/0", np.full((4, 3), 1 + 2j, np.complex64))
    _refused_unread(_model(), path, r"layers/dense/vars/0 .*: the model's variable is float32 "
                    r"and the file holds complex64")


def test_float64_weights_still_load_into_float32_variables(tmp_path):
    """The cast Keras makes (``variable.assign``) stays."""
    path = str(tmp_path / "m.weights.h5")
    _model().save_weights(path)
    _replace(path, "layers/dense/vars/0", np.full((4, 3), 0.5, np.float64))
    model = _model()
    model.load_weights(path)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), np.full((4, 3), 0.5))


def test_a_huge_optimizer_slot_is_refused_unread(tmp_path):
    path = str(tmp_path / "m.weights.h5")
    _model(compiled=True).save_weights(path)
    _replace(path, "optimizer/vars/3", np.zeros(BIG, np.float32))
    _refused_unread(_model(compiled=True), path,
                    r"optimizer state '.*' is float32\[1000, 1000\], larger than any variable of "
                    r"the model \(the largest holds 12 values\)")


def test_the_older_keyed_layout_is_checked_before_reading(tmp_path):
    path = str(tmp_path / "old.h5")
    keyed = weight_keys(_model())
    with h5py.File(path, "w") as f:  # the layout tapeflow wrote before: weights/<key>
        for key, v in keyed:
            f.create_dataset(f"weights/{key}", data=v.numpy())
        last = keyed[-2][0]  # the last layer's kernel
        del f[f"weights/{last}"]
        f.create_dataset(f"weights/{last}", data=np.zeros(BIG, np.float32))
    _refused_unread(_model(), path, r"the shapes must match, but the model expects \(3, 1\) "
                    r"and the file holds \(1000, 1000\)")


def test_a_whole_model_save_is_checked_before_reading(tmp_path):
    path = str(tmp_path / "whole.keras")
    _model(units=100_000).save(path)  # kernels (4, 100000) and (100000, 1): 2 MB
    _refused_unread(_model(), path, r"the shapes must match, but the model expects \(4, 3\) and "
                    r"the file holds \(4, 100000\)")
