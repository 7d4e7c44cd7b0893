"""tf.nn.sparse_softmax_cross_entropy_with_logits with tensor labels, eagerly and traced: the
loss line of TensorFlow's custom training loop.  Out-of-range labels follow the contract of
sparse_categorical_crossentropy (tests/models/test_traced_fit.py): an error eagerly and in a
traced step on the host, a NaN loss in a traced step on a device."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend

LABELS = [3, 0]
LOGITS = [[1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]]


def forward_backward(labels, logits):
    """As upstream's ``_opFwdBwd``: the loss and its gradient with respect to the logits."""
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return loss, tape.gradient(loss, logits)


@pytest.mark.parametrize("run", [forward_backward, tf.function(forward_backward)],
                         ids=["eager", "traced"])
def test_values_and_gradient(run):
    """Ported from tensorflow/python/kernel_tests/nn_ops/sparse_xent_op_test_base.py::
    SparseXentOpTestBase::testNpXent (and testFloat, which runs it through the op)."""
    loss, gradient = run(tf.constant(LABELS), tf.constant(LOGITS))
    np.testing.assert_allclose(loss.numpy(), [1.3862, 3.4420], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(gradient.numpy(), [[0.25, 0.25, 0.25, -0.75],
                                                  [-0.968, 0.087, 0.237, 0.6439]],
                               rtol=1e-3, atol=1e-3)


def test_out_of_range_labels():
    """Ported from tensorflow/python/kernel_tests/nn_ops/sparse_xent_op_test_base.py::
    SparseXentOpTestBase::testInvalidLabelCPU (an error, eagerly and in a graph) and
    testInvalidLabelGPU (a traced step on a device: NaN for the rows of labels 4 and -1; their
    gradient is 0, as upstream's deterministic variant asserts)."""
    labels = tf.constant([4, 3, 0, -1])
    logits = tf.constant([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0],
                          [1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        forward_backward(labels, logits)
    traced = tf.function(forward_backward)
    if backend.device_module() is np:
        with pytest.raises(ValueError, match=r"\[0, 4\)"):
            traced(labels, logits)
        return
    loss, gradient = traced(labels, logits)
    np.testing.assert_allclose(loss.numpy(), [np.nan, 1.3862, 3.4420, np.nan], rtol=1e-3,
                               atol=1e-3)
    np.testing.assert_allclose(gradient.numpy(), [[0.0] * 4, [0.25, 0.25, 0.25, -0.75],
                                                  [-0.968, 0.087, 0.237, 0.6439], [0.0] * 4],
                               rtol=1e-3, atol=1e-3)


def custom_training_loop(traced):
    """TensorFlow's training loop written from scratch: a tape, the loss of the logits, the
    optimizer's apply_gradients; the step under @tf.function or eager."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = ((x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0)).astype(np.int32)  # three classes
    tf.random.set_seed(1)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(3)])
    optimizer = tf.keras.optimizers.SGD(0.5)

    def train_step(x_batch, y_batch):
        with tf.GradientTape() as tape:
            logits = model(x_batch, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y_batch, logits=logits))
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        return loss

    step = tf.function(train_step) if traced else train_step
    losses = [float(step(tf.constant(x[i:i + 16]), tf.constant(y[i:i + 16])))
              for _ in range(10) for i in range(0, 64, 16)]
    return np.array(losses), model.get_weights(), step


def test_a_traced_custom_training_loop_trains_as_the_eager_one():
    eager_losses, eager_weights, _ = custom_training_loop(traced=False)
    losses, weights, step = custom_training_loop(traced=True)
    assert step.experimental_get_tracing_count() == 1
    assert losses[-4:].mean() < 0.7 * losses[:4].mean()
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-6)
    for w, want in zip(weights, eager_weights):
        np.testing.assert_allclose(w, want, rtol=1e-6, atol=1e-7)
