"""tf.keras.utils (to_categorical, pad_sequences, set_random_seed) and tf.keras.regularizers'
lowercase names, as Keras's."""
import numpy as np
import pytest

import tapeflow as tf


def test_to_categorical():
    out = tf.keras.utils.to_categorical([0, 2, 1])
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert out.dtype == np.float32
    assert tf.keras.utils.to_categorical(np.array([[1], [0]]), num_classes=4).shape == (2, 4)
    assert tf.keras.utils.to_categorical(np.zeros((2, 3), int)).shape == (2, 3, 1)
    with pytest.raises(ValueError, match="not below num_classes=2"):
        tf.keras.utils.to_categorical([0, 2], num_classes=2)
    with pytest.raises(ValueError, match="integers"):
        tf.keras.utils.to_categorical([0.5, 1.0])
    assert tf.keras.utils.register_keras_serializable is tf.keras.saving.register_keras_serializable


# --- pad_sequences ---------------------------------------------------------------------------------
SEQUENCES = [[1], [2, 3], [4, 5, 6]]


def test_pad_sequences_as_keras_documents_it():
    pad = tf.keras.utils.pad_sequences
    np.testing.assert_array_equal(pad(SEQUENCES), [[0, 0, 1], [0, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(pad(SEQUENCES, value=-1), [[-1, -1, 1], [-1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(pad(SEQUENCES, padding="post"), [[1, 0, 0], [2, 3, 0], [4, 5, 6]])
    np.testing.assert_array_equal(pad(SEQUENCES, maxlen=2), [[0, 1], [2, 3], [5, 6]])
    np.testing.assert_array_equal(pad(SEQUENCES, maxlen=2, truncating="post"),
                                  [[0, 1], [2, 3], [4, 5]])
    assert pad(SEQUENCES).dtype == np.int32
    assert tf.keras.preprocessing.sequence.pad_sequences is pad


def test_pad_sequences_empty_vectors_floats_and_strings():
    pad = tf.keras.utils.pad_sequences
    np.testing.assert_array_equal(pad([[], [7]]), [[0], [7]])
    assert pad([[], []]).shape == (2, 0)
    vectors = pad([[[1, 2]], [[3, 4], [5, 6]]], padding="post")
    np.testing.assert_array_equal(vectors, [[[1, 2], [0, 0]], [[3, 4], [5, 6]]])
    floats = pad([[0.5], [1.5, 2.5]], dtype="float32", value=np.nan)
    np.testing.assert_array_equal(floats, [[np.nan, 0.5], [1.5, 2.5]])
    words = pad([["a"], ["b", "c"]], dtype=object, value="<pad>")
    assert words.tolist() == [["<pad>", "a"], ["b", "c"]]


def test_pad_sequences_errors_name_the_argument():
    pad = tf.keras.utils.pad_sequences
    with pytest.raises(ValueError, match="padding must be 'pre' or 'post', got 'middle'"):
        pad(SEQUENCES, padding="middle")
    with pytest.raises(ValueError, match="truncating must be"):
        pad(SEQUENCES, truncating="both")
    with pytest.raises(ValueError, match=r"sequences\[1\] is a int"):
        pad([[1], 2])
    with pytest.raises(ValueError, match="cannot hold the string value"):
        pad([["a"]], value="<pad>")
    with pytest.raises(ValueError, match=r"sequences\[1\]'s elements have shape \(3,\)"):
        pad([[[1, 2]], [[1, 2, 3]]])
    with pytest.raises(ValueError, match="maxlen must be"):
        pad(SEQUENCES, maxlen=-1)


# --- set_random_seed, regularizers ---------------------------------------------------------------
def test_set_random_seed_repeats_the_draws():
    tf.keras.utils.set_random_seed(11)
    first = tf.keras.layers.Dense(3)(np.ones((1, 2), np.float32)).numpy()
    tf.keras.utils.set_random_seed(11)
    np.testing.assert_array_equal(tf.keras.layers.Dense(3)(np.ones((1, 2), np.float32)).numpy(),
                                  first)


def test_regularizer_aliases_strings_and_config_round_trip():
    regs = tf.keras.regularizers
    assert regs.l1 is regs.L1 and regs.l2 is regs.L2 and regs.l1_l2 is regs.L1L2
    assert regs.l1_l2(l1=0.1, l2=0.2).get_config() == {"l1": 0.1, "l2": 0.2}
    w = tf.constant(np.array([[1.0, -2.0]], np.float32))
    assert float(regs.l2(0.5)(w)) == pytest.approx(2.5)
    assert float(regs.l1(0.5)(w)) == pytest.approx(1.5)
    layer = tf.keras.layers.Dense(2, kernel_regularizer="l1_l2", bias_regularizer="l2")
    config = layer.get_config()
    again = tf.keras.layers.Dense.from_config(config)
    assert isinstance(again.kernel_regularizer, regs.L1L2)
    assert again.bias_regularizer.get_config() == {"l2": 0.01}
    assert again.get_config() == config
    l1_layer = tf.keras.layers.Dense(2, kernel_regularizer=regs.l1(0.3))
    assert tf.keras.layers.Dense.from_config(l1_layer.get_config()).kernel_regularizer.l1 == 0.3
