"""GradientTape semantics found in review and in TensorFlow's own tape tests.

Which sources a tape differentiates (only watched Variables; a tensor another tape
produced, once watched), custom_gradient on methods and on nested arguments,
batch_jacobian's shape checks with TensorFlow's messages, and the order of
``watched_variables``.
"""
import functools

import numpy as np
import pytest

import tapeflow as tf


# --- a gradient with respect to a Variable the tape never watched is None ---------------------
def test_non_trainable_variable_read_with_a_watched_one_gets_none():
    frozen, w = tf.Variable(2.0, trainable=False), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = frozen * w  # recorded because of w; frozen is read by the same op
    g_frozen, g_w = tape.gradient(y, [frozen, w])
    assert g_frozen is None and g_w.numpy() == 2.0
    assert "not trainable" in tape.explain(y, frozen)
    zero = tape.gradient(y, frozen, unconnected_gradients="zero")
    assert zero.numpy() == 0.0


def test_unwatched_variable_under_watch_accessed_variables_false_gets_none():
    a, b = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(b)
        y = a * b
    ga, gb = tape.gradient(y, [a, b])
    assert ga is None and gb.numpy() == 2.0
    assert tape.watched_variables() == (b,)


def test_unwatched_variable_gets_none_from_jacobian_and_zeros_from_batch_jacobian():
    frozen = tf.Variable(np.ones((2, 3), np.float32), trainable=False)
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * frozen
    assert tape.jacobian(y, frozen) is None
    # TensorFlow's batch_jacobian gives zeros where no gradient flows, whatever
    # unconnected_gradients says (backprop.py: "to maintain compatibility")
    unwatched = tape.batch_jacobian(y, frozen)
    assert unwatched.shape == (2, 3, 3) and not unwatched.numpy().any()
    assert tape.jacobian(y, x).shape == (2, 3, 2, 3)
    zero = tape.jacobian(y, frozen, unconnected_gradients="zero")
    assert zero.shape == (2, 3, 2, 3) and not zero.numpy().any()


def test_watched_variables_and_tensors_from_them_are_sources():
    w = tf.Variable(3.0)  # trainable, read under a default tape: watched
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(frozen)  # watched explicitly: a source although not trainable
        h = w * w
        y = h * frozen
    gw, gh, gf = tape.gradient(y, [w, h, frozen])
    assert (gw.numpy(), gh.numpy(), gf.numpy()) == (12.0, 2.0, 9.0)


def test_variable_target_is_read_in_the_tape():
    """TensorFlow reads a Variable target inside the tape: a trainable one is watched."""
    v = tf.Variable(2.0)
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape(persistent=True) as tape:
        pass
    assert tape.gradient(v, v).numpy() == 1.0
    assert tape.gradient(frozen, frozen) is None


def test_unwatched_constant_input_of_a_recorded_op_still_gets_its_gradient():
    """As TensorFlow's tape: a tensor source that a recorded op read is differentiated
    (only Variables must be watched to be sources)."""
    c, w = tf.constant(2.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = c * w
    assert tape.explain(y, c).startswith("connected")
    gc, gw = tape.gradient(y, [c, w])
    assert (gc.numpy(), gw.numpy()) == (3.0, 2.0)


def test_a_rule_reading_outputs_it_did_not_save_says_so():
    @tf.primitive("TapeSemanticsDouble")
    def double(x):
        return x * 2

    @tf.RegisterGradient("TapeSemanticsDouble", saves="inputs")
    def _double_grad(op, dy):
        return dy * op.outputs[0]  # reads what it did not declare

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    with pytest.raises(RuntimeError, match="without saves='outputs'"):
        tape.gradient(y, x)


# --- watching a tensor another tape produced ----------------------------------------------------
def test_watch_a_tensor_another_tape_produced():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape_a:
        tape_a.watch(x)
        y = x * x
    with tf.GradientTape() as tape_b:
        tape_b.watch(y)
        z = y * y
    assert tape_b.gradient(z, y).numpy() == 18.0
    assert tape_a.gradient(y, x).numpy() == 6.0


def test_watch_a_tensor_of_an_enclosing_tape():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        y = x * x
        with tf.GradientTape() as inner:
            inner.watch(y)
            z = tf.math.sin(y)
        dz_dy = inner.gradient(z, y)
    np.testing.assert_allclose(dz_dy.numpy(), np.cos(9.0), rtol=1e-6)
    np.testing.assert_allclose(outer.gradient(z, x).numpy(), np.cos(9.0) * 6.0, rtol=1e-6)
    # the inner gradient was recorded on the outer tape: d/dx cos(x^2) = -sin(x^2) * 2x
    np.testing.assert_allclose(outer.gradient(dz_dy, x).numpy(), -np.sin(9.0) * 6.0, rtol=1e-5)


def test_jacobian_wrt_a_tensor_another_tape_produced():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape_a:
        tape_a.watch(x)
        y = x * 3.0
    with tf.GradientTape() as tape_b:
        tape_b.watch(y)
        z = y * y
    np.testing.assert_allclose(tape_b.jacobian(z, y).numpy(), np.diag([6.0, 12.0]))


# --- custom_gradient on methods and nested arguments ------------------------------------------
class _Scaler:
    def __init__(self, factor):
        self.factor = factor
        self.w = tf.Variable(5.0, name="scale_w")

    @tf.custom_gradient
    def scale(self, x):
        def grad(dy):
            return dy * self.factor * 10.0
        return x * self.factor, grad

    @tf.custom_gradient
    def weighted(self, x):
        def grad(dy, variables=None):
            assert [v.name for v in variables] == ["scale_w:0"]
            return dy * self.w, [dy * x]
        return x * self.w, grad


def test_custom_gradient_on_a_method_passes_the_instance_through():
    s = _Scaler(2.0)
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = s.scale(x)
    assert y.numpy() == 6.0
    assert tape.gradient(y, x).numpy() == 20.0
    assert _Scaler.scale.__name__ == "scale"


def test_wrapping_one_custom_gradient_function_in_another_keeps_each_its_own():
    """functools.wraps(decorated)(other) copies attributes; it must not swap the functions
    (grad_pass_through and recompute_grad wrap user functions this way)."""
    @tf.custom_gradient
    def hundred(x):
        return x * x, lambda dy: dy * 100.0

    @tf.custom_gradient
    def one(x):
        return hundred(x), lambda dy: dy

    one = functools.wraps(hundred)(one)
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = one(x)
    assert (y.numpy(), tape.gradient(y, x).numpy()) == (9.0, 1.0)
    assert one.__name__ == "hundred" and one.__wrapped__ is hundred


def test_custom_gradient_callable_object_as_class_attribute_is_not_bound():
    def scaled(x, k):
        return x * k, lambda dy: dy * k * 10.0

    class Holder:
        fn = tf.custom_gradient(functools.partial(scaled, k=2.0))  # a partial does not bind

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = Holder().fn(x)
    assert (y.numpy(), tape.gradient(y, x).numpy()) == (6.0, 20.0)


def test_custom_gradient_on_a_method_reading_a_variable():
    s = _Scaler(2.0)
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = s.weighted(x)
    gx, gw = tape.gradient(y, [x, s.w])
    assert (gx.numpy(), gw.numpy()) == (5.0, 3.0)


@tf.custom_gradient
def _nested(pair, named):
    a, b = pair
    out = a * b + named["scale"] * named["shift"]

    def grad(dy):
        # one gradient per flattened input: a, b, then the dict's values in sorted-key order
        return [dy * b * 10.0, dy * a * 10.0, dy * named["shift"], dy * named["scale"]]
    return out, grad


def test_custom_gradient_on_nested_arguments():
    a, b, scale, shift = (tf.constant(v) for v in (2.0, 3.0, 4.0, 5.0))
    with tf.GradientTape() as tape:
        tape.watch([a, b, scale, shift])
        y = _nested([a, b], {"shift": shift, "scale": scale})
    assert y.numpy() == 26.0
    grads = tape.gradient(y, [a, b, scale, shift])
    assert [g.numpy() for g in grads] == [30.0, 20.0, 5.0, 4.0]


def test_custom_gradient_nested_gradients_may_mirror_the_arguments():
    @tf.custom_gradient
    def f(pair, c):
        def grad(dy):
            return (dy * 2.0, dy * 3.0), dy * 4.0
        return pair[0] * 2.0 + pair[1] * 3.0 + c * 4.0, grad

    x0, x1, c = tf.constant(1.0), tf.constant(1.0), tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch([x0, x1, c])
        y = f((x0, x1), c)
    assert [g.numpy() for g in tape.gradient(y, [x0, x1, c])] == [2.0, 3.0, 4.0]


def test_custom_gradient_counts_flattened_inputs():
    @tf.custom_gradient
    def f(pair):
        return pair[0] + pair[1], lambda dy: dy  # one gradient for two flattened inputs

    x0, x1 = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([x0, x1])
        y = f([x0, x1])
    with pytest.raises(ValueError, match="1 gradient.*2 input.*flattened"):
        tape.gradient(y, [x0, x1])


def test_custom_gradient_nested_arguments_in_a_traced_function():
    @tf.function
    def step(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            y = _nested([a, b], {"shift": b, "scale": a})
        return tape.gradient(y, [a, b])

    ga, gb = step(tf.constant(2.0), tf.constant(3.0))
    # a gets 10*b from the pair and shift=b from the dict; b gets 10*a and scale=a
    assert (ga.numpy(), gb.numpy()) == (33.0, 22.0)


# --- batch_jacobian: TensorFlow's shape checks and messages ----------------------------------
def _batch_tape():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.tanh(x)
    return x, y, tape


def test_batch_jacobian_needs_a_source_of_rank_two():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stack([x, x * x], axis=1)  # (3, 2): the target's rank is fine
    with pytest.raises(ValueError, match=r"^Shape \(3,\) must have rank at least 2$"):
        tape.batch_jacobian(y, x)


def test_batch_jacobian_rejects_a_scalar_target():
    x, y, tape = _batch_tape()
    with pytest.raises(ValueError, match=r"^Shape \(\) must have rank at least 2$"):
        tape.batch_jacobian(tf.reduce_sum(y), x)


def test_batch_jacobian_needs_the_same_batch_size():
    x, y, tape = _batch_tape()
    other = tf.constant(np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match=r"^Need first dimension of target shape \(2, 3\) and "
                                         r"source shape \(3, 3\) to match\."):
        tape.batch_jacobian(y, other)
    # a refused call does not use up a non-persistent tape
    assert tape.batch_jacobian(y, x).shape == (2, 3, 3)


def test_batch_jacobian_refuses_a_target_of_rank_1_as_tensorflow():
    """TensorFlow asks for a target of rank 2: one scalar per example is written (batch, 1)."""
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.math.tanh(x), axis=1)
        y2 = tf.reduce_sum(tf.math.tanh(x), axis=1, keepdims=True)
    with pytest.raises(ValueError, match=r"Shape \(2,\) must have rank at least 2"):
        tape.batch_jacobian(y, x)
    jb = tape.batch_jacobian(y2, x)
    np.testing.assert_allclose(jb.numpy()[:, 0], 1.0 - np.tanh(x.numpy()) ** 2, rtol=1e-6)


# --- watched_variables: in order of construction ----------------------------------------------
def test_watched_variables_in_order_of_construction():
    a, b, c = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b"), tf.Variable(3.0, name="c")
    with tf.GradientTape() as tape:
        y = c * b
        y = y * a
    assert tape.watched_variables() == (a, b, c)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([c, a])
        tape.watch(b)
    assert [v.name for v in tape.watched_variables()] == ["a:0", "b:0", "c:0"]
