"""Levenberg-Marquardt's matrix-free mode: Gauss-Newton-vector products equal the dense
Jacobian's, truncated CG solves the damped system as Cholesky does, models above the
threshold take CG steps and converge, and the options survive a config round trip."""
import numpy as np
import pytest
from scipy.optimize import least_squares

import tapeflow as tf
from tapeflow.optimizers.conjugate_gradient import conjugate_gradient
from tapeflow.optimizers.gauss_newton import GaussNewtonProducts, OutputLoss


def _model_and_data(rows=30, outputs=2, seed=2):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.standard_normal((rows, 3)))
    y = tf.constant(rng.standard_normal((rows, outputs)))
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", dtype="float64"),
                                 tf.keras.layers.Dense(outputs, dtype="float64")],
                                dtype="float64")
    model(x)
    return model, x, y


def _dense_jacobian(outputs_fn, variables):
    """J (outputs x parameters) from one tape.jacobian per variable."""
    with tf.GradientTape(persistent=True) as tape:
        z = tf.reshape(outputs_fn(), (-1,))
    rows = int(z.shape[0])
    return z.numpy(), np.concatenate([tape.jacobian(z, v).numpy().reshape(rows, -1)
                                      for v in variables], axis=1)


# --- the products -------------------------------------------------------------------------------
def test_gauss_newton_vector_products_are_the_dense_jacobians():
    model, x, y = _model_and_data()
    variables = model.trainable_variables  # 26 parameters, 60 residuals

    def residuals():
        return model(x) - y
    products = GaussNewtonProducts(OutputLoss(residuals), variables)
    r, jac = _dense_jacobian(residuals, variables)
    rng = np.random.default_rng(0)
    for _ in range(3):
        v = rng.standard_normal(jac.shape[1])
        np.testing.assert_allclose(products.jvp(v).reshape(-1), jac @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(products.product(v), jac.T @ (jac @ v), rtol=1e-11,
                                   atol=1e-12)
    np.testing.assert_allclose(products.gradient, jac.T @ r, rtol=1e-12, atol=1e-12)
    assert products.loss == pytest.approx(0.5 * r @ r)


def test_generalized_products_for_softmax_cross_entropy():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((6, 3)))
    labels = tf.constant(rng.integers(0, 3, 6))
    w = tf.Variable(rng.standard_normal((3, 3)))
    b = tf.Variable(rng.standard_normal(3))
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, dtype="float64")

    def logits():
        return tf.tanh(x @ w) + b
    products = GaussNewtonProducts(OutputLoss(logits, lambda z: loss(labels, z)), [w, b])
    z, jac = _dense_jacobian(logits, [w, b])
    per_example = jac.reshape(6, 3, 12)
    p = tf.nn.softmax(z.reshape(6, 3)).numpy()
    hessians = [(np.diag(p[i]) - np.outer(p[i], p[i])) / 6 for i in range(6)]
    dense = sum(per_example[i].T @ hessians[i] @ per_example[i] for i in range(6))
    v = rng.standard_normal(12)
    np.testing.assert_allclose(products.product(v), dense @ v, rtol=1e-10, atol=1e-12)
    grad = sum(per_example[i].T @ ((p[i] - np.eye(3)[labels.numpy()[i]]) / 6) for i in range(6))
    np.testing.assert_allclose(products.gradient, grad, rtol=1e-10, atol=1e-12)


def test_the_diagonal_estimate_is_nonnegative_and_unbiased():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((8, 3)))
    labels = tf.constant(rng.integers(0, 3, 8))
    w = tf.Variable(rng.standard_normal((3, 3)))
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, dtype="float64")

    def logits():
        return tf.tanh(x @ w)
    problem = OutputLoss(logits, lambda z: loss(labels, z))
    products = GaussNewtonProducts(problem, [w])
    exact = np.array([products.product(e) @ e for e in np.eye(9)])  # e_k^T G e_k
    few = products.diagonal_estimate(2, seed=1)
    assert np.all(few >= 0)
    # relative standard error at most sqrt(2 / samples): 6% with 600
    np.testing.assert_allclose(products.diagonal_estimate(600, seed=1), exact, rtol=0.2)


# --- the solver ---------------------------------------------------------------------------------
def test_conjugate_gradient_solves_preconditioned_and_stops_where_told():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((30, 30))
    matrix = a @ a.T + np.diag(np.logspace(-2, 3, 30))  # badly scaled: Jacobi helps
    b = rng.standard_normal(30)
    exact = np.linalg.solve(matrix, b)
    plain = conjugate_gradient(lambda v: matrix @ v, b, None, 500, 1e-12)
    jacobi = conjugate_gradient(lambda v: matrix @ v, b, 1.0 / np.diag(matrix), 500, 1e-12)
    for result in (plain, jacobi):
        assert result.reason == "converged"
        np.testing.assert_allclose(result.x, exact, rtol=1e-8)
        np.testing.assert_allclose(result.residual, b - matrix @ result.x, atol=1e-9)
    assert jacobi.iterations < plain.iterations
    short = conjugate_gradient(lambda v: matrix @ v, b, None, 3, 1e-12)
    assert short.reason == "max_iterations" and short.iterations == 3
    x = short.x  # truncated CG still lowers the quadratic model from zero
    assert 0.5 * x @ matrix @ x - b @ x < 0
    indefinite = conjugate_gradient(lambda v: -v, b, None, 10, 1e-12)
    assert indefinite.reason == "negative_curvature" and not np.any(indefinite.x)


def _one_step(solver, **options):
    model, x, y = _model_and_data(rows=40, seed=3)

    def residuals():
        return model(x) - y
    opt = tf.optimizers.LevenbergMarquardt(damping=1e-2, solver=solver, **options)
    opt.minimize(residuals, model.trainable_variables)
    return np.concatenate([v.numpy().reshape(-1) for v in model.trainable_variables]), opt


def test_cg_step_agrees_with_the_cholesky_step():
    dense, dense_opt = _one_step("cholesky")
    matrix_free, cg_opt = _one_step("cg", cg_tolerance=1e-12, cg_max_iterations=200)
    assert dense_opt.last_step_info["solver"] == "cholesky"
    info = cg_opt.last_step_info
    assert info["solver"] == "cg" and info["accepted"]
    assert info["cg_iterations"][0] <= 60  # 26 parameters: CG converges in about as many
    np.testing.assert_allclose(matrix_free, dense, rtol=1e-8, atol=1e-10)
    assert info["gain"] == pytest.approx(dense_opt.last_step_info["gain"], rel=1e-7)
    assert cg_opt.damping == pytest.approx(dense_opt.damping, rel=1e-7)


def test_a_truncated_cg_step_is_judged_by_the_reduction_it_predicts():
    # two CG iterations on 26 parameters: far from the Cholesky step, still accepted, and its
    # predicted reduction is the quadratic model's for the step taken (G delta from CG's residual)
    model, x, y = _model_and_data(rows=40, seed=3)

    def residuals():
        return model(x) - y
    variables = model.trainable_variables
    products = GaussNewtonProducts(OutputLoss(residuals), variables)
    start = [v.numpy() for v in variables]
    opt = tf.optimizers.LevenbergMarquardt(damping=1e-2, solver="cg", cg_max_iterations=2)
    opt.minimize(residuals, variables)
    info = opt.last_step_info
    assert info["accepted"] and info["cg_iterations"] == [2]
    delta = np.concatenate([(s - v.numpy()).reshape(-1) for s, v in zip(start, variables)])
    g = products.gradient
    predicted = g @ delta - 0.5 * delta @ products.product(delta)
    assert info["gain"] == pytest.approx((info["loss"] - info["new_loss"]) / predicted, rel=1e-6)


# --- switching and converging -------------------------------------------------------------------
def test_above_the_threshold_the_step_is_matrix_free_and_converges_as_minpack():
    t = np.linspace(0.0, 2.0, 30)
    data = 2.5 * np.exp(-1.3 * t) + 0.4 + 0.01 * np.random.default_rng(1).standard_normal(t.size)
    p = tf.Variable([1.0, 0.0, 0.0], dtype=tf.float64)
    tt, yy = tf.constant(t), tf.constant(data)

    def residuals():
        return p[0] * tf.exp(p[1] * tt) + p[2] - yy
    reference = least_squares(lambda q: q[0] * np.exp(q[1] * t) + q[2] - data, [1.0, 0.0, 0.0],
                              method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    opt = tf.optimizers.LevenbergMarquardt(matrix_free_above=2, cg_tolerance=1e-10)
    # LM converges quadratically here: 5 steps reach MINPACK's answer to 1e-9 (6e-6 after 4).
    # The bound is on steps to the answer, not to a stopping rule: how many steps a relative
    # decrease of 1e-13 takes depends on the last bits of the arithmetic (at the minimum every
    # step is rejected, so such a rule may never fire).
    for step in range(1, 13):
        opt.minimize(residuals, [p])
        assert opt.last_step_info["solver"] == "cg"
        if np.allclose(p.numpy(), reference.x, rtol=1e-8, atol=0.0):
            break
    else:
        pytest.fail(f"12 matrix-free LM steps did not reach MINPACK's {reference.x}: {p.numpy()}")
    for _ in range(3):  # at the minimum a step is rejected or stays there: it never walks away
        opt.minimize(residuals, [p])
        np.testing.assert_allclose(p.numpy(), reference.x, rtol=1e-8)
    assert opt.last_step_info["loss"] == pytest.approx(reference.cost, rel=1e-12)


def test_fit_goes_matrix_free_above_the_threshold_only():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 4)).astype("float32")
    y = (np.sin(x[:, :1]) + x[:, 1:2] ** 2).astype("float32")
    solvers = {}
    for threshold in (1000, 50):  # the MLP has 97 parameters
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="tanh"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.optimizers.LevenbergMarquardt(matrix_free_above=threshold),
                      loss="mse")
        history = model.fit(x, y, batch_size=128, epochs=8, verbose=0)
        solvers[threshold] = model.optimizer.last_step_info["solver"]
        assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]
    assert solvers == {1000: "cholesky", 50: "cg"}


# --- the options --------------------------------------------------------------------------------
def test_options_round_trip_and_bad_ones_are_refused():
    opt = tf.optimizers.LevenbergMarquardt(solver="cg", matrix_free_above=123,
                                           cg_max_iterations=7, cg_tolerance=1e-5)
    config = opt.get_config()
    assert {k: config[k] for k in ("solver", "matrix_free_above", "cg_max_iterations",
                                   "cg_tolerance")} == {"solver": "cg", "matrix_free_above": 123,
                                                        "cg_max_iterations": 7,
                                                        "cg_tolerance": 1e-5}
    twin = tf.optimizers.deserialize(tf.optimizers.serialize(opt))
    assert twin.get_config() == config and twin.solver == "cg"
    with pytest.raises(ValueError, match="solver must be one of auto, cholesky, cg; got 'qr'"):
        tf.optimizers.LevenbergMarquardt(solver="qr")
    with pytest.raises(ValueError, match="cg_max_iterations >= 1"):
        tf.optimizers.LevenbergMarquardt(cg_max_iterations=0)
