"""SavedModel signatures (keyword arguments in, a dict out, ``serving_default`` made for a
root's one input_signature function), bug 5 of issue 18, saves of the earlier version, and a
load in a fresh process.

Ported from TensorFlow's tensorflow/python/saved_model/save_test.py (``_import_and_infer``
calls a loaded signature with keyword arguments, as there) with the values it asserts.
"""
import importlib.util
import json
import pathlib

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving.format import LoadError

from .helpers import run_fresh

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _import_and_infer(save_dir, inputs, signature_key="serving_default"):
    loaded = tf.saved_model.load(save_dir)
    out = loaded.signatures[signature_key](**{k: tf.constant(v) for k, v in inputs.items()})
    return {k: v.numpy() for k, v in out.items()}


def test_method_save_signature(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_method_save_signature
    root = tf.Module()
    root.f = tf.function(lambda x: 2.0 * x, input_signature=[tf.TensorSpec(None, tf.float32)])
    root.f(tf.constant(1.0))
    tf.saved_model.save(root, tmp_path / "m", root.f)
    assert _import_and_infer(tmp_path / "m", {"x": 1.0}) == {"output_0": 2.0}


def test_method_save_concrete(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_method_save_concrete
    root = tf.Module()
    root.f = tf.function(lambda z: {"out": 2.0 * z})
    root.f(tf.constant(1.0))
    tf.saved_model.save(root, tmp_path / "m", {
        "non_default_key": root.f.get_concrete_function(tf.TensorSpec(None, tf.float32))})
    assert _import_and_infer(tmp_path / "m", {"z": 1.0}, "non_default_key") == {"out": 2.0}


def test_variable(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_variable
    root = tf.Module()
    root.v1 = tf.Variable(3.0)
    root.v2 = tf.Variable(2.0)
    root.f = tf.function(lambda x: root.v1 * root.v2 * x)
    root.f(tf.constant(1.0))
    to_save = root.f.get_concrete_function(tf.constant(1.0))
    tf.saved_model.save(root, tmp_path / "m", to_save)
    assert _import_and_infer(tmp_path / "m", {"x": 2.0}) == {"output_0": 12.0}


def test_single_function_default_signature(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_single_function_default_signature
    model = tf.Module()
    model.f = tf.function(lambda: tf.constant(3.0), input_signature=())
    model.f()
    tf.saved_model.save(model, tmp_path / "m")
    assert _import_and_infer(tmp_path / "m", {}) == {"output_0": 3.0}


def test_single_function_no_signature(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_single_function_no_signature
    model = tf.Module()
    model.f = tf.function(lambda: tf.constant(3.0))
    with pytest.warns(UserWarning, match="Found untraced functions such as f"):
        tf.saved_model.save(model, tmp_path / "m")
    assert tf.saved_model.load(tmp_path / "m").signatures == {}


def test_docstring(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_docstring (a method's default signature)
    class Adder(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
        def add(self, x):
            return x + x + 1.0

    to_save = Adder()
    to_save.add(tf.constant(1.0))
    tf.saved_model.save(to_save, tmp_path / "m")
    assert _import_and_infer(tmp_path / "m", {"x": 3.0}) == {"output_0": 7.0}


def test_find_default_save_function(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_find_default_save_function
    class ObjWithDefaultSignature(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
        def _default_save_signature(self, x):
            return x + x + 1

        @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
        def other(self, x):
            return x

    tf.saved_model.save(ObjWithDefaultSignature(), tmp_path / "m")
    assert _import_and_infer(tmp_path / "m", {"x": 3.0}) == {"output_0": 7.0}


def test_two_input_signature_functions_make_no_default(tmp_path):
    # TF's find_function_to_export: only a root with exactly one such function gets one
    class Two(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([])])
        def a(self, x):
            return x

        @tf.function(input_signature=[tf.TensorSpec([])])
        def b(self, x):
            return x

    tf.saved_model.save(Two(), tmp_path / "m")
    assert tf.saved_model.load(tmp_path / "m").signatures == {}


@pytest.mark.parametrize("outputs", ["tuple", "dict"])
def test_nested_outputs(tmp_path, outputs):
    # TF: python/saved_model/save_test.py::SaveTest::test_nested_outputs / test_nested_dict_outputs
    root = tf.Module()
    if outputs == "tuple":
        root.f = tf.function(lambda x: (2.0 * x, (3.0 * x, 4.0 * x)))
    else:
        root.f = tf.function(lambda x: {"a": 2.0 * x, "b": (3.0 * x, 4.0 * x)})
    root.f(tf.constant(1.0))
    to_save = root.f.get_concrete_function(tf.constant(1.0))
    with pytest.raises(ValueError, match="non-Tensor value"):
        tf.saved_model.save(root, tmp_path / "m", to_save)


def test_non_concrete_error(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_non_concrete_error
    root = tf.Module()
    root.f = tf.function(lambda x: 2.0 * x)
    root.f(tf.constant(1.0))
    with pytest.raises(ValueError, match="Expected a TensorFlow function"):
        tf.saved_model.save(root, tmp_path / "m", root.f)


def test_signature_attribute_reserved(tmp_path):
    # TF: python/saved_model/save_test.py::SaveTest::test_signature_attribute_reserved
    root = tf.Module()
    root.signatures = tf.Variable(1.0)
    with pytest.raises(ValueError, match="del obj.signatures"):
        tf.saved_model.save(root, tmp_path / "m")
    del root.signatures
    tf.saved_model.save(root, tmp_path / "m")


def test_bug_5_attributes_keyword_signatures_dict_outputs_and_serving_default(tmp_path):
    """Issue 18, bug 5: a loaded SavedModel had none of the object's attributes, its
    signatures refused keywords and returned a tuple, and no serving_default was made."""
    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable([1.0, 2.0, 3.0])
            self.vs = [tf.Variable(1.0), tf.Variable(2.0)]
            self.fns = {"a": tf.function(lambda x: x + 1.0, input_signature=[tf.TensorSpec([])])}

        @tf.function(input_signature=[tf.TensorSpec([None, 3])])
        def __call__(self, x):
            return tf.reduce_sum(x * self.v, axis=-1)

    m = Model()
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.v.numpy(), [1.0, 2.0, 3.0])
    assert [float(v) for v in loaded.vs] == [1.0, 2.0]
    assert float(loaded.fns["a"](2.0)) == 3.0
    serve = loaded.signatures["serving_default"]
    for n in (1, 5):  # TensorSpec([None, 3]): any batch size
        out = serve(x=np.ones((n, 3), np.float32))
        assert list(out) == ["output_0"]
        np.testing.assert_array_equal(out["output_0"].numpy(), [6.0] * n)
    with pytest.raises(TypeError, match="keyword arguments only"):
        serve(np.ones((1, 3), np.float32))
    with pytest.raises(TypeError, match="missing"):
        serve(y=np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="argument 'x'"):
        serve(x=np.ones((1, 4), np.float32))
    assert serve.structured_input_signature[1]["x"].shape == (None, 3)


def test_signature_input_names_come_from_specs_and_nested_arguments(tmp_path):
    root = tf.Module()
    root.f = tf.function(lambda pair, scale: {"y": pair[0] * scale + pair[1]},
                         input_signature=[[tf.TensorSpec([2]), tf.TensorSpec([2])],
                                          tf.TensorSpec([], name="k")])
    tf.saved_model.save(root, tmp_path / "m")
    out = tf.saved_model.load(tmp_path / "m").signatures["serving_default"](
        pair_0=[1.0, 2.0], pair_1=[10.0, 20.0], k=3.0)
    np.testing.assert_array_equal(out["y"].numpy(), [13.0, 26.0])


def test_a_save_of_the_first_version_still_loads():
    """Written by the format before the object graph (tests/saving/fixtures/saved_model_v1):
    its functions come back by attribute path, its signature as it was saved (positional)."""
    loaded = tf.saved_model.load(FIXTURES / "saved_model_v1")
    x = np.array([[1, 1, 1], [2, 0, 0]], np.float32)
    np.testing.assert_array_equal(loaded(x).numpy(), [1.5, 4.0])
    assert float(loaded.inner.double(3.0)) == 6.0
    np.testing.assert_array_equal(loaded.signatures["serving_default"](x).numpy(), [1.5, 4.0])
    assert [v.name for v in loaded.variables] == ["w:0", "k:0"]


def test_a_later_version_is_refused_naming_it(tmp_path):
    root = tf.Module()
    root.v = tf.Variable(1.0)
    tf.saved_model.save(root, tmp_path / "m")
    import hashlib

    import h5py
    doc = json.loads((tmp_path / "m" / "graph.json").read_text())
    doc["saved_model_version"] = 3
    data = json.dumps(doc).encode()
    (tmp_path / "m" / "graph.json").write_bytes(data)
    with h5py.File(tmp_path / "m" / "arrays.h5", "r+") as f:
        f.attrs["json_sha256"] = hashlib.sha256(data).hexdigest()
    with pytest.raises(LoadError, match="SavedModel of version 3; this tapeflow reads versions "
                                        "1 to 2"):
        tf.saved_model.load(tmp_path / "m")


@pytest.mark.child_process
def test_a_fresh_process_rebuilds_the_object_graph_without_the_users_code(tmp_path):
    (tmp_path / "user_model.py").write_text(
        "import tapeflow as tf\n"
        "class Block(tf.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.dense = tf.keras.layers.Dense(2, kernel_initializer='ones')\n"
        "        self.dense(tf.ones((1, 3)))\n"
        "        self.scales = {'a': tf.Variable(2.0)}\n"
        "    @tf.function\n"
        "    def f(self, x, double):\n"
        "        y = self.dense(x) * self.scales['a']\n"
        "        return y * 2.0 if double else y\n"
        "b = Block()\n"
        "b.f(tf.ones((1, 3)), True)\n"
        "b.f(tf.ones((1, 3)), False)\n")
    spec = importlib.util.spec_from_file_location("user_model", tmp_path / "user_model.py")
    user_model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user_model)  # saved here; only the load runs in a fresh process
    tf.saved_model.save(user_model.b, tmp_path / "block")
    (tmp_path / "user_model.py").unlink()
    done = run_fresh("""
        import tapeflow as tf
        loaded = tf.saved_model.load('block')
        x = tf.ones((1, 3))
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(loaded.f(x, True))
        g = tape.gradient(y, loaded.scales['a'])
        print(float(y), float(loaded.f(x, double=False)[0, 0]),
              loaded.dense.kernel.numpy().tolist(), float(g), type(loaded).__name__)
    """, tmp_path)
    assert done.stdout.split() == ["24.0", "6.0", "[[1.0,", "1.0],", "[1.0,", "1.0],",
                                   "[1.0,", "1.0]]", "12.0", "LoadedObject"]
