"""ModelCheckpoint writes the whole model by default, and a file's name says what it holds
(Keras 3's rules: ``.keras`` for a whole model, ``.weights.h5`` for weights only)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import callbacks as cbs

from .helpers import regression_data, small_model


def test_default_checkpoint_is_the_whole_model(tmp_path):
    x, y = regression_data(32)
    model = small_model(optimizer=tf.keras.optimizers.Adam(0.01))
    path = tmp_path / "best.keras"
    model.fit(x, y, epochs=2, verbose=0, callbacks=[cbs.ModelCheckpoint(str(path),
                                                                        monitor="loss")])
    loaded = tf.keras.models.load_model(path)      # no code needed to rebuild it
    assert type(loaded).__name__ == "Sequential"
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert int(loaded.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())
    # load_weights reads a whole-model file too (Keras 3 does), optimizer state included
    fresh = small_model(seed=99, optimizer=tf.keras.optimizers.Adam(0.01))
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), model.predict(x, verbose=0))


def test_weights_only_checkpoint_needs_a_weights_name(tmp_path):
    with pytest.raises(ValueError, match=r"must end in \.weights\.h5"):
        cbs.ModelCheckpoint(str(tmp_path / "best.keras"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"must end in \.keras"):
        cbs.ModelCheckpoint(str(tmp_path / "best.weights.h5"))
    with pytest.raises(ValueError, match=r"must end in \.keras"):
        cbs.ModelCheckpoint(str(tmp_path / "best.ckpt"))
    x, y = regression_data(16)
    model = small_model()
    path = tmp_path / "best.weights.h5"
    model.fit(x, y, epochs=1, verbose=0, callbacks=[cbs.ModelCheckpoint(
        str(path), monitor="loss", save_weights_only=True)])
    fresh = small_model(seed=99)
    fresh.load_weights(path)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), model.predict(x, verbose=0))
