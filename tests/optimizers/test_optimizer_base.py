"""What the Optimizer base does once for every optimizer: clipping, weight decay,
None gradients, minimize, learning rates, configs, slots, named state."""
import math
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import backend, optimizers

ALL = [optimizers.SGD, optimizers.Adam, optimizers.Nadam, optimizers.RMSprop, optimizers.Adagrad]


def one_step(opt, grads, values):
    """Apply one step of numpy ``grads`` to new float64 Variables holding ``values``."""
    variables = [tf.Variable(np.array(v, dtype=np.float64), name=f"v{i}") for i, v in enumerate(values)]
    opt.apply_gradients(zip([np.array(g, dtype=np.float64) for g in grads], variables))
    return [v.numpy() for v in variables]


# --- clipping ------------------------------------------------------------------------------------
G = [np.array([3.0, 4.0]), np.array([[0.5, -12.0]])]  # norms 5 and about 12.01
X = [np.zeros(2), np.zeros((1, 2))]


def test_clipvalue_clips_each_element():
    got = one_step(optimizers.SGD(1.0, clipvalue=1.0), G, X)
    np.testing.assert_allclose(got[0], -np.clip(G[0], -1, 1))
    np.testing.assert_allclose(got[1], -np.clip(G[1], -1, 1))


def test_clipnorm_clips_each_gradient_on_its_own():
    got = one_step(optimizers.SGD(1.0, clipnorm=6.0), G, X)
    np.testing.assert_allclose(got[0], -G[0])  # norm 5 < 6: unchanged
    np.testing.assert_allclose(got[1], -G[1] * 6.0 / np.linalg.norm(G[1]))
    np.testing.assert_allclose(np.linalg.norm(got[1]), 6.0)


def test_global_clipnorm_scales_all_gradients_together():
    total = math.sqrt(sum(float(np.sum(g * g)) for g in G))
    got = one_step(optimizers.SGD(1.0, global_clipnorm=2.0), G, X)
    for g, x in zip(G, got):
        np.testing.assert_allclose(x, -g * 2.0 / total)
    small = one_step(optimizers.SGD(1.0, global_clipnorm=100.0), G, X)
    for g, x in zip(G, small):
        np.testing.assert_allclose(x, -g)


def adam_first_step(lr, g, beta_2=0.999, epsilon=1e-7):
    """Adam's first step: lr * g / (|g| + epsilon / sqrt(1 - beta_2)), from its formula at t = 1."""
    return lr * g / (np.abs(g) + epsilon / math.sqrt(1 - beta_2))


def test_clipping_happens_before_the_update_rule():
    # Adam's first step hardly depends on the gradient's scale, except through epsilon:
    # a gradient clipped to 1e-3 moves each element by lr * 1e-3 / (1e-3 + 3.2e-6).
    got = one_step(optimizers.Adam(0.1, clipvalue=1e-3), [np.array([5.0, -5.0])], [np.zeros(2)])
    np.testing.assert_allclose(got[0], -adam_first_step(0.1, np.array([1e-3, -1e-3])))
    assert abs(got[0][0]) < 0.0997


def test_only_one_clipping_option():
    with pytest.raises(ValueError, match="Only one of"):
        optimizers.Adam(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="positive"):
        optimizers.SGD(clipnorm=-1.0)


# --- weight decay -----------------------------------------------------------------------------------
def test_weight_decay_is_decoupled_and_comes_before_the_update():
    w, g, lr, wd = np.array([2.0, -4.0]), np.array([0.5, 0.25]), 0.1, 0.3
    got = one_step(optimizers.SGD(lr, weight_decay=wd), [g], [w])[0]
    np.testing.assert_allclose(got, w - lr * wd * w - lr * g)
    # Adam: decay first, then its usual first step, which the decay does not change
    got = one_step(optimizers.Adam(lr, weight_decay=wd), [g], [w])[0]
    np.testing.assert_allclose(got, w - lr * wd * w - adam_first_step(lr, g))


def test_weight_decay_uses_the_scheduled_rate_and_can_exclude_variables():
    schedule = optimizers.PiecewiseConstantDecay([0], [0.5, 0.25])
    opt = optimizers.SGD(schedule, weight_decay=0.1)
    kernel = tf.Variable(np.ones(2), name="dense/kernel")
    bias = tf.Variable(np.ones(2), name="dense/bias")
    skipped = tf.Variable(np.ones(2), name="other")
    opt.exclude_from_weight_decay(var_list=[skipped], var_names=["bias"])
    zero = np.zeros(2)
    opt.apply_gradients([(zero, kernel), (zero, bias), (zero, skipped)])
    opt.apply_gradients([(zero, kernel), (zero, bias), (zero, skipped)])
    np.testing.assert_allclose(kernel.numpy(), (1 - 0.5 * 0.1) * (1 - 0.25 * 0.1) * np.ones(2))
    np.testing.assert_allclose(bias.numpy(), np.ones(2))
    np.testing.assert_allclose(skipped.numpy(), np.ones(2))


# --- None gradients ---------------------------------------------------------------------------------
def test_none_gradients_are_skipped_with_a_warning():
    a, b = tf.Variable([1.0], name="a"), tf.Variable([1.0], name="b")
    opt = optimizers.Adam(0.1)
    with pytest.warns(UserWarning, match="b:0"):
        opt.apply_gradients([(tf.constant([1.0]), a), (None, b)])
    assert a.numpy()[0] < 1.0 and b.numpy()[0] == 1.0
    assert [v.name for v in opt.variables] == ["iteration:0", "learning_rate:0", "a/momentum:0",
                                               "a/velocity:0"]
    assert int(opt.iterations) == 1


def test_all_none_gradients_raise_naming_the_variables():
    a, b = tf.Variable(1.0, name="alpha"), tf.Variable(1.0, name="beta")
    with pytest.raises(ValueError, match="No gradients provided.*alpha:0.*beta:0"):
        optimizers.SGD().apply_gradients([(None, a), (None, b)])
    with pytest.raises(ValueError, match="no \\(gradient, variable\\) pairs"):
        optimizers.SGD().apply_gradients([])


def test_bad_gradients_raise():
    v = tf.Variable([1.0, 2.0], name="v")
    with pytest.raises(ValueError, match="shape"):
        optimizers.SGD().apply_gradients([(np.ones(3), v)])
    with pytest.raises(TypeError, match="Variables"):
        optimizers.SGD().apply_gradients([(np.ones(2), tf.constant([1.0, 2.0]))])


# --- minimize ------------------------------------------------------------------------------------------
def test_minimize_with_a_loss_function_and_with_a_tape_agree():
    x1 = tf.Variable([1.0, -2.0])
    x2 = tf.Variable([1.0, -2.0])
    opt1, opt2 = optimizers.SGD(0.1), optimizers.SGD(0.1)
    opt1.minimize(lambda: tf.reduce_sum(x1 * x1 * x1), [x1])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x2 * x2 * x2)
    assert opt2.minimize(loss, [x2], tape=tape) is opt2.iterations
    want = np.array([1.0, -2.0]) - 0.1 * 3 * np.array([1.0, 4.0])
    np.testing.assert_allclose(x1.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(x2.numpy(), want, rtol=1e-6)


def test_minimize_takes_var_list_as_a_function_and_needs_a_tape_for_a_tensor():
    x = tf.Variable(3.0)
    optimizers.SGD(0.5).minimize(lambda: x * x, lambda: [x])
    assert x.numpy() == pytest.approx(0.0)
    with pytest.raises(ValueError, match="tape"):
        optimizers.SGD().minimize(tf.constant(1.0), [x])


def test_the_update_installs_new_arrays_and_never_mutates_the_old_one():
    x = tf.Variable([1.0, 2.0])
    for opt in (optimizers.SGD(0.1, momentum=0.9), optimizers.Adam(0.1)):
        before = x._value
        kept = before.copy()
        opt.apply_gradients([(tf.constant([1.0, 1.0]), x)])
        assert x._value is not before
        # the raw arrays may live on a GPU: compared on the host, as a user would read them
        np.testing.assert_array_equal(backend.to_host(before), backend.to_host(kept))


def test_constraints_are_applied_after_the_update():
    x = tf.Variable([0.5, -0.5], constraint=lambda v: tf.maximum(v, 0.0))
    optimizers.SGD(1.0).apply_gradients([(tf.constant([1.0, 1.0]), x)])
    np.testing.assert_allclose(x.numpy(), [0.0, 0.0])


# --- learning rate ---------------------------------------------------------------------------------------
def test_learning_rate_is_a_settable_variable():
    x = tf.Variable(0.0)
    opt = optimizers.SGD(0.5)
    assert isinstance(opt.learning_rate, tf.Variable) and float(opt.learning_rate) == 0.5
    opt.learning_rate = 0.25
    opt.apply_gradients([(tf.constant(1.0), x)])
    assert x.numpy() == pytest.approx(-0.25)
    opt.learning_rate = optimizers.ExponentialDecay(1.0, 1, 0.5)
    assert opt.learning_rate == pytest.approx(0.5)  # evaluated at iterations == 1
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.SGD("fast")


def test_learning_rate_may_be_a_function_of_no_arguments():
    rate = [0.5]
    x = tf.Variable(0.0)
    opt = optimizers.SGD(lambda: rate[0])
    opt.apply_gradients([(tf.constant(1.0), x)])
    rate[0] = 0.25
    opt.apply_gradients([(tf.constant(1.0), x)])
    assert x.numpy() == pytest.approx(-0.75)


# --- config ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL)
def test_get_config_round_trip(cls):
    opt = cls(0.05, clipnorm=2.0, weight_decay=0.01, name="mine")
    config = opt.get_config()
    again = cls.from_config(config)
    assert type(again) is cls and again.get_config() == config
    assert config["name"] == "mine" and config["learning_rate"] == 0.05 and config["clipnorm"] == 2.0


def test_get_config_round_trip_with_a_schedule_and_options():
    opt = optimizers.SGD(optimizers.CosineDecay(0.1, 10, alpha=0.5), momentum=0.9, nesterov=True)
    config = opt.get_config()
    assert config["learning_rate"]["class_name"] == "CosineDecay"
    again = optimizers.SGD.from_config(config)
    assert isinstance(again._learning_rate, optimizers.CosineDecay)
    assert again.get_config() == config and again.nesterov and again.momentum == 0.9
    for cls, extra in [(optimizers.Adam, {"amsgrad": True, "beta_1": 0.8}),
                       (optimizers.RMSprop, {"centered": True, "momentum": 0.5, "rho": 0.7}),
                       (optimizers.Adagrad, {"initial_accumulator_value": 0.3})]:
        config = cls(**extra).get_config()
        assert all(config[k] == v for k, v in extra.items())
        assert cls.from_config(config).get_config() == config


# --- slots, variables and state ------------------------------------------------------------------------------
def test_slot_names_and_variables_order():
    w, b = tf.Variable(np.ones((2, 3)), name="dense/kernel"), tf.Variable(np.ones(3), name="dense/bias")
    opt = optimizers.Adam(amsgrad=True)
    opt.apply_gradients([(np.ones((2, 3)), w), (np.ones(3), b)])
    assert [v.name for v in opt.variables] == [
        "iteration:0", "learning_rate:0",
        "dense/kernel/momentum:0", "dense/kernel/velocity:0", "dense/kernel/velocity_hat:0",
        "dense/bias/momentum:0", "dense/bias/velocity:0", "dense/bias/velocity_hat:0"]
    assert opt.get_slot_names() == ["momentum", "velocity", "velocity_hat"]
    assert opt.get_slot(w, "velocity") is opt.variables[3]
    assert opt.iterations.dtype == tf.int64 and not opt.iterations.trainable
    assert not any(v.trainable for v in opt.variables)
    with pytest.raises(ValueError, match="no slot 'nope'"):
        opt.get_slot(w, "nope")


@pytest.mark.parametrize("cls,kwargs,slots", [
    (optimizers.SGD, {}, []),
    (optimizers.SGD, {"momentum": 0.9}, ["momentum"]),
    (optimizers.Nadam, {}, ["momentum", "velocity"]),
    (optimizers.RMSprop, {"momentum": 0.5, "centered": True}, ["velocity", "momentum", "average_gradient"]),
    (optimizers.Adagrad, {}, ["accumulator"]),
])
def test_each_optimizers_state_names(cls, kwargs, slots):
    x = tf.Variable([1.0], name="x")
    opt = cls(**kwargs)
    opt.apply_gradients([(tf.constant([1.0]), x)])
    wide = ["u_product"] if cls is optimizers.Nadam else []
    assert list(opt.get_state()) == ["iteration", "learning_rate"] + wide + \
        [f"x/{s}" for s in slots]


def test_variables_with_the_same_name_get_distinct_state_names():
    a, b = tf.Variable(1.0), tf.Variable(2.0)  # both named "Variable"
    opt = optimizers.SGD(0.1, momentum=0.5)
    opt.apply_gradients([(tf.constant(1.0), a), (tf.constant(1.0), b)])
    assert list(opt.get_state()) == ["iteration", "learning_rate", "Variable/momentum",
                                     "Variable_1/momentum"]


def test_state_round_trip_continues_exactly():
    def make():
        return [tf.Variable(np.array([1.0, -1.0]), name="w"), tf.Variable(np.array(0.5), name="c")]

    def step(opt, variables):
        opt.minimize(lambda: tf.reduce_sum(variables[0] ** 2) * variables[1] ** 2 + variables[1], variables)

    first_vars, second_vars = make(), make()
    first = optimizers.Nadam(0.05)
    for _ in range(3):
        step(first, first_vars)
    state = first.get_state()
    assert state["iteration"] == 3 and state["iteration"].dtype == np.int64
    for v, u in zip(second_vars, first_vars):
        v.assign(u)
    second = optimizers.Nadam(0.05)
    second.build(second_vars)
    second.set_state(state)
    state["w/momentum"][...] = 99.0  # the optimizer holds its own copy
    for _ in range(2):
        step(first, first_vars)
        step(second, second_vars)
    for u, v in zip(first_vars, second_vars):
        np.testing.assert_array_equal(u.numpy(), v.numpy())
    assert int(second.iterations) == 5


def test_set_state_checks_names_and_shapes():
    x = tf.Variable([1.0, 2.0], name="x")
    opt = optimizers.Adam()
    with pytest.raises(ValueError, match="build"):
        opt.set_state({"iteration": 0, "x/momentum": np.zeros(2), "x/velocity": np.zeros(2)})
    opt.build([x])
    with pytest.raises(ValueError, match="missing names \\['x/velocity'\\]"):
        opt.set_state({"iteration": 0, "x/momentum": np.zeros(2)})
    with pytest.raises(ValueError, match="shape"):
        opt.set_state({"iteration": 0, "x/momentum": np.zeros(3), "x/velocity": np.zeros(2)})
    assert opt.get_state()["x/momentum"].tolist() == [0.0, 0.0]


def test_variables_met_later_get_their_slots_then():
    a, b = tf.Variable(1.0, name="a"), tf.Variable(1.0, name="b")
    opt = optimizers.RMSprop()
    opt.apply_gradients([(tf.constant(1.0), a)])
    opt.apply_gradients([(tf.constant(1.0), a), (tf.constant(1.0), b)])
    assert list(opt.get_state()) == ["iteration", "learning_rate", "a/velocity", "b/velocity"]


def test_apply_without_variables_uses_the_built_ones():
    a = tf.Variable(1.0, name="a")
    opt = optimizers.SGD(1.0)
    opt.build([a])
    opt.apply([tf.constant(0.5)])
    assert a.numpy() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="tracks 1"):
        opt.apply([tf.constant(0.5), tf.constant(0.5)])


def test_no_warnings_on_a_plain_step():
    x = tf.Variable([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for cls in ALL:
            cls().apply_gradients([(tf.constant([1.0]), x)])
