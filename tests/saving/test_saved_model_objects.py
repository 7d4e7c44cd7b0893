"""The SavedModel object graph: attributes, containers, sub-modules and every traced graph of a
tf.function come back from ``tf.saved_model.load``, saved once or saved again after loading.

Ported from TensorFlow's tensorflow/python/saved_model/load_test.py (``cycle`` saves and loads
``cycles`` times, as there), with the values those tests assert.
"""
import numpy as np
import pytest

import tapeflow as tf


def cycle(obj, cycles, tmp_path, signatures=None):
    for i in range(cycles):
        path = tmp_path / f"cycle{i}"
        tf.saved_model.save(obj, path, signatures)
        obj = tf.saved_model.load(path)
        signatures = obj.signatures or None
    return obj


class Trackable(tf.Module):
    """TensorFlow's AutoTrackable: a Module with nothing of its own."""


CYCLES = pytest.mark.parametrize("cycles", [1, 2])


@CYCLES
def test_structure_import(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_structure_import
    root = Trackable()
    root.dep_one = Trackable()
    root.dep_two = Trackable()
    root.dep_two.dep = Trackable()
    root.dep_three = root.dep_two.dep
    imported = cycle(root, cycles, tmp_path)
    assert imported.dep_three is imported.dep_two.dep
    assert imported.dep_one is not imported.dep_two


@CYCLES
def test_variables(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_variables
    root = Trackable()
    root.v1 = tf.Variable(1.0, trainable=True)
    root.v2 = tf.Variable(2.0, trainable=False)
    imported = cycle(root, cycles, tmp_path)
    assert imported.v1.numpy() == 1.0 and imported.v1.trainable
    assert imported.v2.numpy() == 2.0 and not imported.v2.trainable


@CYCLES
def test_capture_variables(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_capture_variables
    root = Trackable()
    root.weights = tf.Variable(2.0)
    root.f = tf.function(lambda x: root.weights * x,
                         input_signature=[tf.TensorSpec(None, tf.float32)])
    imported = cycle(root, cycles, tmp_path)
    assert float(imported.f(tf.constant(2.0))) == 4.0
    imported.weights.assign(4.0)  # the loaded function reads the loaded Variable
    assert float(imported.f(tf.constant(2.0))) == 8.0
    assert float(root.f(tf.constant(2.0))) == 4.0


@CYCLES
def test_implicit_input_signature(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_implicit_input_signature
    root = Trackable()
    root.f = tf.function(lambda x: 2 * x)
    root.f(tf.constant(1.0))
    root.f(tf.constant(1))
    imported = cycle(root, cycles, tmp_path)
    assert float(imported.f(tf.constant(2.0))) == 4.0
    assert int(imported.f(tf.constant(7))) == 14
    assert len(imported.f.concrete_functions) == 2


@CYCLES
def test_explicit_save_signature(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_explicit_save_signature
    root = Trackable()
    root.f = tf.function(lambda x: 2 * x)
    imported = cycle(root, cycles, tmp_path, signatures={
        "f": root.f.get_concrete_function(tf.TensorSpec(None, tf.float32))})
    assert float(imported.f(tf.constant(2.0))) == 4.0
    assert imported.signatures["f"](x=tf.constant(2.0))["output_0"].numpy() == 4.0


@CYCLES
def test_nested_functions(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_nested_functions
    f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec(None, tf.float32)])
    g = tf.function(lambda x: f(x) + 1.0, input_signature=[tf.TensorSpec(None, tf.float32)])
    root = Trackable()
    root.g = g
    imported = cycle(root, cycles, tmp_path)
    np.testing.assert_array_equal(imported.g(tf.constant([1.0])).numpy(), [3.0])


@CYCLES
def test_function_with_default_bool_input(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_function_with_default_bool_input
    def func(x, training=False):
        return 2 * x if training else tf.constant(7)

    root = Trackable()
    root.f = tf.function(func)
    assert int(root.f(tf.constant(10), True)) == 20
    assert int(root.f(tf.constant(1))) == 7
    assert int(root.f(tf.constant(1), True)) == 2
    imported = cycle(root, cycles, tmp_path)
    assert int(imported.f(tf.constant(2), True)) == 4
    assert int(imported.f(tf.constant(2))) == 7
    assert int(imported.f(tf.constant(2), training=True)) == 4  # the same call, by keyword


@CYCLES
def test_function_with_default_none_input(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_function_with_default_none_input
    def func(x, dtype=None):
        return tf.zeros(shape=x.shape, dtype=dtype or tf.float32)

    root = Trackable()
    root.f = tf.function(func)
    root.f(tf.constant([1, 2, 3]))
    root.f(tf.constant([1.0, 2.0, 3.0]))
    root.f(tf.constant([1, 2, 3, 4]))
    root.f(tf.constant([1.0, 2.0, 3.0]), dtype=tf.int32)
    imported = cycle(root, cycles, tmp_path)
    assert len(imported.f.concrete_functions) == 4
    np.testing.assert_array_equal(imported.f(tf.constant([1, 2, 3]), None).numpy(), [0.0] * 3)
    np.testing.assert_array_equal(imported.f(tf.constant([1.0, 2.0, 3.0])).numpy(), [0.0] * 3)
    np.testing.assert_array_equal(imported.f(tf.constant([1, 2, 3, 4])).numpy(), [0.0] * 4)
    out = imported.f(tf.constant([1.0, 2.0, 3.0]), dtype=tf.int32)
    assert out.dtype == tf.int32 and out.numpy().tolist() == [0, 0, 0]


def test_structured_inputs(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_structured_inputs
    def func(x, training=True):
        _, (a, b) = x
        return 2 * a["a"] + b if training else tf.constant(7)

    root = Trackable()
    root.f = tf.function(func)
    x, y = tf.constant(10), tf.constant(11)
    input1 = [6, ({"a": x}, y)]
    input2 = [7, ({"a": x}, y)]  # not compatible with input1's signature
    input3 = [6, ({"a": y}, x)]  # compatible with it
    assert int(root.f(input1)) == 31
    imported = cycle(root, 1, tmp_path)
    with pytest.raises(ValueError, match="Could not find matching concrete function to call"):
        imported.f(input2)
    assert int(imported.f(input1)) == 31
    assert int(imported.f(input3)) == 32


def test_structured_inputs_bare_concrete_function(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_structured_inputs_bare_concrete_function
    def func(x, training=True):
        _, (a, b) = x
        return 2 * a["a"] + b if training else tf.constant(7)

    x, y = tf.constant(10), tf.constant(11)
    input1 = [6, ({"a": x}, y)]
    input2 = [7, ({"a": x}, y)]
    input3 = [6, ({"a": y}, x)]
    root = Trackable()
    root.f = tf.function(func).get_concrete_function(input1)
    imported = cycle(root, 1, tmp_path)
    with pytest.raises(TypeError):
        imported.f(input2)
    assert int(imported.f(input1, True)) == 31
    assert int(imported.f(input3, True)) == 32


def test_positional_arguments(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_positional_arguments
    def func(x, training=False, abc=7.1, defg=7.7):
        if training:
            return 2 * x
        return tf.constant(6) if defg == 7 else tf.constant(7)

    root = Trackable()
    root.f = tf.function(func)
    assert int(root.f(tf.constant(10), True)) == 20
    assert int(root.f(tf.constant(1))) == 7
    assert int(root.f(tf.constant(1), True)) == 2
    assert int(root.f(tf.constant(1), defg=7.0)) == 6
    imported = cycle(root, 1, tmp_path)
    assert int(imported.f(tf.constant(2), True)) == 4
    assert int(imported.f(tf.constant(2))) == 7
    assert int(imported.f(tf.constant(1), defg=7.0)) == 6


def test_additional_kwargs(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_additional_kwargs
    def func(x, training=False, **options):
        return 2 * x if training else tf.constant(7)

    root = Trackable()
    root.f = tf.function(func)
    x = tf.constant(10)
    assert int(root.f(x, learning_rate=0.5, epochs=3)) == 7
    imported = cycle(root, 1, tmp_path)
    with pytest.raises(ValueError, match="Could not find matching concrete function to call"):
        imported.f(x, learning_rate=0.5, epochs=4)
    assert int(imported.f(x, learning_rate=0.5, epochs=3)) == 7


@CYCLES
def test_member_function(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_member_function
    class TrackableWithMember(tf.Module):
        def __init__(self):
            super().__init__()
            self._some_value = 20

        @tf.function
        def f(self, x, training=False):
            return 2 * x if training else tf.constant(7 + self._some_value)

    root = TrackableWithMember()
    assert int(root.f(tf.constant(10), True)) == 20
    assert int(root.f(tf.constant(1))) == 27
    imported = cycle(root, cycles, tmp_path)
    assert int(imported.f(tf.constant(2), True)) == 4
    assert int(imported.f(tf.constant(2))) == 27


def test_function_no_return(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_function_no_return
    class TrackableWithOneVariable(tf.Module):
        def __init__(self, initial_value=0.0):
            super().__init__()
            self.variable = tf.Variable(initial_value)

        @tf.function
        def increase(self, by=1.0):
            self.variable.assign_add(by)

    obj = TrackableWithOneVariable(5.0)
    obj.increase(tf.constant(10.0))
    assert obj.variable.numpy() == 15.0
    obj.increase()
    assert obj.variable.numpy() == 16.0
    imported = cycle(obj, 1, tmp_path)
    imported.increase(tf.constant(10.0))
    assert imported.variable.numpy() == 26.0
    imported.increase(tf.constant(1.0))
    assert imported.variable.numpy() == 27.0
    imported.increase()  # the trace that took the Python default
    assert imported.variable.numpy() == 28.0


@CYCLES
def test_basic_backprop(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_basic_backprop
    weight = tf.Variable(1.0, trainable=True)
    bias = tf.Variable(0.0, trainable=True)
    root = Trackable()
    root.weight, root.bias = weight, bias
    root.g = tf.function(lambda x: x * weight + bias,
                         input_signature=[tf.TensorSpec(None, tf.float32)])
    imported = cycle(root, cycles, tmp_path)
    with tf.GradientTape() as t:
        loss = imported.g(tf.constant([3.5]))
    grad = t.gradient(loss, [imported.weight, imported.bias])
    np.testing.assert_allclose([g.numpy() for g in grad], [3.5, 1.0])


def test_nested_backprop(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_nested_backprop
    weight = tf.Variable(1.0, trainable=True)
    bias = tf.Variable(0.0, trainable=True)
    spec = tf.TensorSpec(None, tf.float32)
    mul = tf.function(lambda x, y: x * y, input_signature=[spec, spec])
    f = tf.function(lambda x: mul(weight.read_value(), x), input_signature=[spec])
    g = tf.function(lambda x: (f(x) + bias,), input_signature=[spec])
    h = tf.function(lambda x: (g(x)[0] + bias,), input_signature=[spec])
    root = Trackable()
    root.weight, root.bias, root.g = weight, bias, h
    imported = cycle(root, 1, tmp_path)
    with tf.GradientTape() as t:
        loss = imported.g(tf.constant([3.5]))
    grad = t.gradient(loss, [imported.weight, imported.bias])
    np.testing.assert_allclose([v.numpy() for v in grad], [3.5, 2.0])


def test_restored_func_with_captured_var_backprop_float64(tmp_path):
    # TF: python/saved_model/load_test.py::LoadTest::test_restored_func_with_captured_var_backprop_float64
    weight = tf.Variable(2.0, trainable=True, dtype=tf.float64)
    root = Trackable()
    root.weight = weight
    root.g = tf.function(lambda x: x * weight, input_signature=[tf.TensorSpec((), tf.float64)])
    imported = cycle(root, 1, tmp_path)
    for obj in (imported, root):
        with tf.GradientTape() as t:
            y = obj.g(tf.constant(2.0, dtype=tf.float64))
            assert float(y) == float(obj.weight) * 2.0
        assert float(t.gradient(y, obj.weight)) == 2.0


@CYCLES
def test_callable(tmp_path, cycles):
    # TF: python/saved_model/load_test.py::LoadTest::test_callable
    class M1(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])
        def __call__(self, x):
            return x

    root = Trackable()
    root.m1 = M1()
    root.m2 = Trackable()
    root.m2.__call__ = tf.function(input_signature=[tf.TensorSpec(None, tf.float32)])(
        lambda x: x * 3.0)
    imported = cycle(root, cycles, tmp_path)
    x = tf.constant(1.0)
    assert callable(imported.m1) and float(imported.m1(x)) == 1.0
    assert float(imported.m2.__call__(x)) == 3.0


@CYCLES
def test_dict_and_list_attributes(tmp_path, cycles):
    # TF: python/saved_model/save_test.py::SaveTest::test_datastructures (with a dict of
    # functions, as load_test.py's test_dict / test_list of trackables)
    class HasDatastructures(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = [1.0, tf.Variable(2.0)]
            self.b = {"a": tf.Variable(3.0)}
            self.fns = {"a": tf.function(lambda x: x + 1.0,
                                         input_signature=[tf.TensorSpec([])]),
                        "b": tf.function(lambda x: x * 2.0,
                                         input_signature=[tf.TensorSpec([])])}
            self.pair = (tf.Variable(4.0), "label")

        @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
        def add(self, x):
            return x + tf.add_n([tf.constant(self.a[0]), self.a[1]]) + self.b["a"]

    imported = cycle(HasDatastructures(), cycles, tmp_path)
    assert float(imported.add(tf.constant(4.0))) == 10.0
    assert imported.a[0] == 1.0 and float(imported.a[1]) == 2.0
    assert float(imported.b["a"]) == 3.0
    assert float(imported.fns["a"](tf.constant(1.0))) == 2.0
    assert float(imported.fns["b"](tf.constant(5.0))) == 10.0
    assert isinstance(imported.pair, tuple) and imported.pair[1] == "label"
    assert float(imported.pair[0]) == 4.0
    # the Variable in the list is the one the function reads
    imported.a[1].assign(20.0)
    assert float(imported.add(tf.constant(4.0))) == 28.0


def test_keras_layers_and_models_keep_their_variables(tmp_path):
    """``loaded.layers[0].kernel`` for a Keras model, and for a Module holding layers."""
    model = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
    model(tf.ones((1, 2)))
    holder = Trackable()
    holder.model = model
    holder.dense = tf.keras.layers.Dense(2)
    holder.dense(tf.ones((1, 4)))
    holder.predict = tf.function(lambda x: model(x), input_signature=[tf.TensorSpec([None, 2])])
    imported = cycle(holder, 1, tmp_path)
    np.testing.assert_array_equal(imported.model.layers[0].kernel.numpy(),
                                  model.layers[0].kernel.numpy())
    np.testing.assert_array_equal(imported.model.layers[1].bias.numpy(),
                                  model.layers[1].bias.numpy())
    assert imported.dense.kernel.shape == (4, 2)
    assert len(imported.model.variables) == 4 and len(imported.variables) == 6
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(imported.predict(x).numpy(), model(x).numpy(), rtol=1e-6)
    imported.model.layers[1].bias.assign([100.0])
    np.testing.assert_allclose(imported.predict(x).numpy(), model(x).numpy() + 100.0,
                               rtol=1e-6)
    tf.saved_model.save(model, tmp_path / "model")  # a Keras model as the root
    loaded_model = tf.saved_model.load(tmp_path / "model")
    np.testing.assert_array_equal(loaded_model.layers[0].kernel.numpy(),
                                  model.layers[0].kernel.numpy())


def test_a_function_traced_for_two_shapes_and_a_python_flag_dispatches(tmp_path):
    """Every concrete trace is saved; a call runs the one its tensors and Python values fit."""
    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(2.0)

        @tf.function
        def f(self, x, double):
            return x * self.v * (2.0 if double else 1.0)

    m = M()
    m.f(tf.constant([1.0, 2.0]), True)
    m.f(tf.constant([[1.0]]), False)
    imported = cycle(m, 1, tmp_path)
    np.testing.assert_array_equal(imported.f(tf.constant([3.0, 1.0]), True).numpy(), [12.0, 4.0])
    np.testing.assert_array_equal(imported.f(tf.constant([[3.0]]), double=False).numpy(), [[6.0]])
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        imported.f(tf.constant([3.0, 1.0]), False)  # this flag was traced for another shape
    concrete = imported.f.get_concrete_function(tf.TensorSpec([2]), True)
    np.testing.assert_array_equal(concrete(x=tf.constant([1.0, 1.0]), double=True).numpy(),
                                  [4.0, 4.0])


def test_any_object_with_attributes_saves_and_a_bare_variable_is_refused(tmp_path):
    class Plain:  # not a tf.Module: its attributes are saved all the same
        pass

    root = Plain()
    root.v = tf.Variable(2.0)
    root.f = tf.function(lambda x: x * root.v, input_signature=[tf.TensorSpec([])])
    imported = cycle(root, 1, tmp_path)
    assert float(imported.f(3.0)) == 6.0 and float(imported.v) == 2.0
    with pytest.raises(tf.saved_model.SaveError, match="got a Variable: put it in an attribute"):
        tf.saved_model.save(tf.Variable(1.0), tmp_path / "bare")
