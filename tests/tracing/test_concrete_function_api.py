"""ConcreteFunction's structured API and input_signature conversions (issue 18, item 1).

Ported from TensorFlow's ``python/eager/polymorphic_function/polymorphic_function_test.py``
and ``concrete_function_test.py``, with the values they assert.
"""
import numpy as np
import pytest

import tapeflow as tf


def test_structured_input_signature_is_args_and_kwargs():
    """``structured_input_signature`` is ``(args, kwargs)``, tensors as TensorSpecs, Python
    arguments as their values (TensorFlow's ConcreteFunction.structured_input_signature)."""
    @tf.function
    def f(x, y, flag=True):
        return x + y[0] if flag else x

    c = f.get_concrete_function(tf.constant(1.0), [tf.constant([2.0, 3.0])], flag=False)
    args, kwargs = c.structured_input_signature
    assert args == (tf.TensorSpec([], tf.float32), [tf.TensorSpec([2], tf.float32)])
    assert kwargs == {"flag": False}


def test_input_signature_shows_its_free_dimensions():
    """After TF's polymorphic_function_test.py::testInputSignatureWithCompatibleInputs: the
    concrete function of a [None] signature has a [None] spec."""
    f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None], tf.float32)])
    (spec,), kwargs = f.get_concrete_function().structured_input_signature
    assert spec.shape == (None,) and kwargs == {}


def test_structured_outputs_shapes_and_dtypes():
    """structured_outputs / output_shapes / output_dtypes, as TensorFlow's ConcreteFunction."""
    @tf.function
    def f(x):
        return {"a": x * 2.0, "b": [tf.cast(x, tf.int32), None]}

    c = f.get_concrete_function(tf.constant([1.0, 2.0]))
    assert c.structured_outputs == {"a": tf.TensorSpec([2], tf.float32),
                                    "b": [tf.TensorSpec([2], tf.int32), None]}
    assert c.output_shapes == {"a": (2,), "b": [(2,), None]}
    assert c.output_dtypes == {"a": tf.float32, "b": [tf.int32, None]}


def test_a_concrete_function_takes_its_structured_arguments():
    """The traced Python values may be passed again; other values are refused (see also
    testMismatchedConcreteSignatureRaisesError below)."""
    @tf.function
    def f(x, y, flag=True):
        return x + y[0] if flag else x - y[0]

    c = f.get_concrete_function(tf.constant(1.0), [tf.constant(2.0)], flag=False)
    assert float(c(tf.constant(5.0), [tf.constant(2.0)], flag=False)) == 3.0
    assert float(c(tf.constant(5.0), tf.constant(2.0))) == 3.0  # flat tensors, in order
    with pytest.raises(TypeError, match="traced with the Python argument False"):
        c(tf.constant(5.0), [tf.constant(2.0)], flag=True)


def test_input_signature_converts_python_lists_and_arrays():
    """After TF's polymorphic_function_test.py::testNestedInputSignatures: a list or numpy
    array for a spec becomes a tensor of the spec's dtype; nested (list) signatures match
    nested arguments."""
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32), [tf.TensorSpec([], tf.int32)]])
    def f(x, ys):
        return x * tf.cast(ys[0], tf.float32)

    np.testing.assert_array_equal(f([1, 2], [3]).numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0]), [np.int64(2)]).numpy(), [2.0, 4.0])
    with pytest.raises(ValueError, match="does not match the input_signature"):
        f([1.0, 2.0], 3)


def test_input_signature_dict_specs():
    @tf.function(input_signature=[{"a": tf.TensorSpec([], tf.float32),
                                   "b": tf.TensorSpec([2], tf.float32)}])
    def f(d):
        return d["a"] * d["b"]

    np.testing.assert_array_equal(f({"a": 2.0, "b": [1.0, 3.0]}).numpy(), [2.0, 6.0])
    with pytest.raises(ValueError, match="does not match the input_signature"):
        f({"a": 2.0})


def test_input_signature_conversion_with_default_arg():
    """TF: polymorphic_function_test.py::testInputSignatureConversionWithDefaultArg (the
    Python `if` on a traced bool runs through AutoGraph)."""
    def foo(a, training=True):
        if training:
            return a
        else:
            return -1.0 * a

    signature = [tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.bool)]
    defined = tf.function(foo, input_signature=signature)
    a = tf.constant(1.0)
    assert float(defined(a)) == 1.0
    assert float(defined(a, training=True)) == 1.0
    assert float(defined(a, training=False)) == -1.0


def test_mismatched_concrete_signature_raises_error():
    """TF: polymorphic_function_test.py::testMismatchedConcreteSignatureRaisesError: a
    concrete function traced for the Python 1 refuses a tensor and another number; one traced
    for a tensor takes a Python number."""
    @tf.function
    def f(x):
        return x

    with pytest.raises(TypeError):
        f.get_concrete_function(1)(tf.constant(1))
    assert int(f.get_concrete_function(tf.constant(1))(1)) == 1
    with pytest.raises(TypeError):
        f.get_concrete_function(1)(2)


def test_arguments_with_defaults_may_be_omitted():
    """A default fills its spec (TensorFlow binds defaults before matching the signature)."""
    @tf.function(input_signature=[tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.float32)])
    def f(x, y=2.0):
        return x * y

    assert float(f(3.0)) == 6.0
    assert float(f(3.0, 4.0)) == 12.0
    assert float(f(3.0, y=5.0)) == 15.0
    assert f.experimental_get_tracing_count() == 1


def test_unknown_rank_spec_traces_per_rank():
    """TensorSpec(None): unknown rank. tapeflow traces per shape, so a rank-dependent body
    retraces at the first call of another rank (and the first graph serves its own rank)."""
    f = tf.function(lambda x: tf.reduce_sum(x), input_signature=[tf.TensorSpec(None, tf.float32)])
    assert float(f(tf.ones([2, 3]))) == 6.0
    assert float(f(tf.ones([4]))) == 4.0
    assert float(f(tf.ones([2, 3]))) == 6.0
    with pytest.raises(ValueError, match="incompatible with input_signature"):
        f(tf.ones([2], tf.int32))
