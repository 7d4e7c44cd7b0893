"""Adamax and Lion beyond their formulas (test_optimizer_formulas.py): names, configs, and
training resumed from restored state is the training that never stopped."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import optimizers

# tests/optimizers is not a package: its directory is on the path
from test_optimizer_state_keys import data, net, train, unrelated

MAKERS = {
    "adamax": lambda: optimizers.Adamax(0.02, beta_2=0.99, clipnorm=1.0),
    "lion": lambda: optimizers.Lion(0.005, beta_1=0.8, weight_decay=0.01),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_config_round_trips_through_get(name):
    opt = MAKERS[name]()
    again = optimizers.get(optimizers.serialize(opt))
    assert type(again) is type(opt) and again.get_config() == opt.get_config()
    assert again.get_config()["name"] == name
    schedule = optimizers.schedules.ExponentialDecay(0.01, 10, 0.5)
    with_schedule = type(opt)(schedule)
    again = type(opt).from_config(with_schedule.get_config())
    assert again.get_config() == with_schedule.get_config()
    assert again.get_config()["learning_rate"]["class_name"] == "ExponentialDecay"


@pytest.mark.parametrize("name, slots", [("adamax", ["momentum", "norm"]),
                                         ("lion", ["momentum"])])
def test_slots_have_keras_names(name, slots):
    model = net(MAKERS[name]())
    train(model, 1)
    assert model.optimizer.get_slot_names() == slots
    assert "sequential/dense/kernel/" + slots[-1] in model.optimizer.get_state()


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_training_resumed_from_restored_state_is_uninterrupted_training(name):
    straight = net(MAKERS[name]())
    train(straight, 4)
    first = net(MAKERS[name]())
    train(first, 2)
    unrelated()
    second = net(MAKERS[name]())
    second.set_weights(first.get_weights())
    second.optimizer.set_state(first.optimizer.get_state())
    train(second, 2)
    for a, b in zip(second.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert int(second.optimizer.iterations) == 4


@pytest.mark.parametrize("name", ["adamax", "lion", "Adamax", "LION"])
def test_compile_by_name_trains(name):
    x, y = data()
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer=name, loss="mse")
    assert type(model.optimizer) is optimizers.get(name.lower()).__class__
    loss = model.fit(x, y, epochs=5, batch_size=8, verbose=0).history["loss"]
    assert loss[-1] < loss[0]
    assert tf.keras.optimizers.Adamax is optimizers.Adamax and tf.keras.optimizers.Lion is \
        optimizers.Lion
