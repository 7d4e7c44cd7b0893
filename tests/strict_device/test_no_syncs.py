"""No device-to-host sync inside a training step: on a GPU each one stalls the queue.

The strict stand-in counts host reads of device data (``float(a)``, ``bool(a)``, copies to the
host).  A fit's count may depend on its epochs (a loss for the logs once per epoch) but not on
how many steps each epoch takes."""
import numpy as np
import pytest

import tapeflow as tf
from strict_device.strict_array import syncs


def _syncs_of_one_epoch(steps, optimizer, layers, classes=0):
    """Host reads of a second epoch's fit, evaluate and predict of ``steps`` batches each."""
    tf.keras.backend.clear_session()
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16 * steps, 8)).astype("float32")
    if classes:
        y = rng.integers(0, classes, 16 * steps)
        loss, metrics = "sparse_categorical_crossentropy", ["accuracy"]
    else:
        y = rng.standard_normal((16 * steps, 1)).astype("float32")
        loss, metrics = "mse", ["mae"]
    with tf.device("/GPU:0"):
        model = tf.keras.Sequential([tf.keras.Input((8,))] + layers()
                                    + [tf.keras.layers.Dense(classes or 1)])
        model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)  # traced, data moved: not counted
        before = syncs()
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        model.evaluate(x, y, batch_size=16, verbose=0)
        model.predict(x, batch_size=16, verbose=0)
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


def test_sparse_class_labels_are_not_read_back_at_every_step(strict_gpu):
    assert _syncs_of_one_epoch(8, "adam", _dense, classes=3) == \
        _syncs_of_one_epoch(2, "adam", _dense, classes=3)


def test_an_out_of_range_label_in_a_traced_step_on_a_device_gives_nan(strict_gpu):
    """As TensorFlow's GPU kernel; eagerly, and on the host, it is an error."""
    values = [[1.0, 2.0, 0.5], [0.1, 0.2, 0.3], [2.0, 0.0, 1.0]]
    loss = tf.function(tf.keras.losses.sparse_categorical_crossentropy)
    with tf.device("/CPU:0"):
        host_logits = tf.constant(values)
        want = loss(tf.constant([0, 2, 1]), host_logits).numpy()
        with pytest.raises(ValueError, match=r"class indices must lie in \[0, 3\)"):
            loss(tf.constant([0, 3, 1]), host_logits)
    with tf.device("/GPU:0"):
        logits = tf.constant(values)
        with pytest.raises(ValueError, match=r"class indices must lie in \[0, 3\)"):
            tf.keras.losses.sparse_categorical_crossentropy([0, 3, 1], logits)  # eagerly
        same = loss(tf.constant([0, 2, 1]), logits).numpy()
        bad = loss(tf.constant([0, 3, -1]), logits).numpy()
    np.testing.assert_array_equal(same, want)
    assert bad[0] == want[0] and np.isnan(bad[1]) and np.isnan(bad[2])


def test_batch_logs_are_read_from_the_device_only_when_a_callback_reads_them(strict_gpu):
    seen = []

    class Counts(tf.keras.callbacks.Callback):  # wants the hook, not the numbers
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    class Reads(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append((logs["loss"], dict(logs)))
            logs["extra"] = 1.0  # a callback may add to the logs, as in Keras

    def reads(steps, callback):
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16 * steps, 4)).astype("float32")
        y = x.sum(axis=1, keepdims=True)
        with tf.device("/GPU:0"):
            model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
            model.compile("sgd", "mse", metrics=["mae"])
            model.fit(x, y, batch_size=16, verbose=0)
            before = syncs()
            model.fit(x, y, batch_size=16, verbose=0, callbacks=[callback])
            return syncs() - before
    assert reads(8, Counts()) == reads(2, Counts())
    assert reads(8, Reads()) - reads(2, Reads()) == 6 * 2  # loss and mae at each extra step
    loss, logs = seen[-1]
    assert type(loss) is float and set(logs) == {"loss", "mae"}
    assert all(type(v) is float for v in logs.values())


def test_dropout_masks_are_drawn_on_the_device_not_copied_there_each_step(strict_gpu):
    from strict_device.strict_array import uploads

    def uploads_of_one_epoch(steps):
        tf.keras.backend.clear_session()
        tf.random.set_seed(0)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((16 * steps, 8)).astype("float32")
        y = rng.standard_normal((16 * steps, 1)).astype("float32")
        with tf.device("/GPU:0"):
            model = tf.keras.Sequential([tf.keras.Input((8,))] + _dropout_and_norm()
                                        + [tf.keras.layers.Dense(1)])
            model.compile("adam", "mse")
            model.fit(x, y, batch_size=16, epochs=1, verbose=0)
            before = uploads()
            model.fit(x, y, batch_size=16, epochs=1, verbose=0)
            return uploads() - before
    assert uploads_of_one_epoch(8) == uploads_of_one_epoch(2)
