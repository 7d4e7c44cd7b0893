"""Embedding: rows of its table by id, masks, clear errors for bad ids (eagerly and in a traced
graph), gradients to the table, a traced function that takes new ids, saving; and the masking
hook of Layer.__call__ (compute_mask, call(mask=...))."""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import layers
from tests.ops.gradcheck import check_grads


def test_rows_of_the_table_and_keras_defaults():
    tf.keras.backend.clear_session()
    emb = layers.Embedding(5, 3)
    ids = np.array([[0, 4, 4], [2, 1, 0]])
    out = emb(ids)
    table = emb.embeddings.numpy()
    assert emb.name == "embedding" and emb.embeddings.path == "embedding/embeddings"
    assert out.shape == (2, 3, 3) and out.dtype == "float32"
    np.testing.assert_array_equal(out.numpy(), table[ids])
    assert np.all(np.abs(table) <= 0.05) and np.any(table != 0)  # Keras's "uniform": +-0.05
    assert getattr(out, "_keras_mask", None) is None  # mask_zero=False
    np.testing.assert_array_equal(emb(ids.astype(np.float32)).numpy(), out.numpy())  # cast
    assert emb.compute_output_shape((None, 3)) == (None, 3, 3)


def test_mask_zero_marks_padding():
    emb = layers.Embedding(4, 2, mask_zero=True)
    ids = np.array([[3, 1, 0], [0, 0, 2]])
    np.testing.assert_array_equal(emb(ids)._keras_mask.numpy(), ids != 0)
    np.testing.assert_array_equal(emb.compute_mask(tf.constant(ids)).numpy(), ids != 0)


def test_out_of_range_ids_raise_one_clear_error():
    emb = layers.Embedding(5, 2)
    with pytest.raises(ValueError, match=r"input id 5 is out of range.*input_dim=5"):
        emb(np.array([[1, 5]]))
    with pytest.raises(ValueError, match=r"input id -1"):
        emb(np.array([[-1, 2]]))
    traced = tf.function(lambda ids: emb(ids))
    traced(tf.constant([[1, 2]]))
    with pytest.raises(ValueError, match=r"indices\[0,1\] = 7 is not in \[0, 5\)"):
        traced(tf.constant([[1, 7]]))  # the graph's gather checks the ids when it runs
    with pytest.raises(ValueError, match="input_dim must be a positive integer"):
        layers.Embedding(0, 2)


def test_gradient_adds_repeated_ids_and_matches_finite_differences():
    emb = layers.Embedding(4, 2, dtype="float64")
    ids = np.array([[3, 0, 3], [3, 1, 1]])
    emb(ids)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(emb(ids))
    np.testing.assert_array_equal(tape.gradient(loss, emb.embeddings).numpy(),
                                  [[1, 1], [2, 2], [0, 0], [3, 3]])
    ids_t = tf.constant(ids)
    check_grads(lambda table: tf.nn.embedding_lookup(table, ids_t) ** 2,
                [emb.embeddings.numpy()], order=2)


def test_traced_function_looks_up_the_ids_it_is_given():
    emb = layers.Embedding(6, 2)
    f = tf.function(lambda ids: emb(ids))
    for ids in ([[1, 2]], [[5, 0]], [[3, 3]]):  # one trace, new ids each call
        np.testing.assert_array_equal(f(tf.constant(ids)).numpy(), emb(np.array(ids)).numpy())


def test_pretrained_weights_frozen():
    table = np.arange(12.0).reshape(4, 3)
    emb = layers.Embedding(4, 3, weights=[table], trainable=False)
    np.testing.assert_array_equal(emb(np.array([[2, 0]])).numpy(), table[[[2, 0]]])
    assert emb.trainable_variables == [] and len(emb.non_trainable_variables) == 1
    with pytest.raises(ValueError, match=r"table of shape \(4, 2\)"):
        layers.Embedding(4, 2, weights=[table])


def test_pretrained_table_on_the_device_stays_there():
    # a table on the current device (a GPU's under --device strict), as a user's CuPy array
    table = tf.constant(np.arange(12.0).reshape(4, 3), dtype=tf.float32)
    for given in (table, table._value):
        emb = layers.Embedding(4, 3, weights=[given])
        assert emb(tf.constant([[2, 0]])).device == table.device
        np.testing.assert_array_equal(emb(tf.constant([[2, 0]])).numpy(), table.numpy()[[[2, 0]]])


def test_config_round_trip():
    emb = layers.Embedding(7, 3, embeddings_initializer="glorot_uniform",
                           embeddings_regularizer="l2", mask_zero=True, input_length=4, name="e")
    config = emb.get_config()
    again = layers.Embedding.from_config(json.loads(json.dumps(config)))
    assert again.get_config() == config
    assert again.losses == [] and len(_built(again).losses) == 1


def _built(emb):
    emb(np.zeros((1, 4), np.int64))
    return emb


def test_in_sequential_fit_save_and_load(tmp_path):
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, (64, 5))
    y = (x[:, 0] >= 5).astype(np.int64)
    model = tf.keras.Sequential([layers.Embedding(10, 4, input_length=5), layers.Flatten(),
                                 layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, epochs=15, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0)[1] > 0.9
    path = str(tmp_path / "emb.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(model.predict(x, verbose=0), loaded.predict(x, verbose=0))


# --- the masking hook of Layer.__call__ -----------------------------------------------------------
class _SeesMask(layers.Layer):
    """Records the mask call() received; passes its input's mask on."""

    supports_masking = True

    def call(self, inputs, mask=None):
        self.seen = mask
        return inputs * 2.0


def test_call_receives_the_mask_and_supports_masking_passes_it_on():
    emb = layers.Embedding(4, 2, mask_zero=True)
    ids = np.array([[1, 0, 2]])
    sees = _SeesMask()
    out = sees(emb(ids))
    np.testing.assert_array_equal(sees.seen.numpy(), ids != 0)
    np.testing.assert_array_equal(out._keras_mask.numpy(), ids != 0)
    explicit = np.array([[True, True, False]])
    sees(emb(ids), mask=explicit)  # an explicit mask= wins
    np.testing.assert_array_equal(sees.seen, explicit)
    # a layer that does not support masking drops it (Keras's rule)
    assert getattr(layers.Flatten()(emb(ids)), "_keras_mask", None) is None
    assert sees(np.ones((1, 3, 2), np.float32)) is not None and sees.seen is None
