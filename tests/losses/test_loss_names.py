"""losses.get for every name, config round trips, and the user-loss registry."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import losses

FUNCTION_NAMES = {
    "mse": losses.mean_squared_error, "MSE": losses.mean_squared_error,
    "mean_squared_error": losses.mean_squared_error,
    "mae": losses.mean_absolute_error, "MAE": losses.mean_absolute_error,
    "mean_absolute_error": losses.mean_absolute_error,
    "huber": losses.huber,
    "bce": losses.binary_crossentropy, "binary_crossentropy": losses.binary_crossentropy,
    "categorical_crossentropy": losses.categorical_crossentropy,
    "sparse_categorical_crossentropy": losses.sparse_categorical_crossentropy,
    "hinge": losses.hinge, "squared_hinge": losses.squared_hinge,
    "categorical_hinge": losses.categorical_hinge, "kld": losses.kl_divergence,
    "KLD": losses.kl_divergence, "kl_divergence": losses.kl_divergence,
    "poisson": losses.poisson, "log_cosh": losses.log_cosh,
    "cosine_similarity": losses.cosine_similarity,
}
CLASS_NAMES = ["MeanSquaredError", "MeanAbsoluteError", "Huber", "BinaryCrossentropy",
               "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Hinge",
               "SquaredHinge", "CategoricalHinge", "KLDivergence", "Poisson", "LogCosh",
               "CosineSimilarity"]

CONFIGURED = [
    losses.MeanSquaredError(reduction="sum", name="my_mse"),
    losses.MeanAbsoluteError(reduction=None),
    losses.Huber(delta=0.25, reduction="none"),
    losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1, reduction="mean_with_sample_weight"),
    losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2, axis=-1),
    losses.SparseCategoricalCrossentropy(from_logits=True, name="scce"),
    losses.LossFunctionWrapper(losses.huber, reduction="sum", delta=2.0),
    losses.Hinge(reduction="sum"),
    losses.SquaredHinge(name="sq"),
    losses.CategoricalHinge(),
    losses.KLDivergence(reduction="none"),
    losses.Poisson(),
    losses.LogCosh(name="lc"),
    losses.CosineSimilarity(axis=0, reduction="sum"),
]


@pytest.fixture
def clean_registry():
    custom = dict(losses.REGISTRY.custom)
    yield
    losses.REGISTRY.custom.clear()
    losses.REGISTRY.custom.update(custom)


@pytest.mark.parametrize("name", sorted(FUNCTION_NAMES))
def test_function_names_give_the_function(name):
    assert losses.get(name) is FUNCTION_NAMES[name]


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_class_names_give_a_default_instance(name):
    loss = losses.get(name)
    assert type(loss) is getattr(losses, name) and loss.reduction == "sum_over_batch_size"


def test_a_spelling_of_both_the_function_and_the_class_is_ambiguous():
    with pytest.raises(ValueError, match="Ambiguous"):
        losses.get("Mean_Squared_Error")


def test_objects_classes_callables_and_none():
    loss = losses.Huber()
    assert losses.get(loss) is loss
    assert isinstance(losses.get(losses.CategoricalCrossentropy), losses.CategoricalCrossentropy)
    fn = lambda t, p: tf.reduce_mean(p - t)  # noqa: E731
    assert losses.get(fn) is fn
    assert losses.get(None) is None


def test_config_dict_identifier():
    loss = losses.get({"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}})
    assert isinstance(loss, losses.CategoricalCrossentropy) and loss.from_logits


def test_unknown_identifiers_raise_value_errors_listing_the_names():
    with pytest.raises(ValueError, match="Unknown loss 'mean_sqared_error'.*mean_squared_error"):
        losses.get("mean_sqared_error")
    with pytest.raises(ValueError, match="Could not interpret"):
        losses.get(42)
    with pytest.raises(ValueError, match="Unknown loss"):
        losses.get({"class_name": "NoSuchLoss", "config": {}})
    with pytest.raises(ValueError, match="not a Loss class"):
        losses.get({"class_name": "mse", "config": {}})  # "huber" in a dict is the class Huber


@pytest.mark.parametrize("loss", CONFIGURED, ids=lambda loss: loss.name)
def test_config_round_trips(loss):
    config = loss.get_config()
    again = type(loss).from_config(config)
    assert again.get_config() == config
    reloaded = losses.deserialize(losses.serialize(loss))
    assert type(reloaded) is type(loss) and reloaded.get_config() == config
    rng = np.random.default_rng(0)
    t, p = np.eye(3)[rng.integers(0, 3, 4)], rng.uniform(0.1, 0.9, (4, 3))
    if isinstance(loss, losses.SparseCategoricalCrossentropy):
        t = rng.integers(0, 3, 4)
    np.testing.assert_array_equal(loss(t, p).numpy(), reloaded(t, p).numpy())


def test_huber_config_keeps_delta():
    assert losses.Huber.from_config(losses.Huber(delta=0.3).get_config()).delta == 0.3


def test_registered_user_function_reloads_by_name(clean_registry):
    @losses.register_loss
    def cubic_error(y_true, y_pred):
        return tf.reduce_mean(tf.abs(y_true - y_pred) ** 3, axis=-1)

    assert losses.get("cubic_error") is cubic_error
    wrapper = losses.LossFunctionWrapper(cubic_error, reduction="sum")
    config = wrapper.get_config()
    assert config["fn"] == "cubic_error"
    again = losses.LossFunctionWrapper.from_config(config)
    assert again.fn is cubic_error and again.name == "cubic_error"


def test_registered_user_class_reloads_under_its_given_name(clean_registry):
    @losses.register_loss(name="scaled_mse")
    class ScaledMSE(losses.Loss):
        def __init__(self, scale=1.0, **kwargs):
            super().__init__(**kwargs)
            self.scale = scale

        def call(self, y_true, y_pred):
            return self.scale * losses.mean_squared_error(y_true, y_pred)

        def get_config(self):
            return {**super().get_config(), "scale": self.scale}

    config = losses.serialize(ScaledMSE(scale=3.0, reduction="sum"))
    assert config["class_name"] == "scaled_mse"
    loss = losses.get(config)
    assert isinstance(loss, ScaledMSE) and loss.scale == 3.0 and loss.reduction == "sum"
    assert loss(np.zeros((1, 2)), np.ones((1, 2))).numpy() == 3.0


def test_unregistered_function_fails_to_reload_with_a_hint(clean_registry):
    def private_loss(y_true, y_pred):
        return y_pred - y_true

    config = losses.LossFunctionWrapper(private_loss).get_config()
    with pytest.raises(ValueError, match="register_loss"):
        losses.LossFunctionWrapper.from_config(config)


def test_builtin_names_cannot_be_taken_over(clean_registry):
    with pytest.raises(ValueError, match="built-in"):
        losses.register_loss(lambda t, p: t, name="mse")
