"""The dtype a loss computes in, as Keras 3's: ``floatx()`` (float32) unless ``dtype`` says
otherwise, whatever the inputs' float dtype; a dtype policy's compute dtype; float32 under a
mixed_float16 global policy.  Ported from keras/src/losses/loss_test.py and losses_test.py
(each ``test_dtype_arg`` there uses bfloat16: ml_dtypes' bfloat16, where it is installed, and
float16 too, as loss_test.py's own test_dtype_arg does)."""
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, mixed_precision

losses = tf.keras.losses


class ExampleLoss(losses.Loss):
    def call(self, y_true, y_pred):
        return (y_true - y_pred) ** 2


Y_TRUE = np.array([1.0, 0.0, 1.0, 0.0])
Y_PRED = np.array([0.1, 0.2, 0.3, 0.4])


@pytest.fixture
def restore_floatx_and_policy():
    # None: the global policy follows floatx (another test may have set "float32" itself)
    mixed_precision.set_global_policy(None)
    yield
    backend.set_floatx("float32")
    mixed_precision.set_global_policy(None)


@pytest.mark.parametrize("reduction, expected", [
    (None, (Y_TRUE - Y_PRED) ** 2),
    ("sum", np.sum((Y_TRUE - Y_PRED) ** 2)),
    ("sum_over_batch_size", np.sum((Y_TRUE - Y_PRED) ** 2) / 4)])
def test_reduction_of_float64_inputs_is_float32(reduction, expected):
    # Keras: loss_test.py::LossTest::test_reduction (float64 numpy inputs, a float32 loss)
    loss = ExampleLoss(reduction=reduction)(Y_TRUE, Y_PRED)
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)


def test_sample_weight_of_float64_inputs_is_float32():
    # Keras: loss_test.py::LossTest::test_sample_weight
    sample_weight = np.array([0.4, 0.3, 0.2, 0.1])
    loss = ExampleLoss()(Y_TRUE, Y_PRED, sample_weight=sample_weight)
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(loss.numpy(), np.sum(sample_weight * (Y_TRUE - Y_PRED) ** 2) / 4,
                               rtol=1e-6)
    loss = ExampleLoss()(Y_TRUE, Y_PRED, sample_weight=np.zeros(4))
    assert loss.dtype == tf.float32 and loss.numpy() == 0  # no NaN


_REGRESSION = (np.array([[1, 9, 2], [-5, -2, 6]]),
               np.array([[4, 8, 12], [8, 1, 3]], dtype="float32"))
_HINGE = (np.array([[0.0, 1.0], [0.0, 0.0]]), np.array([[0.6, 0.4], [0.4, 0.6]]))
_ONE_HOT = (np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype="int64"),
            np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype="float32"))
_BCE = (np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype="float32"),
        np.array([[0.9, 0.1, 0.2], [0.3, 0.8, 0.1], [0.1, 0.2, 0.7]], dtype="float32"))

# Keras: losses_test.py::<Class>Test::test_dtype_arg, with each test's inputs
DTYPE_ARG_CASES = [
    ("MeanSquaredError", {}, _REGRESSION),
    ("MeanAbsoluteError", {}, _REGRESSION),
    ("Hinge", {}, _HINGE),
    ("SquaredHinge", {}, _HINGE),
    ("CategoricalHinge", {}, _HINGE),
    ("CosineSimilarity", {}, (_REGRESSION[0].astype("float32"), _REGRESSION[1])),
    ("Huber", {}, (np.array([[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
                   np.array([[0.9, 0.2, 0.2], [0.8, 0.4, 0.6]]))),
    ("LogCosh", {}, (_REGRESSION[0].astype("float32"), _REGRESSION[1])),
    ("KLDivergence", {}, (np.array([0.5, 0.8, 0.12, 0.7, 0.43, 0.8], "float32").reshape(2, 3),
                          np.array([0.4, 0.9, 0.12, 0.36, 0.3, 0.4], "float32").reshape(2, 3))),
    ("Poisson", {}, (np.array([4, 8, 12, 8, 1, 3], "float32").reshape(2, 3),
                     np.array([1, 9, 2, 5, 2, 6], "float32").reshape(2, 3))),
    ("BinaryCrossentropy", {}, _BCE),
    ("CategoricalCrossentropy", {}, _ONE_HOT),
    ("SparseCategoricalCrossentropy", {}, (np.array([[0], [1], [2]], dtype="int64"),
                                           _ONE_HOT[1])),
]


@pytest.mark.parametrize("name, kwargs, data", DTYPE_ARG_CASES, ids=[c[0] for c in DTYPE_ARG_CASES])
def test_dtype_arg(name, kwargs, data):
    y_true, y_pred = data
    cls = getattr(losses, name)
    assert cls(dtype="float16", **kwargs)(y_true, y_pred).dtype == tf.float16
    # and the default: floatx (float32) for float64 predictions, equal to the float64 loss
    default = cls(**kwargs)(y_true, y_pred.astype("float64"))
    wide = cls(dtype="float64", **kwargs)(y_true, y_pred.astype("float64"))
    assert (default.dtype, wide.dtype) == (tf.float32, tf.float64)
    np.testing.assert_allclose(default.numpy(), wide.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, kwargs, data", DTYPE_ARG_CASES, ids=[c[0] for c in DTYPE_ARG_CASES])
def test_dtype_arg_bfloat16(name, kwargs, data):
    # Keras: losses_test.py::<Class>Test::test_dtype_arg, as Keras writes it (bfloat16)
    pytest.importorskip("ml_dtypes", reason="bfloat16 needs the [bfloat16] extra (ml_dtypes)")
    y_true, y_pred = data
    assert getattr(losses, name)(dtype="bfloat16", **kwargs)(y_true, y_pred).dtype == tf.bfloat16


def test_bfloat16_dtype_without_ml_dtypes_is_refused_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # what an install without it sees
    with pytest.raises(ValueError, match=r"ml_dtypes.*tapeflow\[bfloat16\]"):
        losses.MeanSquaredError(dtype="bfloat16")


def test_a_policy_gives_its_compute_dtype_and_the_config_keeps_the_argument():
    # Keras: Loss's docstring: "If a keras.DTypePolicy is provided, then the compute_dtype
    # will be utilized"
    for dtype in ("mixed_float16", mixed_precision.DTypePolicy("mixed_float16")):
        loss = losses.MeanSquaredError(dtype=dtype)
        assert loss.dtype == "float16"
        assert loss(*_REGRESSION).dtype == tf.float16
        assert loss.get_config()["dtype"] == "mixed_float16"
        assert losses.MeanSquaredError.from_config(loss.get_config()).dtype == "float16"
    assert losses.MeanSquaredError().get_config()["dtype"] is None
    assert losses.MeanSquaredError(dtype=tf.float64).get_config()["dtype"] == "float64"


def test_a_mixed_float16_global_policy_leaves_losses_in_float32(restore_floatx_and_policy):
    mixed_precision.set_global_policy("mixed_float16")
    y_pred = tf.keras.layers.Dense(3)(np.ones((2, 4), "float32"))
    assert y_pred.dtype == tf.float16
    loss = losses.MeanSquaredError()(np.zeros((2, 3)), y_pred)
    assert loss.dtype == tf.float32


def test_set_floatx_sets_losses_and_new_layers(restore_floatx_and_policy):
    # Keras: "dtype=None means using keras.backend.floatx()"; the global policy follows it
    backend.set_floatx("float64")
    assert backend.floatx() == "float64"
    assert ExampleLoss()(Y_TRUE.astype("float32"), Y_PRED.astype("float32")).dtype == tf.float64
    assert tf.keras.layers.Dense(2).compute_dtype == "float64"
    assert tf.keras.Input((2,)).dtype == tf.float64  # a functional model's inputs too
    backend.set_floatx("float32")
    assert ExampleLoss()(Y_TRUE, Y_PRED).dtype == tf.float32
    assert tf.keras.layers.Dense(2).compute_dtype == "float32"
    with pytest.raises(ValueError, match="Unknown `floatx` value"):
        backend.set_floatx("int32")


def test_a_float64_model_fits_with_a_float32_loss_and_float64_gradients():
    """Keras computes a float64 model's compiled loss in float32: fit logs it, the gradients
    reach the float64 variables in their own dtype."""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, dtype="float64")])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(8, 3))
    y = x @ np.array([[1.0], [-1.0], [0.5]])
    with tf.GradientTape() as tape:
        loss = model.loss(y, model(x))
    assert loss.dtype == tf.float32
    grads = tape.gradient(loss, model.trainable_variables)
    assert [g.dtype for g in grads] == [tf.float64, tf.float64]
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0).history["loss"]
    assert history[1] < history[0]


def test_a_float32_loss_and_a_float64_models_penalties_sum_in_float64():
    """Keras's compute_loss sums the compiled loss and the layers' losses with ops.sum, which
    promotes: float32 + float64 is float64 (tapeflow's + would refuse the mix)."""
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(
        1, dtype="float64", kernel_regularizer=tf.keras.regularizers.L2(0.5))])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    total = model.compute_loss(x, y, model(x))
    assert total.dtype == tf.float64
    kernel, bias = model.get_weights()
    expected = np.float32(np.mean((x @ kernel + bias) ** 2)) + 0.5 * np.sum(kernel ** 2)
    np.testing.assert_allclose(total.numpy(), expected, rtol=1e-7)
    assert np.isfinite(model.fit(x, y, epochs=1, verbose=0).history["loss"][0])
