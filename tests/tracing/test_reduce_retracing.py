"""reduce_retracing: a signature relaxed to free sizes runs one graph for every size, so no
kernel specialized for the sizes of its first trace may run at another size."""
import numpy as np
import pytest

import tapeflow as tf


def _pair(rng, inner):
    return (rng.rand(3, inner).astype("float32"), rng.rand(inner, 3).astype("float32"))


def test_a_matmul_first_traced_over_an_inner_size_of_one_multiplies_at_every_size():
    """The first relaxed trace sees an inner size of 1 (an outer product's fast path); the
    later sizes run the same graph and must still multiply matrices."""
    f = tf.function(tf.matmul, reduce_retracing=True)
    rng = np.random.RandomState(0)
    for inner in (2, 1, 3, 4, 1):
        a, b = _pair(rng, inner)
        np.testing.assert_allclose(f(a, b).numpy(), a @ b, rtol=1e-6)
    assert f.experimental_get_tracing_count() == 2  # the exact first call, then one relaxed


@pytest.mark.parametrize("rows", [(5, 1, 4, 7), (1, 6, 2, 1)])
def test_a_mean_over_relaxed_rows_divides_by_each_count(rows):
    """The compiled mean holds its count: the relaxed graph's must be each call's."""
    f = tf.function(lambda x: tf.reduce_mean(x, axis=0), reduce_retracing=True)
    rng = np.random.RandomState(1)
    for n in rows:
        x = rng.randn(n, 3).astype("float32")
        np.testing.assert_allclose(f(x).numpy(), x.mean(axis=0), rtol=1e-6)
    assert f.experimental_get_tracing_count() == 2


def _saved_and_loaded(module, tmp_path):
    tf.saved_model.save(module, str(tmp_path))
    return tf.saved_model.load(str(tmp_path))


def test_a_relaxed_function_called_at_two_sizes_saves_one_graph_for_every_size(tmp_path):
    """Saved before a third call decided whether the relaxed graph serves every size (it
    raised AttributeError): the save decides it, as a TensorSpec signature is decided."""
    module = tf.Module()
    module.f = tf.function(lambda x: x * 2.0, reduce_retracing=True)
    for rows in (2, 4):
        module.f(np.ones((rows, 3), "float32"))
    loaded = _saved_and_loaded(module, tmp_path)
    x = np.arange(21, dtype="float32").reshape(7, 3)
    np.testing.assert_array_equal(loaded.f(x).numpy(), x * 2.0)
    assert module.f.experimental_get_tracing_count() == 2  # the probe is not a call's trace


def test_a_relaxed_function_whose_graph_holds_its_size_saves_the_size_it_ran_at(tmp_path):
    module = tf.Module()
    module.f = tf.function(lambda x: x * float(x.shape[0]), reduce_retracing=True)
    for rows in (2, 4):
        module.f(np.ones((rows, 3), "float32"))
    loaded = _saved_and_loaded(module, tmp_path)
    np.testing.assert_array_equal(loaded.f(np.ones((4, 3), "float32")).numpy(), 4.0)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.f(np.ones((5, 3), "float32"))  # (TensorFlow's message: a loaded one cannot trace)
    np.testing.assert_array_equal(module.f(np.ones((5, 3), "float32")).numpy(), 5.0)


def test_an_input_signature_of_free_sizes_multiplies_at_every_size():
    """Traced at size 1 for every free dimension (and probed at 2): the inner size of 1 must
    not leave an outer product in the compiled graph."""
    spec = tf.TensorSpec([None, None], tf.float32)
    f = tf.function(tf.matmul, input_signature=[spec, spec])
    rng = np.random.RandomState(2)
    for inner in (1, 3):
        a, b = _pair(rng, inner)
        np.testing.assert_allclose(f(a, b).numpy(), a @ b, rtol=1e-6)


def test_a_concrete_function_called_at_another_shape_or_dtype_is_refused():
    """Its compiled mean holds the traced count: (3, 2) ones gave 0.75. TensorFlow refuses the
    call (a binding TypeError); a signature's free sizes still take any size."""
    f = tf.function(tf.reduce_mean)
    concrete = f.get_concrete_function(tf.TensorSpec((4, 2), tf.float32))
    assert concrete(np.ones((4, 2), "float32")).numpy() == 1.0
    with pytest.raises(TypeError, match="can not cast"):
        concrete(np.ones((3, 2), "float32"))
    with pytest.raises(TypeError, match="dtype=tf.float64"):
        concrete(tf.constant(np.ones((4, 2))))
    free = tf.function(tf.reduce_mean).get_concrete_function(
        tf.TensorSpec((None, 2), tf.float32))
    for rows in (3, 7):
        assert free(np.full((rows, 2), 2.0, "float32")).numpy() == 2.0
