"""AdamW: Adam after a decoupled decay of lr * weight_decay, Keras 3's defaults."""
import numpy as np
import pytest

import tapeflow as tf


def test_adamw_is_decay_then_adam():
    w0 = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.1, -0.3], np.float32)
    a, b = tf.Variable(w0), tf.Variable(w0 * (1 - 0.01 * 0.1))
    tf.optimizers.AdamW(0.01, weight_decay=0.1).apply_gradients([(tf.constant(g), a)])
    tf.optimizers.Adam(0.01).apply_gradients([(tf.constant(g), b)])
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_adamw_defaults_names_and_config():
    opt = tf.keras.optimizers.get("AdamW")
    assert type(opt).__name__ == "AdamW" and opt.weight_decay == 0.004
    again = tf.keras.optimizers.deserialize(tf.keras.optimizers.serialize(opt))
    assert type(again).__name__ == "AdamW" and again.weight_decay == 0.004
    with pytest.raises(ValueError, match="weight_decay"):
        tf.optimizers.AdamW(weight_decay=None)
