"""Optimizer state keyed by the model's structure, not by the process-wide layer counters.

A model's variables are named by counters (``sequential_3/dense_7/kernel``): a model
built after another one gets other names.  Optimizer state (``get_state`` /
``set_state``) of a compiled model is keyed the way its weights file is
(``sequential/dense/kernel/momentum``), so it moves between two models of the same
architecture whatever was built before them; bare Variables keep their names.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import optimizers

Dense = tf.keras.layers.Dense


def data(n=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 3.0, 0.5], np.float32))[:, None]


def net(optimizer=None, hidden=8, seed=1):
    """Input(4) -> Dense(hidden, tanh) -> Dense(1), compiled with ``optimizer`` (Adam)."""
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(hidden, activation="tanh"),
                                 Dense(1)])
    model.compile(optimizer=optimizer or optimizers.Adam(0.05), loss="mse")
    return model


def unrelated():
    """A model built only to move the layer counters on."""
    return tf.keras.Sequential([tf.keras.Input(shape=(3,)), Dense(2), Dense(2), Dense(2)])


def train(model, epochs):
    x, y = data()
    model.fit(x, y, epochs=epochs, batch_size=len(x), shuffle=False, verbose=0)


def assert_same_state(a, b):
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


ADAM_KEYS = ["iteration", "learning_rate"] + [f"sequential/{layer}/{w}/{slot}" for layer in ("dense", "dense_1")
                             for w in ("kernel", "bias") for slot in ("momentum", "velocity")]


def test_a_compiled_models_state_is_keyed_by_its_structure():
    unrelated()
    model = net()
    train(model, 1)
    assert model.weights[0].path != "sequential/dense/kernel"  # the counters moved on
    assert list(model.optimizer.get_state()) == ADAM_KEYS
    assert model.optimizer.get_slot(model.weights[0], "momentum").path == \
        "sequential/dense/kernel/momentum"


def test_named_layers_keep_their_names_in_the_keys():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(3, name="hidden"),
                                 Dense(1, name="head")], name="regressor")
    model.compile(optimizer=optimizers.SGD(0.1, momentum=0.9), loss="mse")
    train(model, 1)
    assert list(model.optimizer.get_state()) == [
        "iteration", "learning_rate", "regressor/hidden/kernel/momentum", "regressor/hidden/bias/momentum",
        "regressor/head/kernel/momentum", "regressor/head/bias/momentum"]


@pytest.mark.parametrize("second_trained_first", [False, True])
def test_round_trip_between_models_built_with_other_counters(second_trained_first):
    first = net()
    train(first, 3)
    state = first.optimizer.get_state()
    unrelated()
    second = net(seed=7)
    assert [v.path for v in second.weights] != [v.path for v in first.weights]
    if second_trained_first:  # an optimizer that already has slots takes the state too
        train(second, 1)
    second.set_weights(first.get_weights())
    second.optimizer.set_state(state)  # an unbuilt optimizer builds its slots from the keys
    assert_same_state(second.optimizer.get_state(), state)
    train(first, 2)
    train(second, 2)
    for u, v in zip(first.get_weights(), second.get_weights()):
        np.testing.assert_array_equal(u, v)
    assert int(second.optimizer.iterations) == 5
    assert_same_state(second.optimizer.get_state(), first.optimizer.get_state())


def test_nadam_rmsprop_adamax_and_lion_state_round_trips_too():
    for make in (lambda: optimizers.Nadam(0.02),
                 lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
                 lambda: optimizers.Adamax(0.02), lambda: optimizers.Lion(0.01)):
        first = net(make())
        train(first, 2)
        unrelated()
        second = net(make())
        second.optimizer.set_state(first.optimizer.get_state())
        assert_same_state(second.optimizer.get_state(), first.optimizer.get_state())


def test_a_slot_for_a_variable_the_model_lacks_is_named_and_nothing_is_assigned():
    first = net()
    train(first, 1)
    state = first.optimizer.get_state()
    state["sequential/dense_2/kernel/momentum"] = np.zeros((8, 1), np.float32)
    second = net()
    train(second, 1)
    before = second.optimizer.get_state()
    with pytest.raises(ValueError) as excinfo:
        second.optimizer.set_state(state)
    message = str(excinfo.value)
    assert "sequential/dense_2/kernel/momentum" in message
    assert "sequential/dense/kernel/momentum" not in message  # only what is wrong
    assert_same_state(second.optimizer.get_state(), before)

    fresh = net()  # unbuilt: still checked before any slot is made
    with pytest.raises(ValueError, match="sequential/dense_2/kernel/momentum"):
        fresh.optimizer.set_state(state)
    assert fresh.optimizer.get_state().keys() == {"iteration", "learning_rate"}


def test_a_shape_mismatch_is_named_and_nothing_is_assigned():
    narrow = net(hidden=8)
    train(narrow, 1)
    wide = net(hidden=16)
    train(wide, 1)
    before = wide.optimizer.get_state()
    with pytest.raises(ValueError) as excinfo:
        wide.optimizer.set_state(narrow.optimizer.get_state())
    message = str(excinfo.value)
    assert "sequential/dense/kernel/momentum" in message
    assert "(4, 16)" in message and "(4, 8)" in message
    assert_same_state(wide.optimizer.get_state(), before)
    with pytest.raises(ValueError, match=r"sequential/dense/kernel/momentum.*\(4, 16\)"):
        net(hidden=16).optimizer.set_state(narrow.optimizer.get_state())


def test_a_failed_set_state_takes_back_the_slots_it_made():
    first = net(optimizers.Nadam(0.02))
    train(first, 1)
    state = first.optimizer.get_state()
    state["sequential/dense/kernel/momentum"] = np.zeros((3, 8), np.float32)
    second = net(optimizers.Nadam(0.02))
    with pytest.raises(ValueError, match="sequential/dense/kernel/momentum"):
        second.optimizer.set_state(state)
    assert not second.optimizer.built and second.optimizer.get_state().keys() == {"iteration", "learning_rate"}
    train(second, 1)  # builds as if set_state had never been called
    assert list(second.optimizer.get_state()) == list(state)


def test_state_for_a_model_not_built_yet_says_to_build_it():
    model = tf.keras.Sequential([Dense(1)])
    model.compile(optimizer=optimizers.Adam(), loss="mse")
    with pytest.raises(ValueError, match="no variables yet: build it first"):
        model.optimizer.set_state({"iteration": 0, "sequential/dense/kernel/momentum": np.zeros((4, 1))})


def test_missing_state_is_named():
    first = net()
    train(first, 1)
    state = first.optimizer.get_state()
    del state["sequential/dense_1/bias/velocity"]
    second = net()
    with pytest.raises(ValueError, match=r"missing.*sequential/dense_1/bias/velocity"):
        second.optimizer.set_state(state)


def test_an_optimizer_compiled_after_it_was_built_is_keyed_by_the_model():
    unrelated()
    model = net()
    opt = optimizers.SGD(0.1, momentum=0.9)
    opt.build(model.trainable_variables)
    assert list(opt.get_state())[2] == model.weights[0].path + "/momentum"  # names until compiled
    model.compile(optimizer=opt, loss="mse")
    assert list(opt.get_state())[2] == "sequential/dense/kernel/momentum"
    assert opt.variables[2].path == "sequential/dense/kernel/momentum"


def test_bare_variables_are_keyed_by_their_names():
    def make():
        return [tf.Variable(np.ones((2, 2), np.float32), name="w"), tf.Variable(0.5, name="b")]

    first_vars, second_vars = make(), make()
    first = optimizers.Adam(0.1)
    first.apply_gradients(zip([np.ones((2, 2)), 1.0], first_vars))
    state = first.get_state()
    assert list(state) == ["iteration", "learning_rate", "w/momentum", "w/velocity", "b/momentum",
                           "b/velocity"]
    second = optimizers.Adam(0.1)
    second.build(second_vars)
    second.set_state(state)
    assert_same_state(second.get_state(), state)
    with pytest.raises(ValueError, match="unknown names \\['w/momentum'"):
        optimizers.Adam().set_state(state)  # not built: nothing to put the slots on
