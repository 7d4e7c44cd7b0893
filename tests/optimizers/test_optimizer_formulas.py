"""Each optimizer's trajectory against a plain-numpy reference of Keras 3's formula.

The references are written from the published update rules, step by step, in
float64 and without sharing code with tapeflow: on a small least-squares
problem both sides start from the same point and must agree after every step.
The rate they step with is the optimizer's: its learning rate is a float32
Variable, as Keras 3's (``float32_rate``).
"""
import math

import numpy as np
import pytest

import tapeflow as tf

STEPS = 6
RNG = np.random.default_rng(42)
A = RNG.normal(size=(5, 3))
B = RNG.normal(size=(5, 2))
W0 = RNG.normal(size=(3, 2))
C0 = RNG.normal(size=(2,))


def loss_gradients(w, c):
    """Gradients of sum((A @ w + c - B)**2) with respect to w and c."""
    r = A @ w + c - B
    return [2 * A.T @ r, 2 * r.sum(axis=0)]


def tapeflow_trajectory(optimizer, dtype=np.float64):
    w = tf.Variable(W0.astype(dtype), name="w")
    c = tf.Variable(C0.astype(dtype), name="c")
    a, b = tf.constant(A.astype(dtype)), tf.constant(B.astype(dtype))
    path = []
    for _ in range(STEPS):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(a, w) + c - b))
        optimizer.apply_gradients(zip(tape.gradient(loss, [w, c]), [w, c]))
        path.append([w.numpy(), c.numpy()])
    return path


def reference_trajectory(update):
    """``update(t, grads, params)`` changes ``params`` in place for step t = 1, 2, ..."""
    params = [W0.copy(), C0.copy()]
    path = []
    for t in range(1, STEPS + 1):
        update(t, loss_gradients(*params), params)
        path.append([p.copy() for p in params])
    return path


def assert_same_path(got, want, rtol=1e-10, atol=1e-12):
    for step, (g, w) in enumerate(zip(got, want)):
        for gp, wp in zip(g, w):
            np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol, err_msg=f"step {step + 1}")


def float32_rate(lr):
    return float(np.float32(lr))


def sgd_reference(lr, momentum=0.0, nesterov=False):
    lr = float32_rate(lr)
    velocity = [np.zeros_like(W0), np.zeros_like(C0)]

    def update(t, grads, params):
        for p, g, v in zip(params, grads, velocity):
            if momentum == 0:
                p -= lr * g
                continue
            v[...] = momentum * v - lr * g
            p += momentum * v - lr * g if nesterov else v
    return update


def adam_reference(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    lr = float32_rate(lr)
    m = [np.zeros_like(W0), np.zeros_like(C0)]
    v = [np.zeros_like(W0), np.zeros_like(C0)]
    v_max = [np.zeros_like(W0), np.zeros_like(C0)]

    def update(t, grads, params):
        step_size = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            v[i] = beta_2 * v[i] + (1 - beta_2) * g * g
            v_max[i] = np.maximum(v_max[i], v[i])
            denominator = np.sqrt(v_max[i] if amsgrad else v[i]) + epsilon
            p -= step_size * m[i] / denominator
    return update


def nadam_reference(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    lr = float32_rate(lr)
    m = [np.zeros_like(W0), np.zeros_like(C0)]
    v = [np.zeros_like(W0), np.zeros_like(C0)]
    product = [1.0]  # running product of the momentum schedule mu_1 ... mu_t

    def mu(t):
        return beta_1 * (1 - 0.5 * 0.96 ** t)

    def update(t, grads, params):
        product[0] *= mu(t)
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            v[i] = beta_2 * v[i] + (1 - beta_2) * g * g
            m_hat = mu(t + 1) * m[i] / (1 - product[0] * mu(t + 1)) + (1 - mu(t)) * g / (1 - product[0])
            v_hat = v[i] / (1 - beta_2 ** t)
            p -= lr * m_hat / (np.sqrt(v_hat) + epsilon)
    return update


def rmsprop_reference(lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    lr = float32_rate(lr)
    ms = [np.zeros_like(W0), np.zeros_like(C0)]
    mg = [np.zeros_like(W0), np.zeros_like(C0)]
    mom = [np.zeros_like(W0), np.zeros_like(C0)]

    def update(t, grads, params):
        for i, (p, g) in enumerate(zip(params, grads)):
            ms[i] = rho * ms[i] + (1 - rho) * g ** 2
            mg[i] = rho * mg[i] + (1 - rho) * g
            variance = ms[i] - mg[i] ** 2 if centered else ms[i]
            increment = lr * g / np.sqrt(variance + epsilon)
            if momentum > 0:
                mom[i] = momentum * mom[i] + increment
                increment = mom[i]
            p -= increment
    return update


def adagrad_reference(lr, initial_accumulator_value=0.1, epsilon=1e-7):
    lr = float32_rate(lr)
    acc = [np.full_like(W0, initial_accumulator_value), np.full_like(C0, initial_accumulator_value)]

    def update(t, grads, params):
        for i, (p, g) in enumerate(zip(params, grads)):
            acc[i] = acc[i] + g * g
            p -= lr * g / np.sqrt(acc[i] + epsilon)
    return update


def adamax_reference(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    lr = float32_rate(lr)
    m = [np.zeros_like(W0), np.zeros_like(C0)]
    u = [np.zeros_like(W0), np.zeros_like(C0)]

    def update(t, grads, params):
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            u[i] = np.maximum(beta_2 * u[i], np.abs(g))
            p -= lr * m[i] / ((1 - beta_1 ** t) * (u[i] + epsilon))
    return update


def lion_reference(lr, beta_1=0.9, beta_2=0.99, weight_decay=None):
    lr = float32_rate(lr)
    m = [np.zeros_like(W0), np.zeros_like(C0)]

    def update(t, grads, params):
        for i, (p, g) in enumerate(zip(params, grads)):
            if weight_decay:
                p -= lr * weight_decay * p  # decoupled, before the step
            p -= lr * np.sign(beta_1 * m[i] + (1 - beta_1) * g)
            m[i] = beta_2 * m[i] + (1 - beta_2) * g
    return update


CASES = {
    "sgd": (lambda: tf.optimizers.SGD(0.01), lambda: sgd_reference(0.01)),
    "sgd-momentum": (lambda: tf.optimizers.SGD(0.01, momentum=0.9),
                     lambda: sgd_reference(0.01, momentum=0.9)),
    "sgd-nesterov": (lambda: tf.optimizers.SGD(0.01, momentum=0.9, nesterov=True),
                     lambda: sgd_reference(0.01, momentum=0.9, nesterov=True)),
    "adam": (lambda: tf.optimizers.Adam(0.1), lambda: adam_reference(0.1)),
    "adam-betas": (lambda: tf.optimizers.Adam(0.05, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
                   lambda: adam_reference(0.05, beta_1=0.5, beta_2=0.9, epsilon=1e-3)),
    "adam-amsgrad": (lambda: tf.optimizers.Adam(0.1, amsgrad=True),
                     lambda: adam_reference(0.1, amsgrad=True)),
    "nadam": (lambda: tf.optimizers.Nadam(0.1), lambda: nadam_reference(0.1)),
    "rmsprop": (lambda: tf.optimizers.RMSprop(0.01), lambda: rmsprop_reference(0.01)),
    "rmsprop-momentum": (lambda: tf.optimizers.RMSprop(0.01, rho=0.8, momentum=0.5),
                         lambda: rmsprop_reference(0.01, rho=0.8, momentum=0.5)),
    "rmsprop-centered": (lambda: tf.optimizers.RMSprop(0.01, centered=True, momentum=0.3),
                         lambda: rmsprop_reference(0.01, centered=True, momentum=0.3)),
    "adagrad": (lambda: tf.optimizers.Adagrad(0.1), lambda: adagrad_reference(0.1)),
    "adagrad-accumulator": (lambda: tf.optimizers.Adagrad(0.1, initial_accumulator_value=1.0, epsilon=1e-3),
                            lambda: adagrad_reference(0.1, initial_accumulator_value=1.0, epsilon=1e-3)),
    "adamax": (lambda: tf.optimizers.Adamax(0.1), lambda: adamax_reference(0.1)),
    "adamax-betas": (lambda: tf.optimizers.Adamax(0.05, beta_1=0.5, beta_2=0.8, epsilon=1e-3),
                     lambda: adamax_reference(0.05, beta_1=0.5, beta_2=0.8, epsilon=1e-3)),
    "lion": (lambda: tf.optimizers.Lion(0.01), lambda: lion_reference(0.01)),
    "lion-betas-weight-decay": (
        lambda: tf.optimizers.Lion(0.02, beta_1=0.5, beta_2=0.9, weight_decay=0.1),
        lambda: lion_reference(0.02, beta_1=0.5, beta_2=0.9, weight_decay=0.1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_trajectory_matches_the_numpy_reference(case):
    make_optimizer, make_reference = CASES[case]
    assert_same_path(tapeflow_trajectory(make_optimizer()), reference_trajectory(make_reference()))


@pytest.mark.parametrize("case", ["sgd-momentum", "adam", "nadam", "rmsprop-centered", "adagrad",
                                  "adamax", "lion"])
def test_float32_variables_stay_float32_and_follow_the_reference(case):
    make_optimizer, make_reference = CASES[case]
    got = tapeflow_trajectory(make_optimizer(), dtype=np.float32)
    assert all(p.dtype == np.float32 for step in got for p in step)
    assert_same_path(got, reference_trajectory(make_reference()), rtol=1e-4, atol=1e-5)


def test_keras_default_hyperparameters():
    assert float(tf.optimizers.SGD().learning_rate) == pytest.approx(0.01)
    for cls in (tf.optimizers.Adam, tf.optimizers.Nadam, tf.optimizers.RMSprop, tf.optimizers.Adagrad):
        assert float(cls().learning_rate) == pytest.approx(0.001)
    adam = tf.optimizers.Adam()
    assert (adam.beta_1, adam.beta_2, adam.epsilon, adam.amsgrad) == (0.9, 0.999, 1e-7, False)
    rms = tf.optimizers.RMSprop()
    assert (rms.rho, rms.momentum, rms.epsilon, rms.centered) == (0.9, 0.0, 1e-7, False)
    assert tf.optimizers.Adagrad().initial_accumulator_value == 0.1
    adamax = tf.optimizers.Adamax()
    assert (float(adamax.learning_rate), adamax.beta_1, adamax.beta_2, adamax.epsilon) == \
        (pytest.approx(0.001), 0.9, 0.999, 1e-7)
    lion = tf.optimizers.Lion()
    assert (float(lion.learning_rate), lion.beta_1, lion.beta_2) == (pytest.approx(0.001), 0.9, 0.99)
    assert (adamax.name, lion.name) == ("adamax", "lion")


def test_lion_refuses_a_beta_1_outside_0_1():
    for beta_1 in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="beta_1"):
            tf.optimizers.Lion(beta_1=beta_1)


def test_sgd_on_a_quadratic_converges():
    target = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    x = tf.Variable(np.zeros(3, np.float32))
    opt = tf.optimizers.SGD(0.1, momentum=0.5)
    for _ in range(100):
        opt.minimize(lambda: tf.reduce_sum(tf.square(x - target)), [x])
    np.testing.assert_allclose(x.numpy(), target, atol=1e-5)
    assert int(opt.iterations) == 100
