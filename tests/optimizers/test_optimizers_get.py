"""``tapeflow.optimizers.get``, ``serialize``/``deserialize`` and the public names."""
import pytest

import tapeflow as tf
from tapeflow import optimizers


@pytest.mark.parametrize("name,cls", [("sgd", optimizers.SGD), ("Adam", optimizers.Adam),
                                      ("NADAM", optimizers.Nadam), ("RMSprop", optimizers.RMSprop),
                                      ("adagrad", optimizers.Adagrad), ("adamax", optimizers.Adamax),
                                      ("Lion", optimizers.Lion)])
def test_get_by_name_is_case_insensitive(name, cls):
    assert type(optimizers.get(name)) is cls


def test_get_passes_optimizers_through_and_reads_config_dicts():
    opt = optimizers.Adam(0.5)
    assert optimizers.get(opt) is opt
    made = optimizers.get({"class_name": "RMSprop", "config": {"learning_rate": 0.25, "rho": 0.5}})
    assert isinstance(made, optimizers.RMSprop)
    assert (made.learning_rate, made.rho) == (0.25, 0.5)
    again = optimizers.get(optimizers.serialize(optimizers.SGD(0.3, momentum=0.2)))
    assert again.get_config() == optimizers.SGD(0.3, momentum=0.2).get_config()


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match="adagrad.*adam.*nadam.*rmsprop.*sgd"):
        optimizers.get("adadeltaa")
    with pytest.raises(ValueError, match="known optimizers"):
        optimizers.get({"class_name": "Ftrl", "config": {}})


def test_keras_style_config_with_features_switched_off_is_accepted():
    keras_config = {"name": "adam", "learning_rate": 0.01, "weight_decay": None, "clipnorm": None,
                    "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                    "ema_overwrite_frequency": None, "loss_scale_factor": None,
                    "gradient_accumulation_steps": None, "beta_1": 0.9, "beta_2": 0.999,
                    "epsilon": 1e-07, "amsgrad": False}
    assert optimizers.Adam.from_config(keras_config).learning_rate == 0.01
    with pytest.raises(ValueError, match="use_ema"):
        optimizers.Adam.from_config(dict(keras_config, use_ema=True))


def test_public_names():
    assert tf.optimizers.Adam is optimizers.Adam
    assert tf.optimizers.schedules.ExponentialDecay is optimizers.ExponentialDecay
    assert issubclass(tf.optimizers.schedules.CosineDecay, tf.optimizers.schedules.LearningRateSchedule)
    for name in optimizers.__all__:
        assert hasattr(optimizers, name)
