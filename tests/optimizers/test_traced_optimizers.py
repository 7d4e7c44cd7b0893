"""An optimizer step traced by tf.function is the eager step: same numbers, step after step.

The step-dependent scalars (a schedule's rate, Adam's and Nadam's bias corrections,
Nadam's momentum product) are computed from the ``iterations`` Variable with ops, so a
replay at step t uses step t's values; a value computed once in Python at trace time
would make these tests fail from the second step on.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.optimizers import schedules

STEPS = 5


def _schedule():
    return schedules.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)


CONFIGS = {
    "sgd": lambda: tf.optimizers.SGD(0.1),
    "sgd_momentum_clipnorm": lambda: tf.optimizers.SGD(0.1, momentum=0.9, clipnorm=0.5),
    "sgd_nesterov_global_clipnorm": lambda: tf.optimizers.SGD(0.1, momentum=0.9, nesterov=True,
                                                              global_clipnorm=0.3),
    "sgd_schedule": lambda: tf.optimizers.SGD(
        schedules.PiecewiseConstantDecay([1, 3], [0.1, 0.05, 0.01])),
    "adam": lambda: tf.optimizers.Adam(0.05),
    "adam_amsgrad_weight_decay": lambda: tf.optimizers.Adam(0.05, amsgrad=True, weight_decay=0.1),
    "adam_schedule_clipnorm": lambda: tf.optimizers.Adam(_schedule(), clipnorm=0.5),
    "nadam": lambda: tf.optimizers.Nadam(0.05),
    "nadam_schedule_weight_decay": lambda: tf.optimizers.Nadam(_schedule(), weight_decay=0.05),
    "rmsprop_centered_momentum": lambda: tf.optimizers.RMSprop(0.01, momentum=0.5, centered=True,
                                                               global_clipnorm=1.0),
    "rmsprop_clipvalue": lambda: tf.optimizers.RMSprop(0.01, clipvalue=0.1),
    "adagrad_cosine_warmup": lambda: tf.optimizers.Adagrad(
        schedules.CosineDecay(0.05, 4, warmup_target=0.1, warmup_steps=2), weight_decay=0.01),
    "adamax_schedule_weight_decay": lambda: tf.optimizers.Adamax(_schedule(), weight_decay=0.05),
    "lion_clipnorm": lambda: tf.optimizers.Lion(0.01, clipnorm=0.5),
    "lion_schedule": lambda: tf.optimizers.Lion(_schedule()),
}


class Problem:
    """A small least-squares fit with two variables (one excluded from weight decay)."""

    def __init__(self, make_optimizer):
        rng = np.random.default_rng(0)
        self.w = tf.Variable(rng.normal(size=(3, 2)).astype("float32"), name="w")
        self.b = tf.Variable(rng.normal(size=(2,)).astype("float32"), name="b")
        self.x = tf.constant(rng.normal(size=(8, 3)).astype("float32"))
        self.y = tf.constant(rng.normal(size=(8, 2)).astype("float32"))
        self.optimizer = make_optimizer()

    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ self.w + self.b - y) ** 2)
        grads = tape.gradient(loss, [self.w, self.b])
        self.optimizer.apply_gradients(zip(grads, [self.w, self.b]))
        return loss

    def run(self, step, steps=STEPS):
        path = []
        for _ in range(steps):
            loss = step(self.x, self.y)
            path.append((float(loss), self.w.numpy(), self.b.numpy(),
                         {k: np.array(v) for k, v in self.optimizer.get_state().items()}))
        return path


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_traced_step_equals_eager_step(name):
    eager = Problem(CONFIGS[name])
    traced = Problem(CONFIGS[name])
    fn = tf.function(traced.step)
    want = eager.run(eager.step)
    got = traced.run(fn)
    assert fn.experimental_get_tracing_count() == 1
    for t, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g[0], w[0], rtol=1e-6, err_msg=f"loss, step {t + 1}")
        np.testing.assert_allclose(g[1], w[1], rtol=1e-5, atol=1e-7, err_msg=f"w, step {t + 1}")
        np.testing.assert_allclose(g[2], w[2], rtol=1e-5, atol=1e-7, err_msg=f"b, step {t + 1}")
        assert g[3].keys() == w[3].keys()
        for key in w[3]:
            np.testing.assert_allclose(g[3][key], w[3][key], rtol=1e-5, atol=1e-7,
                                       err_msg=f"{key}, step {t + 1}")
    assert int(traced.optimizer.iterations) == STEPS


@pytest.mark.parametrize("name,op", [("sgd", "ApplyGradientDescent"),
                                     ("sgd_momentum_clipnorm", "ApplyMomentum"),
                                     ("adam", "ApplyAdam"),
                                     ("adam_amsgrad_weight_decay", "ApplyAdamWithAmsgrad"),
                                     ("nadam", "ApplyNadam"),
                                     ("rmsprop_clipvalue", "ApplyRMSProp"),
                                     ("adagrad_cosine_warmup", "ApplyAdagrad"),
                                     ("adamax_schedule_weight_decay", "ApplyAdaMax"),
                                     ("lion_clipnorm", "ApplyLion")])
def test_the_whole_step_is_in_one_graph(name, op):
    p = Problem(CONFIGS[name])
    fn = tf.function(p.step)
    graph = fn.get_concrete_function(p.x, p.y).graph
    names = [e.op.name for e in graph.eqns]
    assert names.count(op) == 2  # one update per variable
    assigned = {graph.variables[e.attrs["variable"]].path for e in graph.eqns
                if e.op.name == "AssignVariableOp"}
    assert {"w", "b", "iteration"} <= assigned
    slots = [s for s in p.optimizer.variables if s.path != "learning_rate"]  # read, not moved
    assert all(s.path in assigned for s in slots)  # every slot moves in the graph


def test_a_replay_reads_the_learning_rate_set_after_tracing():
    """A float rate lives in a Variable the graph reads: LearningRateScheduler reaches it."""
    eager, traced = Problem(lambda: tf.optimizers.SGD(0.1)), Problem(lambda: tf.optimizers.SGD(0.1))
    fn = tf.function(traced.step)
    for lr in (0.1, 0.01, 0.3):
        eager.optimizer.learning_rate = lr
        traced.optimizer.learning_rate = lr
        eager.step(eager.x, eager.y)
        fn(traced.x, traced.y)
        np.testing.assert_allclose(traced.w.numpy(), eager.w.numpy(), rtol=1e-6)
    assert fn.experimental_get_tracing_count() == 1


def test_schedule_on_a_tensor_equals_the_schedule_on_numbers():
    steps = [0, 1, 2, 3, 5, 8, 13]
    for schedule in (schedules.ExponentialDecay(0.1, 3, 0.7, staircase=True),
                     schedules.ExponentialDecay(0.1, 3, 0.7),
                     schedules.CosineDecay(0.1, 10, alpha=0.1),
                     schedules.CosineDecay(0.1, 6, warmup_target=0.2, warmup_steps=3),
                     schedules.PiecewiseConstantDecay([2, 5], [1.0, 0.5, 0.1])):
        for step in steps:
            got = schedules.evaluate(schedule, tf.constant(float(step), dtype=tf.float64))
            assert got.dtype == tf.float64
            assert float(got) == pytest.approx(schedule(step), rel=1e-15), (schedule, step)


def test_newton_refuses_to_run_inside_a_trace():
    w = tf.Variable([1.0, 2.0])
    opt = tf.optimizers.Newton()

    @tf.function
    def step():
        return opt.minimize(lambda: tf.reduce_sum(w ** 2), [w])

    with pytest.raises(RuntimeError, match="Newton runs eagerly"):
        step()
