"""``Layer.add_loss``, ``losses``, activity regularizers, and the added losses in ``fit``'s loss."""
import numpy as np
import pytest

import tapeflow as tf
from tests.ops.gradcheck import check_grads

layers = tf.keras.layers


class LossLayer(layers.Layer):
    def call(self, x):
        self.add_loss(tf.reduce_sum(x))
        return x


class Passthrough(layers.Layer):
    def call(self, x):
        return x


def test_add_loss():
    """Keras: layers/layer_test.py::LayerTest::test_add_loss"""
    layer = LossLayer()
    layer(np.ones((1,), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 1.0)
    # losses are reset upon call
    layer(np.ones((1,), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 1.0)
    # it works inside a model
    model = tf.keras.Sequential([layer])
    model(np.ones((1, 1), np.float32))
    assert len(model.losses) == 1
    np.testing.assert_allclose(model.losses[0].numpy(), 1.0)
    # and recursively in nested models
    model = tf.keras.Sequential([model])
    model(np.ones((1, 1), np.float32))
    assert len(model.losses) == 1
    np.testing.assert_allclose(model.losses[0].numpy(), 1.0)


def test_activity_regularization():
    """Keras: layers/layer_test.py::LayerTest::test_activity_regularization"""
    layer = Passthrough(activity_regularizer="l1")
    layer(np.ones((1,), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.01)
    layer(np.ones((1,), np.float32))  # losses are reset upon call
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.01)
    # KerasTensors are no op
    layer = Passthrough(activity_regularizer="l1")
    layer(tf.keras.Input(batch_shape=(2, 2)))
    assert len(layer.losses) == 0


@pytest.mark.parametrize("batch_size", [0, 1, 5, 10])
def test_activity_regularization_batch_normalization(batch_size):
    """Keras: layers/layer_test.py::LayerTest::test_activity_regularization_batch_normalization"""
    layer = Passthrough(activity_regularizer="l2")
    layer(tf.ones((batch_size, 5)) * 2.0)
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 0.0 if batch_size == 0 else 0.2,
                               rtol=1e-6)


def test_activity_regularization_layer_correctness():
    """Keras: layers/regularization/activity_regularization_test.py::test_correctness"""
    layer = layers.ActivityRegularization(l1=0.2, l2=0.3)
    layer(2 * np.ones((1,), np.float32))
    assert len(layer.losses) == 1
    np.testing.assert_allclose(layer.losses[0].numpy(), 4 * 0.3 + 2 * 0.2, rtol=1e-6)


def test_activity_regularization_layer_basics():
    """Keras: layers/regularization/activity_regularization_test.py::
    test_activity_regularization_basics (shape, no weights, one loss, masking, config)"""
    layer = layers.ActivityRegularization(l1=0.1, l2=0.2)
    assert layer.built and layer.supports_masking
    out = layer(np.ones((2, 3), np.float32))
    assert tuple(out.shape) == (2, 3) and layer.weights == [] and len(layer.losses) == 1
    config = layer.get_config()
    assert config["l1"] == 0.1 and config["l2"] == 0.2 and "activity_regularizer" not in config
    again = layers.ActivityRegularization.from_config(config)
    again(np.ones((2, 3), np.float32))
    np.testing.assert_allclose(again.losses[0].numpy(), layer.losses[0].numpy())


def test_activity_regularizer_config_round_trip():
    dense = layers.Dense(2, activity_regularizer=tf.keras.regularizers.L2(0.5))
    config = dense.get_config()
    assert config["activity_regularizer"] == {"class_name": "L2", "config": {"l2": 0.5}}
    assert layers.Dense.from_config(config).activity_regularizer.l2 == 0.5
    assert "activity_regularizer" not in layers.Dense(2).get_config()


@pytest.mark.filterwarnings("ignore:Gradients do not exist")  # the last Dense gets none
def test_internal_only_loss():
    """Keras: trainers/trainer_test.py::TestTrainer::test_internal_only_loss (compiled without
    a loss: the added loss alone is trained, traced, and logged as ``loss``)"""
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([layers.Dense(2), LossLayer(), layers.Dense(1)])
    model.compile(optimizer="adam")
    x, y = np.ones((16, 2), np.float32), np.zeros((16, 1), np.float32)
    model(x)
    expected = float(model.losses[0].numpy())  # the sum over the one batch of 16 rows
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    assert model.train_function is not None  # the step was traced
    np.testing.assert_allclose(history.history["loss"][0], expected, rtol=1e-5)
    assert history.history["loss"][1] < history.history["loss"][0]  # adam lowers the sum


def test_fit_logs_compiled_plus_added_losses():
    """Keras 3 logs the total ``loss`` (the compiled loss plus ``model.losses``), in the traced
    step and in evaluate; the added losses are the last call's, not accumulated over calls."""
    inputs = tf.keras.Input(shape=(3,))
    hidden = layers.Dense(4, activity_regularizer="l2", name="hidden")(inputs)
    outputs = layers.Dense(1, name="out")(LossLayer(name="penalty")(hidden))
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")  # weights stay
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.zeros((8, 1), np.float32)
    pred = model(x)
    assert len(model.losses) == 2  # the layer's add_loss, then hidden's activity penalty
    mse = float(np.mean((pred.numpy() - y) ** 2))
    expected = mse + sum(float(loss.numpy()) for loss in model.losses)
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    np.testing.assert_allclose(history.history["loss"], [expected] * 2, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)
    assert len(model.losses) == 0  # the traced steps' losses were let go
    with tf.GradientTape():
        model(x)
        model(x)
    assert len(model.losses) == 2


def test_add_loss_refuses_what_is_not_a_tensor():
    class Bad(layers.Layer):
        def call(self, x):
            self.add_loss(0.5)
            return x
    with pytest.raises(ValueError, match="add_loss takes tensors computed in call"):
        Bad(name="bad")(np.ones((1, 2), np.float32))


def test_add_loss_of_a_symbolic_tensor_says_where_losses_are_added():
    """Keras 3's functional models take no symbolic add_loss (models/functional.py raises)"""
    inputs = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(inputs, layers.Dense(1)(inputs))
    with pytest.raises(ValueError, match="symbolic tensor .* inside a layer's call"):
        model.add_loss(tf.reduce_sum(inputs))


def test_no_loss_at_all_is_one_clear_error():
    model = tf.keras.Sequential([layers.Dense(1)])
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="no loss; pass loss= to compile"):
        model.fit(np.ones((2, 2), np.float32), np.ones((2, 1), np.float32), verbose=0)


class KLSampling(layers.Layer):
    """A VAE's last encoder step without the noise: z = mean, KL(N(mean, exp(log_var)) || N(0, 1))."""

    def call(self, inputs):
        mean, log_var = inputs[:, :2], inputs[:, 2:]
        self.add_loss(-0.5 * tf.reduce_mean(tf.reduce_sum(
            1.0 + log_var - tf.square(mean) - tf.exp(log_var), axis=1)))
        return mean


def test_add_loss_gradient_matches_finite_differences():
    """The added loss's gradient (to second order), through a layer's call, as fit's tape sees it."""
    def fn(x):
        layer = KLSampling(dtype="float64")
        out = layer(x)
        return [out, tf.add_n(layer.losses)]
    x = np.random.default_rng(1).normal(size=(3, 4)) * 0.5
    check_grads(fn, [x], order=2)


class ActivityModel(tf.keras.Model):
    """trainer_test's MyModel: a Dense with an l2 activity regularizer, a custom Mean metric."""

    def __init__(self):
        super().__init__()
        self.custom_metric = tf.keras.metrics.Mean(name="custom")
        self.dense = layers.Dense(2, activity_regularizer="l2")

    def call(self, x):
        return self.dense(x)


def test_fwd_pass_loss_presence_in_compute_loss():
    """Keras: trainers/trainer_test.py::TestTrainer::test_fwd_pass_loss_presence_in_compute_loss
    (the custom metric's own result is read: tapeflow's logs hold the compiled metrics)"""
    seen_training = []

    class MyModel(ActivityModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            seen_training.append(training)
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            self.custom_metric.update_state(tf.add_n(self.losses))
            return loss

    model = MyModel()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((32, 4)), np.ones((32, 2)) * 2, verbose=0)
    assert seen_training and all(seen_training)
    assert float(model.custom_metric.result().numpy()) > 0.0


def test_evaluate_with_custom_compute_loss():
    """Keras: trainers/trainer_test.py::TestTrainer::test_evaluate_with_custom_compute_loss
    (custom == 4 * loss, read from the metric)"""
    seen_training = []

    class MyModel(ActivityModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            seen_training.append(training)
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            self.custom_metric.update_state(loss * 4)
            return loss

    model = MyModel()
    model.compile(optimizer="sgd", loss="mse")
    logs = model.evaluate(np.ones((32, 4)), np.ones((32, 2)) * 2, return_dict=True, verbose=0)
    assert seen_training and not any(seen_training)
    np.testing.assert_allclose(float(model.custom_metric.result().numpy()), logs["loss"] * 4,
                               rtol=1e-6)


def test_conv_and_embedding_take_an_activity_regularizer():
    """Keras's Conv and Embedding pass activity_regularizer to the base Layer: the penalty on
    the output, divided by the batch size"""
    conv = layers.Conv1D(2, 1, activity_regularizer="l1", kernel_initializer="ones",
                         use_bias=False)
    out = conv(np.ones((2, 3, 1), np.float32))
    np.testing.assert_allclose(conv.losses[0].numpy(), 0.01 * np.abs(out.numpy()).sum() / 2)
    embedding = layers.Embedding(4, 2, activity_regularizer=tf.keras.regularizers.L2(0.5))
    out = embedding(np.array([[0, 1, 2]]))
    np.testing.assert_allclose(embedding.losses[0].numpy(), 0.5 * (out.numpy() ** 2).sum(),
                               rtol=1e-6)
    assert layers.Embedding.from_config(embedding.get_config()).activity_regularizer.l2 == 0.5
