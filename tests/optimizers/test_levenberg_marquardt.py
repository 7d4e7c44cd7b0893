"""Levenberg-Marquardt: exact on linear least squares, as fast as MINPACK on small nonlinear
problems, its Gauss-Newton matrix the dense Jacobian's product, safe on rejected and NaN
trials, its damping saved, and trainable through fit."""
import numpy as np
import pytest
from scipy.optimize import least_squares
from sklearn.linear_model import LinearRegression

import tapeflow as tf
from tapeflow.optimizers.gauss_newton import OutputLoss, gauss_newton


def _regression(n=200, features=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features))
    y = x @ rng.standard_normal((features, 1)) + 0.3 + 0.1 * rng.standard_normal((n, 1))
    return x, y


def _run(opt, residual_fn, variables, steps=200, tolerance=1e-24):
    """Steps until the loss stops falling; (steps taken, points the residuals were evaluated
    at: the start, then each trial; a step's Jacobian is taken where its last trial was)."""
    evaluations = 1
    for step in range(1, steps + 1):
        before = opt.last_step_info.get("new_loss", np.inf)
        opt.minimize(residual_fn, variables)
        info = opt.last_step_info
        evaluations += info["trials"]
        if info["accepted"] and (info["loss"] - info["new_loss"] <= 1e-12 * info["loss"]
                                 or info["new_loss"] < tolerance) or before == 0:
            return step, evaluations
    return steps, evaluations


# --- exactness ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_one_undamped_step_on_a_linear_model_is_least_squares(dtype):
    x, y = _regression()
    reference = LinearRegression().fit(x, y)
    tf.random.set_seed(3)  # a random start
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype=dtype)], dtype=dtype)
    # the loss in the model's dtype: Keras's "mse" computes in floatx (float32)
    model.compile(optimizer=tf.optimizers.LevenbergMarquardt(damping=0.0),
                  loss=tf.keras.losses.MeanSquaredError(dtype=dtype))
    model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)
    kernel, bias = model.get_weights()
    assert model.optimizer.last_step_info["accepted"]
    assert int(model.optimizer.iterations.numpy()) == 1
    rtol = 1e-9 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(kernel[:, 0], reference.coef_[0], rtol=rtol)
    np.testing.assert_allclose(bias, reference.intercept_, rtol=rtol)


def test_standalone_minimize_takes_the_residuals_and_minimizes_half_their_square():
    x, y = _regression(n=50, features=2)
    w = tf.Variable(np.zeros((2, 1)))
    b = tf.Variable(np.zeros(1))
    xt, yt = tf.constant(x), tf.constant(y)

    def residuals():
        return tf.reshape(xt @ w + b - yt, (-1,))
    opt = tf.optimizers.LevenbergMarquardt(damping=0.0)
    opt.minimize(residuals, [w, b])
    reference = LinearRegression().fit(x, y)
    np.testing.assert_allclose(w.numpy()[:, 0], reference.coef_[0], rtol=1e-10)
    r0 = y[:, 0]
    assert opt.last_step_info["loss"] == pytest.approx(0.5 * r0 @ r0)  # 1/2 ||r||^2 at the start


# --- against MINPACK ----------------------------------------------------------------------------
def _rosenbrock():
    p = tf.Variable([-1.2, 1.0], dtype=tf.float64)

    def residuals():
        return tf.stack([10.0 * (p[1] - p[0] ** 2), 1.0 - p[0]])

    def f(q):
        return np.array([10.0 * (q[1] - q[0] ** 2), 1.0 - q[0]])

    def jac(q):
        return np.array([[-20.0 * q[0], 10.0], [-1.0, 0.0]])
    return p, residuals, f, jac, np.array([-1.2, 1.0])


def _exponential_fit():
    t = np.linspace(0.0, 2.0, 30)
    data = 2.5 * np.exp(-1.3 * t) + 0.01 * np.random.default_rng(1).standard_normal(t.size)
    p = tf.Variable([1.0, 0.0], dtype=tf.float64)
    tt, yy = tf.constant(t), tf.constant(data)

    def residuals():
        return p[0] * tf.exp(p[1] * tt) - yy

    def f(q):
        return q[0] * np.exp(q[1] * t) - data

    def jac(q):
        e = np.exp(q[1] * t)
        return np.stack([e, q[0] * t * e], axis=1)
    return p, residuals, f, jac, np.array([1.0, 0.0])


@pytest.mark.parametrize("problem", [_rosenbrock, _exponential_fit], ids=["rosenbrock", "exp"])
def test_converges_to_minpacks_solution_in_as_many_iterations(problem):
    p, residuals, f, jac, start = problem()
    reference = least_squares(f, start, jac=jac, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    opt = tf.optimizers.LevenbergMarquardt(damping=1e-3, scale=True)
    steps, evaluations = _run(opt, residuals, [p])
    print(f"{problem.__name__}: LM {steps} Jacobians / {evaluations} evaluations, "
          f"MINPACK {reference.njev} Jacobians / {reference.nfev} evaluations")
    np.testing.assert_allclose(p.numpy(), reference.x, rtol=1e-7, atol=1e-9)
    assert steps <= 2 * reference.njev
    assert evaluations <= 2 * reference.nfev


def test_one_step_by_hand_with_nielsens_damping_update():
    w = tf.Variable([0.8], dtype=tf.float64)
    lam = 0.01
    opt = tf.optimizers.LevenbergMarquardt(damping=lam)
    opt.minimize(lambda: w ** 2 - 2.0, [w])
    r, jac = 0.8 ** 2 - 2.0, 2 * 0.8
    g = jac * r
    delta = g / (jac * jac + lam)
    trial = 0.8 - delta
    actual = 0.5 * r ** 2 - 0.5 * (trial ** 2 - 2.0) ** 2
    gain = actual / (0.5 * delta * (lam * delta + g))
    assert 0.2 < gain < 0.8  # where Nielsen's factor is not its 1/3 floor
    assert w.numpy()[0] == pytest.approx(trial, rel=1e-14)
    assert opt.last_step_info["gain"] == pytest.approx(gain, rel=1e-12)
    assert opt.damping == pytest.approx(lam * max(1 / 3, 1 - (2 * gain - 1) ** 3), rel=1e-12)
    assert opt.damping_factor == 2.0


def test_a_shortened_step_is_judged_by_the_reduction_predicted_for_it():
    w = tf.Variable([0.8], dtype=tf.float64)
    opt = tf.optimizers.LevenbergMarquardt(damping=0.01, learning_rate=0.5)
    opt.minimize(lambda: w ** 2 - 2.0, [w])
    r, jac = 0.8 ** 2 - 2.0, 2 * 0.8
    step = 0.5 * jac * r / (jac * jac + 0.01)
    trial = 0.8 - step
    predicted = jac * r * step - 0.5 * jac * jac * step * step  # g s - 1/2 s J^T J s
    actual = 0.5 * r ** 2 - 0.5 * (trial ** 2 - 2.0) ** 2
    assert w.numpy()[0] == pytest.approx(trial, rel=1e-14)
    assert opt.last_step_info["gain"] == pytest.approx(actual / predicted, rel=1e-12)


def test_marquardt_scaling_makes_the_steps_independent_of_the_parameters_units():
    t = tf.constant(np.linspace(0.0, 2.0, 20))
    data = 2.5 * tf.exp(-1.3 * t)
    paths = []
    for unit in (1.0, 1000.0):  # the amplitude as a, or as a / 1000
        p = tf.Variable([1.0 / unit, 0.0], dtype=tf.float64)

        def residuals():
            return unit * p[0] * tf.exp(p[1] * t) - data
        opt = tf.optimizers.LevenbergMarquardt(damping=1e-2, scale=True)
        path = []
        for _ in range(4):
            opt.minimize(residuals, [p])
            path.append(p.numpy() * [unit, 1.0])
        paths.append(np.array(path))
    np.testing.assert_allclose(paths[0], paths[1], rtol=1e-9)


def test_a_singular_system_falls_back_to_least_squares():
    a = tf.Variable([0.0], dtype=tf.float64)
    b = tf.Variable([0.0], dtype=tf.float64)
    opt = tf.optimizers.LevenbergMarquardt(damping=0.0)  # J^T J = [[1, 1], [1, 1]]: no Cholesky
    opt.minimize(lambda: a + b - 3.0, [a, b])
    info = opt.last_step_info
    assert info["accepted"] and info["trials"] == 1 and info["damping"] == 0.0
    assert a.numpy()[0] == pytest.approx(1.5) and b.numpy()[0] == pytest.approx(1.5)


# --- the matrix ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [4, 40], ids=["fewer-outputs-than-parameters",
                                                 "more-outputs-than-parameters"])
def test_gauss_newton_matrix_is_the_dense_jacobian_product(rows):
    x = tf.constant(np.random.default_rng(2).standard_normal((rows, 3)))
    y = tf.constant(np.random.default_rng(3).standard_normal((rows, 2)))
    tf.random.set_seed(4)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", dtype="float64"),
                                 tf.keras.layers.Dense(2, dtype="float64")], dtype="float64")
    model(x)
    variables = model.trainable_variables  # 3*4 + 4 + 4*2 + 2 = 26 parameters

    def residuals():
        return model(x) - y
    curvature = gauss_newton(OutputLoss(residuals), variables)
    with tf.GradientTape(persistent=True) as tape:
        r = tf.reshape(residuals(), (-1,))
    blocks = [tape.jacobian(r, v).numpy().reshape(2 * rows, -1) for v in variables]
    dense = np.concatenate(blocks, axis=1)
    r = r.numpy()
    np.testing.assert_allclose(curvature.matrix, dense.T @ dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(curvature.gradient, dense.T @ r, rtol=1e-12, atol=1e-12)
    assert curvature.loss == pytest.approx(0.5 * r @ r)


@pytest.mark.parametrize("coupled", [False, True], ids=["independent", "batch-norm"])
def test_jacobian_by_chunks_of_examples_is_the_whole_batch_jacobian(coupled):
    rng = np.random.default_rng(7)
    x = tf.constant(rng.standard_normal((150, 3)))
    y = tf.constant(rng.standard_normal((150, 2)))
    tf.random.set_seed(8)
    layers = [tf.keras.layers.Dense(12, activation="tanh", dtype="float64")]
    if coupled:  # batch statistics: a chunk alone has other outputs, so J is taken whole
        layers.append(tf.keras.layers.BatchNormalization(dtype="float64"))
    model = tf.keras.Sequential(layers + [tf.keras.layers.Dense(2, dtype="float64")],
                                dtype="float64")
    model(x)
    mse = tf.keras.losses.MeanSquaredError(dtype="float64")  # floatx would be float32
    calls = []

    def outputs_on(start, stop):
        calls.append((start, stop))
        return model(x[start:stop], training=True)
    whole = gauss_newton(OutputLoss(lambda: model(x, training=True), lambda z: mse(y, z)),
                         model.trainable_variables)
    chunked = gauss_newton(OutputLoss(lambda: model(x, training=True), lambda z: mse(y, z),
                                      outputs_on), model.trainable_variables)
    np.testing.assert_allclose(chunked.matrix, whole.matrix, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(chunked.gradient, whole.gradient, rtol=1e-10, atol=1e-14)
    # only the independence check: a Dense stack's J is taken per layer, in one pass
    # (test_gauss_newton_per_example.py has the chunked path, for a shared layer)
    assert calls == [(0, 32)]


@pytest.mark.parametrize("outputs", [1, 2])
def test_mean_squared_error_of_outputs_is_least_squares_scaled_to_the_loss(outputs):
    rng = np.random.default_rng(6)
    x = tf.constant(rng.standard_normal((10, 3)))
    y = tf.constant(rng.standard_normal((10, outputs)))
    w = tf.Variable(rng.standard_normal((3, outputs)))
    mse = tf.keras.losses.MeanSquaredError(dtype="float64")  # floatx would be float32
    curvature = gauss_newton(OutputLoss(lambda: tf.tanh(x @ w), lambda z: mse(y, z)), [w])
    residuals = gauss_newton(OutputLoss(lambda: tf.tanh(x @ w) - y), [w])
    scale = 2.0 / (10 * outputs)  # H = 2 I / (batch * outputs): 1/2 ||r||^2 scaled to the mean
    np.testing.assert_allclose(curvature.matrix, scale * residuals.matrix, rtol=1e-12)
    np.testing.assert_allclose(curvature.gradient, scale * residuals.gradient, rtol=1e-12)
    assert curvature.loss == pytest.approx(scale * residuals.loss)


def test_generalized_gauss_newton_of_softmax_cross_entropy():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((6, 3)))
    labels = tf.constant(rng.integers(0, 3, 6))
    w = tf.Variable(rng.standard_normal((3, 3)))
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, dtype="float64")

    def logits():
        return x @ w
    curvature = gauss_newton(OutputLoss(logits, lambda z: loss(labels, z)), [w])
    with tf.GradientTape() as tape:
        z = logits()
    jac = tape.jacobian(z, w).numpy().reshape(6, 3, 9)  # per example: (classes, parameters)
    p = tf.nn.softmax(z).numpy()
    expected = sum(jac[i].T @ ((np.diag(p[i]) - np.outer(p[i], p[i])) / 6) @ jac[i]
                   for i in range(6))
    np.testing.assert_allclose(curvature.matrix, expected, rtol=1e-10, atol=1e-12)
    assert curvature.loss == pytest.approx(float(loss(labels, z)))


# --- rejections ---------------------------------------------------------------------------------
def test_rejected_steps_put_the_variables_back_exactly_and_raise_the_damping():
    w = tf.Variable([0.3, -1.7], dtype=tf.float32)
    start = w.numpy().copy()
    calls = {"n": 0}

    def residuals():  # every trial point looks a million times worse
        calls["n"] += 1
        r = tf.stack([w[0] - 1.0, 3.0 * (w[1] + 2.0)])
        return r if calls["n"] == 1 else r * 1e6
    opt = tf.optimizers.LevenbergMarquardt(damping=0.5, max_rejections=3)
    opt.minimize(residuals, [w])
    info = opt.last_step_info
    assert not info["accepted"] and info["trials"] == 4
    assert np.array_equal(w.numpy(), start)  # bit for bit
    assert opt.damping == pytest.approx(0.5 * 2 * 4 * 8 * 16)  # lambda *= nu, nu *= 2
    assert opt.damping_factor == 32.0


def test_a_nan_trial_is_rejected_and_a_shorter_step_taken():
    w = tf.Variable([0.0], dtype=tf.float64)

    def residuals():  # the minimum is at w = 4, but beyond w = 1 the residuals are NaN
        return tf.concat([w - 4.0, 0.0 * tf.sqrt(1.0 - w)], axis=0)
    opt = tf.optimizers.LevenbergMarquardt(damping=1e-6)
    opt.minimize(residuals, [w])
    info = opt.last_step_info
    assert info["accepted"] and info["trials"] > 1  # the first (undamped) trial was NaN
    assert 0.0 < w.numpy()[0] <= 1.0 and np.isfinite(info["new_loss"])


def test_a_nan_loss_at_the_start_restores_the_last_good_point():
    w = tf.Variable([2.0], dtype=tf.float64)
    poison = {"on": False}

    def residuals():
        return (w - 3.0) * (np.nan if poison["on"] else 1.0)
    opt = tf.optimizers.LevenbergMarquardt()
    opt.minimize(residuals, [w])
    good = w.numpy().copy()
    w.assign([100.0])
    poison["on"] = True
    opt.minimize(residuals, [w])
    assert opt.last_step_info["reason"] == "non-finite loss"
    np.testing.assert_array_equal(w.numpy(), good)


# --- state --------------------------------------------------------------------------------------
def test_damping_is_state_that_round_trips():
    w = tf.Variable([1.0, 2.0], dtype=tf.float64)
    opt = tf.optimizers.LevenbergMarquardt(damping=0.1)
    opt.minimize(lambda: tf.stack([w[0] ** 2 - 2.0, w[1] - w[0]]), [w])
    state = opt.get_state()
    assert {"damping", "damping_factor"} <= set(state)
    assert state["damping"] == opt.damping != 0.1
    twin = tf.optimizers.LevenbergMarquardt()
    twin.build([w])
    twin.set_state(state)
    assert twin.damping == opt.damping and twin.damping_factor == opt.damping_factor
    assert tf.optimizers.deserialize(tf.optimizers.serialize(opt)).get_config() == opt.get_config()


def test_model_save_and_load_carry_the_damping(tmp_path):
    x, y = _regression(n=64, features=3)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.optimizers.LevenbergMarquardt(damping=0.3, scale=True), loss="mse")
    model.fit(x, y, batch_size=64, epochs=3, verbose=0)
    damping = model.optimizer.damping
    assert damping != 0.3
    model.save(tmp_path / "lm.keras")
    loaded = tf.keras.models.load_model(tmp_path / "lm.keras")
    assert isinstance(loaded.optimizer, tf.optimizers.LevenbergMarquardt)
    assert loaded.optimizer.scale and loaded.optimizer.damping == damping
    assert loaded.optimizer.damping_factor == model.optimizer.damping_factor


# --- fit ----------------------------------------------------------------------------------------
def _fit_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 4)).astype("float32")
    return x, (np.sin(x[:, :1]) + x[:, 1:2] ** 2).astype("float32")


def _mlp():
    tf.random.set_seed(0)
    return tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(1)])


def test_fit_by_name_full_batch():
    x, y = _fit_data()
    model = _mlp()
    model.compile(optimizer="levenberg_marquardt", loss="mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=256, epochs=10, verbose=0)
    losses = history.history["loss"]
    assert isinstance(model.optimizer, tf.optimizers.LevenbergMarquardt)
    assert losses[-1] < 0.1 * losses[0]
    assert int(model.optimizer.iterations.numpy()) == 10


class _DampingLog(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.begin, self.end = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.begin.append(self.model.optimizer.damping)

    def on_train_batch_end(self, batch, logs=None):
        self.end.append(self.model.optimizer.damping)


def test_fit_mini_batch_carries_the_damping_from_batch_to_batch():
    x, y = _fit_data()
    model = _mlp()
    model.compile(optimizer=tf.optimizers.LevenbergMarquardt(damping=1.0), loss="mse")
    before = model.evaluate(x, y, verbose=0)
    log = _DampingLog()
    model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[log])
    assert len(log.begin) == 16 and int(model.optimizer.iterations.numpy()) == 16
    assert log.begin[0] == 1.0
    assert log.begin[1:] == log.end[:-1]  # each batch starts with the damping the last one left
    assert len(set(log.end)) > 1
    assert model.evaluate(x, y, verbose=0) < 0.5 * before


def test_fit_with_cross_entropy_uses_the_generalized_gauss_newton_matrix():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((120, 2)).astype("float32")
    labels = (x[:, 0] * x[:, 1] > 0).astype("int64") + (x[:, 0] > 1).astype("int64")
    tf.random.set_seed(1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"),
                                 tf.keras.layers.Dense(3)])
    model.compile(optimizer=tf.optimizers.LevenbergMarquardt(),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    history = model.fit(x, labels, batch_size=120, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.85


def test_fit_refuses_a_loss_without_positive_curvature_in_the_outputs():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer="levenberg_marquardt", loss="mae")
    with pytest.raises(ValueError, match="LevenbergMarquardt cannot train on the loss "
                                         "'mean_absolute_error'.*mean_squared_error"):
        model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)


def test_fit_refuses_regularization_losses_it_cannot_see():
    model = tf.keras.Sequential([tf.keras.layers.Dense(
        1, kernel_regularizer=tf.keras.regularizers.L2(0.1))])
    model.compile(optimizer="levenberg_marquardt", loss="mse")
    with pytest.raises(ValueError, match="regularization loss"):
        model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)


def test_levenberg_marquardt_refuses_gradient_only_use_and_tracing():
    w = tf.Variable([1.0])
    opt = tf.optimizers.LevenbergMarquardt()
    with pytest.raises(TypeError, match="needs the loss"):
        opt.apply_gradients([(tf.constant([1.0]), w)])
    with pytest.raises(TypeError, match="residual_fn must be a function"):
        opt.minimize(w - 1.0, [w])

    @tf.function
    def step():
        opt.minimize(lambda: w - 1.0, [w])
        return w
    with pytest.raises(Exception, match="runs eagerly"):
        step()


def test_registered_by_name():
    assert tf.optimizers.REGISTRY.lookup("levenberg_marquardt") is tf.optimizers.LevenbergMarquardt
    assert isinstance(tf.optimizers.get("levenberg_marquardt"), tf.optimizers.LevenbergMarquardt)
    with pytest.raises(ValueError, match="learning_rate|does not apply"):
        tf.optimizers.LevenbergMarquardt(clipnorm=1.0)
