"""tf.keras.utils: to_categorical as Keras's."""
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
