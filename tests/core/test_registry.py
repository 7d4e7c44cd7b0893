"""The op registry: RegisterGradient, NotDifferentiable, overrides and user primitives."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.registry import lookup_gradient


def _cube_grad(op, dy):
    (x,) = op.inputs
    return dy * 3.0 * x * x


def _register_cube():
    @tf.primitive("TestCube")
    def cube(x):
        return x ** 3

    tf.RegisterGradient("TestCube")(_cube_grad)
    return cube


def test_user_primitive_forward_and_gradient_to_second_order():
    cube = _register_cube()
    x = tf.Variable(2.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = cube(x)
        d1 = t1.gradient(y, x)
    assert y.numpy() == 8.0 and d1.numpy() == 12.0
    assert t2.gradient(d1, x).numpy() == 12.0


def test_op_without_gradient_raises_lookup_error_naming_it():
    @tf.primitive("TestNoGrad")
    def nograd(x):
        return x * 2

    x = tf.Variable(1.0)
    with tf.GradientTape() as t:
        y = nograd(x)
    with pytest.raises(LookupError, match="TestNoGrad"):
        t.gradient(y, x)


def test_adjust_contrast_has_no_gradient():
    image, delta = tf.Variable([[[0.5, 0.0, 0.0]]]), tf.Variable(0.1)
    with tf.GradientTape() as tape:
        new_image = tf.image.adjust_contrast(image, delta)
    with pytest.raises(LookupError, match="AdjustContrastv2"):
        tape.gradient(new_image, [image, delta])


def test_op_without_gradient_off_the_path_is_fine():
    x, y = tf.Variable(1.0), tf.Variable(0.5)
    with tf.GradientTape() as t:
        z = tf.reduce_sum(tf.image.adjust_contrast(tf.ones((1, 1, 3)) * y, 0.5)) + x * 2.0
    assert t.gradient(z, x).numpy() == 2.0


def test_registering_twice_from_different_code_is_an_error():
    with pytest.raises(KeyError, match="already registered"):
        @tf.RegisterGradient("Exp")
        def _my_exp_grad(op, g):
            return g


def test_re_registering_the_same_function_is_allowed():
    _register_cube()
    tf.RegisterGradient("TestCube")(_cube_grad)


def test_explicit_override_and_restore():
    original = lookup_gradient("Sin")

    def zero_sin_grad(op, g):
        return g * 0.0

    tf.RegisterGradient("Sin", override=True)(zero_sin_grad)
    x = tf.Variable(0.0)
    with tf.GradientTape() as t:
        y = tf.math.sin(x)
    assert t.gradient(y, x).numpy() == 0.0
    assert lookup_gradient("Sin") is not original


def test_scoped_override_applies_to_an_existing_function():
    @tf.RegisterGradient("TestClippedReluGrad", saves="outputs", vectorized=True)
    def _clipped_relu_grad(op, g):
        (y,) = op.outputs
        return tf.where(y > 0, tf.clip_by_value(g, -0.1, 0.1), 0.0)

    def model(x):  # defined before the override, as a model would be
        return tf.nn.relu(x) * 5.0

    x = tf.Variable([1.0, -1.0])
    with tf.GradientTape() as t:
        with tf.gradient_override_map({"Relu": "TestClippedReluGrad"}):
            y = model(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [0.1, 0.0])
    with tf.GradientTape() as t:
        y = model(x)
    np.testing.assert_allclose(t.gradient(y, x).numpy(), [5.0, 0.0])


def test_override_map_to_unknown_name_fails_fast():
    with pytest.raises(LookupError, match="NoSuchGrad"):
        with tf.gradient_override_map({"Relu": "NoSuchGrad"}):
            pass


def test_not_differentiable_gives_none():
    @tf.primitive("TestArgish")
    def argish(x):
        return x * 0 + 1

    tf.NotDifferentiable("TestArgish")
    x = tf.Variable(1.0)
    with tf.GradientTape() as t:
        y = argish(x) * x
    assert t.gradient(y, x).numpy() == 1.0


def test_sign_zero_and_round_none_as_tensorflow():
    x = tf.Variable([1.5, -2.3])
    with tf.GradientTape(persistent=True) as t:
        s = tf.sign(x)
        r = tf.round(x)
    np.testing.assert_array_equal(t.gradient(s, x).numpy(), [0.0, 0.0])
    assert t.gradient(r, x) is None


def test_cli_lists_ops(capsys):
    from tapeflow.cli import main
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    assert "AdjustContrastv2" in out and "NO GRADIENT" in out
    assert "Mul " in out or "Mul\t" in out or "\nMul" in out
