"""No device-to-host sync inside a training step: on a GPU each one stalls the queue.

The strict stand-in counts host reads of device data (``float(a)``, ``bool(a)``, copies to the
host).  A fit's count may depend on its epochs (a loss for the logs once per epoch) but not on
how many steps each epoch takes."""
import numpy as np
import pytest

import tapeflow as tf
from strict_device.strict_array import syncs


def _syncs_of_one_epoch(steps, optimizer, layers):
    tf.keras.backend.clear_session()
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16 * steps, 8)).astype("float32")
    y = rng.standard_normal((16 * steps, 1)).astype("float32")
    with tf.device("/GPU:0"):
        model = tf.keras.Sequential([tf.keras.Input((8,))] + layers() + [tf.keras.layers.Dense(1)])
        model.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # traced, data moved: not counted
        before = syncs()
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        return syncs() - before


def _dense():
    return [tf.keras.layers.Dense(16, activation="relu")]


def _dropout_and_norm():
    return [tf.keras.layers.Dense(16), tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Activation("relu"), tf.keras.layers.Dropout(0.2)]


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop", "adagrad", "adamax", "nadam"])
def test_a_training_step_never_reads_the_device(strict_gpu, optimizer):
    assert _syncs_of_one_epoch(8, optimizer, _dense) == _syncs_of_one_epoch(2, optimizer, _dense)


def test_dropout_and_batch_normalization_steps_never_read_the_device(strict_gpu):
    assert _syncs_of_one_epoch(8, "adam", _dropout_and_norm) == \
        _syncs_of_one_epoch(2, "adam", _dropout_and_norm)
