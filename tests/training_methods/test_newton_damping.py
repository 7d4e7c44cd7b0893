"""Newton's damping at realistic sizes: the exact damped step and the exact damping schedule.

From newton.py: the step solves ``(H + lam s I) d = g`` and moves the variables by ``-lr d``,
where lam is the optimizer's damping and s makes it relative to the curvature:

* dense path (few parameters): ``H`` replaced by ``|H|`` (eigenvalues by their absolute value)
  and ``s`` = the mean |diagonal| of H;
* matrix-free path (conjugate gradients on Hessian-vector products): ``s`` = the Rayleigh
  quotient ``|g.Hg| / g.g``.

After an accepted step, Nielsen's rule: ``lam <- max(lam * max(decrease, 1 - (2 gain - 1)^3),
min_damping)`` with ``gain = (l0 - trial) / (g.step - step.H.step / 2)``.  After a rejected
try, ``lam <- min(max(lam, 1e-8) * grow, max_damping)``, ``grow`` starting at
``damping_increase`` and doubling on each further rejection within the step.

Every expected value here is computed in numpy from a loss whose gradient and Hessian are
written out by hand: ``c sum sqrt(1 + w^2) + w.A.w/2 - b.w`` (a quadratic for c = 0; the
pseudo-Huber term's curvature falls away from 0, so the quadratic model over-predicts).  At
damping 1e-8 (the only value the other tests use) the curvature scaling has no visible effect;
at 1e-2..1 it changes the step by far more than the tolerances.
"""
import numpy as np
import pytest

import tapeflow as tf

N = 6


def _problem(seed, c=0.0, a_scale=1.0, w_scale=1.0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((N, N))
    a = m @ m.T + 0.5 * np.eye(N) + np.diag(rng.uniform(5, 40, N))  # SPD, curvature ~ 10..50
    b = rng.standard_normal(N) * 5
    w0 = rng.standard_normal(N) * w_scale
    return a * a_scale, b, w0, c


NON_QUADRATIC = {"seed": 5, "c": 20.0, "a_scale": 0.3, "w_scale": 2.0}  # gains 0.4..0.75


def _np_loss(p, w):
    a, b, _, c = p
    return c * np.sum(np.sqrt(1 + w ** 2)) + 0.5 * w @ a @ w - b @ w


def _np_grad_hess(p, w):
    a, b, _, c = p
    return c * w / np.sqrt(1 + w ** 2) + a @ w - b, a + np.diag(c / (1 + w ** 2) ** 1.5)


def _tf_loss(p, w, poison=()):
    """The loss as a function of no arguments; the calls numbered in ``poison`` (0 is the one
    that takes the curvature, 1 the first trial step, ...) return the loss plus 1e6, so that
    those trial steps are rejected."""
    a, b, _, c = p
    a_t, b_t = tf.constant(a), tf.constant(b[:, None])
    calls = {"n": 0}

    def loss():
        value = (c * tf.reduce_sum(tf.sqrt(1.0 + w ** 2)) + 0.5 * tf.reduce_sum(w * (a_t @ w))
                 - tf.reduce_sum(b_t * w))
        k = calls["n"]
        calls["n"] += 1
        return value + 1e6 if k in poison else value
    loss.calls = calls
    return loss


def _np_step(p, w, lam, matrix_free):
    g, h = _np_grad_hess(p, w)
    if matrix_free:
        s = abs(g @ h @ g) / (g @ g)
    else:
        s = np.mean(np.abs(np.diag(h)))
        vals, vecs = np.linalg.eigh(h)
        h = vecs @ np.diag(np.abs(vals)) @ vecs.T
    return np.linalg.solve(h + lam * s * np.eye(N), g)


def _np_gain(p, w, step):
    g, h = _np_grad_hess(p, w)
    predicted = g @ step - 0.5 * step @ h @ step
    return (_np_loss(p, w) - _np_loss(p, w - step)) / predicted


def _nielsen(lam, gain, decrease=1 / 3, min_damping=1e-12):
    return max(lam * max(decrease, 1 - (2 * gain - 1) ** 3), min_damping)


def _newton(matrix_free, **kwargs):
    # matrix_free_above=1: conjugate gradients even on 6 parameters; a tight CG tolerance, so
    # the iterative solve agrees with the dense one to many digits
    return tf.optimizers.Newton(matrix_free_above=1 if matrix_free else 1000,
                                cg_tolerance=1e-13, **kwargs)


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
@pytest.mark.parametrize("damping", [1e-2, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("problem", [{"seed": 1}, NON_QUADRATIC],
                         ids=["quadratic", "non_quadratic"])
def test_step_is_the_damped_solve(matrix_free, damping, problem):
    p = _problem(**problem)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=damping)
    opt.minimize(_tf_loss(p, w), [w])
    info = opt.last_step_info
    assert info["accepted"] and info["tries"] == 1 and info["damping"] == damping
    step = _np_step(p, p[2], damping, matrix_free)
    np.testing.assert_allclose(w.numpy()[:, 0], p[2] - step, rtol=1e-9, atol=1e-12)
    # the damping matters here: the undamped step, or the step with the other path's
    # scaling, or with no scaling at all, is far from it
    for other in (np.linalg.solve(_np_grad_hess(p, p[2])[1], _np_grad_hess(p, p[2])[0]),
                  _np_step(p, p[2], damping, not matrix_free),
                  np.linalg.solve(_np_grad_hess(p, p[2])[1] + damping * np.eye(N),
                                  _np_grad_hess(p, p[2])[0])):
        assert np.linalg.norm(other - step) > 1e-3 * np.linalg.norm(step)


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
def test_step_with_a_learning_rate(matrix_free):
    p = _problem(2, 5.0)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=0.2, learning_rate=0.5)
    opt.minimize(_tf_loss(p, w), [w])
    step = 0.5 * _np_step(p, p[2], 0.2, matrix_free)
    np.testing.assert_allclose(w.numpy()[:, 0], p[2] - step, rtol=1e-9, atol=1e-12)
    assert opt.damping == pytest.approx(_nielsen(0.2, _np_gain(p, p[2], step)), rel=1e-7)


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
def test_matrix_free_scaling_is_the_rayleigh_quotient_along_the_gradient(matrix_free):
    # one variable split in two: the scaling is over all the variables together
    p = _problem(3)
    w1, w2 = tf.Variable(p[2][:2, None]), tf.Variable(p[2][2:, None])
    a, b, _, _ = p
    a_t, b_t = tf.constant(a), tf.constant(b[:, None])

    def loss():
        w = tf.concat([w1, w2], axis=0)
        return 0.5 * tf.reduce_sum(w * (a_t @ w)) - tf.reduce_sum(b_t * w)
    opt = _newton(matrix_free, damping=0.5)
    opt.minimize(loss, [w1, w2])
    step = _np_step(p, p[2], 0.5, matrix_free)
    got = np.concatenate([w1.numpy()[:, 0], w2.numpy()[:, 0]])
    np.testing.assert_allclose(got, p[2] - step, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
@pytest.mark.parametrize("damping", [1e-2, 1.0])
def test_accepted_step_on_a_quadratic_divides_the_damping_by_three(matrix_free, damping):
    # on a quadratic the model's predicted reduction is exact: gain 1, so Nielsen's factor
    # 1 - (2 - 1)^3 = 0 and the floor damping_decrease (1/3) applies
    p = _problem(4)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=damping)
    opt.minimize(_tf_loss(p, w), [w])
    assert opt.last_step_info["gain"] == pytest.approx(1.0, abs=1e-9)
    assert opt.damping == pytest.approx(damping / 3, rel=1e-12)
    # the next step starts from that damping
    opt.minimize(_tf_loss(p, w), [w])
    assert opt.last_step_info["damping"] == pytest.approx(damping / 3, rel=1e-12)
    assert opt.damping == pytest.approx(damping / 9, rel=1e-12)
    opt = _newton(matrix_free, damping=damping, damping_decrease=0.5)
    w = tf.Variable(p[2][:, None])
    opt.minimize(_tf_loss(p, w), [w])
    assert opt.damping == pytest.approx(damping / 2, rel=1e-12)


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
@pytest.mark.parametrize("damping", [0.05, 0.3])
def test_accepted_step_follows_nielsens_rule(matrix_free, damping):
    # the pseudo-Huber term makes the quadratic model imperfect: 0 < gain < 1, and the damping
    # is multiplied by 1 - (2 gain - 1)^3, above the 1/3 floor when the gain is near 1/2
    p = _problem(**NON_QUADRATIC)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=damping)
    opt.minimize(_tf_loss(p, w), [w])
    step = _np_step(p, p[2], damping, matrix_free)
    gain = _np_gain(p, p[2], step)
    assert 0.2 < gain < 0.95, gain  # a gain where Nielsen's factor is above the 1/3 floor
    assert opt.last_step_info["gain"] == pytest.approx(gain, rel=1e-7)
    assert opt.damping == pytest.approx(damping * (1 - (2 * gain - 1) ** 3), rel=1e-7)
    assert opt.damping > damping / 3 + 1e-3 * damping


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
@pytest.mark.parametrize("increase", [2.0, 3.0])
def test_rejected_tries_multiply_the_damping_by_a_doubling_factor(matrix_free, increase):
    # every trial rejected: the damping goes x increase, x 2 increase, x 4 increase
    p = _problem(6, 5.0)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=0.01, damping_increase=increase, max_tries=3)
    loss = _tf_loss(p, w, poison=(1, 2, 3))
    opt.minimize(loss, [w])
    assert loss.calls["n"] == 4 and not opt.last_step_info["accepted"]
    assert opt.last_step_info["tries"] == 3
    assert opt.damping == pytest.approx(0.01 * increase * (2 * increase) * (4 * increase),
                                        rel=1e-12)
    np.testing.assert_array_equal(w.numpy()[:, 0], p[2])  # the variables are put back


@pytest.mark.parametrize("matrix_free", [False, True], ids=["dense", "matrix_free"])
@pytest.mark.parametrize("rejections", [1, 2])
def test_rejected_then_accepted(matrix_free, rejections):
    p = _problem(7, 5.0)
    w = tf.Variable(p[2][:, None])
    opt = _newton(matrix_free, damping=0.02)
    opt.minimize(_tf_loss(p, w, poison=tuple(range(1, 1 + rejections))), [w])
    used = 0.02 * 2.0 if rejections == 1 else 0.02 * 2.0 * 4.0
    info = opt.last_step_info
    assert info["accepted"] and info["tries"] == rejections + 1
    assert info["damping"] == pytest.approx(used, rel=1e-12)
    step = _np_step(p, p[2], used, matrix_free)  # the step taken is the one at that damping
    np.testing.assert_allclose(w.numpy()[:, 0], p[2] - step, rtol=1e-9, atol=1e-12)
    assert opt.damping == pytest.approx(_nielsen(used, _np_gain(p, p[2], step)), rel=1e-7)


def test_damping_limits():
    p = _problem(8)
    # a tiny damping grows from 1e-8 on a rejection (not from itself) ...
    w = tf.Variable(p[2][:, None])
    opt = _newton(False, damping=1e-12, max_tries=2)
    opt.minimize(_tf_loss(p, w, poison=(1, 2)), [w])
    assert opt.damping == pytest.approx(1e-8 * 2 * 4, rel=1e-12)
    # ... falls no lower than min_damping on an accepted step ...
    opt = _newton(False, damping=3e-10, min_damping=2e-10)
    opt.minimize(_tf_loss(p, w), [w])
    assert opt.damping == pytest.approx(2e-10, rel=1e-12)
    # ... and rises no higher than max_damping
    opt = _newton(True, damping=1e11, max_tries=3)
    opt.minimize(_tf_loss(p, w, poison=(1, 2, 3)), [w])
    assert opt.damping == pytest.approx(1e12, rel=1e-12)
    opt = _newton(True, damping=1e10, max_tries=2, max_damping=1e11)
    opt.minimize(_tf_loss(p, w, poison=(1, 2)), [w])
    assert opt.damping == pytest.approx(8e10, rel=1e-12)
