"""tf.train.Checkpoint and tf.train.CheckpointManager: object-keyed values, one checked file a
checkpoint, numbered saves with the oldest deleted.

Ported from TensorFlow's tensorflow/python/checkpoint/checkpoint_test.py and
checkpoint_management_test.py, with the values they assert (``checkpoint_exists`` is
whether the checkpoint's file is there).
"""
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving.checkpoint_management import checkpoint_exists, get_checkpoint_state
from tapeflow.saving.format import LoadError


class MyModel(tf.keras.Model):
    """TensorFlow's checkpoint_test.MyModel: two Dense layers, one in a private attribute."""

    def __init__(self):
        super().__init__()
        self._named_dense = tf.keras.layers.Dense(1, use_bias=True)
        self._second = tf.keras.layers.Dense(1, use_bias=False)

    def call(self, values):
        return self._second(self._named_dense(values))


def _train_one_step(model, optimizer):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.constant([[3.0]])))
    variables = model.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))


def test_save_restore(tmp_path):
    # TF: python/checkpoint/checkpoint_test.py::CheckpointingTests::testSaveRestore
    model = MyModel()
    optimizer = tf.keras.optimizers.Adam(0.001)
    root = tf.train.Checkpoint(optimizer=optimizer, model=model)
    _train_one_step(model, optimizer)
    assert not root.save_counter.trainable
    bias = model._named_dense.variables[1]
    bias.assign([42.0])
    m_bias_slot = optimizer.get_slot(bias, "momentum")
    m_bias_slot.assign([1.5])
    save_path = root.save(file_prefix=str(tmp_path / "ckpt"))
    bias.assign([43.0])
    m_bias_slot.assign([-2.0])
    root.save_counter.assign(3)
    status = root.restore(save_path)
    status.assert_consumed()
    assert bias.numpy().tolist() == [42.0]
    assert m_bias_slot.numpy().tolist() == [1.5]
    assert int(root.save_counter) == 1
    assert os.path.basename(save_path) == "ckpt-1"


def test_restore_into_new_objects_by_attribute_path(tmp_path):
    """Object-keyed: another model of the same structure restores, whatever its variables'
    names; the keys follow TensorFlow's ``<path>/.ATTRIBUTES/VARIABLE_VALUE``."""
    m = tf.Module()
    m.v = tf.Variable([1.0, 2.0], name="first_name")
    m.layers = [tf.Variable(3.0)]
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "ckpt"))
    other = tf.Module()
    other.v = tf.Variable([0.0, 0.0], name="another_name")
    other.layers = [tf.Variable(0.0)]
    tf.train.Checkpoint(model=other).read(path).assert_consumed()
    assert other.v.numpy().tolist() == [1.0, 2.0] and float(other.layers[0]) == 3.0
    doc = json.loads(_document_of(path + ".h5"))
    assert sorted(e["key"] for e in doc["values"]) == [
        "model/layers/0/.ATTRIBUTES/VARIABLE_VALUE", "model/v/.ATTRIBUTES/VARIABLE_VALUE",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]


def _document_of(h5_path):
    import h5py
    with h5py.File(h5_path, "r") as f:
        return f["graph.json"][()].tobytes().decode()


def test_assert_consumed_no_checkpoint_and_expect_partial(tmp_path):
    # TF: python/checkpoint/checkpoint_test.py::CheckpointingTests::testAssertConsumedNoCheckpoint
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    save_path = ckpt.save(file_prefix=str(tmp_path / "ckpt"))
    ckpt.restore(save_path=save_path).assert_consumed()
    # a checkpoint with more than the objects have: partial
    bigger = tf.train.Checkpoint(v=tf.Variable(5.0), w=tf.Variable(6.0))
    path = bigger.write(str(tmp_path / "bigger"))
    status = ckpt.restore(path)
    assert float(v) == 5.0
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint.*w/"):
        status.assert_consumed()
    status.assert_existing_objects_matched()
    status.expect_partial()
    # objects with more than the checkpoint has
    status = bigger.restore(save_path)
    with pytest.raises(AssertionError, match="not restored.*w/"):
        status.assert_existing_objects_matched()
    with pytest.raises(AssertionError):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(None).assert_consumed()


def test_a_mismatched_shape_and_a_damaged_file_are_refused(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "ckpt"))
    with pytest.raises(ValueError, match=r"'v/.ATTRIBUTES/VARIABLE_VALUE' is float32\[2\]"):
        tf.train.Checkpoint(v=tf.Variable([1.0, 2.0, 3.0])).restore(path)
    data = (tmp_path / "ckpt.h5").read_bytes()
    (tmp_path / "ckpt.h5").write_bytes(data[: len(data) // 2])
    with pytest.raises(LoadError):
        tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).restore(path)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="expecting trackable objects"):
        tf.train.Checkpoint(n=3)


def test_deletion(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testDeletion
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), str(tmp_path), max_to_keep=3)
    first, second, third, fourth = (manager.save() for _ in range(4))
    assert checkpoint_exists(fourth) and checkpoint_exists(third) and checkpoint_exists(second)
    assert not checkpoint_exists(first)


def test_keep_all(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testKeepAll
    checkpoint = tf.train.Checkpoint()
    directory = str(tmp_path / "d")
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=None)
    first, second, third = manager.save(), manager.save(), manager.save()
    assert all(checkpoint_exists(p) for p in (first, second, third))
    assert manager.latest_checkpoint == third
    assert manager.checkpoints == [first, second, third]
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=None)
    fourth = manager.save()
    assert manager.checkpoints == [first, second, third, fourth]
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)
    assert manager.checkpoints == [first, second, third, fourth]
    assert all(checkpoint_exists(p) for p in (first, second, third, fourth))
    fifth = manager.save()
    assert manager.checkpoints == [third, fourth, fifth]
    assert all(checkpoint_exists(p) for p in (third, fourth, fifth))
    assert not checkpoint_exists(second) and not checkpoint_exists(first)


def test_continue_from_unmanaged(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testContinueFromUnmanaged
    directory = str(tmp_path)
    prefix = os.path.join(directory, "unusual_prefix")
    checkpoint = tf.train.Checkpoint()
    first, second = checkpoint.save(prefix), checkpoint.save(prefix)
    checkpoint = tf.train.Checkpoint()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint).run_restore_ops()
    assert int(checkpoint.save_counter) == 2
    third = manager.save()
    assert manager.checkpoints == [third]
    fourth = manager.save()
    assert manager.checkpoints == [third, fourth]
    fifth = manager.save()
    assert manager.checkpoints == [fourth, fifth]
    assert checkpoint_exists(first) and checkpoint_exists(second)
    assert not checkpoint_exists(third)
    assert checkpoint_exists(fourth) and checkpoint_exists(fifth)


def test_custom_numbering(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testCustomNumbering
    directory = str(tmp_path)
    step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(step=step)
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    for i in range(5):
        path = manager.save(checkpoint_number=step)
        assert path.endswith(f"-{2 * i}")
        step.assign_add(2)
    assert int(checkpoint.save_counter) == 5
    last_path = manager.save(checkpoint_number=32)
    assert "-32" in last_path
    assert last_path == manager.latest_checkpoint == tf.train.latest_checkpoint(directory)
    assert get_checkpoint_state(directory).all_model_checkpoint_paths == [path, last_path]


def test_custom_checkpoint_prefix(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testCustomCheckpointPrefix
    checkpoint = tf.train.Checkpoint()
    manager = tf.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=2,
                                         checkpoint_name="ckpt_name")
    assert os.path.basename(manager.save(checkpoint_number=5)) == "ckpt_name-5"
    manager = tf.train.CheckpointManager(checkpoint, tmp_path, max_to_keep=2)
    assert os.path.basename(manager.save(checkpoint_number=5)) == "ckpt-5"
    # TF: ...::testLatestCheckpointFSpathDirectory (a pathlib directory)
    assert tf.train.latest_checkpoint(tmp_path) == str(tmp_path / "ckpt-5")


def test_restore_or_initialize(tmp_path):
    # TF: python/checkpoint/checkpoint_management_test.py::CheckpointManagerTest::testRestoreOrInitialize
    init_v = tf.Variable(2.0)
    init_path = tf.train.Checkpoint(v=init_v).save(str(tmp_path / "init"))
    v = tf.Variable(1.0)
    checkpoint = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(
        checkpoint, str(tmp_path / "ckpt"), max_to_keep=None,
        init_fn=lambda: checkpoint.restore(init_path).run_restore_ops())
    assert manager.restore_or_initialize() is None
    assert float(v) == 2.0
    manager.save()
    assert manager.restore_or_initialize() is not None


def test_a_state_file_pointing_outside_the_directory_is_not_followed(tmp_path):
    outside = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "outside"))
    directory = tmp_path / "d"
    directory.mkdir()
    (directory / "checkpoint").write_text(
        f'model_checkpoint_path: "../outside"\nall_model_checkpoint_paths: "{outside}"\n')
    assert tf.train.latest_checkpoint(directory) is None
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), directory, max_to_keep=1)
    assert manager.checkpoints == [] and manager.latest_checkpoint is None
    manager.save()
    manager.save()
    assert os.path.exists(outside + ".h5")  # never a manager's to delete


def test_optimizer_slots_are_keyed_by_their_variables_path_not_layer_names(tmp_path):
    """Two models of one architecture in one process have different layer names (dense,
    dense_1): slots keyed after the variable's attribute path restore across them."""
    def trained():
        model = MyModel()
        optimizer = tf.keras.optimizers.Adam(0.1)
        _train_one_step(model, optimizer)
        return model, optimizer

    (m1, o1), (m2, o2) = trained(), trained()
    assert m1._named_dense.kernel.path != m2._named_dense.kernel.path
    _train_one_step(m1, o1)
    path = tf.train.Checkpoint(model=m1, optimizer=o1).write(str(tmp_path / "ckpt"))
    tf.train.Checkpoint(model=m2, optimizer=o2).read(path).assert_consumed()
    for v1, v2 in zip(m1.trainable_variables, m2.trainable_variables):
        np.testing.assert_array_equal(v1.numpy(), v2.numpy())
        for slot in ("momentum", "velocity"):
            np.testing.assert_array_equal(o1.get_slot(v1, slot).numpy(),
                                          o2.get_slot(v2, slot).numpy())
    assert int(o2.iterations) == 2


def test_resuming_training_restores_an_optimizer_that_has_not_stepped_yet(tmp_path):
    """A fresh optimizer has no slots; a restore makes them (TensorFlow restores a slot when it
    is created), so training goes on exactly as the saved run would have."""
    model, optimizer = MyModel(), tf.keras.optimizers.Adam(0.1)
    _train_one_step(model, optimizer)
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(str(tmp_path / "ckpt"))
    resumed, fresh = MyModel(), tf.keras.optimizers.Adam(0.1)
    resumed(tf.constant([[1.0]]))  # the model's variables exist; the optimizer's do not
    tf.train.Checkpoint(model=resumed, optimizer=fresh).restore(path).assert_consumed()
    assert int(fresh.iterations) == 1
    _train_one_step(model, optimizer)
    _train_one_step(resumed, fresh)
    for a, b in zip(model.trainable_variables, resumed.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
