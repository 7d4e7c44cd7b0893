"""tapeflow.constraints (keras.constraints) and their use: applied by the optimizer after each
update, eagerly and inside a traced step.  Values from Keras 3's
keras/src/constraints/constraints_test.py (ConstraintsTest)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import constraints
from tapeflow.keras import constraints as keras_constraints


def example_array():
    rng = np.random.RandomState(3537)
    array = rng.random_sample((100, 100)) * 100.0 - 50.0
    array[0, 0] = 0.0  # possible edge case
    return array


def test_max_norm():  # Keras: ConstraintsTest::test_max_norm
    x = np.array([[0, 0, 0], [1.0, 0, 0], [3, 0, 0], [3, 3, 3]]).T
    target = np.array([[0, 0, 0], [1.0, 0, 0], [2.0, 0, 0],
                       [2.0 / np.sqrt(3), 2.0 / np.sqrt(3), 2.0 / np.sqrt(3)]]).T
    np.testing.assert_allclose(constraints.MaxNorm(2.0)(x).numpy(), target, atol=1e-6)


def test_non_neg():  # Keras: ConstraintsTest::test_non_neg, test_non_neg_zeroes_negatives, ...
    assert (np.min(constraints.NonNeg()(example_array()).numpy(), axis=1) >= 0.0).all()
    np.testing.assert_array_equal(constraints.NonNeg()(np.full((5, 5), -3.0)).numpy(), 0.0)
    np.testing.assert_array_equal(constraints.NonNeg()(np.full((5, 5), 3.0)).numpy(), 3.0)


def test_unit_norm():  # Keras: ConstraintsTest::test_unit_norm
    output = constraints.UnitNorm()(example_array()).numpy()
    np.testing.assert_allclose(np.sqrt(np.sum(np.square(output), axis=0)), 1.0, rtol=1e-6)


def test_min_max_norm():  # Keras: ConstraintsTest::test_min_max_norm
    output = constraints.MinMaxNorm(min_value=0.2, max_value=0.5)(example_array()).numpy()
    l2 = np.sqrt(np.sum(np.square(output), axis=0))
    assert np.all(l2 >= 0.2) and np.all(l2 <= 0.5 + 1e-6)


def test_min_max_norm_rate_moves_part_way():
    # rate 0.5: the norm 5 of [3, 4] goes half way to the bound 1, to 3
    out = constraints.MinMaxNorm(0.0, 1.0, rate=0.5)(np.array([[3.0], [4.0]])).numpy()
    np.testing.assert_allclose(np.linalg.norm(out), 3.0, rtol=1e-6)


def test_get_method():  # Keras: ConstraintsTest::test_get_method
    assert isinstance(constraints.get("unit_norm"), constraints.UnitNorm)
    assert isinstance(constraints.get("MaxNorm"), constraints.MaxNorm)
    assert constraints.get(None) is None
    with pytest.raises(ValueError, match="typo"):
        constraints.get("typo")


def test_default_constraint_call_and_config():
    # Keras: ConstraintsTest::test_default_constraint_call, test_constraint_get_config,
    # test_constraint_from_config
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(constraints.Constraint()(x), x)
    assert constraints.Constraint().get_config() == {}
    assert isinstance(constraints.Constraint.from_config({}), constraints.Constraint)


@pytest.mark.parametrize("constraint, expected", [  # Keras: ConstraintsTest::test_*_get_config
    (constraints.MaxNorm(max_value=3.0, axis=1), {"max_value": 3.0, "axis": 1}),
    (constraints.UnitNorm(axis=1), {"axis": 1}),
    (constraints.MinMaxNorm(min_value=0.5, max_value=2.0, rate=0.7, axis=1),
     {"min_value": 0.5, "max_value": 2.0, "rate": 0.7, "axis": 1}),
    (constraints.NonNeg(), {}),
])
def test_get_config_and_round_trip(constraint, expected):
    # Keras: ConstraintsTest::test_*_from_config_roundtrip, test_non_neg_serialization_roundtrip
    assert constraint.get_config() == expected
    restored = constraints.deserialize(constraints.serialize(constraint))
    assert type(restored) is type(constraint) and restored.get_config() == expected
    x = example_array()[:10, :10]
    np.testing.assert_allclose(restored(x).numpy(), constraint(x).numpy())


def test_keras_names_are_the_same_objects():
    assert keras_constraints.MaxNorm is constraints.MaxNorm
    assert constraints.max_norm is constraints.MaxNorm and constraints.non_neg is constraints.NonNeg
    assert constraints.unit_norm is constraints.UnitNorm
    assert constraints.min_max_norm is constraints.MinMaxNorm
    assert tf.keras.constraints is keras_constraints


def test_max_norm_over_several_axes():
    # Keras's docstring: axis=[0, 1, 2] constrains each Conv2D filter as a whole
    w = np.ones((2, 2, 1, 3))
    out = constraints.MaxNorm(1.0, axis=[0, 1, 2])(w).numpy()
    np.testing.assert_allclose(np.sqrt((out ** 2).sum(axis=(0, 1, 2))), 1.0, rtol=1e-6)


def _dense_with(**kwargs):
    layer = tf.keras.layers.Dense(2, kernel_initializer="ones", bias_initializer="zeros", **kwargs)
    layer(np.ones((1, 3), np.float32))
    return layer


def test_layer_constraints_applied_after_each_update_eagerly():
    layer = _dense_with(kernel_constraint="max_norm", bias_constraint=constraints.NonNeg())
    opt = tf.keras.optimizers.SGD(1.0)
    grads = [tf.constant(-np.ones((3, 2), np.float32)), tf.constant(np.ones(2, np.float32))]
    opt.apply(grads, layer.trainable_variables)
    # the kernel's columns went to norm sqrt(3 * 2**2) and back down to 2; the bias to -1, then 0
    np.testing.assert_allclose(np.linalg.norm(layer.kernel.numpy(), axis=0), 2.0, rtol=1e-6)
    np.testing.assert_array_equal(layer.bias.numpy(), 0.0)


def test_layer_constraints_applied_in_a_traced_step():
    layer = _dense_with(kernel_constraint=constraints.UnitNorm(), bias_constraint="non_neg")
    opt = tf.keras.optimizers.SGD(0.5)
    x = tf.constant(np.ones((4, 3), np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x))
        grads = tape.gradient(loss, layer.trainable_variables)
        opt.apply(grads, layer.trainable_variables)

    step()
    step()
    np.testing.assert_allclose(np.linalg.norm(layer.kernel.numpy(), axis=0), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(layer.bias.numpy(), 0.0)


def test_layer_configs_carry_constraints():
    layer = tf.keras.layers.Dense(2, kernel_constraint=constraints.MaxNorm(3.0, axis=1))
    config = layer.get_config()
    assert config["kernel_constraint"] == {"class_name": "MaxNorm",
                                           "config": {"max_value": 3.0, "axis": 1}}
    assert config["bias_constraint"] is None
    clone = tf.keras.layers.Dense.from_config(config)
    assert isinstance(clone.kernel_constraint, constraints.MaxNorm)
    assert clone.kernel_constraint.get_config() == {"max_value": 3.0, "axis": 1}


@pytest.mark.parametrize("make", [
    lambda: tf.keras.layers.Embedding(5, 2, embeddings_constraint="non_neg"),
    lambda: tf.keras.layers.BatchNormalization(gamma_constraint="non_neg"),
    lambda: tf.keras.layers.LayerNormalization(beta_constraint="non_neg"),
    lambda: tf.keras.layers.Conv1D(2, 2, kernel_constraint="non_neg"),
    lambda: tf.keras.layers.LSTM(2, recurrent_constraint="non_neg"),
    lambda: tf.keras.layers.PReLU(alpha_constraint="non_neg"),
])
def test_constraint_arguments_reach_the_weights(make):
    layer = make()
    config = layer.get_config()
    assert {"class_name": "NonNeg", "config": {}} in config.values()
    assert any(isinstance(v.constraint, constraints.NonNeg) for v in _built(layer).weights)


def _built(layer):
    if isinstance(layer, tf.keras.layers.Embedding):
        layer(np.zeros((1, 2), np.int32))
    elif isinstance(layer, (tf.keras.layers.Conv1D, tf.keras.layers.LSTM)):
        layer(np.zeros((1, 3, 2), np.float32))
    else:
        layer(np.zeros((1, 2), np.float32))
    return layer


def test_bad_constraint_is_refused():
    with pytest.raises(ValueError, match="constraint"):
        tf.keras.layers.Dense(2, kernel_constraint="no_such_constraint")
