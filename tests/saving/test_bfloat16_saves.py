"""bfloat16 in saves: a ``mixed_bfloat16`` model's ``.keras`` save (its traced call computes in
bfloat16; its variables are float32) and bfloat16 variables in ``.keras`` and ``.weights.h5``
files, stored as Keras 3's ``saving_lib.H5IOStore`` stores them (an opaque 2-byte dataset
marked ``dtype="bfloat16"``) and read back bit for bit.

Ported from Keras 3 (keras-team/keras) ``keras/src/saving/saving_api_test.py`` with their
values: ``LoadModelTests::test_basic_load`` (every dtype) and ``LoadWeightsTests::
test_load_weights`` (the cases with bfloat16 or float16 on either side; the float32/float64 ones
are in test_weights_h5_layout.py).
"""
import sys

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import mixed_precision
from tapeflow.saving.format import LoadError

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs the [bfloat16] extra "
                                                    "(ml_dtypes), which is not installed")
keras = tf.keras
layers = keras.layers
X = np.random.default_rng(0).uniform(size=(10, 3)).astype(np.float32)


@pytest.fixture(autouse=True)
def _global_policy_restored():
    previous = mixed_precision.global_policy()
    yield
    mixed_precision.set_global_policy(previous)


def get_model(dtype=None):
    # saving_api_test.py: LoadModelTests.get_model / LoadWeightsTests.get_model
    return keras.Sequential([layers.Dense(5, input_shape=(3,), dtype=dtype), layers.Softmax()])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_basic_load(dtype, tmp_path):
    # Keras: saving_api_test.py::LoadModelTests::test_basic_load
    model = get_model(dtype)
    filepath = str(tmp_path / "test_model.keras")
    keras.saving.save_model(model, filepath)
    loaded_model = keras.saving.load_model(filepath)
    assert loaded_model.weights[0].dtype == dtype
    assert np.allclose(model.predict(X, verbose=0), loaded_model.predict(X, verbose=0))


@pytest.mark.parametrize("save_format", ["keras", "weights.h5"])
@pytest.mark.parametrize("source_dtype, dest_dtype", [
    ("bfloat16", "float64"), ("bfloat16", "float32"), ("bfloat16", "float16"),
    ("bfloat16", "bfloat16"), ("float32", "bfloat16"), ("float16", "bfloat16"),
    ("float16", "float32"), ("float64", "float16")])
def test_load_weights(save_format, source_dtype, dest_dtype, tmp_path):
    # Keras: saving_api_test.py::LoadWeightsTests::test_load_weights
    src_model = get_model(dtype=source_dtype)
    filepath = str(tmp_path / f"test_weights.{save_format}")
    if save_format == "keras":
        src_model.save(filepath)
    else:
        src_model.save_weights(filepath)
    dest_model = get_model(dtype=dest_dtype)
    dest_model.load_weights(filepath)
    for orig, loaded in zip(src_model.get_weights(), dest_model.get_weights()):
        assert loaded.dtype == tf.as_dtype(dest_dtype)
        np.testing.assert_allclose(orig.astype("float32"), loaded.astype("float32"),
                                   atol=1e-3, rtol=1e-2)


def mixed_bfloat16_model():
    """A mixed_bfloat16 model whose state includes BatchNormalization's moving statistics, its
    output in float32 (the mixed-precision guide's last layer)."""
    mixed_precision.set_global_policy("mixed_bfloat16")
    inputs = keras.Input((3,), name="features")
    hidden = layers.Dense(4, activation="tanh")(inputs)
    hidden = layers.BatchNormalization()(hidden)
    outputs = layers.Activation("linear", dtype="float32")(layers.Dense(1)(hidden))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    model.fit(X, X[:, :1], batch_size=5, epochs=1, verbose=0)
    return model


def test_mixed_bfloat16_model_round_trips_through_a_keras_file(tmp_path):
    model = mixed_bfloat16_model()
    path = str(tmp_path / "mixed.keras")
    model.save(path)
    mixed_precision.set_global_policy("float32")  # a process that never set a policy
    loaded = keras.models.load_model(path)
    # Keras restores each layer's policy from its config; the global one is not saved
    assert [layer.dtype_policy for layer in loaded.layers] == \
        [layer.dtype_policy for layer in model.layers]
    assert loaded.layers[1].dtype_policy == mixed_precision.DTypePolicy("mixed_bfloat16")
    assert loaded.layers[1].compute_dtype == "bfloat16"
    assert mixed_precision.global_policy().name == "float32"
    assert all(w.dtype == tf.float32 for w in loaded.weights)
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))
    assert loaded.evaluate(X, X[:, :1], verbose=0) == model.evaluate(X, X[:, :1], verbose=0)


def test_bfloat16_weights_are_stored_as_keras_3_stores_them(tmp_path):
    # Keras: saving_lib.py H5IOStore.__setitem__ / __getitem__ (the bfloat16 branch)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(5, dtype="bfloat16")])
    path = str(tmp_path / "bf16.weights.h5")
    model.save_weights(path)
    kernel = model.get_weights()[0]
    with h5py.File(path, "r") as f:
        dataset = f["layers/dense/vars/0"]
        assert isinstance(dataset.id.get_type(), h5py.h5t.TypeOpaqueID)
        assert dataset.dtype.itemsize == 2
        assert dataset.attrs["dtype"] == "bfloat16"  # a str, as Keras's reader compares it
        stored = np.array(dataset, dtype=ml_dtypes.bfloat16)  # how Keras reads it
    np.testing.assert_array_equal(stored.view(np.uint16), kernel.view(np.uint16))
    twin = keras.Sequential([keras.Input((3,)), layers.Dense(5, dtype="bfloat16")])
    twin.load_weights(path)
    np.testing.assert_array_equal(twin.get_weights()[0].view(np.uint16), kernel.view(np.uint16))


def test_a_bfloat16_save_without_ml_dtypes_is_refused_naming_the_extra(tmp_path, monkeypatch):
    path = str(tmp_path / "bf16.keras")
    get_model("bfloat16").save(path)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # what an install without it sees
    with pytest.raises(LoadError, match=r"bfloat16 values: .*ml_dtypes.*tapeflow\[bfloat16\]"):
        keras.models.load_model(path)


@pytest.mark.parametrize("mark, refusal", [
    (None, r"layers/dense/vars/0 has dtype \|V2, which a save never holds"),
    ("float8", r"layers/dense/vars/0 has dtype \|V2, which a save never holds"),
])
def test_unmarked_opaque_datasets_are_refused(mark, refusal, tmp_path):
    model = keras.Sequential([keras.Input((3,)), layers.Dense(5, dtype="bfloat16")])
    path = str(tmp_path / "bf16.weights.h5")
    model.save_weights(path)
    with h5py.File(path, "r+") as f:
        attrs = f["layers/dense/vars/0"].attrs
        del attrs["dtype"]
        if mark is not None:
            attrs["dtype"] = mark
    with pytest.raises(ValueError, match=refusal):
        model.load_weights(path)
