"""Seed 002, the Keras-layer cells that test_seed_002_autodiff_intro.py skips.

"Gradients with respect to a model": ``layer = tf.keras.layers.Dense(2,
activation='relu')``, the gradient of a loss with respect to
``layer.trainable_variables``, and the cell printing
``f'{var.name}, shape: {g.shape}'`` for each variable.  Ported with
``import tapeflow as tf`` in place of ``import tensorflow as tf``.

The seed shows no outputs; TensorFlow 2.16+ (Keras 3, tapeflow's names) prints::

    kernel, shape: (3, 2)
    bias, shape: (2,)

(Keras 2 printed ``dense/kernel:0``; Keras 3's ``Variable.name`` is the short name and
``Variable.path`` the hierarchical one, ``dense/kernel``, whose layer name depends on how
many ``Dense`` layers the session has already made.)
"""
import re

import numpy as np

import tapeflow as tf


def _model_gradient():
    tf.random.set_seed(0)

    layer = tf.keras.layers.Dense(2, activation='relu')
    x = tf.constant([[1., 2., 3.]])

    with tf.GradientTape() as tape:
      # Forward pass
      y = layer(x)
      loss = tf.reduce_mean(y**2)

    # Calculate gradients with respect to every trainable variable
    grad = tape.gradient(loss, layer.trainable_variables)
    return layer, x, y, loss, grad


# Gradients with respect to a model: the trainable variables and their gradients
def test_gradients_with_respect_to_a_model(capsys):
    layer, x, y, loss, grad = _model_gradient()

    for var, g in zip(layer.trainable_variables, grad):
      print(f'{var.name}, shape: {g.shape}')

    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out == ["kernel, shape: (3, 2)", "bias, shape: (2,)"]

    kernel, bias = layer.trainable_variables
    assert kernel is layer.kernel and bias is layer.bias
    assert re.fullmatch(r"dense(_\d+)?/kernel", kernel.path), kernel.path
    assert re.fullmatch(r"dense(_\d+)?/bias", bias.path), bias.path
    assert [g.shape for g in grad] == [(3, 2), (2,)]


# Gradients with respect to a model: the values, against y = relu(x W + b), loss = mean(y**2)
def test_gradients_with_respect_to_a_model_values():
    layer, x, y, loss, grad = _model_gradient()

    xn = x.numpy()
    w, b = layer.kernel.numpy(), layer.bias.numpy()
    z = xn @ w + b
    yn = np.maximum(z, 0)
    # dloss/dy = 2 y / y.size; through relu: times (z > 0); dW = x^T dz, db = sum_rows dz
    dz = 2 * yn / yn.size * (z > 0)
    np.testing.assert_allclose(y.numpy(), yn, rtol=1e-6)
    np.testing.assert_allclose(loss.numpy(), np.mean(yn**2), rtol=1e-6)
    np.testing.assert_allclose(grad[0].numpy(), xn.T @ dz, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad[1].numpy(), dz.sum(axis=0), rtol=1e-5, atol=1e-7)
