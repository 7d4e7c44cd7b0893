"""tf.saved_model round trips: variables restored, functions replaying what they computed,
None dimensions kept, gradients (to second order) through the reloaded graphs."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend

from .helpers import run_fresh

# Affine.untraced is never traced on purpose: its save warns that it is left out
pytestmark = pytest.mark.filterwarnings("ignore:Found untraced functions")


class Affine(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], name="w")
        self.b = tf.Variable([0.25, -0.5], name="b")
        self.calls = tf.Variable(0, name="calls", trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def __call__(self, x):
        return tf.sin(tf.matmul(x, self.w) + self.b) + 0.5

    @tf.function(input_signature=[tf.TensorSpec([None, 3])])
    def predict_and_count(self, x):
        self.calls.assign_add(1)
        return {"y": tf.matmul(x, self.w), "n": self.calls.value()}

    @tf.function
    def untraced(self, x):  # no input_signature and never called: nothing to save
        return x


def _x(n):
    return np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3)


def test_variables_come_back_as_new_variables_with_the_saved_values(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    assert [v.name for v in loaded.variables] == [v.name for v in m.variables] == \
        ["b:0", "calls:0", "w:0"]  # tf.Module's order: by attribute name
    for a, b in zip(loaded.variables, m.variables):
        assert a is not b
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.dtype == b.dtype and a.trainable == b.trainable
    assert [v.name for v in loaded.trainable_variables] == ["b:0", "w:0"]


def test_functions_replay_identically_for_any_batch_size(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    assert not hasattr(loaded, "untraced")
    for n in (1, 4, 7):
        np.testing.assert_array_equal(loaded.__call__(_x(n)).numpy(), m(_x(n)).numpy())
    (spec,), _ = loaded.__call__.get_concrete_function().structured_input_signature
    assert spec.shape == (None, 3)
    with pytest.raises(ValueError, match=r"saved for arguments.*\(None, 3\)"):
        loaded.__call__(np.ones((2, 4), np.float32))


def test_a_loaded_function_takes_device_arrays_where_they_are(tmp_path):
    # an array on the current device (a GPU's under --device strict), as a user's CuPy array
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    x = tf.constant(_x(4))
    out = loaded.__call__(x._value)
    assert out.device == x.device
    np.testing.assert_array_equal(out.numpy(), m(x).numpy())


def test_state_changes_act_on_the_loaded_variables_and_structures_come_back(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    out = loaded.predict_and_count(_x(2))
    assert sorted(out) == ["n", "y"]
    assert int(out["n"]) == 1 and int(loaded.predict_and_count(_x(1))["n"]) == 2
    assert int(m.calls.numpy()) == 0
    m.w.assign(tf.zeros((3, 2)))  # the original changes; the loaded copy does not
    (w,) = [v for v in loaded.variables if v.name == "w:0"]
    np.testing.assert_allclose(out["y"].numpy(), _x(2) @ w.numpy())


def test_gradients_and_second_derivatives_through_the_loaded_graph(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")

    def derivatives(f, variables):
        x = tf.constant(_x(3))
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(f(x) ** 2)
            dx, dw = inner.gradient(y, [x, [v for v in variables if v.name == "w:0"][0]])
            s = tf.reduce_sum(dx)
        return dx.numpy(), dw.numpy(), outer.gradient(s, x).numpy()

    for a, b in zip(derivatives(m, m.variables), derivatives(loaded.__call__, loaded.variables)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_concrete_functions_already_traced_are_saved(tmp_path):
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(3.0)

        @tf.function
        def f(self, x):
            return x * self.v

    m = M()
    m.f(tf.constant([1.0, 2.0]))
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.f(tf.constant([1.0, 2.0])).numpy(), [3.0, 6.0])


def test_one_hdf5_file_and_signatures(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "m.h5", signatures=m.__call__)
    loaded = tf.saved_model.load(tmp_path / "m.h5")
    np.testing.assert_array_equal(loaded.signatures["serving_default"](x=_x(2))["output_0"],
                                  m(_x(2)).numpy())


def test_a_gradient_that_could_not_be_traced_refuses_to_save_naming_function_and_error(tmp_path):
    @tf.custom_gradient
    def opaque(y):
        def backward(dy):
            return dy * float(dy.numpy())  # needs a value: cannot be traced
        return y, backward

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def g(self, x):
            return opaque(x)

    with pytest.raises(tf.saved_model.SaveError, match=r"function 'g'.*TraceError"):
        tf.saved_model.save(M(), tmp_path / "m")
    assert not (tmp_path / "m" / "graph.json").exists()
    tf.saved_model.save(M(), tmp_path / "m",
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
    assert float(tf.saved_model.load(tmp_path / "m").g(2.0)) == 2.0


def test_an_attribute_outside_the_schema_is_refused_naming_op_and_attribute(tmp_path):
    @tf.primitive("SavingTestOpaqueAttr")
    def with_callable(x, fn=None):
        return x

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2])])
        def f(self, x):
            return with_callable(x, fn=print) * 2.0

    with pytest.raises(tf.saved_model.SaveError,
                       match=r"attribute 'fn' of op SavingTestOpaqueAttr .*builtin_function"):
        tf.saved_model.save(M(), tmp_path / "m")


def test_attributes_of_every_schema_type_round_trip(tmp_path):
    @tf.primitive("SavingTestAllAttrs")
    def all_attrs(x, **attrs):
        return x

    attrs = {"i": 3, "f": 0.5, "nan": float("inf"), "b": True, "s": "text", "n": None,
             "l": [1, [2, 3]], "t": (1, (2.0,)), "sl": slice(1, None, 2), "e": Ellipsis,
             "dt": np.dtype("float16"), "sc": np.float32(1.5), "arr": np.arange(6).reshape(2, 3),
             "d": {"k": (1, "v")}}

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2])])
        def f(self, x):
            return all_attrs(x, **attrs) * 2.0

    tf.saved_model.save(M(), tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    (eqn,) = [e for e in loaded.f.get_concrete_function().graph.eqns
              if e.op.name == "SavingTestAllAttrs"]
    for k, v in attrs.items():
        got = eqn.attrs[k]
        if isinstance(v, np.ndarray):  # an array attr may load onto the current device
            np.testing.assert_array_equal(backend.to_host(got), v)
            assert got.dtype == v.dtype
        else:
            assert got == v and type(got) is type(v), k


@pytest.mark.child_process
def test_a_fresh_process_loads_a_module_it_cannot_import(tmp_path):
    (tmp_path / "user_code.py").write_text(
        "import tapeflow as tf\n"
        "class Scaler(tf.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.scale = tf.Variable([2.0, 3.0])\n"
        "    @tf.function(input_signature=[tf.TensorSpec([None, 2])])\n"
        "    def __call__(self, x):\n"
        "        return x * self.scale\n")
    run_fresh("""
        import sys; sys.path.insert(0, '.')
        import tapeflow as tf, user_code
        tf.saved_model.save(user_code.Scaler(), 'scaler')
    """, tmp_path)
    (tmp_path / "user_code.py").unlink()
    done = run_fresh("""
        import tapeflow as tf
        loaded = tf.saved_model.load('scaler')
        print(loaded.__call__([[1.0, 1.0], [2.0, 0.5]]).numpy().tolist(), loaded.variables[0].name)
    """, tmp_path)
    assert done.stdout.strip() == "[[2.0, 3.0], [4.0, 1.5]] Variable:0"


def test_functions_of_sub_modules_come_back_as_attributes(tmp_path):
    class Inner(tf.Module):
        def __init__(self):
            super().__init__()
            self.k = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([])])
        def double(self, x):
            return x * self.k

    class Outer(tf.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        @tf.function(input_signature=[tf.TensorSpec([])])
        def __call__(self, x):
            return self.inner.double(x) + 1.0

    tf.saved_model.save(Outer(), tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    assert float(loaded(3.0)) == 7.0 and float(loaded.inner.double(3.0)) == 6.0
    assert len(loaded.variables) == 1


def test_loading_runs_no_op_of_the_file_calling_does(tmp_path):
    marker = tmp_path / "ran"

    @tf.primitive("SavingTestMarksWhenRun")
    def marks(x):
        marker.touch()
        return x

    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def f(self, x):
            return x + 1.0

    tf.saved_model.save(M(), tmp_path / "m")
    import hashlib
    import json

    import h5py
    doc = json.loads((tmp_path / "m" / "graph.json").read_text())
    graph = doc["functions"]["f"][0]["graph"]
    # an equation on a constant, which constant folding would run at load time
    graph["types"] += [[100, [], "float32"], [101, [], "float32"]]
    with h5py.File(tmp_path / "m" / "arrays.h5", "r+") as h5:
        n = str(len(h5["arrays"]))
        h5["arrays"].create_dataset(n, data=np.float32(1.0))
        h5["arrays"][n].attrs["checksum"] = hashlib.sha256(np.float32(1.0).tobytes()).hexdigest()
        graph["consts"].append([100, {"$array": int(n)}])
        graph["eqns"].append({"op": "SavingTestMarksWhenRun", "inputs": [100], "outputs": [101],
                              "attrs": {}})
        graph["outputs"] = [101]
        data = json.dumps(doc).encode()
        h5.attrs["json_sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / "m" / "graph.json").write_bytes(data)
    loaded = tf.saved_model.load(tmp_path / "m")
    assert not marker.exists()
    assert float(loaded.f(5.0)) == 1.0 and marker.exists()


def test_control_flow_graphs_are_saved_and_differentiable_after_loading(tmp_path):
    class Flow(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(1.5)

        @tf.function(input_signature=[tf.TensorSpec([None])])
        def branchy(self, x):
            s = tf.reduce_sum(x)
            y = tf.cond(s > 0.0, lambda: x * self.scale, lambda: tf.sin(x))
            _, z = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * 1.1 + y),
                                 (tf.constant(0), y))
            return tf.map_fn(lambda r: r * r, z)

    m = Flow()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    ops = {e.op.name for e in loaded.branchy.get_concrete_function().graph.eqns}
    assert {"If", "While", "MapFn"} <= ops
    for x in ([0.5, -0.25, 1.0], [-1.0, -2.0]):
        x = tf.constant(x)
        np.testing.assert_allclose(loaded.branchy(x).numpy(), m.branchy(x).numpy(), rtol=1e-6)
        grads = []
        for f in (m.branchy, loaded.branchy):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(f(x))
            grads.append(tape.gradient(y, x).numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_a_graph_that_depends_on_a_free_size_is_saved_for_the_traced_size(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 3])])
        def flat(self, x):
            return tf.reshape(x, [x.shape[0] * 3])  # the size is read while tracing

    m = M()
    with pytest.warns(UserWarning, match="depends on the size"):
        tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.flat(np.ones((1, 3), np.float32)).numpy(), np.ones(3))
    with pytest.raises(ValueError, match=r"saved for arguments \(TensorSpec\(shape=\(1, 3\)"):
        loaded.flat(np.ones((2, 3), np.float32))


def test_a_model_saved_after_fit_leaves_its_compiled_steps_out(tmp_path):
    """``tf.saved_model.save(model)`` after ``fit``: the compiled train/test/predict steps (which
    read the metrics' Python functions) are not part of the SavedModel, as in Keras; the model's
    call and weights are."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 8)).astype(np.float32), rng.normal(size=(32, 1)).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert model.train_function is not None
    tf.saved_model.save(model, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    assert not hasattr(loaded, "train_function")
    np.testing.assert_array_equal(loaded.layers[0].kernel.numpy(),
                                  model.layers[0].kernel.numpy())
