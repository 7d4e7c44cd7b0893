"""Levenberg-Marquardt's hand-over to Adam: the stall count, the switch after N stalled steps
in a row, Adam's steps after it (as a fresh Adam's from the same point), in fit (traced from
then on) and through checkpoints."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.optimizers.handover import Handover


def test_a_step_is_stalled_when_the_loss_barely_fell_and_the_damping_did_not_halve():
    owner = tf.optimizers.LevenbergMarquardt()
    rule = Handover(owner, after=3, learning_rate=1e-2, tolerance=1e-3)
    counts = []
    for loss, new_loss, damping, new_damping in [
            (1.0, 0.9999, 1.0, 1.0),   # no progress, damping kept: stalled
            (1.0, 0.9, 1.0, 2.0),      # progress: the count starts over
            (1.0, None, 1.0, 4.0),     # rejected, damping up: stalled
            (1.0, 0.9999, 1.0, 0.4),   # the damping fell below half: not stalled
            (1.0, 0.9999, 1.0, 0.6),   # stalled: the damping fell, by less than half
            (1.0, 0.9995, 1.0, 3.0)]:  # stalled
        assert not rule.record(loss, new_loss, damping, new_damping)
        counts.append(rule.stalled_steps)
    assert counts == [1, 0, 1, 0, 1, 2] and not rule.done
    assert rule.record(1.0, float("nan"), 1.0, 2.0)  # a non-finite trial is no progress: 3 in a row
    assert rule.done


def _stalling_problem():
    # 1/2 (w^2 + 1)^2: the residual never reaches zero, J = 2w vanishes at the minimum, so
    # the Gauss-Newton model predicts less and less and the damping climbs
    w = tf.Variable([0.3], dtype=tf.float64)
    return w, (lambda: w ** 2 + 1.0)


def test_hands_over_after_n_stalled_steps_then_takes_adams_steps():
    w, residuals = _stalling_problem()
    opt = tf.optimizers.LevenbergMarquardt(handover_after=3, handover_learning_rate=0.05)
    counts = []
    while not opt.handed_over:
        opt.minimize(residuals, [w])
        counts.append(opt._handover.stalled_steps)
        assert len(counts) < 20
    assert counts[-4:] == [0, 1, 2, 3] and counts[:-3] == [0] * (len(counts) - 3)
    assert opt.last_step_info["handing_over"]
    assert not opt.needs_loss_fn and not opt.needs_gauss_newton
    damping, steps = opt.damping, int(opt.iterations.numpy())
    twin = tf.Variable(w.numpy())
    adam = tf.optimizers.Adam(0.05)
    for _ in range(3):  # Adam's steps on 1/2 ||r||^2 from LM's point, fresh moments
        opt.minimize(residuals, [w])
        adam.minimize(lambda: 0.5 * tf.reduce_sum((twin ** 2 + 1.0) ** 2), [twin])
        np.testing.assert_allclose(w.numpy(), twin.numpy(), rtol=1e-12)
        assert opt.last_step_info["handed_over"]
    assert opt.damping == damping and int(opt.iterations.numpy()) == steps + 3


def test_without_handover_it_never_switches():
    w, residuals = _stalling_problem()
    opt = tf.optimizers.LevenbergMarquardt()
    for _ in range(12):
        opt.minimize(residuals, [w])
    assert not opt.handed_over and opt.needs_loss_fn
    assert "handed_over" not in opt.get_state()


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 3)).astype("float32")
    return x, (np.sin(2 * x[:, :1]) * x[:, 1:2]).astype("float32")


def _fit_until_handed_over(model, x, y):
    for epoch in range(40):
        model.fit(x, y, batch_size=128, epochs=1, verbose=0)
        if model.optimizer.handed_over:
            return epoch
    raise AssertionError("no hand-over in 40 steps")


def test_fit_hands_over_and_goes_on_with_traced_adam_steps(tmp_path):
    x, y = _data()
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    # tolerance 1: no LM step counts as progress, so the damping alone decides
    model.compile(optimizer=tf.optimizers.LevenbergMarquardt(
        handover_after=2, handover_learning_rate=1e-3, handover_tolerance=1.0), loss="mse")
    epoch = _fit_until_handed_over(model, x, y)
    assert model.train_function is None  # LM's steps ran eagerly
    before = model.evaluate(x, y, verbose=0)
    history = model.fit(x, y, batch_size=128, epochs=5, verbose=0)
    assert model.train_function is not None  # Adam's steps are traced
    assert history.history["loss"][-1] < before
    assert int(model.optimizer.iterations.numpy()) == epoch + 1 + 5
    state = model.optimizer.get_state()
    assert state["handed_over"] == 1.0 and state["handover_iteration"] == 5
    momenta = [k for k in state if k.endswith("/handover_momentum")]
    assert len(momenta) == 4 and all(np.any(state[k]) for k in momenta)
    model.save(tmp_path / "lm.keras")
    loaded = tf.keras.models.load_model(tmp_path / "lm.keras")
    assert loaded.optimizer.handed_over and loaded.optimizer.handover_after == 2
    for key, value in loaded.optimizer.get_state().items():
        np.testing.assert_array_equal(value, state[key])
    # the two go on identically
    model.fit(x, y, batch_size=128, epochs=2, verbose=0)
    loaded.fit(x, y, batch_size=128, epochs=2, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_handover_options_round_trip_and_bad_ones_are_refused():
    opt = tf.optimizers.LevenbergMarquardt(handover_after=4, handover_learning_rate=3e-2,
                                           handover_tolerance=1e-4)
    config = opt.get_config()
    assert (config["handover_after"], config["handover_learning_rate"],
            config["handover_tolerance"]) == (4, 3e-2, 1e-4)
    twin = tf.optimizers.deserialize(tf.optimizers.serialize(opt))
    assert twin.get_config() == config and twin.handover_after == 4
    assert tf.optimizers.LevenbergMarquardt().get_config()["handover_after"] is None
    with pytest.raises(ValueError, match="handover_after >= 1"):
        tf.optimizers.LevenbergMarquardt(handover_after=0)
    with pytest.raises(ValueError, match="handover_learning_rate > 0"):
        tf.optimizers.LevenbergMarquardt(handover_after=2, handover_learning_rate=-1.0)
