"""What the table tests (cases.py) do not say about the hinge, KL, Poisson, log-cosh and
cosine losses: Keras's label conversion, stability, the sign and axis of the cosine loss,
and use in compile/fit."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import losses

from . import references as ref


def test_hinge_converts_zero_one_labels_and_keeps_signed_ones():
    p = np.array([[0.3, -2.0], [1.5, 0.2]])
    zero_one = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(losses.hinge(zero_one, p).numpy(),
                               losses.hinge(2 * zero_one - 1, p).numpy(), rtol=1e-15)
    other = np.array([[0.5, -1.0], [2.0, 1.0]])  # not all 0/1: used as they are
    np.testing.assert_allclose(losses.hinge(other, p).numpy(),
                               np.mean(np.maximum(1 - other * p, 0), -1), rtol=1e-15)


def test_traced_hinge_decides_the_label_conversion_per_batch():
    f = tf.function(lambda t, p: losses.squared_hinge(t, p))
    p = np.array([[0.3, -2.0, 0.7]])
    for t in (np.array([[1.0, 0.0, 1.0]]), np.array([[1.0, -1.0, 0.0]])):
        np.testing.assert_allclose(f(tf.constant(t), tf.constant(p)).numpy(),
                                   ref.squared_hinge(t, p), rtol=1e-15)


def test_log_cosh_is_finite_and_linear_far_out_in_float32():
    p = tf.constant([[1e4, -1e4, 100.0]], dtype=tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(p)
        value = losses.log_cosh(np.zeros((1, 3), np.float32), p)
    want = np.mean(np.abs([1e4, -1e4, 100.0]) - np.log(2.0))
    np.testing.assert_allclose(value.numpy(), [want], rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(value, p).numpy(), [[1 / 3, -1 / 3, 1 / 3]],
                               rtol=1e-6)


def test_cosine_similarity_is_negative_when_aligned_and_takes_an_axis():
    a = np.array([[1.0, 2.0, 2.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(losses.cosine_similarity(a, 3 * a).numpy(), [-1, -1])
    np.testing.assert_allclose(losses.cosine_similarity(a, -a).numpy(), [1, 1])
    rng = np.random.default_rng(0)
    t, p = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(losses.cosine_similarity(t, p, axis=0).numpy(),
                               ref.cosine_similarity(t, p, axis=0), rtol=1e-12)
    loss = losses.CosineSimilarity(axis=0, reduction="sum", dtype="float64")
    np.testing.assert_allclose(loss(t, p).numpy(), ref.cosine_similarity(t, p, axis=0).sum(),
                               rtol=1e-12)


def test_cosine_similarity_of_a_zero_vector_has_a_finite_gradient():
    p = tf.constant([[0.0, 0.0], [1.0, 2.0]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(p)
        value = losses.CosineSimilarity()(np.ones((2, 2)), p)
    assert np.all(np.isfinite(tape.gradient(value, p).numpy()))


def test_kl_divergence_is_zero_for_equal_distributions_and_clips():
    q = np.array([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(losses.kld(q, q).numpy(), [0.0], atol=1e-15)
    assert np.isfinite(losses.KLDivergence()(np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]])))


@pytest.mark.parametrize("name", ["hinge", "squared_hinge", "kld", "poisson", "log_cosh",
                                  "cosine_similarity", "Poisson", "LogCosh"])
def test_every_new_loss_trains_a_model_by_name(name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = np.abs(x[:, :2]) / np.abs(x[:, :2]).sum(-1, keepdims=True)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=name)
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0).history["loss"]
    assert np.all(np.isfinite(history)) and history[-1] < history[0]
