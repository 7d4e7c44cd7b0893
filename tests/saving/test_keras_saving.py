"""model.save / tf.keras.models.load_model: rebuilt from the config when the code is there,
replayed from the saved graph (custom gradients included, to second order) when it is not."""
import hashlib
import json
import warnings

import h5py
import numpy as np
import pytest

import tapeflow as tf

from .helpers import run_fresh

# A user activation with a custom gradient (swish, with 1.5 times its derivative, so that the
# custom rule is told apart from the true one; written in tapeflow ops, so it is
# differentiable again), in a module that only the saving process can import.
USER_ACTIVATION = '''
import tapeflow as tf

@tf.custom_gradient
def my_swish(x):
    s = tf.sigmoid(x)
    def grad(dy):
        return dy * 1.5 * (s + x * s * (1.0 - s))
    return x * s, grad
'''

# The numbers both processes compute: predictions, input gradients, second derivatives.
MEASURE = '''
import numpy as np
import tapeflow as tf

def measure(model, x):
    x = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = model(x)
            total = tf.reduce_sum(y)
        dx = inner.gradient(total, x)
        s = tf.reduce_sum(dx * dx)
    d2 = outer.gradient(s, x)
    return {"y": np.asarray(model.predict(x.numpy(), verbose=0) if hasattr(model, "compile")
                            else model.predict(x.numpy())),
            "call": y.numpy(), "dx": dx.numpy(), "d2": d2.numpy()}
'''

SAVE = '''
import sys; sys.path.insert(0, "code")
import numpy as np, tapeflow as tf
import user_activation
exec(open("measure.py").read())
tf.keras.utils.set_random_seed(3)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(5, activation=user_activation.my_swish, input_shape=(3,)),
    tf.keras.layers.Dense(2, activation="tanh"),
])
model.compile(optimizer="adam", loss="mse")
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
model.fit(x, np.ones((4, 2), np.float32), epochs=2, verbose=0)
model.save("saved")
np.savez("expected.npz", **measure(model, x))
'''

LOAD = '''
import numpy as np, tapeflow as tf
exec(open("measure.py").read())
try:
    import user_activation
    raise SystemExit("user_activation must not be importable here")
except ImportError:
    pass
model = tf.keras.models.load_model("saved")
print(type(model).__name__)
x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
got = measure(model, x)
expected = np.load("expected.npz")
for k in ("y", "call", "dx", "d2"):
    np.testing.assert_allclose(got[k], expected[k], rtol=1e-6, atol=1e-7, err_msg=k)
    print(k, "ok")
# more rows than were traced: the batch dimension stays free
print(model(np.zeros((9, 3), np.float32)).shape)
'''


@pytest.mark.child_process
def test_a_custom_gradient_activation_loads_without_its_code(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "user_activation.py").write_text(USER_ACTIVATION)
    (tmp_path / "measure.py").write_text(MEASURE)
    run_fresh(SAVE, tmp_path)
    done = run_fresh(LOAD, tmp_path)
    assert done.stdout.split() == ["SavedGraphModel", "y", "ok", "call", "ok", "dx", "ok",
                                   "d2", "ok", "(9,", "2)"]
    d2 = np.load(tmp_path / "expected.npz")["d2"]
    assert np.abs(d2).max() > 1e-3  # the second derivative is not trivially zero


def _model():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
    model.fit(x, x[:, :1] * 2.0, epochs=3, verbose=0)
    return model, x


@pytest.mark.parametrize("name", ["saved", "model.keras"])
def test_a_known_model_is_rebuilt_with_weights_and_optimizer_state(tmp_path, name):
    model, x = _model()
    model.save(tmp_path / name)
    loaded = tf.keras.models.load_model(tmp_path / name)
    assert type(loaded) is tf.keras.Sequential
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.get_config()["layers"] == model.get_config()["layers"]
    assert type(loaded.optimizer) is type(model.optimizer)
    saved_state, loaded_state = model.optimizer.get_state(), loaded.optimizer.get_state()
    assert list(saved_state) == list(loaded_state)
    for k in saved_state:
        np.testing.assert_array_equal(saved_state[k], loaded_state[k])
    # training goes on from the same state: one more step gives the same weights
    y = x[:, :1] * 2.0
    model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    loaded.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0)
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_the_saved_graph_keeps_a_free_batch_dimension(tmp_path):
    model, x = _model()
    model.save(tmp_path / "saved")
    document = json.loads((tmp_path / "saved" / "graph.json").read_text())
    assert document["input_shape"] == [None, 3]
    (call,) = document["functions"]["__call__"]
    assert call["input_specs"] == [[[None, 3], "float32"]]


def test_an_unknown_class_falls_back_to_the_graph(tmp_path):
    model, x = _model()
    model.save(tmp_path / "saved")
    path = tmp_path / "saved" / "graph.json"
    document = json.loads(path.read_text())
    # the name a load looks the class up by (Keras's registered_name), and the class's own
    document["model_config"]["class_name"] = document["model_config"]["registered_name"] = \
        "os.system"
    data = json.dumps(document).encode()
    path.write_bytes(data)
    with h5py.File(tmp_path / "saved" / "arrays.h5", "r+") as f:  # re-signed, as an editor would
        f.attrs["json_sha256"] = hashlib.sha256(data).hexdigest()
    loaded = tf.keras.models.load_model(tmp_path / "saved")
    assert type(loaded).__name__ == "SavedGraphModel"
    assert "os.system" in loaded.load_reason
    # Row by row and batched, float32 products may differ in their last bits.
    np.testing.assert_allclose(loaded.predict(x), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert [v.name for v in loaded.trainable_variables] == \
        ["sequential/dense/kernel:0", "sequential/dense/bias:0",
         "sequential/dense_1/kernel:0", "sequential/dense_1/bias:0"]


def test_the_graph_fallback_takes_tensors_and_device_arrays_where_they_are(tmp_path):
    # data on the current device (a GPU's under --device strict), as a user's CuPy arrays
    model, x = _model()
    model.save(tmp_path / "saved")
    loaded = _fallback(tmp_path)
    assert type(loaded).__name__ == "SavedGraphModel"
    t = tf.constant(x)
    expected = model.predict(x, verbose=0)
    for given in (t, t._value):
        assert loaded(given).device == t.device
        np.testing.assert_allclose(loaded(given).numpy(), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(loaded.predict(given, batch_size=3), expected, rtol=1e-5,
                                   atol=1e-6)


def test_a_model_not_yet_built_is_saved_as_its_config_and_loads_unbuilt(tmp_path):
    # Keras: saving_lib_test.py::test_saving_preserve_unbuilt_state (no graph: nothing to trace)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.save(tmp_path / "saved")
    loaded = tf.keras.models.load_model(tmp_path / "saved")
    assert type(loaded) is tf.keras.Sequential and not loaded.built and not model.built
    assert loaded.compiled == model.compiled


def test_loading_a_saved_model_as_keras_says_which_loader(tmp_path):
    tf.saved_model.save(tf.Module(), tmp_path / "m")
    with pytest.raises(tf.saved_model.LoadError, match="not a Keras model"):
        tf.keras.models.load_model(tmp_path / "m")


class _ReadsTheBatchSize(tf.keras.layers.Layer):
    def call(self, inputs):
        return tf.reshape(inputs, (inputs.shape[0], -1))


def _fallback(tmp_path):
    """The saved model loaded as if its config could not be rebuilt here."""
    path = tmp_path / "saved" / "graph.json"
    document = json.loads(path.read_text())
    document["model_config"] = None
    data = json.dumps(document).encode()
    path.write_bytes(data)
    with h5py.File(tmp_path / "saved" / "arrays.h5", "r+") as f:
        f.attrs["json_sha256"] = hashlib.sha256(data).hexdigest()
    return tf.keras.models.load_model(tmp_path / "saved")


def test_flatten_saves_a_graph_for_any_batch(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(2, 2)),
                                 tf.keras.layers.Dense(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.save(tmp_path / "saved")
    loaded = _fallback(tmp_path)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 2, 2)
    assert type(loaded).__name__ == "SavedGraphModel"
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x, verbose=0))


def test_a_graph_traced_for_one_row_runs_row_by_row_in_the_fallback(tmp_path):
    """A layer that reads the batch size while tracing: the graph takes one row at a time."""
    model = tf.keras.Sequential([tf.keras.Input(shape=(2, 2)), _ReadsTheBatchSize(),
                                 tf.keras.layers.Dense(3)])
    with pytest.warns(UserWarning, match="depends on the size"):
        model.save(tmp_path / "saved")
    loaded = _fallback(tmp_path)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 2, 2)
    assert type(loaded).__name__ == "SavedGraphModel"
    # Row by row and batched, float32 products may differ in their last bits.
    np.testing.assert_allclose(loaded.predict(x), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
