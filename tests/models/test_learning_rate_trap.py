"""``optimizer.learning_rate`` is a Variable, as in Keras 3: ``assign`` reaches the next step of
an already-traced train function, and checkpoints carry the rate."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import optimizers

from .helpers import regression_data, small_model


def test_a_float_rate_is_a_float32_variable_tracked_as_state():
    opt = optimizers.Adam(0.01)
    lr = opt.learning_rate
    assert isinstance(lr, tf.Variable) and lr.dtype == tf.float32 and lr.shape == ()
    assert not lr.trainable and lr.path == "learning_rate"
    assert float(lr) == float(np.float32(0.01))
    assert [v.path for v in opt.variables] == ["iteration", "learning_rate"]  # Keras 3's order
    lr.assign(0.5)
    assert opt.get_state()["learning_rate"] == np.float32(0.5)
    opt.learning_rate = 0.25  # setting the property assigns the same Variable
    assert opt.learning_rate is lr and float(lr) == 0.25
    opt.learning_rate *= 0.5
    assert opt.learning_rate is lr and float(lr) == 0.125


def fit_one_epoch(model, x, y):
    model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    return model.get_weights()


@pytest.mark.parametrize("set_rate", ["assign", "property"])
def test_an_assigned_rate_reaches_the_next_traced_step_without_a_retrace(set_rate):
    x, y = regression_data(32)
    traced, eager = small_model(), small_model()
    eager.compile(tf.keras.optimizers.SGD(0.05), "mse", run_eagerly=True)
    before = fit_one_epoch(traced, x, y)
    fit_one_epoch(eager, x, y)
    train_function = traced.train_function
    for rate in (0.0, 0.2, 0.01):
        for model in (traced, eager):
            if set_rate == "assign":
                model.optimizer.learning_rate.assign(rate)
            else:
                model.optimizer.learning_rate = rate
        after = fit_one_epoch(traced, x, y)
        if rate == 0.0:  # a baked-in 0.05 would have moved the weights
            for b, a in zip(before, after):
                np.testing.assert_array_equal(b, a)
        for t, e in zip(after, fit_one_epoch(eager, x, y)):
            np.testing.assert_allclose(t, e, rtol=1e-6, atol=1e-7)
        before = after
    assert traced.train_function is train_function
    assert train_function.experimental_get_tracing_count() == 1


def test_the_update_size_follows_the_assigned_rate():
    x, y = regression_data(32)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.01))
    w0 = fit_one_epoch(model, x, y)[-1]  # traces and runs a step at 0.01
    w1 = fit_one_epoch(model, x, y)[-1]
    model.optimizer.learning_rate.assign(0.001)
    w2 = fit_one_epoch(model, x, y)[-1]
    ratio = np.abs(w2 - w1).sum() / np.abs(w1 - w0).sum()
    assert ratio == pytest.approx(0.1, rel=0.05)  # the gradient barely moves in one small step
    assert model.train_function.experimental_get_tracing_count() == 1


def trained_with_rate(rate):
    x, y = regression_data(32)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.05, momentum=0.9))
    fit_one_epoch(model, x, y)
    model.optimizer.learning_rate.assign(rate)
    return model


def test_save_weights_carries_the_assigned_rate(tmp_path):
    model = trained_with_rate(0.0123)
    model.save_weights(tmp_path / "w.h5")
    other = small_model(seed=4, optimizer=tf.keras.optimizers.SGD(0.05, momentum=0.9))
    other.load_weights(tmp_path / "w.h5")
    assert float(other.optimizer.learning_rate) == float(np.float32(0.0123))


def test_save_and_load_model_carry_the_assigned_rate(tmp_path):
    model = trained_with_rate(0.0123)
    model.save(tmp_path / "model.keras")
    loaded = tf.keras.models.load_model(tmp_path / "model.keras")
    assert isinstance(loaded.optimizer.learning_rate, tf.Variable)
    assert float(loaded.optimizer.learning_rate) == float(np.float32(0.0123))
    assert loaded.optimizer.get_config()["learning_rate"] == 0.0123


def test_configs_hold_the_rate_as_a_plain_float():
    opt = optimizers.SGD(0.05, momentum=0.9)
    assert opt.get_config()["learning_rate"] == 0.05  # not 0.05000000074505806
    opt.learning_rate.assign(0.01)
    for config in (opt.get_config(), optimizers.serialize(opt)["config"]):
        assert type(config["learning_rate"]) is float and config["learning_rate"] == 0.01
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert float(again.learning_rate) == float(np.float32(0.01))


def test_state_saved_before_the_rate_was_state_still_loads():
    x = tf.Variable([1.0, 2.0], name="x")
    first = optimizers.SGD(0.1, momentum=0.5)
    first.apply_gradients([(tf.constant([1.0, 1.0]), x)])
    state = first.get_state()
    del state["learning_rate"]
    second = optimizers.SGD(0.3, momentum=0.5)
    second.build([x])
    second.set_state(state)
    assert float(second.learning_rate) == float(np.float32(0.3))  # kept
    assert int(second.iterations) == 1


def test_a_schedule_keeps_a_float_rate_positioned_by_iterations():
    schedule = optimizers.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    opt = optimizers.SGD(schedule)
    x = tf.Variable(1.0, name="x")
    for _ in range(3):
        opt.apply_gradients([(tf.constant(1.0), x)])
    assert isinstance(opt.learning_rate, float) and opt.learning_rate == pytest.approx(0.1 / 8)
    assert list(opt.get_state()) == ["iteration"]
    again = optimizers.SGD(optimizers.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5))
    again.set_state({**opt.get_state(), "learning_rate": np.float32(0.7)})  # a float's, ignored
    assert again.learning_rate == pytest.approx(0.1 / 8)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1


def test_learning_rate_scheduler_moves_the_variable_and_logs_floats():
    x, y = regression_data(16)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.1))
    variable = model.optimizer.learning_rate
    scheduler = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[scheduler])
    assert model.optimizer.learning_rate is variable
    assert all(type(v) is float for v in history.history["learning_rate"])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.1 / 3])
    assert model.train_function.experimental_get_tracing_count() == 1


def test_newton_reads_its_rate_from_the_variable():
    tf.random.set_seed(0)
    w = tf.Variable(np.array([3.0, -2.0]), name="w")
    opt = optimizers.Newton(learning_rate=1.0)
    opt.learning_rate.assign(0.5)
    opt.minimize(lambda: tf.reduce_sum((w - 1.0) ** 2), [w])
    np.testing.assert_allclose(w.numpy(), [2.0, -0.5], rtol=1e-6)  # half the Newton step
    assert "learning_rate" in opt.get_state()
