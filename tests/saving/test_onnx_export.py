"""``model.export(path, format="onnx")`` and ``tapeflow export``: every layer-battery case's
ONNX file, run by onnxruntime, gives tapeflow's inference output (atol 1e-5, float32); the batch
dimension stays dynamic; an op with no ONNX form is refused naming it.

Keras: keras/src/export/onnx_test.py::ExportONNXTest::test_standard_model_export (export a
model, run it with onnxruntime on a batch, compare with the model's predict; then on a batch of
another size, "the batch dimension is dynamic")."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.saving.format import SaveError
from tapeflow.saving.onnx_export import OPSET
from tests.layers.battery import _model
from tests.layers.layer_cases import CASES

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

_NUMPY_TYPES = {"tensor(float)": np.float32, "tensor(int32)": np.int32,
                "tensor(int64)": np.int64}


def run_onnx(path, inputs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(x).astype(_NUMPY_TYPES[i.type])
             for i, x in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def assert_serves_as_tapeflow(model, inputs, path):
    """The file's outputs are the model's inference outputs (atol 1e-5)."""
    want = model(inputs, training=False)
    got = run_onnx(path, inputs if isinstance(inputs, list) else [inputs])
    for g, w in zip(got, want if isinstance(want, (list, tuple)) else [want]):
        np.testing.assert_allclose(g, w.numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_layer_battery_case_exports_and_serves(case, tmp_path):
    tf.keras.backend.clear_session()
    model, x = _model(case, case.make())
    path = tmp_path / "model.onnx"
    model.export(path, format="onnx", verbose=False)  # onnx.checker (full_check) passes first
    assert_serves_as_tapeflow(model, x, path)


def test_multi_head_attention_exports(tmp_path):
    """MultiHeadAttention (the battery's exempt layer) in a functional model."""
    tf.keras.utils.set_random_seed(3)
    query, value = tf.keras.Input((3, 4)), tf.keras.Input((5, 4))
    out = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=3)(query, value)
    model = tf.keras.Model([query, value], out)
    model.export(tmp_path / "mha.onnx", format="onnx", verbose=False)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((2, 3, 4)).astype("float32"),
              rng.standard_normal((2, 5, 4)).astype("float32")]
    assert_serves_as_tapeflow(model, inputs, tmp_path / "mha.onnx")


def cnn():
    tf.keras.utils.set_random_seed(1)
    layers = tf.keras.layers
    return tf.keras.Sequential([
        tf.keras.Input((8, 8, 3)), layers.Conv2D(4, 3, padding="same", activation="relu"),
        layers.BatchNormalization(), layers.MaxPooling2D(), layers.Conv2D(4, 3, strides=2),
        layers.GlobalAveragePooling2D(), layers.Dense(5, activation="gelu"),
        layers.LayerNormalization(), layers.Dropout(0.2), layers.Dense(3, activation="softmax")])


def test_batch_dimension_stays_dynamic_and_opset_is_stated(tmp_path):
    """Keras: onnx_test.py::test_standard_model_export: two batch sizes, one file."""
    model = cnn()
    path = tmp_path / "cnn.onnx"
    model.export(path, format="onnx", verbose=False)
    proto = onnx.load(str(path))
    assert [op.version for op in proto.opset_import if op.domain in ("", "ai.onnx")] == [OPSET]
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [8, 8, 3]
    rng = np.random.default_rng(0)
    for batch in (1, 7):
        assert_serves_as_tapeflow(model, rng.standard_normal((batch, 8, 8, 3)).astype("float32"),
                                  path)


@tf.custom_gradient
def clipped_identity(x):
    def grad(dy):
        return tf.clip_by_value(dy, -1.0, 1.0)
    return tf.tanh(x) * 2.0, grad


def test_custom_gradient_activation_exports_its_forward(tmp_path):
    tf.keras.utils.set_random_seed(2)
    model = tf.keras.Sequential([tf.keras.Input((4,)),
                                 tf.keras.layers.Dense(3, activation=clipped_identity)])
    model.export(tmp_path / "cg.onnx", format="onnx", verbose=False)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
    assert_serves_as_tapeflow(model, x, tmp_path / "cg.onnx")


@pytest.mark.parametrize("index", [
    (Ellipsis, slice(None, None, -2)), (slice(None), slice(3, 0, -1), None, 1),
    (slice(None), -1), (Ellipsis, None, slice(1, None))], ids=str)
def test_static_slices_export(index, tmp_path):
    """Strided slices (Lambda x[index]): steps, negative steps, integers, None and ...."""
    model = tf.keras.Sequential([tf.keras.Input((5, 3)),
                                 tf.keras.layers.Lambda(lambda x: x[index] * 2.0)])
    model.export(tmp_path / "slice.onnx", format="onnx", verbose=False)
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype("float32")
    assert_serves_as_tapeflow(model, x, tmp_path / "slice.onnx")


def test_an_op_without_onnx_form_is_refused_by_name(tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((4,)),
                                 tf.keras.layers.Lambda(lambda x: tf.math.cumsum(x, axis=-1))])
    with pytest.raises(SaveError, match="op Cumsum.*has no ONNX form: tapeflow writes no ONNX "
                                        "for Cumsum"):
        model.export(tmp_path / "no.onnx", format="onnx", verbose=False)
    assert not (tmp_path / "no.onnx").exists()


def test_cli_exports_a_run_directory_and_a_saved_model(tmp_path, capsys):
    """``tapeflow export RUN_DIR`` (the housing run) and ``tapeflow export SAVED_MODEL``."""
    from tapeflow.cli import main
    from tapeflow.training.run import train
    from tests.trainer.helpers import small_config

    run = train(small_config(training={"epochs": 1, "batch_size": 2048}),
                output=tmp_path / "run", verbose=False)
    assert main(["export", str(tmp_path / "run"), "--format", "onnx",
                 "--output", str(tmp_path / "housing.onnx")]) == 0
    assert f"ONNX opset {OPSET}" in capsys.readouterr().out
    x = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
    assert_serves_as_tapeflow(run.model, x, tmp_path / "housing.onnx")

    run.model.export(tmp_path / "saved", verbose=False)
    assert main(["export", str(tmp_path / "saved"), "--output", str(tmp_path / "sm.onnx")]) == 0
    assert_serves_as_tapeflow(run.model, x, tmp_path / "sm.onnx")
    # an existing output is kept unless --overwrite
    assert main(["export", str(tmp_path / "saved"), "--output", str(tmp_path / "sm.onnx")]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
