"""The TensorBoard callback's event files, read back with TensorBoard's own EventAccumulator.

Ported from Keras 3's keras/src/callbacks/tensorboard_test.py (TestTensorBoardV2), with the
tags it asserts; the values are checked against the History the same fit returns."""
import os

import numpy as np
import pytest

import tapeflow as tf

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator)

cbs = tf.keras.callbacks
X, Y = np.ones((10, 10, 10, 1), np.float32), np.ones((10, 1), np.float32)


def keras_test_model():
    """Keras's ``_get_model``: Input((10, 10, 1)), Flatten, Dense(1), sgd, mse."""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((10, 10, 1)), tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def read_run(path):
    events = EventAccumulator(os.fspath(path), size_guidance={"scalars": 0, "histograms": 0})
    events.Reload()
    return events


def scalar_tags(logdir):
    """{(run, tag)} of every scalar written under ``logdir`` (Keras's ``list_summaries``)."""
    found = set()
    for run in sorted(os.listdir(logdir)):
        found |= {(run, tag) for tag in read_run(os.path.join(logdir, run)).Tags()["scalars"]}
    return found


KERAS_EPOCH_TAGS = {("train", "epoch_loss"), ("validation", "epoch_loss"),
                    ("train", "epoch_learning_rate"),
                    ("validation", "evaluation_loss_vs_iterations")}


def test_basic_tags_and_values(tmp_path):
    """Keras: TestTensorBoardV2.test_TensorBoard_basic (its tags), and the values are fit's."""
    model = keras_test_model()
    history = model.fit(X, Y, batch_size=2, epochs=2, validation_data=(X, Y), verbose=0,
                        callbacks=[cbs.TensorBoard(tmp_path)])
    assert scalar_tags(tmp_path) == KERAS_EPOCH_TAGS
    train, validation = read_run(tmp_path / "train"), read_run(tmp_path / "validation")
    losses = train.Scalars("epoch_loss")
    assert [e.step for e in losses] == [0, 1]
    np.testing.assert_allclose([e.value for e in losses], history.history["loss"], rtol=1e-6)
    np.testing.assert_allclose([e.value for e in validation.Scalars("epoch_loss")],
                               history.history["val_loss"], rtol=1e-6)
    np.testing.assert_allclose([e.value for e in train.Scalars("epoch_learning_rate")],
                               [0.01, 0.01], rtol=1e-6)  # sgd's default
    # against the optimizer's step count: 5 steps an epoch
    assert [e.step for e in validation.Scalars("evaluation_loss_vs_iterations")] == [5, 10]


def test_no_spurious_event_files_and_batch_metrics(tmp_path):
    """Keras: test_TensorBoard_no_spurious_event_files (no validation run without validation
    data) and test_TensorBoard_batch_metrics (update_freq=1 adds batch_loss per step)."""
    model = keras_test_model()
    model.fit(X, Y, batch_size=2, epochs=2, verbose=0,
              callbacks=[cbs.TensorBoard(tmp_path, update_freq=1)])
    assert sorted(os.listdir(tmp_path)) == ["train"]
    assert scalar_tags(tmp_path) == {("train", "batch_loss"), ("train", "epoch_loss"),
                                     ("train", "epoch_learning_rate")}
    assert [e.step for e in read_run(tmp_path / "train").Scalars("batch_loss")] == \
        list(range(1, 11))


def test_update_freq_every_n_steps(tmp_path):
    model = keras_test_model()
    model.fit(X, Y, batch_size=2, epochs=2, verbose=0,
              callbacks=[cbs.TensorBoard(tmp_path, update_freq=4, write_graph=False)])
    assert [e.step for e in read_run(tmp_path / "train").Scalars("batch_loss")] == [4, 8]


def test_weight_histograms(tmp_path):
    """Keras: test_TensorBoard_weight_histograms: one ``<weight>/histogram`` per weight, in the
    train run, each summarising the weight's values at that epoch's end."""
    model = keras_test_model()
    model.fit(X, Y, batch_size=2, epochs=2, validation_data=(X, Y), verbose=0,
              callbacks=[cbs.TensorBoard(tmp_path, histogram_freq=1)])
    assert scalar_tags(tmp_path) == KERAS_EPOCH_TAGS
    train = read_run(tmp_path / "train")
    tags = train.Tags()["histograms"]
    assert {tag.rsplit("/", 1)[1] for tag in tags} == {"histogram"}
    assert len(tags) == 2  # the Dense layer's kernel and bias
    kernel = model.layers[-1].kernel
    [tag] = [t for t in tags if t.startswith(kernel.path)]
    last = train.Histograms(tag)[-1]
    assert last.step == 1
    values = kernel.numpy()
    assert last.histogram_value.num == values.size
    np.testing.assert_allclose([last.histogram_value.min, last.histogram_value.max,
                                last.histogram_value.sum], [values.min(), values.max(),
                                                            values.sum()], rtol=1e-5)


def test_traced_train_step_graph(tmp_path):
    model = keras_test_model()
    model.fit(X, Y, batch_size=2, epochs=1, verbose=0, callbacks=[cbs.TensorBoard(tmp_path)])
    graph = read_run(tmp_path / "train").Graph()
    ops = {node.op for node in graph.node}
    assert {"Placeholder", "BatchMatMulV2", "ReadVariableOp", "ApplyGradientDescent"} <= ops
    names = {node.name for node in graph.node}
    assert all(i.split(":")[0] in names for node in graph.node for i in node.input)


def test_eager_model_writes_no_graph(tmp_path):
    model = keras_test_model()
    model.compile("sgd", "mse", run_eagerly=True)
    model.fit(X, Y, batch_size=5, epochs=1, verbose=0, callbacks=[cbs.TensorBoard(tmp_path)])
    with pytest.raises(ValueError, match="no graph"):
        read_run(tmp_path / "train").Graph()


@pytest.mark.parametrize("arguments, message", [
    ({"profile_batch": 2}, "profile_batch=2 is not supported"),
    ({"embeddings_freq": 1}, "embeddings_freq=1 is not supported"),
    ({"write_images": True}, "write_images=True is not supported"),
    ({"update_freq": "step"}, "update_freq must be 'epoch', 'batch' or a positive integer"),
    ({"update_freq": 0}, "update_freq must be"),
    ({"histogram_freq": -1}, "histogram_freq must be a non-negative integer"),
])
def test_refused_arguments_are_named(tmp_path, arguments, message):
    with pytest.raises(ValueError, match=message):
        cbs.TensorBoard(tmp_path, **arguments)

