"""``save_weights`` writes Keras 3's ``.weights.h5`` layout and ``load_weights`` reads it by the
position of each layer and variable, so a freshly built twin (whose layers the counters named
``dense_7``) loads it, in this process or another.

Ported from Keras 3 (keras-team/keras), with their values:
``keras/src/saving/saving_lib_test.py``: ``test_save_load_weights_only``,
``test_load_weights_only_with_keras_file``, ``test_partial_load``,
``test_save_weights_only_with_unbuilt_model``, ``test_load_weights_only_with_unbuilt_model``;
``keras/src/saving/saving_api_test.py``: ``test_load_weights`` (float32/float64 and the
``keras`` / ``weights.h5`` formats), ``test_load_weights_invalid_kwargs``; the layout is
``saving_lib.py``'s ``_save_state`` / ``_save_container_state`` / ``H5IOStore``.
"""
import h5py
import numpy as np
import pytest

import tapeflow as tf

from .helpers import run_fresh

keras = tf.keras
Dense = keras.layers.Dense
X = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)


def sequential():
    return keras.Sequential([keras.Input(shape=(4,)), Dense(3, activation="tanh"),
                             keras.layers.BatchNormalization(), Dense(2)])


def functional():
    # saving_lib_test.py::_get_basic_functional_model
    inputs = keras.Input(shape=(4,), batch_size=2)
    x = Dense(1, name="first_dense")(inputs)
    outputs = Dense(1, name="second_dense")(x)
    return keras.Model(inputs, outputs)


class Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.encoder = Dense(3, activation="relu")
        self.blocks = [Dense(3), Dense(2)]

    def call(self, inputs):
        x = self.encoder(inputs)
        for block in self.blocks:
            x = block(x)
        return x


def subclassed():
    model = Subclassed()
    model(X[:1])
    return model


def layout(path):
    """``{path: shape}`` of every dataset, and ``{path: name attribute}`` of every vars group."""
    datasets, groups = {}, {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            datasets[name] = obj.shape
        elif name.split("/")[-1] == "vars":
            value = obj.attrs.get("name")  # fixed-length bytes (tapeflow writes no heap strings)
            groups[name] = value.decode() if isinstance(value, bytes) else value
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return datasets, groups


@pytest.mark.parametrize("make", [sequential, functional, subclassed])
def test_weights_load_into_a_fresh_twin_bitwise(make, tmp_path):
    # saving_lib_test.py::test_save_load_weights_only (assertAllClose there; bitwise here)
    tf.random.set_seed(1)
    model = make()
    expected = model.predict(X, verbose=0)
    path = tmp_path / "mymodel.weights.h5"
    model.save_weights(path)
    tf.random.set_seed(2)
    twin = make()  # other initial values (and, unless the user named them, layer names)
    assert not np.array_equal(twin.predict(X, verbose=0), expected)
    twin.load_weights(path)
    np.testing.assert_array_equal(twin.predict(X, verbose=0), expected)


def test_sequential_layout_is_keras_3s(tmp_path):
    model = sequential()
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.fit(X, X[:, :2], verbose=0)
    model.save_weights(tmp_path / "m.weights.h5")
    datasets, groups = layout(tmp_path / "m.weights.h5")
    layers = {"layers/dense/vars/0": (4, 3), "layers/dense/vars/1": (3,),
              "layers/batch_normalization/vars/0": (3,), "layers/batch_normalization/vars/1": (3,),
              "layers/batch_normalization/vars/2": (3,), "layers/batch_normalization/vars/3": (3,),
              "layers/dense_1/vars/0": (3, 2), "layers/dense_1/vars/1": (2,)}
    # iteration, learning_rate, then each trainable variable's momentum and velocity
    optimizer = {"optimizer/vars/0": (), "optimizer/vars/1": ()}
    for i, shape in enumerate([(4, 3), (3,), (3,), (3,), (3, 2), (2,)]):
        optimizer[f"optimizer/vars/{2 + 2 * i}"] = optimizer[f"optimizer/vars/{3 + 2 * i}"] = shape
    assert datasets == {**layers, **optimizer}
    names = [layer.name for layer in model.layers]
    assert groups == {"vars": model.name, "layers/dense/vars": names[0],
                      "layers/batch_normalization/vars": names[1],
                      "layers/dense_1/vars": names[2], "optimizer/vars": "adam"}
    with h5py.File(tmp_path / "m.weights.h5", "r") as f:
        moving_variance = model.layers[1].moving_variance.numpy()
        np.testing.assert_array_equal(f["layers/batch_normalization/vars/3"][()], moving_variance)


def test_functional_and_subclassed_layouts(tmp_path):
    functional().save_weights(tmp_path / "f.weights.h5")
    datasets, groups = layout(tmp_path / "f.weights.h5")
    # the InputLayer is a layer of a functional model: an empty vars group, as in Keras 3
    assert sorted(groups) == ["layers/dense/vars", "layers/dense_1/vars",
                              "layers/input_layer/vars", "vars"]
    assert datasets == {"layers/dense/vars/0": (4, 1), "layers/dense/vars/1": (1,),
                        "layers/dense_1/vars/0": (1, 1), "layers/dense_1/vars/1": (1,)}
    subclassed().save_weights(tmp_path / "s.weights.h5")
    datasets, _ = layout(tmp_path / "s.weights.h5")
    # attributes by name; a list attribute is a container named by class (_save_container_state)
    assert datasets == {"blocks/dense/vars/0": (3, 3), "blocks/dense/vars/1": (3,),
                        "blocks/dense_1/vars/0": (3, 2), "blocks/dense_1/vars/1": (2,),
                        "encoder/vars/0": (4, 3), "encoder/vars/1": (3,)}


def test_model_checkpoint_weights_only_writes_the_layout_and_loads_into_a_twin(tmp_path):
    model = sequential()
    model.compile("sgd", "mse")
    path = tmp_path / "ckpt.weights.h5"
    model.fit(X, X[:, :2], verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(str(path), save_weights_only=True)])
    assert "layers/dense_1/vars/1" in layout(path)[0]
    twin = sequential()
    twin.compile("sgd", "mse")
    twin.load_weights(path)
    np.testing.assert_array_equal(twin.predict(X, verbose=0), model.predict(X, verbose=0))
    assert int(twin.optimizer.iterations) == 1


def test_load_weights_only_with_keras_file(tmp_path):
    # saving_lib_test.py::test_load_weights_only_with_keras_file
    path = tmp_path / "mymodel.keras"
    model = functional()
    ref_output = model.predict(X, verbose=0)
    model.save(path)
    model = functional()
    model.load_weights(path)
    np.testing.assert_allclose(model.predict(X, verbose=0), ref_output, atol=1e-6)


@pytest.mark.parametrize("suffix", ["keras", "weights.h5"])
def test_partial_load(suffix, tmp_path):
    # saving_lib_test.py::test_partial_load (a .keras file there; a .weights.h5 file too here)
    path = str(tmp_path / f"mymodel.{suffix}")
    original = keras.Sequential([keras.Input(shape=(3,), batch_size=2), Dense(4), Dense(5)])
    original.save(path) if suffix == "keras" else original.save_weights(path)

    new_model = keras.Sequential([keras.Input(shape=(3,), batch_size=2), Dense(4), Dense(6)])
    new_layer_kernel_value = new_model.layers[1].kernel.numpy()
    first_before = new_model.layers[0].kernel.numpy()
    with pytest.raises(ValueError, match="must match"):
        new_model.load_weights(path)
    np.testing.assert_array_equal(new_model.layers[0].kernel.numpy(), first_before)  # untouched
    with pytest.warns(UserWarning, match="skip_mismatch"):
        new_model.load_weights(path, skip_mismatch=True)
    for ref_w, w in zip(original.layers[0].get_weights(), new_model.layers[0].get_weights()):
        np.testing.assert_array_equal(w, ref_w)
    np.testing.assert_array_equal(new_model.layers[1].kernel.numpy(), new_layer_kernel_value)

    new_model = keras.Sequential([keras.Input(shape=(3,), batch_size=2), Dense(4), Dense(5),
                                  Dense(5)])
    new_layer_kernel_value = new_model.layers[2].kernel.numpy()
    with pytest.raises(ValueError, match="received 0 variables"):
        new_model.load_weights(path)
    with pytest.warns(UserWarning, match="skip_mismatch"):
        new_model.load_weights(path, skip_mismatch=True)
    for index in (0, 1):
        for ref_w, w in zip(original.layers[index].get_weights(),
                            new_model.layers[index].get_weights()):
            np.testing.assert_array_equal(w, ref_w)
    np.testing.assert_array_equal(new_model.layers[2].kernel.numpy(), new_layer_kernel_value)


def test_first_mismatch_is_named_and_nothing_is_assigned(tmp_path):
    path = tmp_path / "w.weights.h5"
    model = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    model.compile(keras.optimizers.Adam(), "mse")
    model.fit(X, X[:, :2], verbose=0)
    model.save_weights(path)
    other = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(5)])
    other.compile(keras.optimizers.Adam(), "mse")
    before = other.get_weights()
    with pytest.raises(ValueError) as excinfo:
        other.load_weights(path)
    message = str(excinfo.value)
    assert "layers/dense_1/vars/0" in message and "(3, 5)" in message and "(3, 2)" in message
    for w, b in zip(other.get_weights(), before):
        np.testing.assert_array_equal(w, b)
    assert int(other.optimizer.iterations) == 0

    # a layer in the file that the model lacks is a mismatch too (skip_mismatch passes it by)
    shorter = keras.Sequential([keras.Input(shape=(4,)), Dense(3)])
    with pytest.raises(ValueError, match="the file's layers/dense_1/vars is not a layer"):
        shorter.load_weights(path)


@pytest.mark.parametrize("suffix", ["keras", "weights.h5"])
@pytest.mark.parametrize("source_dtype,dest_dtype", [("float64", "float32"),
                                                     ("float32", "float64")])
def test_load_weights_across_dtypes(suffix, source_dtype, dest_dtype, tmp_path):
    # saving_api_test.py::test_load_weights (the float32/float64 cases)
    def get_model(dtype):
        return keras.Sequential([Dense(5, input_shape=(3,), dtype=dtype), keras.layers.Softmax()])
    src_model = get_model(source_dtype)
    path = str(tmp_path / f"test_weights.{suffix}")
    src_model.save(path) if suffix == "keras" else src_model.save_weights(path)
    dest_model = get_model(dest_dtype)
    dest_model.load_weights(path)
    for orig, loaded in zip(src_model.get_weights(), dest_model.get_weights()):
        assert loaded.dtype == np.dtype(dest_dtype)
        np.testing.assert_allclose(orig.astype("float32"), loaded.astype("float32"),
                                   atol=1e-3, rtol=1e-2)


def test_load_weights_invalid_kwargs(tmp_path):
    # saving_api_test.py::test_load_weights_invalid_kwargs (objects_to_skip is not supported)
    def get_model():
        return keras.Sequential([Dense(5, input_shape=(3,)), keras.layers.Softmax()])
    src_model = get_model()
    keras_path, weights_path = str(tmp_path / "w.keras"), str(tmp_path / "w.weights.h5")
    src_model.save(keras_path)
    src_model.save_weights(weights_path)
    dest_model = get_model()
    for path in (keras_path, weights_path):
        with pytest.raises(ValueError, match=r"only supports loading legacy '.h5' or '.hdf5' "
                                             r"files"):
            dest_model.load_weights(path, by_name=True)
        with pytest.raises(ValueError, match="Invalid keyword arguments"):
            dest_model.load_weights(path, bad_kwarg=None)


def test_unbuilt_models(tmp_path):
    # saving_lib_test.py::test_save_weights_only_with_unbuilt_model and
    # ::test_load_weights_only_with_unbuilt_model (tapeflow's message)
    path = tmp_path / "mymodel.weights.h5"
    with pytest.raises(ValueError, match="no weights yet; build it first"):
        Subclassed().save_weights(path)
    subclassed().save_weights(path)
    with pytest.raises(ValueError, match="no weights yet; build it first"):
        Subclassed().load_weights(path)


def test_a_file_in_the_old_layout_still_loads(tmp_path):
    # tapeflow's earlier layout, written by hand: weights/<structure key>, optimizer/<state key>
    model = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    model.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
    model.fit(X, X[:, :2], verbose=0)
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as f:
        weights = f.create_group("weights")
        for key, v in zip(["sequential/dense/kernel", "sequential/dense/bias",
                           "sequential/dense_1/kernel", "sequential/dense_1/bias"], model.weights):
            weights.create_dataset(key, data=v.numpy()).attrs["variable_path"] = v.path
        optimizer = f.create_group("optimizer")
        optimizer.attrs["class_name"] = "SGD"
        for key, value in model.optimizer.get_state().items():
            optimizer.create_dataset(key, data=value)
    twin = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    twin.compile(keras.optimizers.SGD(0.1, momentum=0.9), "mse")
    twin.load_weights(path)
    np.testing.assert_array_equal(twin.predict(X, verbose=0), model.predict(X, verbose=0))
    assert int(twin.optimizer.iterations) == 1
    np.testing.assert_array_equal(
        twin.optimizer.get_slot(twin.weights[0], "momentum").numpy(),
        model.optimizer.get_slot(model.weights[0], "momentum").numpy())


def _tamper(path, how, tmp_path):
    with h5py.File(path, "a") as f:
        group = f["layers/dense/vars"]
        value = group["0"][()]
        del group["0"]
        if how == "soft link":
            f.create_dataset("elsewhere", data=value)
            group["0"] = h5py.SoftLink("/elsewhere")
        elif how == "external link":
            with h5py.File(tmp_path / "other.h5", "w") as other:
                other.create_dataset("x", data=value)
            group["0"] = h5py.ExternalLink(str(tmp_path / "other.h5"), "/x")
        elif how == "external storage":
            value.tofile(tmp_path / "raw.bin")
            group.create_dataset("0", shape=value.shape, dtype=value.dtype,
                                 external=[(str(tmp_path / "raw.bin"), 0, value.nbytes)])
        elif how == "virtual dataset":
            f.create_dataset("source", data=value)
            layout_ = h5py.VirtualLayout(shape=value.shape, dtype=value.dtype)
            layout_[...] = h5py.VirtualSource(f["source"])
            group.create_virtual_dataset("0", layout_)
        elif how == "wrong checksum":  # the checksum a file carries is checked
            group.create_dataset("0", data=value + 1)
            group["0"].attrs["checksum"] = np.bytes_("0" * 64)
        elif how == "string dtype":
            group.create_dataset("0", data=np.array([b"abc"] * value.shape[0]))
        elif how == "compressed":
            group.create_dataset("0", data=value, chunks=True, compression="gzip")


@pytest.mark.parametrize("how, message", [
    ("soft link", "link to elsewhere"), ("external link", "link to elsewhere"),
    ("external storage", "outside the file"), ("virtual dataset", "outside the file"),
    ("wrong checksum", "checksum"), ("string dtype", "dtype"), ("compressed", "compressed")])
def test_hardening_checks_refuse_a_tampered_file(how, message, tmp_path):
    path = tmp_path / "w.weights.h5"
    model = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    model.save_weights(path)
    _tamper(path, how, tmp_path)
    twin = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    before = twin.get_weights()
    with pytest.raises(ValueError, match=message):
        twin.load_weights(path)
    for w, b in zip(twin.get_weights(), before):
        np.testing.assert_array_equal(w, b)


@pytest.mark.parametrize("how", ["soft link", "external link"])
def test_a_layer_group_linked_to_elsewhere_is_refused_before_it_is_opened(how, tmp_path):
    """The links checked by the one walk of the file's groups: a layer's whole group (not one
    dataset) replaced by a link to a copy elsewhere."""
    path = tmp_path / "w.weights.h5"
    model = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    model.save_weights(path)
    with h5py.File(path, "a") as f:
        if how == "soft link":
            f.copy("layers/dense", "elsewhere")
            del f["layers/dense"]
            f["layers/dense"] = h5py.SoftLink("/elsewhere")
        else:
            with h5py.File(tmp_path / "other.h5", "w") as other:
                f.copy("layers/dense", other, "dense")
            del f["layers/dense"]
            f["layers/dense"] = h5py.ExternalLink(str(tmp_path / "other.h5"), "/dense")
    twin = keras.Sequential([keras.Input(shape=(4,)), Dense(3), Dense(2)])
    before = twin.get_weights()
    with pytest.raises(ValueError, match=r"w\.weights\.h5: layers/dense is a link to elsewhere"):
        twin.load_weights(path)
    for w, b in zip(twin.get_weights(), before):
        np.testing.assert_array_equal(w, b)


@pytest.mark.child_process
def test_a_new_process_loads_into_fresh_twins_bitwise(tmp_path):
    kinds = ["sequential", "functional", "subclassed"]
    np.save(tmp_path / "x.npy", X)
    for kind in kinds:
        model = globals()[kind]()
        np.save(tmp_path / f"{kind}.npy", model.predict(X, verbose=0))
        model.save_weights(tmp_path / f"{kind}.weights.h5")
    run_fresh(f"""
        import numpy as np
        import tapeflow as tf
        from tests.saving import test_weights_h5_layout as here
        here.sequential()  # the counters move on: the twins' layers are dense_2, ...
        x = np.load({str(tmp_path / "x.npy")!r})
        for kind in {kinds!r}:
            twin = getattr(here, kind)()
            twin.load_weights({str(tmp_path)!r} + f"/{{kind}}.weights.h5")
            expected = np.load({str(tmp_path)!r} + f"/{{kind}}.npy")
            assert np.array_equal(twin.predict(x, verbose=0), expected), kind
    """, cwd=".")
