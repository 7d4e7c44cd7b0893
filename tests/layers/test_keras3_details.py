"""Keras 3's layer, loss and optimizer details (issue 19 item 6), each ported from the Keras test
named beside it (keras-team/keras, keras/src/...)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import activations
from tests.ops.gradcheck import check_grads


# --- hard_sigmoid / hard_silu: keras/src/activations/activations_test.py -----------------------
def _ref_hard_sigmoid(x):
    x = (x / 6.0) + 0.5
    return 0.0 if x <= 0 else (1.0 if x >= 1 else x)


def _ref_hard_silu(x):
    return x * np.minimum(np.maximum(0.0, x + 3.0), 6.0) * (1.0 / 6.0)


def test_hard_sigmoid():  # Keras: ActivationsTest::test_hard_sigmoid
    rng = np.random.RandomState(0)
    for x in (rng.uniform(0, 1, (1, 2, 5)), rng.uniform(-10, 10, 5),
              rng.uniform(-10, 10, (3, 3, 3))):
        np.testing.assert_allclose(activations.hard_sigmoid(x).numpy(),
                                   np.vectorize(_ref_hard_sigmoid)(x), rtol=1e-5)
    np.testing.assert_allclose(activations.hard_sigmoid(rng.uniform(5, 10, (2, 5))).numpy(),
                               np.ones((2, 5)), rtol=1e-5)


def test_hard_silu():  # Keras: ActivationsTest::test_hard_silu
    rng = np.random.RandomState(0)
    for x in (rng.uniform(-3, 3, (1, 2, 5)), rng.uniform(-10, 10, 5),
              rng.uniform(-10, 10, (3, 3, 3))):
        x = x.astype("float32")
        np.testing.assert_allclose(activations.hard_silu(x).numpy(),
                                   np.vectorize(_ref_hard_silu)(x), rtol=1e-5, atol=1e-7)
    big = rng.uniform(5, 10, (2, 5)).astype("float32")
    np.testing.assert_allclose(activations.hard_silu(big).numpy(), big, rtol=1e-5)
    np.testing.assert_array_equal(activations.hard_silu(-big).numpy(), 0.0)


def test_hard_sigmoid_by_name_and_gradients():
    assert activations.get("hard_sigmoid") is activations.hard_sigmoid
    assert activations.get("hard_swish") is activations.hard_silu
    layer = tf.keras.layers.Dense(2, activation="hard_sigmoid")
    assert layer.get_config()["activation"] == "hard_sigmoid"
    # away from the kinks at -3 and 3: first and second derivatives against differences
    x = np.array([-4.0, -2.5, -0.5, 1.0, 2.5, 4.0])
    check_grads(activations.hard_sigmoid, [x])
    check_grads(activations.hard_silu, [x])


# --- losses: keras/src/losses/loss_test.py and losses_test.py ------------------------------------
class ExampleLoss(tf.keras.losses.Loss):
    def call(self, y_true, y_pred):
        return (y_true - y_pred) ** 2


Y_TRUE = np.array([1.0, 0.0, 1.0, 0.0])
Y_PRED = np.array([0.1, 0.2, 0.3, 0.4])


def test_loss_dtype_arg():  # Keras: LossTest::test_dtype_arg (and test_reduction's float32)
    loss = ExampleLoss(dtype="float16")(Y_TRUE.astype("float32"), Y_PRED.astype("float32"))
    assert loss.dtype == tf.float16
    for reduction, expected in ((None, (Y_TRUE - Y_PRED) ** 2),
                                ("sum", np.sum((Y_TRUE - Y_PRED) ** 2)),
                                ("sum_over_batch_size", np.sum((Y_TRUE - Y_PRED) ** 2) / 4)):
        loss = ExampleLoss(reduction=reduction, dtype="float32")(Y_TRUE, Y_PRED)
        assert loss.dtype == tf.float32
        np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)
    mse = tf.keras.losses.MeanSquaredError(dtype="float32")
    assert mse(Y_TRUE, Y_PRED).dtype == tf.float32
    assert mse.get_config()["dtype"] == "float32"
    assert tf.keras.losses.MeanSquaredError.from_config(mse.get_config()).dtype == "float32"


def test_loss_mixed_dtypes():  # Keras: LossTest::test_mixed_dtypes
    sample_weight = np.array([0.4, 0.3, 0.2, 0.1], dtype="float64")
    y_true = Y_TRUE.astype("int32")
    y_pred = Y_PRED.astype("float32")
    loss = ExampleLoss()(y_true, y_pred, sample_weight=sample_weight)
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(loss.numpy(), np.sum(sample_weight * (y_true - y_pred) ** 2) / 4,
                               rtol=1e-6)


def _masked(values, mask):
    tensor = tf.constant(values)
    tensor._keras_mask = tf.constant(mask)
    return tensor


def test_loss_mask():  # Keras: LossTest::test_mask
    y_pred = _masked(Y_PRED, [True, False, True, True])
    loss = ExampleLoss()(tf.constant(Y_TRUE), y_pred)
    masked_true, masked_pred = np.array([1.0, 1.0, 0.0]), np.array([0.1, 0.3, 0.4])
    np.testing.assert_allclose(loss.numpy(), np.sum((masked_true - masked_pred) ** 2) / 3,
                               rtol=1e-6)
    everything_masked = _masked(Y_PRED, [False] * 4)
    assert ExampleLoss()(tf.constant(Y_TRUE), everything_masked).numpy() == 0  # no NaN


def test_loss_mask_and_sample_weight():
    # Keras: LossTest::test_mask_and_sample_weight, test_rank_adjustment ("mask", "ys")
    sample_weight = np.array([0.4, 0.3, 0.2, 0.1])
    expected = np.sum(np.array([0.4, 0.2, 0.1]) * (np.array([1.0, 1.0, 0.0]) -
                                                   np.array([0.1, 0.3, 0.4])) ** 2) / 3
    mask = np.array([True, False, True, True])
    for y_true, y_pred, m in ((Y_TRUE, Y_PRED, mask), (Y_TRUE, Y_PRED, mask[:, None]),
                              (Y_TRUE[:, None], Y_PRED[:, None], mask)):
        loss = ExampleLoss()(tf.constant(y_true), _masked(y_pred, m), sample_weight=sample_weight)
        np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-6)
    # the fast path of a built-in loss honours the mask too
    loss = tf.keras.losses.MeanSquaredError()(Y_TRUE[:, None], _masked(Y_PRED[:, None], mask))
    np.testing.assert_allclose(loss.numpy(), np.sum((np.array([1.0, 1.0, 0.0]) -
                                                     np.array([0.1, 0.3, 0.4])) ** 2) / 3)


def test_sparse_categorical_crossentropy_ignore_class():
    # Keras: SparseCategoricalCrossentropyTest::test_ignore_class
    logits = np.array([[[0.854, 0.698, 0.598], [0.088, 0.86, 0.018]]])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1,
                                                            reduction=None)
    for y_true in (np.array([[-1, 2]]), np.array([[[-1], [2]]])):
        np.testing.assert_allclose(loss_fn(y_true, logits).numpy(), [[0.0, 1.480129]],
                                   rtol=1e-6)
    # reduced, the mean is over the one kept label; the config carries ignore_class
    mean = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1)
    np.testing.assert_allclose(mean(np.array([[-1, 2]]), logits).numpy(), 1.480129, rtol=1e-6)
    assert mean.get_config()["ignore_class"] == -1
    # no gradient reaches the ignored position's logits
    logits_t = tf.constant(logits)
    with tf.GradientTape() as tape:
        tape.watch(logits_t)
        value = mean(np.array([[-1, 2]]), logits_t)
    grad = tape.gradient(value, logits_t).numpy()
    np.testing.assert_array_equal(grad[0, 0], 0.0)
    assert np.all(grad[0, 1] != 0.0)


def test_fit_and_evaluate_leave_masked_steps_out_of_the_loss():
    # Keras 3: Loss.__call__ reads y_pred's mask (LossTest::test_mask), so fit's loss is the mean
    # over the steps Embedding(mask_zero=True) keeps
    x = np.array([[1, 2, 0, 0], [3, 0, 0, 0]])
    y = np.arange(8, dtype=np.float32).reshape(2, 4, 1) / 8
    model = tf.keras.Sequential([tf.keras.layers.Embedding(4, 2, mask_zero=True),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    per_step = ((model(x).numpy() - y) ** 2)[..., 0]
    expected = per_step[x != 0].mean()
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)
    np.testing.assert_allclose(model.fit(x, y, epochs=1, verbose=0).history["loss"][0], expected,
                               rtol=1e-5)


# --- a mask passed by position: Keras 3's Layer.__call__ binds it by call's signature ------------
class _MaskReader(tf.keras.layers.Layer):
    supports_masking = True

    def call(self, inputs, mask=None):
        self.seen = None if mask is None else np.asarray(mask.numpy() if hasattr(mask, "numpy")
                                                         else mask)
        return inputs * 1.0  # a new tensor: the input's own mask stays on the input


def test_mask_passed_by_position():
    # Keras: layers/core/masking_test.py::test_masking_correctness (TestLayer.call(inputs, mask))
    x = np.array([[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]],
                  [[2.0, 2.0], [0.0, 0.0], [2.0, 1.0]]], np.float32)
    expected_mask = [[False, True, False], [True, False, True]]
    masked = tf.keras.layers.Masking(mask_value=0.0)(x)  # carries its own mask
    layer = _MaskReader()
    given = tf.constant(np.array([[True, True, True], [False, False, True]]))
    out = layer(masked, given)  # the positional mask wins over the input's, as mask=given would
    np.testing.assert_array_equal(layer.seen, given.numpy())
    np.testing.assert_array_equal(out._keras_mask.numpy(), given.numpy())
    layer(masked)
    np.testing.assert_array_equal(layer.seen, expected_mask)
    lstm = tf.keras.layers.LSTM(2, return_sequences=True)
    by_position = lstm(tf.constant(x), given)
    by_keyword = lstm(tf.constant(x), mask=given)
    np.testing.assert_allclose(by_position.numpy(), by_keyword.numpy())
    np.testing.assert_array_equal(by_position._keras_mask.numpy(), given.numpy())


def test_too_many_positional_arguments_name_the_layer():
    with pytest.raises(TypeError, match="dense.*call takes inputs and 0 more"):
        tf.keras.layers.Dense(2, name="dense")(np.ones((1, 3), np.float32), None)


# --- Masking: keras/src/layers/core/masking_test.py ----------------------------------------------
MASKING_X = np.array([[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]],
                      [[2.0, 2.0], [0.0, 0.0], [2.0, 1.0]]])
MASKING_EXPECTED = [[False, True, False], [True, False, True]]


def test_masking_on_integers():  # Keras: MaskingTest::test_masking_correctness, on int data
    x = tf.constant(MASKING_X.astype(np.int32))
    out = tf.keras.layers.Masking(mask_value=0.0)(x)
    assert out.dtype == tf.int32
    np.testing.assert_array_equal(out._keras_mask.numpy(), MASKING_EXPECTED)
    np.testing.assert_array_equal(out.numpy(), MASKING_X.astype(np.int32))
    half = tf.keras.layers.Masking(mask_value=0.5)(x)  # no integer equals 0.5: nothing masked
    assert half._keras_mask.numpy().all()


def test_masking_with_tensor():  # Keras: MaskingTest::test_masking_with_tensor
    masking = tf.keras.layers.Masking(mask_value=tf.constant([0.0]))
    model = tf.keras.Sequential([masking, tf.keras.layers.LSTM(1)])
    model(MASKING_X.astype(np.float32))
    np.testing.assert_array_equal(masking.compute_mask(tf.constant(MASKING_X)).numpy(),
                                  MASKING_EXPECTED)
    clone = tf.keras.layers.Masking.from_config(masking.get_config())
    assert clone.mask_value == 0.0
    with pytest.raises(ValueError, match="mask_value must be one number"):
        tf.keras.layers.Masking(mask_value=[0.0, 1.0])


# --- Embedding: keras/src/layers/core/embedding_test.py ------------------------------------------
def test_embedding_build_without_input_shape():  # Keras: EmbeddingTest::test_correctness
    layer = tf.keras.layers.Embedding(input_dim=3, output_dim=2)
    layer.build()
    layer.embeddings.assign(np.array([[0.0, 0.0], [2.0, 2.0], [3.0, 3.0]]))
    out = layer(np.array([2, 1, 0]))
    np.testing.assert_allclose(out.numpy(), [[3.0, 3.0], [2.0, 2.0], [0.0, 0.0]])


def test_embedding_masking():
    # Keras: EmbeddingTest::test_masking, test_compute_mask_no_masking
    layer = tf.keras.layers.Embedding(input_dim=3, output_dim=2, mask_zero=True)
    layer.build()
    np.testing.assert_array_equal(layer.compute_mask(tf.constant([2, 1, 0])).numpy(),
                                  [True, True, False])
    assert tf.keras.layers.Embedding(3, 2).compute_mask(tf.constant([2, 1, 0])) is None


def test_embedding_constraints_and_weights_argument():
    # Keras: EmbeddingTest::test_embedding_constraints, test_weights_constructor_arg
    layer = tf.keras.layers.Embedding(3, 2, embeddings_constraint="non_neg")
    layer.build((None, 2))
    assert isinstance(layer.embeddings.constraint, tf.keras.constraints.NonNeg)
    for weights in (np.ones((3, 4)), [np.ones((3, 4))]):
        layer = tf.keras.layers.Embedding(3, 4, weights=weights)
        np.testing.assert_allclose(layer.embeddings.numpy(), np.ones((3, 4)))


# --- Adagrad on scalar variables: keras/src/optimizers/adagrad_test.py ---------------------------
def test_adagrad_weight_decay_on_scalar_variables():  # Keras: AdagradTest::test_weight_decay
    Adagrad = tf.keras.optimizers.Adagrad
    grads = tf.zeros(())
    var1, var2, var3 = tf.Variable(2.0), tf.Variable(2.0, name="exclude"), tf.Variable(2.0)
    Adagrad(learning_rate=1.0, weight_decay=0.004).apply_gradients(zip([grads], [var1]))
    optimizer_2 = Adagrad(learning_rate=1.0, weight_decay=0.004)
    optimizer_2.exclude_from_weight_decay(var_names=["exclude"])
    optimizer_2.apply_gradients(zip([grads, grads], [var1, var2]))
    optimizer_3 = Adagrad(learning_rate=1.0, weight_decay=0.004)
    optimizer_3.exclude_from_weight_decay(var_list=[var3])
    optimizer_3.apply_gradients(zip([grads, grads], [var1, var3]))
    assert var1.numpy() == pytest.approx(1.9760959, abs=1e-6)
    assert var2.numpy() == pytest.approx(2.0, abs=1e-6)
    assert var3.numpy() == pytest.approx(2.0, abs=1e-6)


def test_adagrad_scalar_step_matches_the_vector_one():  # Keras: AdagradTest::test_single_step
    scalar, vector = tf.Variable(3.0), tf.Variable([1.0, 2.0, 3.0, 4.0])
    tf.keras.optimizers.Adagrad(learning_rate=0.5).apply_gradients([(tf.constant(7.0), scalar)])
    tf.keras.optimizers.Adagrad(learning_rate=0.5).apply_gradients(
        [(tf.constant([1.0, 6.0, 7.0, 2.0]), vector)])
    np.testing.assert_allclose(vector.numpy(), [0.5233, 1.5007, 2.5005, 3.5061], atol=1e-4)
    assert scalar.numpy() == pytest.approx(vector.numpy()[2], abs=1e-6)


# --- LayerNormalization(rms_scaling=True): layer_normalization_test.py ----------------------------
def test_layer_normalization_output_with_rms_scaling():
    # Keras: LayerNormalizationTest::test_output_with_rms_scaling, test_output, test_ln_basics
    inputs = np.arange(5).astype("float32")[None, :]
    layer = tf.keras.layers.LayerNormalization(rms_scaling=True, gamma_initializer="ones")
    np.testing.assert_allclose(layer(inputs).numpy(), [[0.0, 0.70693, 1.41386, 2.12079, 2.82772]],
                               rtol=1e-5, atol=1e-6)
    assert len(layer.trainable_variables) == 1 and layer.beta is None  # gamma alone
    plain = tf.keras.layers.LayerNormalization(beta_initializer="ones", gamma_initializer="ones")
    np.testing.assert_allclose(plain(inputs).numpy(),
                               [[-0.41386, 0.29307, 1.0, 1.70693, 2.41386]], rtol=1e-5)
    config = layer.get_config()
    assert config["rms_scaling"] is True
    assert tf.keras.layers.LayerNormalization.from_config(config).get_config() == config
    check_grads(lambda x: tf.keras.layers.LayerNormalization(rms_scaling=True, dtype="float64")(x),
                [np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.7]])])


# --- Normalization(axis=tuple): keras/src/layers/preprocessing/normalization_test.py -------------
def test_normalization_adapt_with_tuple_axis():
    # Keras: NormalizationTest::test_normalization_adapt
    rng = np.random.RandomState(0)
    x = rng.random_sample((32, 4))
    layer = tf.keras.layers.Normalization()
    layer.adapt(x)
    output = layer(x).numpy()
    np.testing.assert_allclose(np.var(output, axis=0), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.mean(output, axis=0), 0.0, atol=1e-5)
    x = rng.random_sample((32, 4, 3, 5))
    layer = tf.keras.layers.Normalization(axis=(1, 2))
    layer.adapt(x)
    assert layer.built and tuple(layer.mean.shape) == (4, 3)
    output = layer(x).numpy()
    np.testing.assert_allclose(np.var(output, axis=(0, 3)), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.mean(output, axis=(0, 3)), 0.0, atol=1e-5)
    config = layer.get_config()
    assert tf.keras.layers.Normalization.from_config(config).get_config() == config


def test_normalization_axis_errors():
    # Keras: NormalizationTest::test_normalization_axis_too_high, _too_low, _unknown_axis_shape,
    # test_normalization_adapt_with_incompatible_shape
    with pytest.raises(ValueError, match="All `axis` values must be in the range"):
        tf.keras.layers.Normalization(axis=3).build((2, 2))
    with pytest.raises(ValueError, match="All `axis` values must be in the range"):
        tf.keras.layers.Normalization(axis=-4).build((2, 3, 4))
    with pytest.raises(ValueError, match="All `axis` values to be kept"):
        tf.keras.layers.Normalization(axis=1).build((None, None))
    layer = tf.keras.layers.Normalization(axis=-1)
    layer.build((10, 5))
    with pytest.raises(ValueError, match="an incompatible shape"):
        layer.adapt(np.random.random_sample((10, 3)))


# --- merging layers combine masks: keras/src/layers/merging/merging_test.py ----------------------
X1 = [[[0, 0], [1, 2], [0, 0], [3, 4]]]
X2 = [[[0, 0], [0, 0], [1, 2], [3, 4]]]


@pytest.mark.parametrize("layer, x1, expected_one, expected_both", [
    # Keras: MergingLayersTest::test_{add,subtract,average,multiply,maximum,minimum}_with_mask
    (tf.keras.layers.Add, X1, [[[0, 0], [1, 2], [1, 2], [6, 8]]],
     [[[0, 0], [1, 2], [1, 2], [6, 8]]]),
    (tf.keras.layers.Subtract, X1, [[[0, 0], [1, 2], [-1, -2], [0, 0]]],
     [[[0, 0], [1, 2], [-1, -2], [0, 0]]]),
    (tf.keras.layers.Average, X1, [[[0, 0], [0.5, 1], [0.5, 1], [3, 4]]],
     [[[0, 0], [0.5, 1], [0.5, 1], [3, 4]]]),
    (tf.keras.layers.Multiply, X1, [[[0, 0], [0, 0], [1, 2], [9, 16]]],
     [[[0, 0], [1, 2], [1, 2], [9, 16]]]),
    (tf.keras.layers.Maximum, [[[0, 0], [-1, -2], [0, 0], [-3, -4]]],
     [[[0, 0], [0, 0], [-1, -2], [-3, -4]]], [[[0, 0], [-1, -2], [-1, -2], [-3, -4]]]),
    (tf.keras.layers.Minimum, X1, [[[0, 0], [0, 0], [1, 2], [3, 4]]],
     [[[0, 0], [1, 2], [1, 2], [3, 4]]]),
])
def test_merge_with_mask(layer, x1, expected_one, expected_both):
    mask = tf.keras.layers.Masking()
    x1 = mask(tf.constant(np.array(x1, np.float32)))
    x2 = tf.constant(np.array(X2 if layer is not tf.keras.layers.Maximum else
                              [[[0, 0], [0, 0], [-1, -2], [-3, -4]]], np.float32))
    output = layer()([x1, x2])
    np.testing.assert_allclose(output.numpy(), expected_one)
    assert getattr(output, "_keras_mask", None) is None
    output = layer()([x1, mask(x2)])
    np.testing.assert_allclose(output.numpy(), expected_both)
    np.testing.assert_array_equal(output._keras_mask.numpy(), [[0, 1, 1, 1]])


def test_concatenate_with_mask():  # Keras: MergingLayersTest::test_concatenate_with_mask
    x1 = tf.keras.layers.Masking()(tf.constant(np.array(X1, np.float32)))
    x2 = tf.constant(np.array(X2, np.float32))
    output = tf.keras.layers.Concatenate(axis=1)([x1, x2])
    np.testing.assert_allclose(output.numpy(), [[[0, 0], [1, 2], [0, 0], [3, 4], [0, 0], [0, 0],
                                                 [1, 2], [3, 4]]])
    np.testing.assert_array_equal(output._keras_mask.numpy(), [[0, 1, 0, 1, 1, 1, 1, 1]])
    output = tf.keras.layers.Concatenate(axis=2)([x1, x2])
    np.testing.assert_allclose(output.numpy(), [[[0, 0, 0, 0], [1, 2, 0, 0], [0, 0, 1, 2],
                                                 [3, 4, 3, 4]]])
    np.testing.assert_array_equal(output._keras_mask.numpy(), [[1, 1, 1, 1]])


@pytest.mark.parametrize("layer", [tf.keras.layers.Add, tf.keras.layers.Concatenate])
def test_merge_compute_mask_arguments(layer):
    # Keras: MergingLayersTest::test_correctness_static (mask part) and test_errors
    x1, x2 = np.random.rand(2, 4, 5), np.random.rand(2, 4, 5)
    merge = layer()
    assert merge.compute_mask([x1, x2], [None, None]) is None
    ones = tf.constant(np.ones((2, 4), bool))
    assert np.all(merge.compute_mask([tf.constant(x1), tf.constant(x2)], [ones, ones]).numpy())
    with pytest.raises(ValueError, match="`mask` should be a list."):
        merge.compute_mask([x1, x2], x1)
    with pytest.raises(ValueError, match="`inputs` should be a list."):
        merge.compute_mask(x1, [None, None])
    with pytest.raises(ValueError, match=" should have the same length"):
        merge.compute_mask([x1, x2], [None])


# --- BatchNormalization(mask=): keras/src/layers/normalization/batch_normalization_test.py -------
def test_batch_normalization_input_fully_masked():
    # Keras: BatchNormalizationTest::test_input_fully_masked
    norm = tf.keras.layers.BatchNormalization(scale=False, center=False)
    y = norm(np.zeros((4, 5), np.float32), mask=np.zeros((4,), np.float32), training=True)
    np.testing.assert_array_equal(y.numpy(), 0.0)
    with pytest.raises(ValueError, match="one dimension less than the inputs"):
        norm(np.zeros((4, 5), np.float32), mask=np.zeros((4, 5), bool), training=True)


def test_batch_normalization_masked_correctness():
    # Keras: BatchNormalizationTest::test_correctness (its masked part)
    rng = np.random.RandomState(0)
    layer = tf.keras.layers.BatchNormalization(momentum=0)
    x = rng.normal(loc=5.0, scale=10.0, size=(5, 3, 3, 2)).astype(np.float32)
    layer(x, training=True)
    x[:, 1, :] = 0.0
    masked = tf.keras.layers.Masking()(x)
    np.testing.assert_allclose(layer(masked, training=False).numpy(),
                               layer(x, training=False).numpy())
    unmasked_out = layer(x, training=False).numpy()
    assert not np.allclose(layer(masked, training=True).numpy(), unmasked_out)


@pytest.mark.parametrize("mask_value", [0.0, 1])
def test_batch_normalization_ignores_masked_values(mask_value):
    # Keras: BatchNormalizationTest::test_bachnorm_ignore_masked_values
    padded = np.array([[[1, 5], [2, 5], [mask_value, mask_value], [mask_value, mask_value]]
                       for _ in range(10)], dtype="float32")
    inputs = tf.keras.Input((None, 2))
    masked = tf.keras.layers.Masking(mask_value=mask_value)(inputs)
    normed = tf.keras.layers.BatchNormalization(momentum=0.0)(masked)
    model = tf.keras.Model(inputs, normed)
    model.compile("rmsprop", loss=tf.keras.losses.MeanSquaredError())
    model.fit(x=padded, y=padded, batch_size=10, epochs=5, verbose=0)
    np.testing.assert_allclose(model.layers[2].moving_mean.numpy(), [1.5, 5.0], rtol=1e-5)
    np.testing.assert_allclose(model.layers[2].moving_variance.numpy(), [0.25, 0.0], atol=1e-5)


def test_batch_normalization_masked_statistics_gradients():
    layer = tf.keras.layers.BatchNormalization(dtype="float64")
    mask = np.array([[True, True, False], [True, False, False]])
    x = np.random.RandomState(1).standard_normal((2, 3, 2))
    check_grads(lambda v: layer(v, mask=mask, training=True), [x])


# --- stateful RNNs: keras/src/layers/rnn/lstm_test.py --------------------------------------------
def test_lstm_statefulness():  # Keras: LSTMTest::test_statefulness
    sequence = np.arange(24).reshape((2, 3, 4)).astype("float32")
    init = tf.keras.initializers.Constant
    layer = tf.keras.layers.LSTM(4, stateful=True, kernel_initializer=init(0.01),
                                 recurrent_initializer=init(0.02), bias_initializer=init(0.03))
    expected = [[0.3124785] * 4, [0.6863672] * 4]
    layer(sequence)
    np.testing.assert_allclose(layer(sequence).numpy(), expected, atol=1e-5, rtol=1e-5)
    layer.reset_state()
    layer(sequence)
    np.testing.assert_allclose(layer(sequence).numpy(), expected, atol=1e-5, rtol=1e-5)
    assert len(layer.weights) == 3 and layer.get_config()["stateful"] is True  # states untracked
    with pytest.raises(ValueError, match="batch size"):
        layer(sequence[:1])


def test_stateful_rnn_in_a_traced_step():
    sequence = np.arange(24).reshape((2, 3, 4)).astype("float32") / 24
    eager = tf.keras.layers.GRU(3, stateful=True, kernel_initializer="ones",
                                recurrent_initializer="ones")
    traced = tf.keras.layers.GRU(3, stateful=True, kernel_initializer="ones",
                                 recurrent_initializer="ones")
    step = tf.function(lambda x: traced(x))
    for _ in range(2):
        np.testing.assert_allclose(step(sequence).numpy(), eager(sequence).numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced.states[0].numpy(), eager.states[0].numpy(), rtol=1e-6)


def test_stateful_rnn_in_a_functional_model_starts_from_zero_states():
    sequence = np.arange(24).reshape((2, 3, 4)).astype("float32")
    init = tf.keras.initializers.Constant
    inputs = tf.keras.Input((3, 4), batch_size=2)
    lstm = tf.keras.layers.LSTM(4, stateful=True, kernel_initializer=init(0.01),
                                recurrent_initializer=init(0.02), bias_initializer=init(0.03))
    model = tf.keras.Model(inputs, lstm(inputs))
    np.testing.assert_array_equal(lstm.states[0].numpy(), 0.0)  # building ran no real step
    model(sequence)
    np.testing.assert_allclose(model(sequence).numpy(), [[0.3124785] * 4, [0.6863672] * 4],
                               atol=1e-5)


# --- MultiHeadAttention on inputs of rank above 3: multi_head_attention_test.py ------------------
@pytest.mark.parametrize("q_dims, v_dims, mask_dims, attention_axes", [
    # Keras: MultiHeadAttentionTest::test_high_dim_attention (the cases attending over every
    # axis between batch and features: "4d_inputs_2d_attention", and attention_axes=None)
    ((3, 4), (3, 2), (3, 4, 3, 2), (1, 2)),
    ((3, 4), (3, 2), (3, 4, 3, 2), None),
])
def test_high_dim_attention(q_dims, v_dims, mask_dims, attention_axes):
    batch_size, hidden_size = 3, 8
    rng = np.random.RandomState(0)
    query = rng.standard_normal((batch_size,) + q_dims + (hidden_size,)).astype("float32")
    value = rng.standard_normal((batch_size,) + v_dims + (hidden_size,)).astype("float32")
    mask = rng.random_sample((batch_size,) + mask_dims) > 0.3
    layer = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=2,
                                               attention_axes=attention_axes)
    output, scores = layer(query, value, attention_mask=mask, return_attention_scores=True)
    assert output.shape == query.shape and scores.shape == (batch_size, 2) + q_dims + v_dims
    # the same numbers as attention over the positions flattened into one axis
    flat = layer(query.reshape(batch_size, -1, hidden_size),
                 value.reshape(batch_size, -1, hidden_size),
                 attention_mask=mask.reshape(batch_size, 12, 6))
    np.testing.assert_allclose(output.numpy().reshape(flat.shape), flat.numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="attention_axes"):
        tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(2,))(
            query, value)
