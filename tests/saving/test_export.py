"""Keras 3's ``model.export``: a SavedModel whose ``serve`` endpoint computes what the model
does, for any batch size, in a process that has none of the model's code.

Ported from Keras 3's keras/src/export/saved_model_test.py (``ExportSavedModelTest``), with the
values it asserts.
"""
import numpy as np
import pytest

import tapeflow as tf


class CustomModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(10)
        self.dense2 = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense2(self.dense1(x))


def _model(kind):
    if kind == "sequential":
        return tf.keras.Sequential([tf.keras.Input((10,)), tf.keras.layers.Dense(1)])
    if kind == "functional":
        inputs = tf.keras.Input((10,))
        return tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    return CustomModel()


@pytest.mark.parametrize("kind", ["sequential", "functional", "subclass"])
def test_standard_model_export(tmp_path, kind):
    # Keras: keras/src/export/saved_model_test.py::ExportSavedModelTest::test_standard_model_export
    model = _model(kind)
    batch_size = 3
    ref_input = np.random.default_rng(0).normal(size=(batch_size, 10)).astype("float32")
    ref_output = model(ref_input).numpy()
    model.export(str(tmp_path / "artifact"), verbose=False)
    revived = tf.saved_model.load(str(tmp_path / "artifact"))
    np.testing.assert_allclose(ref_output, revived.serve(ref_input).numpy(), rtol=1e-6)
    # a batch of another size, and the serving signature (keywords in, a dict out)
    np.testing.assert_allclose(model(ref_input[:1]).numpy(),
                               revived.serve(ref_input[:1]).numpy(), rtol=1e-6)
    out = revived.signatures["serving_default"](inputs=ref_input)
    np.testing.assert_allclose(out["output_0"].numpy(), ref_output, rtol=1e-6)
    assert len(revived.variables) == len(model.variables)


def test_export_refuses_an_unknown_format_and_an_unknown_input_shape(tmp_path):
    model = _model("sequential")
    with pytest.raises(ValueError, match="format 'tflite' is not supported.*'tf_saved_model' "
                                         "and format='onnx'"):
        model.export(str(tmp_path / "a"), format="tflite")
    with pytest.raises(ValueError, match="input shape of model .* is not known"):
        CustomModel().export(str(tmp_path / "b"), verbose=False)
    unbuilt = CustomModel()
    unbuilt.export(str(tmp_path / "c"), verbose=False,
                   input_signature=[tf.TensorSpec([None, 4], "float32")])
    assert tf.saved_model.load(str(tmp_path / "c")).serve(np.ones((2, 4), "float32")).shape == (2, 1)
