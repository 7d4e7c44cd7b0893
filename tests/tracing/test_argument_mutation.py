"""A tf.function that modifies a list or dict argument raises TensorFlow's ValueError.

Ported from TensorFlow's ``python/eager/polymorphic_function/polymorphic_function_test.py``
(named per test), with the messages' patterns it asserts.
"""
import pytest

import tapeflow as tf


def _list():
    return [tf.constant(0.0), tf.constant(1.0)]


def _dict():
    return {"t1": tf.constant(0.0), "t2": tf.constant(1.0)}


def _append(l):
    l.append(tf.constant(0.0))


def _extend(l):
    l.extend([tf.constant(0.0)])


def _insert(l):
    l.insert(0, tf.constant(0.0))


def _pop(l):
    l.pop()


def _reverse(l):
    l.reverse()


def _remove(l):
    l.remove(l[0])


def _clear(l):
    l.clear()


@pytest.mark.parametrize("modify", [_append, _extend, _insert, _pop, _reverse, _remove, _clear],
                         ids=lambda f: f.__name__[1:])
def test_function_modifies_input_list(modify):
    # TF: polymorphic_function_test.py::testFunctionModifiesInputList
    with pytest.raises(ValueError, match=".*() should not modify"):  # upstream regex
        tf.function(modify)(_list())


def test_function_modifies_input_list_through_kwargs():
    # TF: polymorphic_function_test.py::testFunctionModifiesInputList ("One last test for
    # keyword arguments")
    @tf.function
    def kwdappend(**kwargs):
        l = kwargs["l"]
        l.append(tf.constant(0.0))

    with pytest.raises(ValueError, match="should not modify.*were modified: kwargs"):
        kwdappend(l=_list())


def _dict_clear(m):
    m.clear()


def _dict_pop(m):
    m.pop("t1")


def _dict_popitem(m):
    m.popitem()


def _dict_update(m):
    m.update({"t1": tf.constant(3.0)})


def _dict_setdefault(m):
    m.setdefault("t3", tf.constant(3.0))


@pytest.mark.parametrize("modify", [_dict_clear, _dict_pop, _dict_popitem, _dict_update,
                                    _dict_setdefault], ids=lambda f: f.__name__[6:])
def test_function_modifies_input_dict(modify):
    # TF: polymorphic_function_test.py::testFunctionModifiesInputDict
    with pytest.raises(ValueError, match=".* should not modify"):
        tf.function(modify)(_dict())


def test_function_modifies_input_nest():
    # TF: polymorphic_function_test.py::testFunctionModifiesInputNest
    @tf.function
    def modify(n):
        n[0]["t1"].append(tf.constant(1.0))

    nested_input = [{"t1": [tf.constant(0.0), tf.constant(1.0)]}, tf.constant(2.0)]
    with pytest.raises(ValueError, match="modify.* should not modify"):
        modify(nested_input)

    # The flat list doesn't change whereas the true structure changes
    @tf.function
    def modify_same_flat(n):
        n[0].append(n[1].pop(0))

    nested_input = [[tf.constant(0.0)], [tf.constant(1.0), tf.constant(2.0)]]
    with pytest.raises(ValueError, match="modify_same_flat.* should not modify"):
        modify_same_flat(nested_input)


def test_the_message_names_the_modified_parameters_and_the_caller_keeps_its_list():
    # TF: func_graph.check_func_mutation's message (the function's qualified name, its
    # signature, the parameters); the function ran on copies of the containers
    @tf.function
    def step(x, history, config):
        history.append(x * 2.0)
        return x + config["scale"]

    history = [tf.constant(1.0)]
    with pytest.raises(ValueError, match=r"step\(x, history, config\) should not modify its "
                                         r"Python input arguments\. Modifying a copy is allowed\. "
                                         r"The following parameter\(s\) were modified: history$"):
        step(tf.constant(1.0), history, {"scale": 2.0})
    assert len(history) == 1
    # a Python value replaced in a dict is a change too (leaves are compared with `is`)
    with pytest.raises(ValueError, match="were modified: d$"):
        tf.function(lambda d: d.update(scale=3.0))({"scale": 2.0})


def test_modifying_a_copy_and_popping_from_kwargs_are_allowed():
    # TF: tracing_compilation_test.py::testCompilationNumpyArraysConvertedToTensorsInKwargs
    # (`kwargs.pop("x")` in the function), and the error's own advice: modify a copy
    @tf.function
    def f(**kwargs):
        x = kwargs.pop("x")
        assert isinstance(x, tf.Tensor)
        return x

    assert float(f(x=tf.ones([]))) == 1.0
    assert float(f(x=tf.zeros([]))) == 0.0

    @tf.function
    def g(d):
        d = dict(d)
        d["c"] = d["a"] + d["b"]
        return d

    out = g({"a": tf.constant(1.0), "b": tf.constant(2.0)})
    assert sorted(out) == ["a", "b", "c"] and float(out["c"]) == 3.0
    assert g.experimental_get_tracing_count() == 1


def test_a_method_and_an_objects_attributes():
    # A method's own instance is not an argument container: its attributes change at trace
    # time only, as any Python side effect (TF: testFunctionSideEffects's pattern)
    class Model:
        def __init__(self):
            self.calls = []

        @tf.function
        def __call__(self, xs):
            self.calls.append(len(xs))
            return tf.add_n(xs)

        @tf.function
        def bad(self, xs):
            xs.append(xs[0])
            return xs[0]

    m = Model()
    assert float(m([tf.constant(1.0), tf.constant(2.0)])) == 3.0
    assert float(m([tf.constant(3.0), tf.constant(4.0)])) == 7.0
    assert m.calls == [2]
    with pytest.raises(ValueError, match=r"Model\.bad\(self, xs\) should not modify.*: xs$"):
        m.bad([tf.constant(1.0)])


def test_run_functions_eagerly_runs_the_python_function_on_the_arguments():
    # TF: with tf.config.run_functions_eagerly(True) the function is plain Python: no copy,
    # no check
    l = _list()
    tf.config.run_functions_eagerly(True)
    try:
        tf.function(_append)(l)
    finally:
        tf.config.run_functions_eagerly(False)
    assert len(l) == 3


def test_dataset_map_functions_may_pop_from_their_element():
    # tf.data traces map functions on fresh containers (TF's StructuredFunctionWrapper), so
    # `features.pop("label")` there is allowed, unlike in a tf.function
    ds = tf.data.Dataset.from_tensor_slices({"x": [1.0, 2.0], "y": [0, 1]})
    pairs = [(d["x"].numpy(), y.numpy()) for d, y in ds.map(lambda d: (d, d.pop("y")))]
    assert pairs == [(1.0, 0), (2.0, 1)]
