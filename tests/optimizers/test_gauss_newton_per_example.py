"""The Gauss-Newton Jacobian by examples' own gradients, read off the tape per layer (x_i outer
s_i for a Dense kernel, s_i for its bias): equal to the whole batch's Jacobian, taken in one
pass where every variable enters as a Dense layer's, by chunks of examples otherwise."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.optimizers.gauss_newton import output_jacobian


def _jacobians(model, x):
    """(J of the whole batch in one pass, J by examples, the example ranges asked for)."""
    model(x)
    variables = model.trainable_variables
    width = int(np.prod(model(x[:1]).shape[1:]))
    chunk = 64 // width  # with fewer parameters than chunk x width, one whole pass is as cheap
    assert sum(int(np.prod(v.shape)) for v in variables) > chunk * width
    calls = []

    def outputs_on(start, stop):
        calls.append((start, stop))
        return model(x[start:stop], training=True)
    _, whole = output_jacobian(lambda: model(x, training=True), variables)
    _, by_examples = output_jacobian(lambda: model(x, training=True), variables, outputs_on)
    return whole, by_examples, calls


def _dense(units, **kwargs):
    return tf.keras.layers.Dense(units, dtype="float64", **kwargs)


@pytest.mark.parametrize("case", ["mlp", "three-layers-no-bias", "sequence-axis"])
def test_per_layer_jacobian_is_the_whole_batch_jacobian_in_one_pass(case):
    rng = np.random.default_rng(1)
    tf.random.set_seed(2)
    if case == "mlp":  # two outputs per example: rows i*2 + r
        x = tf.constant(rng.standard_normal((150, 3)))
        model = tf.keras.Sequential([_dense(12, activation="tanh"), _dense(2)], dtype="float64")
    elif case == "three-layers-no-bias":
        x = tf.constant(rng.standard_normal((150, 3)))
        model = tf.keras.Sequential([_dense(10, activation="relu"),
                                     _dense(8, activation="sigmoid", use_bias=False), _dense(1)],
                                    dtype="float64")
    else:  # Dense on (examples, steps, features): each example's gradient sums over its steps
        x = tf.constant(rng.standard_normal((150, 4, 3)))
        model = tf.keras.Sequential([_dense(6, activation="tanh"),
                                     tf.keras.layers.Flatten(dtype="float64"), _dense(2)],
                                    dtype="float64")
    whole, by_examples, calls = _jacobians(model, x)
    np.testing.assert_allclose(by_examples, whole, rtol=1e-12, atol=1e-13)
    assert len(calls) == 1  # the independence check only: no chunk passes


def test_a_shared_layer_falls_back_to_chunks_of_examples():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((150, 8)))
    tf.random.set_seed(4)
    shared = _dense(8, activation="tanh")  # its kernel is read by two matmuls

    class Twice(tf.keras.Model):
        def __init__(self):
            super().__init__(dtype="float64")
            self.shared, self.head = shared, _dense(1)

        def call(self, inputs, training=False):
            return self.head(self.shared(self.shared(inputs)))
    whole, by_examples, calls = _jacobians(Twice(), x)
    np.testing.assert_allclose(by_examples, whole, rtol=1e-12, atol=1e-13)
    assert len(calls) > 1 + 150 // 64


def test_coupled_examples_take_the_whole_batch_pass():
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((150, 3)))
    tf.random.set_seed(8)
    model = tf.keras.Sequential([_dense(20), tf.keras.layers.BatchNormalization(dtype="float64"),
                                 _dense(1)], dtype="float64")
    whole, by_examples, calls = _jacobians(model, x)
    np.testing.assert_allclose(by_examples, whole, rtol=1e-12, atol=1e-13)
    assert calls == [(0, 64)]
