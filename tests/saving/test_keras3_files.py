"""Files written by Keras 3 load in tapeflow: ``.weights.h5`` (``load_weights``) and ``.keras``
archives (``load_model``), made by ``keras3_fixtures/make_fixtures.py`` (Keras 3.15.1, jax).

Keras's predictions are matched to float32 rounding, not bitwise: the weights load bit for
bit (checked), but XLA's dot, einsum and convolution sum in another order than numpy's.
A damaged or edited copy is refused with one LoadError.
"""
import io
import json
import os
import zipfile

import h5py
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.models.weights_tree import layer_tree, own_variables
from tapeflow.saving import keras_archive
from tapeflow.saving.errors import LoadError

keras = tf.keras
FIXTURES = os.path.join(os.path.dirname(__file__), "keras3_fixtures")
MODELS = ["sequential_dense", "functional_two_inputs", "conv_pool", "embedding_lstm",
          "batch_norm", "layer_norm", "attention"]


def _fixture(name):
    return os.path.join(FIXTURES, name)


def _inputs_and_pred(name):
    data = np.load(_fixture(f"{name}.npz"))
    xs = [data[k] for k in sorted(data.files) if k.startswith("x")]
    return (xs if len(xs) > 1 else xs[0]), data["pred"]


def _members(name):
    with zipfile.ZipFile(_fixture(f"{name}.keras")) as archive:
        return {n: archive.read(n) for n in archive.namelist()}


def _zip(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _assert_weights_are_the_files(model, h5_bytes):
    with h5py.File(io.BytesIO(h5_bytes), "r") as f:
        for path, layer in layer_tree(model):
            for i, v in enumerate(own_variables(layer)):
                stored = f[f"{path}/vars/{i}" if path else f"vars/{i}"][()]
                np.testing.assert_array_equal(v.numpy(), stored, err_msg=f"{path}/{i}")


@pytest.mark.parametrize("name", MODELS)
def test_a_keras3_archive_loads_and_predicts_as_keras(name):
    # Keras: saving/saving_lib_test.py::test_inference_after_instantiation (a reloaded model
    # predicts as the saved one), here across frameworks
    model = keras.models.load_model(_fixture(f"{name}.keras"))
    _assert_weights_are_the_files(model, _members(name)["model.weights.h5"])
    x, pred = _inputs_and_pred(name)
    got = model.predict(x, verbose=0)
    assert got.shape == pred.shape
    np.testing.assert_allclose(got, pred, rtol=1e-5, atol=1e-6)


def test_the_compile_config_and_optimizer_variables_are_restored():
    # Keras: saving/saving_lib_test.py::test_compile_arg and test_compile_preserved
    model = keras.models.load_model(_fixture("sequential_dense.keras"))
    assert type(model.optimizer).__name__ == "Adam"
    assert model.optimizer.learning_rate.numpy() == np.float32(0.001)
    assert int(model.optimizer.iterations) == 6  # two epochs of three batches, in Keras
    with h5py.File(io.BytesIO(_members("sequential_dense")["model.weights.h5"]), "r") as f:
        stored = [f[f"optimizer/vars/{i}"][()] for i in range(len(f["optimizer/vars"]))]
    for value, saved in zip(model.optimizer.get_state().values(), stored):
        np.testing.assert_array_equal(value, saved)
    x, _ = _inputs_and_pred("sequential_dense")
    logs = model.evaluate(x, np.zeros((len(x), 1), "float32"), verbose=0, return_dict=True)
    assert set(logs) == {"loss", "mae"}
    uncompiled = keras.models.load_model(_fixture("sequential_dense.keras"), compile=False)
    assert uncompiled.optimizer is None
    assert keras.models.load_model(_fixture("layer_norm.keras")).optimizer is None  # not compiled


def test_a_trainer_config_builds_the_model_of_a_keras3_archive():
    """``model.keras_config`` naming a .keras file Keras 3 wrote: its architecture, unweighted."""
    from tapeflow.training.model_graph import build_keras_config
    model = build_keras_config("conv_pool.keras", "test.yaml", FIXTURES)
    assert [tuple(w.shape) for w in model.weights] == [(3, 3, 1, 2), (2,), (8, 3), (3,)]


def test_keras3_weights_file_loads_into_a_tapeflow_twin():
    # Keras: saving/saving_lib_test.py::test_save_load_weights_only (into a model built here)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile("adam", "mse")
    model.load_weights(_fixture("sequential_dense.weights.h5"))
    with open(_fixture("sequential_dense.weights.h5"), "rb") as f:
        _assert_weights_are_the_files(model, f.read())
    assert int(model.optimizer.iterations) == 6
    x, pred = _inputs_and_pred("sequential_dense")
    np.testing.assert_allclose(model.predict(x, verbose=0), pred, rtol=1e-5, atol=1e-6)


def test_optimizer_variables_that_do_not_fit_are_skipped_with_keras_warning():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
    # Keras: optimizers/optimizer.py's load_own_variables warns so (10 saved, SGD has 6)
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer 'sgd', "
                                         "because it has 6 variables whereas the saved"):
        model.load_weights(_fixture("sequential_dense.weights.h5"))
    x, pred = _inputs_and_pred("sequential_dense")
    np.testing.assert_allclose(model.predict(x, verbose=0), pred, rtol=1e-5, atol=1e-6)
    assert int(model.optimizer.iterations) == 0


def test_a_checksum_the_file_carries_is_still_checked(tmp_path):
    path = tmp_path / "w.weights.h5"
    with open(_fixture("sequential_dense.weights.h5"), "rb") as f:
        path.write_bytes(f.read())
    with h5py.File(path, "a") as f:
        f["layers/dense/vars/0"].attrs["checksum"] = np.bytes_("0" * 64)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    before = model.get_weights()
    with pytest.raises(LoadError, match="does not match its checksum"):
        model.load_weights(path)
    for w, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, b)


# --- damaged and edited archives -----------------------------------------------------------
def _lambda_config():
    """sequential_dense's config with a Lambda as Keras 3 writes one (Python bytecode)."""
    config = json.loads(_members("sequential_dense")["config.json"])
    config["config"]["layers"].insert(2, {
        "module": "keras.layers", "class_name": "Lambda", "registered_name": None,
        "config": {"name": "lambda", "trainable": True, "dtype": "float32",
                   "function": {"class_name": "__lambda__", "config": {
                       "code": "4wEAAAAAAAAAAAAAAAEAAAACAAAAQwAAAHMIAAAAfABkARQAUwApAk7pAgAAAKkA"
                               "KQHaAXhyAgAAAHICAAAA+gg8c3RkaW4+2gg8bGFtYmRhPgEAAADzAAAAAA==",
                       "defaults": None, "closure": None}},
                   "arguments": {}}})
    return json.dumps(config).encode()


def _edited(tmp_path, how):
    members = _members("sequential_dense")
    path = tmp_path / "edited.keras"
    if how == "truncated":
        raw = open(_fixture("sequential_dense.keras"), "rb").read()
        path.write_bytes(raw[: len(raw) // 2])
        return path
    if how == "member ../x":
        members["../x"] = b"{}"
    elif how == "unknown member":
        members["assets/vocabulary.txt"] = b"a\nb\n"
    elif how == "lambda":
        members["config.json"] = _lambda_config()
    elif how == "unknown class":
        members["config.json"] = members["config.json"].replace(b'"Dense"', b'"os.system"', 1)
    elif how == "no config":
        del members["config.json"]
    elif how == "config not json":
        members["config.json"] = b"{not json"
    elif how == "weights of another model":
        members["model.weights.h5"] = _members("layer_norm")["model.weights.h5"]
    return _zip(path, members)


@pytest.mark.parametrize("how, message", [
    ("truncated", "not a readable .keras archive"),
    ("member ../x", "would leave the archive"),
    ("unknown member", "tapeflow reads only"),
    ("lambda", "config.json: cannot build"),
    ("unknown class", "os.system"),
    ("no config", "no config.json"),
    ("config not json", "not valid JSON"),
    ("weights of another model", "model.weights.h5 does not match"),
])
def test_a_damaged_or_edited_archive_is_refused(tmp_path, how, message):
    with pytest.raises(LoadError, match=message):
        keras.models.load_model(_edited(tmp_path, how))


def test_a_member_over_its_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setitem(keras_archive.MEMBER_CAPS, "config.json", 1000)
    with pytest.raises(LoadError, match="over the cap"):
        keras.models.load_model(_fixture("sequential_dense.keras"))


def test_a_member_decompressing_past_its_declared_size_is_refused(tmp_path):
    path = _zip(tmp_path / "lying.keras", _members("sequential_dense"), zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    # the central directory's uncompressed size of config.json says 10 bytes
    entry = raw.index(b"PK\x01\x02")
    while raw[entry + 46: entry + 46 + 11] != b"config.json":
        entry = raw.index(b"PK\x01\x02", entry + 4)
    raw[entry + 24: entry + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(LoadError, match="config.json is damaged|config.json holds"):
        keras.models.load_model(path)


def test_rejects_decompression_bomb(tmp_path, monkeypatch):
    # Keras: saving/saving_lib_test.py::SafeZipReadTest::test_load_model_rejects_bomb_config
    path = tmp_path / "bomb.keras"
    payload = b'{"x":"' + b" " * 200_000 + b'"}'
    _zip(path, {"metadata.json": b'{"keras_version":"3"}', "config.json": payload},
         zipfile.ZIP_DEFLATED)
    assert os.path.getsize(path) < 1 << 16  # tiny file on disk
    monkeypatch.setattr(keras_archive, "BOMB_FLOOR_BYTES", 64)
    monkeypatch.setattr(keras_archive, "MAX_EXPANSION", 10)
    with pytest.raises(LoadError, match="decompression bomb"):
        keras.models.load_model(path)


def test_load_model_rejects_extraction_bomb(tmp_path, monkeypatch):
    # Keras: saving/saving_lib_test.py::SafeZipReadTest::test_load_model_rejects_extraction_bomb
    members = _members("sequential_dense")
    path = _zip(tmp_path / "evil.keras", members)
    with zipfile.ZipFile(path, "a") as archive:
        info = zipfile.ZipInfo("assets/bomb.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, b"\x00" * 200_000)  # a 4th member, a deflated bomb
    monkeypatch.setattr(keras_archive, "BOMB_FLOOR_BYTES", 64)
    with pytest.raises(LoadError, match="decompression bomb"):
        keras.models.load_model(path)


def test_allows_incompressible_member(tmp_path, monkeypatch):
    # Keras: saving/saving_lib_test.py::SafeZipReadTest::test_allows_incompressible_member
    monkeypatch.setattr(keras_archive, "BOMB_FLOOR_BYTES", 64)
    model = keras.models.load_model(_zip(tmp_path / "stored.keras", _members("layer_norm")))
    assert len(model.weights) == 6


def test_a_weights_file_of_tapeflows_old_class_paths_still_loads(tmp_path):
    """tapeflow wrote Conv2D's group as ``conv2_d`` before it spelled class names as Keras's
    ``to_snake_case`` does (``conv2d``, which Keras 3's files hold)."""
    def build():
        return keras.Sequential([keras.Input((5, 5, 1)), keras.layers.Conv2D(2, 3),
                                 keras.layers.Flatten(), keras.layers.Dense(1)])
    model, path = build(), tmp_path / "w.weights.h5"
    model.save_weights(path)
    with h5py.File(path, "a") as f:
        assert "layers/conv2d/vars/0" in f
        f.move("layers/conv2d", "layers/conv2_d")
    twin = build()
    twin.load_weights(path)
    for w, v in zip(twin.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(w, v)
