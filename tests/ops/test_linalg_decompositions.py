"""tf.linalg's decompositions and solves: forward values against numpy/scipy, TensorFlow's
signatures and return orders, gradients against finite differences and closed forms.

The battery in test_gradients.py checks every op to second order on random shapes (op_cases.py);
here are the values, the conventions and the cases a random draw would rarely hit.
"""
import numpy as np
import pytest
import scipy.linalg

import tapeflow as tf

from .gradcheck import check_grads, check_jacobian

RNG = np.random.default_rng(0)


def spd(*shape):
    m = RNG.standard_normal(shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def grad(fn, *arrays):
    xs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    return [g.numpy() for g in tape.gradient(y, xs)]


# --- forward values --------------------------------------------------------------------------------
def test_cholesky_matches_numpy_batched_and_reads_the_lower_triangle():
    a = spd(2, 3, 4, 4)
    np.testing.assert_allclose(tf.linalg.cholesky(a).numpy(), np.linalg.cholesky(a), rtol=1e-12)
    junk = a + np.triu(np.full((4, 4), 100.0), 1)  # the upper triangle is not read
    np.testing.assert_allclose(tf.linalg.cholesky(junk).numpy(), np.linalg.cholesky(a), rtol=1e-12)


def test_cholesky_of_an_indefinite_matrix_raises():
    with pytest.raises(np.linalg.LinAlgError):
        tf.linalg.cholesky(-np.eye(3))
    with pytest.raises(ValueError, match="square"):
        tf.linalg.cholesky(np.ones((2, 3)))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_triangular_solve_matches_scipy_and_ignores_the_other_triangle(lower, adjoint):
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 2))
    want = scipy.linalg.solve_triangular(a, b, lower=lower, trans=int(adjoint))
    got = tf.linalg.triangular_solve(a, b, lower=lower, adjoint=adjoint).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    batched = tf.linalg.triangular_solve(np.stack([a, 2 * a]), b, lower=lower, adjoint=adjoint)
    np.testing.assert_allclose(batched.numpy(), np.stack([want, want / 2]), rtol=1e-12)


def test_triangular_solve_keeps_float32():
    a = (np.eye(3) * 2).astype(np.float32)
    out = tf.linalg.triangular_solve(a, np.ones((3, 1), np.float32))
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), 0.5)


def test_triangular_solve_of_one_matrix_with_many_batched_rhs():
    """An unbatched matrix against a batched rhs (a jacobian's rows): one solve, same values."""
    a, b = RNG.standard_normal((3, 3)) + 3 * np.eye(3), RNG.standard_normal((5, 2, 3, 4))
    for lower in (True, False):
        t = np.tril(a) if lower else np.triu(a)
        got = tf.linalg.triangular_solve(a, b, lower=lower, adjoint=True).numpy()
        np.testing.assert_allclose(got, np.linalg.solve(t.T, b), rtol=1e-12)


def test_cholesky_solve_solves_the_system():
    a, b = spd(2, 4, 4), RNG.standard_normal((2, 4, 3))
    x = tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=1e-10)


def test_eigh_matches_numpy():
    a = spd(3, 4, 4)
    e, v = tf.linalg.eigh(a)
    want_e, want_v = np.linalg.eigh(a)
    np.testing.assert_allclose(e.numpy(), want_e, rtol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(want_v), atol=1e-10)
    np.testing.assert_allclose(tf.linalg.eigvalsh(a).numpy(), want_e, rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd_returns_s_u_v_in_tensorflows_order(shape):
    a = RNG.standard_normal(shape)
    s, u, v = tf.linalg.svd(a)
    k = min(shape[-2:])
    assert s.shape == shape[:-2] + (k,) and u.shape == shape[:-1] + (k,)
    assert v.shape == shape[:-2] + (shape[-1], k)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2),
                               a, atol=1e-12)  # v, not vᵀ
    np.testing.assert_allclose(tf.linalg.svd(a, compute_uv=False).numpy(), s.numpy())
    s_full, u_full, v_full = tf.linalg.svd(a, full_matrices=True)
    assert u_full.shape[-1] == shape[-2] and v_full.shape[-1] == shape[-1]


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr_matches_numpy(shape):
    a = RNG.standard_normal(shape)
    q, r = tf.linalg.qr(a)
    want_q, want_r = np.linalg.qr(a)
    np.testing.assert_allclose(q.numpy(), want_q, atol=1e-12)
    np.testing.assert_allclose(r.numpy(), want_r, atol=1e-12)
    q_full, _ = tf.linalg.qr(a, full_matrices=True)
    assert q_full.shape[-1] == shape[-2]


def test_slogdet_where_det_overflows():
    a = 10.0 * np.eye(400)
    a[0, 0] = -10.0
    sign, logabs = tf.linalg.slogdet(a)
    with np.errstate(over="ignore"):
        assert np.isinf(tf.linalg.det(a).numpy())
    assert sign.numpy() == -1.0
    np.testing.assert_allclose(logabs.numpy(), 400 * np.log(10.0), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.logdet(np.abs(a)).numpy(), 400 * np.log(10.0), rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv_matches_numpy(shape):
    a = RNG.standard_normal(shape)
    np.testing.assert_allclose(tf.linalg.pinv(a).numpy(), np.linalg.pinv(a), atol=1e-10)
    rank1 = np.outer(np.arange(1.0, 4.0), np.arange(1.0, 5.0))
    np.testing.assert_allclose(tf.linalg.pinv(rank1).numpy(), np.linalg.pinv(rank1), atol=1e-12)


@pytest.mark.parametrize("shape", [(6, 3), (3, 6)])
def test_lstsq_is_the_least_squares_and_minimum_norm_solution(shape):
    a, b = RNG.standard_normal(shape), RNG.standard_normal((shape[0], 2))
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(tf.linalg.lstsq(a, b).numpy(), want, rtol=1e-9)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b, fast=False).numpy(), want, rtol=1e-9)


def test_lstsq_l2_regularizer_is_ridge():
    a, b, lam = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 1)), 0.7
    want = np.linalg.solve(a.T @ a + lam * np.eye(3), a.T @ b)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b, l2_regularizer=lam).numpy(), want, rtol=1e-12)


def test_matvec_band_part_global_norm_l2_normalize():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4)
    np.testing.assert_allclose(tf.linalg.matvec(a, b).numpy(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.matvec(a, RNG.standard_normal(3), transpose_a=True).shape,
                               (2, 4))
    m = RNG.standard_normal((4, 4))
    np.testing.assert_array_equal(tf.linalg.band_part(m, -1, 0).numpy(), np.tril(m))
    np.testing.assert_array_equal(tf.linalg.band_part(m, 0, -1).numpy(), np.triu(m))
    np.testing.assert_array_equal(tf.linalg.band_part(m, 1, 0).numpy(), np.tril(m) - np.tril(m, -2))
    xs = [RNG.standard_normal((2, 3)), RNG.standard_normal(4)]
    np.testing.assert_allclose(tf.linalg.global_norm(xs).numpy(),
                               np.sqrt(sum((x ** 2).sum() for x in xs)), rtol=1e-12)
    x = RNG.standard_normal((3, 4))
    for f in (tf.linalg.l2_normalize, tf.math.l2_normalize, tf.nn.l2_normalize):
        np.testing.assert_allclose(f(x, axis=1).numpy(),
                                   x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(tf.math.l2_normalize(np.zeros(3), epsilon=1e-6).numpy(), 0.0)


# --- gradients: conventions, closed forms, the cases random draws miss ---------------------------
def test_cholesky_gradient_is_symmetric_and_matches_logdet():
    a = spd(4, 4)
    (g,) = grad(lambda x: 2.0 * tf.reduce_sum(tf.math.log(tf.linalg.diag_part(tf.linalg.cholesky(x)))), a)
    np.testing.assert_allclose(g, np.linalg.inv(a), rtol=1e-10)  # d logdet / dA = A⁻¹ (symmetric)


def test_eigh_gradient_is_lower_triangular_as_tensorflows():
    a = spd(4, 4)
    (g,) = grad(lambda x: tf.reduce_sum(tf.linalg.eigh(x)[0] ** 2), a)
    np.testing.assert_array_equal(np.triu(g, 1), 0.0)
    full = 2 * a  # d tr(A²)/dA for symmetric A, folded onto the lower triangle
    np.testing.assert_allclose(g, np.tril(full + full.T) - np.diag(np.diag(full)), rtol=1e-10)


def test_svd_gradient_of_singular_values_is_u_vt():
    a = RNG.standard_normal((5, 3))
    (g,) = grad(lambda x: tf.reduce_sum(tf.linalg.svd(x, compute_uv=False)), a)
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(g, u @ vt, rtol=1e-10)


def test_svd_and_qr_full_matrices_gradient_refuses_non_square():
    a = tf.constant(RNG.standard_normal((4, 2)))
    with tf.GradientTape() as tape:
        tape.watch(a)
        s, u, v = tf.linalg.svd(a, full_matrices=True)
        y = tf.reduce_sum(u)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        tape.gradient(y, a)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = tf.reduce_sum(tf.linalg.qr(a, full_matrices=True)[0])
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        tape.gradient(y, a)


def test_slogdet_gradient_is_inverse_transpose_with_negative_determinant():
    a = RNG.standard_normal((4, 4))
    a[0] *= np.sign(np.linalg.det(a)) * -1.0
    (g,) = grad(lambda x: tf.linalg.slogdet(x)[1], a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-10)
    check_grads(lambda x: tf.linalg.slogdet(x)[1], [a], order=2)


def test_pinv_gradient_with_repeated_singular_values():
    """pinv of an orthogonal matrix: all singular values 1, where a route through svd gives nan."""
    q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
    check_grads(lambda x: tf.linalg.pinv(x), [q], order=2)
    check_grads(lambda x: tf.linalg.pinv(x), [np.eye(3)[:, :2]], order=2)


def test_eigh_gradient_with_a_repeated_eigenvalue_is_finite():
    (g,) = grad(lambda x: tf.reduce_sum(tf.linalg.eigh(x)[0]), np.eye(3))
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)  # d tr(A) = I, no nan from the tie


def test_lstsq_jacobian_in_rhs_is_the_pseudo_inverse():
    a = RNG.standard_normal((5, 3))
    b = tf.constant(RNG.standard_normal((5, 1)))
    with tf.GradientTape() as tape:
        tape.watch(b)
        x = tf.linalg.lstsq(a, b)
    jac = tape.jacobian(x, b).numpy().reshape(3, 5)
    np.testing.assert_allclose(jac, np.linalg.pinv(a), rtol=1e-9)


def test_hessian_through_cholesky_solve_of_a_quadratic():
    """f(b) = bᵀ A⁻¹ b / 2 by Cholesky: its Hessian is A⁻¹."""
    a = spd(3, 3)
    chol = tf.linalg.cholesky(a)

    def f(b):
        return 0.5 * tf.reduce_sum(b * tf.linalg.cholesky_solve(chol, b))

    b = tf.Variable(RNG.standard_normal((3, 1)))
    h = tf.hessian(lambda: f(b), [b]).numpy()
    np.testing.assert_allclose(h, np.linalg.inv(a), rtol=1e-10)


@pytest.mark.parametrize("name, fn, shapes", [
    ("cholesky_batch_broadcast", lambda m, b: tf.linalg.cholesky_solve(
        tf.linalg.cholesky(tf.matmul(m, m, transpose_b=True) + 3 * tf.eye(3, dtype=tf.float64)), b),
     [(3, 3), (2, 3, 2)]),
    ("svd_batched", lambda a: (lambda s, u, v: [s, u * u])(*tf.linalg.svd(a)), [(2, 4, 3)]),
    ("qr_wide_batched", lambda a: list(tf.linalg.qr(a)), [(2, 2, 4)]),
])
def test_batched_gradients_and_jacobians(name, fn, shapes):
    args = [RNG.standard_normal(s) for s in shapes]
    check_grads(fn, args, order=2, rtol=1e-5, atol=1e-7)
    check_jacobian(fn, args)


def test_traced_function_matches_eager():
    a, b = spd(2, 3, 3), RNG.standard_normal((2, 3, 1))

    def f(a, b):
        e, _ = tf.linalg.eigh(a)
        s, _, _ = tf.linalg.svd(a)
        q, r = tf.linalg.qr(a)
        x = tf.linalg.cholesky_solve(tf.linalg.cholesky(a), b)
        return [e, s, tf.abs(r), x, tf.linalg.slogdet(a)[1], tf.linalg.pinv(a)]

    eager = f(tf.constant(a), tf.constant(b))
    traced = tf.function(f)(tf.constant(a), tf.constant(b))
    for x, y in zip(eager, traced):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name, fn", [
    ("cholesky", lambda x: tf.linalg.cholesky(x)),
    ("triangular_solve", lambda x: tf.linalg.triangular_solve(x, tf.ones((3, 2)))),
    ("eigh", lambda x: tf.linalg.eigh(x)[1] ** 2),
    ("svd", lambda x: tf.linalg.svd(x)[0]),
    ("qr", lambda x: tf.linalg.qr(x)[1]),
    ("slogdet", lambda x: tf.linalg.slogdet(x)[1]),
    ("pinv", lambda x: tf.linalg.pinv(x)),
    ("lstsq", lambda x: tf.linalg.lstsq(x, tf.ones((3, 2)), l2_regularizer=0.1)),
])
def test_float32_to_second_order_stays_float32(name, fn):
    a = spd(3, 3).astype(np.float32)
    x = tf.Variable(a)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(fn(x) ** 2)
        g = inner.gradient(y, x)
        z = tf.reduce_sum(g * g)
    h = outer.gradient(z, x)
    assert y.dtype == g.dtype == h.dtype == tf.float32
    assert np.all(np.isfinite(h.numpy()))
