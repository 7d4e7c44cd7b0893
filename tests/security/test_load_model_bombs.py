"""Issue 21 group 1: a small .keras file whose config declares huge layers is refused before
any layer allocates (the config's weight shapes are checked against the stored arrays' as the
model is rebuilt, under the weight cap), directly and through an unpickled SKLearnRegressor."""
import pickle
import tracemalloc

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.layers import weight_budget
from tapeflow.saving.format import LoadError
from tapeflow.wrappers import SKLearnRegressor

from .crafting import edit_document

PEAK_BYTES = 50 * 2 ** 20


def _small_model():
    return tf.keras.Sequential([tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(4)])


def _save(tmp_path, change=None):
    path = str(tmp_path / "model.keras")
    _small_model().save(path)
    if change is not None:
        edit_document(path, change)
    return path


def _dense(document):
    return document["model_config"]["config"]["layers"][0]["config"]


def _refused_without_allocating(load, match):
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match=match):
            load()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"peak {peak / 2**20:.0f} MiB before the refusal"


def test_units_300000000_is_refused_before_the_kernel_is_made(tmp_path):
    """The issue's `units: 300000000` (9 GiB of kernel from a 70 kB file)."""
    path = _save(tmp_path, lambda d: _dense(d).update(units=300_000_000))
    _refused_without_allocating(lambda: tf.keras.models.load_model(path),
                                r"dense.kernel: the config makes a weight float32\[3, 300000000\]")


def test_an_input_shape_of_3e8_is_refused_before_the_kernel_is_made(tmp_path):
    """The issue's `input_shape: [null, 3e8]` (a 3e8-row kernel)."""
    def change(document):
        document["model_config"]["config"]["input_shape"] = [None, 3e8]
        document["input_shape"] = [None, 300_000_000]
    path = _save(tmp_path, change)
    _refused_without_allocating(lambda: tf.keras.models.load_model(path),
                                r"dense.kernel: a weight of shape \(300000000, 4\)")


def test_a_config_whose_weights_fit_the_cap_but_not_the_save_is_refused(tmp_path):
    path = _save(tmp_path, lambda d: _dense(d).update(units=5))
    with pytest.raises(LoadError, match=r"float32\[3, 5\], which is not among the saved arrays"):
        tf.keras.models.load_model(path)


def test_the_cap_is_settable(tmp_path, monkeypatch):
    path = _save(tmp_path)
    monkeypatch.setattr(weight_budget, "DEFAULT_BYTES", 40)  # the kernel is 48 bytes
    with pytest.raises(LoadError, match="past the 0.0 GiB left of the cap"):
        tf.keras.models.load_model(path)
    monkeypatch.undo()
    assert tf.keras.models.load_model(path).layers[0].units == 4


def _regressor_state(model):
    """What pickling an SKLearnRegressor writes, as a dict to edit."""
    return pickle.loads(pickle.dumps(SKLearnRegressor(model=model))).__getstate__()


def _unpickle(state):
    return pickle.loads(pickle.dumps(_Crafted(state)))


class _Crafted:
    """Pickles as an SKLearnRegressor whose state is ``state`` (what a crafted pickle holds)."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return (object.__new__, (SKLearnRegressor,), self.state)


def test_an_unpickled_regressors_model_config_is_capped():
    """The issue's bomb through an unpickled SKLearnRegressor's (unfitted) model: its config
    has no stored arrays to be checked against, so only the cap holds (3e9 units: 36 GiB)."""
    state = _regressor_state(_small_model())
    spec = state["model"]["tapeflow_model_spec"]["model"]
    spec["config"]["layers"][0]["config"]["units"] = 3_000_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"dense.kernel: a weight of shape \(3, 3000000000\)"):
            _unpickle(state)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES


def test_an_unpickled_regressors_fitted_model_is_loaded_as_load_model_loads(tmp_path):
    """The same bomb in a fitted regressor's saved model bytes."""
    path = _save(tmp_path, lambda d: _dense(d).update(units=300_000_000))
    state = _regressor_state(_small_model())
    with open(path, "rb") as f:
        state["model_"] = {"tapeflow_keras_save": f.read()}
    _refused_without_allocating(lambda: _unpickle(state),
                                r"dense.kernel: the config makes a weight float32\[3, 300000000\]")


def test_saves_hold_fixed_length_string_attributes_and_old_ones_still_load(tmp_path):
    """Issue 21 item 4: variable-length string attributes live in the HDF5 global heap, where
    one damaged byte hangs libhdf5; a save writes none, and a save with them (as tapeflow wrote
    before) still loads."""
    path = str(tmp_path / "model.keras")
    model = tf.keras.Sequential([tf.keras.Input(shape=()), tf.keras.layers.Rescaling(2.0)])
    model.save(path)  # no weights; its graph holds a scalar constant, checksummed by attribute

    with h5py.File(path, "r") as f:
        assert isinstance(f.attrs["format"], np.bytes_)
        assert ("/arrays/0", "checksum") in _string_attrs(f, variable=False)
        assert not _string_attrs(f, variable=True)
    with h5py.File(path, "r+") as f:  # as tapeflow wrote them before
        for name, key in _string_attrs(f, variable=False):
            f[name].attrs[key] = f[name].attrs[key].decode()
        assert ("/", "format") in _string_attrs(f, variable=True)
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(tf.keras.models.load_model(path)(x).numpy(), 2 * x)


def _string_attrs(f, variable):
    """``(object, attribute)`` of every string attribute in ``f`` of variable length or not."""
    objects = [f]
    f.visit(lambda name: objects.append(f[name]))
    found = []
    for obj in objects:
        for key in obj.attrs:
            kind = obj.attrs.get_id(key).get_type()
            if isinstance(kind, h5py.h5t.TypeStringID) and kind.is_variable_str() == variable:
                found.append((obj.name, key))
    return found
