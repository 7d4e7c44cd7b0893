"""Behaviour pinned down after review: each test failed before its fix."""
import numpy as np
import pytest

import tapeflow as tf


def test_numpy_views_of_tensors_are_read_only_and_copies_are_independent():
    v = tf.Variable([1.0, 2.0])
    view = np.asarray(v)
    if v.device.startswith("CPU"):  # a view of the host data: tensors are immutable
        with pytest.raises(ValueError):
            view[0] = 5.0
    else:  # a device tensor's host array is a fresh copy (as TF's GPU tensors'): writes stay there
        view[0] = 5.0
        assert v.numpy()[0] == 1.0
    copy = np.array(v, copy=True)
    copy[0] = 5.0
    assert v.numpy()[0] == 1.0


def test_a_layer_shared_by_two_parents_is_trained_once():
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
            self.stack = tf.keras.Sequential([self.dense])

        def call(self, x):
            return self.stack(x)

    net = Net()
    net(np.ones((1, 1), np.float32))
    assert len(net.trainable_variables) == 1 and net.count_params() == 1
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(net(np.ones((1, 1), np.float32)))
    opt = tf.optimizers.SGD(0.2)
    opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    np.testing.assert_allclose(net.dense.kernel.numpy(), [[0.8]])


def test_numpy_hyperparameters_keep_float32_variables_float32():
    v = tf.Variable([1.0, 2.0])
    opt = tf.optimizers.SGD(0.1, clipnorm=np.float64(1.0), weight_decay=np.float64(0.01))
    opt.apply_gradients([(tf.constant([3.0, 4.0]), v)])
    assert v.dtype == tf.float32


def test_input_gradient_penalty_for_one_feature_per_example():
    reg = tf.regularizers.InputGradient(1.0)
    g = tf.constant([0.5, -1.0, 2.0, 0.5])  # dL/dx of a batch-mean loss, batch of 4
    np.testing.assert_allclose(float(reg(g)), np.mean(np.abs(4 * g.numpy())), rtol=1e-6)


def test_matrix_norms_are_refused_rather_than_wrong():
    with pytest.raises(NotImplementedError):
        tf.norm(tf.ones((2, 2)), ord=1, axis=(0, 1))
    np.testing.assert_allclose(float(tf.norm(tf.ones((2, 2)), ord="fro", axis=(0, 1))), 2.0)


def test_boolean_mask_with_a_negative_axis():
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(tf.boolean_mask(x, [True, False, True], axis=-1).numpy(),
                                  [[1.0, 3.0], [4.0, 6.0]])


def test_axis_arguments_out_of_range_are_errors():
    with pytest.raises(ValueError, match="out of range"):
        tf.transpose(tf.ones((2, 3, 4)), [0, 1, 5])
    with pytest.raises(ValueError, match="out of range"):
        tf.expand_dims(tf.ones((2, 3)), 5)


def test_variable_value_read_inside_a_tape_is_differentiable():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v.value() * v.read_value()
    assert tape.gradient(y, v).numpy() == 6.0


def test_output_gradients_must_match_the_targets():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        a, b = x * 2.0, x * 3.0
    with pytest.raises(ValueError, match="1 tensors for 2 targets"):
        tape.gradient([a, b], x, output_gradients=[tf.constant(1.0)])


def test_flat_hessian_vector_product_for_one_matrix_variable():
    w = tf.Variable(np.eye(2))
    hv = tf.hessian_vector_product(lambda: tf.reduce_sum(w ** 3), [w], tf.ones(4, dtype=tf.float64))
    np.testing.assert_allclose(hv.numpy(), 6 * np.eye(2).ravel())


def test_none_is_not_a_dtype_and_integer_means_truncate():
    with pytest.raises(TypeError):
        tf.as_dtype(None)
    assert tf.reduce_mean(tf.constant([-1, -2])).numpy() == -1  # TensorFlow truncates toward 0


def test_a_constant_does_not_follow_the_callers_array():
    source = np.arange(4.0, dtype=np.float32)
    c = tf.constant(source, shape=(2, 2))
    source[0] = 100.0
    assert c.numpy()[0, 0] == 0.0


def test_keras_layer_edge_cases():
    inner = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
    outer = tf.keras.Sequential([inner, tf.keras.layers.Dense(1)])
    clone = tf.keras.Sequential.from_config(outer.get_config())
    assert isinstance(clone.layers[0], tf.keras.Sequential)
    assert tf.keras.layers.Flatten()(np.zeros((0, 2, 3), np.float32)).shape == (0, 6)
    out = tf.keras.layers.Dropout(0.5, noise_shape=(None, 1), seed=1)(np.ones((4, 3), np.float32),
                                                                     training=True).numpy()
    assert all(len(set(row)) == 1 for row in out)  # one draw per row
    assert tf.keras.layers.Dense(2)([[1.0, 2.0]]).shape == (1, 2)
    assert isinstance(tf.regularizers.get(tf.regularizers.L2), tf.regularizers.L2)


def test_packing_too_few_leaves_is_a_value_error():
    with pytest.raises(ValueError, match="fewer"):
        tf.nest.pack_sequence_as([1, [2, 3]], [1, 2])


def test_newton_refuses_gradient_update_options():
    with pytest.raises(ValueError, match="clipnorm"):
        tf.optimizers.Newton(clipnorm=1.0)
