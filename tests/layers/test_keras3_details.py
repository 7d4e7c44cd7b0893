"""Keras 3's layer, loss and optimizer details (issue 19 item 6), each ported from the Keras test
named beside it (keras-team/keras, keras/src/...)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import activations
from tests.ops.gradcheck import check_grads


# --- hard_sigmoid / hard_silu: keras/src/activations/activations_test.py -----------------------
def _ref_hard_sigmoid(x):
    x = (x / 6.0) + 0.5
    return 0.0 if x <= 0 else (1.0 if x >= 1 else x)


def _ref_hard_silu(x):
    return x * np.minimum(np.maximum(0.0, x + 3.0), 6.0) * (1.0 / 6.0)


def test_hard_sigmoid():  # Keras: ActivationsTest::test_hard_sigmoid
    rng = np.random.RandomState(0)
    for x in (rng.uniform(0, 1, (1, 2, 5)), rng.uniform(-10, 10, 5),
              rng.uniform(-10, 10, (3, 3, 3))):
        np.testing.assert_allclose(activations.hard_sigmoid(x).numpy(),
                                   np.vectorize(_ref_hard_sigmoid)(x), rtol=1e-5)
    np.testing.assert_allclose(activations.hard_sigmoid(rng.uniform(5, 10, (2, 5))).numpy(),
                               np.ones((2, 5)), rtol=1e-5)


def test_hard_silu():  # Keras: ActivationsTest::test_hard_silu
    rng = np.random.RandomState(0)
    for x in (rng.uniform(-3, 3, (1, 2, 5)), rng.uniform(-10, 10, 5),
              rng.uniform(-10, 10, (3, 3, 3))):
        x = x.astype("float32")
        np.testing.assert_allclose(activations.hard_silu(x).numpy(),
                                   np.vectorize(_ref_hard_silu)(x), rtol=1e-5, atol=1e-7)
    big = rng.uniform(5, 10, (2, 5)).astype("float32")
    np.testing.assert_allclose(activations.hard_silu(big).numpy(), big, rtol=1e-5)
    np.testing.assert_array_equal(activations.hard_silu(-big).numpy(), 0.0)


def test_hard_sigmoid_by_name_and_gradients():
    assert activations.get("hard_sigmoid") is activations.hard_sigmoid
    assert activations.get("hard_swish") is activations.hard_silu
    layer = tf.keras.layers.Dense(2, activation="hard_sigmoid")
    assert layer.get_config()["activation"] == "hard_sigmoid"
    # away from the kinks at -3 and 3: first and second derivatives against differences
    x = np.array([-4.0, -2.5, -0.5, 1.0, 2.5, 4.0])
    check_grads(activations.hard_sigmoid, [x])
    check_grads(activations.hard_silu, [x])
