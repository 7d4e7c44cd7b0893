"""Newton(gauss_newton_fallback=True): the Gauss-Newton matrix where the Hessian is indefinite."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.optimizers.gauss_newton import OutputLoss, gauss_newton
from tests.training_methods.housing import housing_split


def _indefinite_problem():
    """A ReLU layer's least squares, at a point where the loss's Hessian is indefinite."""
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((40, 3)))
    y = tf.constant(rng.standard_normal((40, 1)))
    w1 = tf.Variable(rng.standard_normal((3, 6)))
    w2 = tf.Variable(rng.standard_normal((6, 1)))

    def outputs():
        return tf.nn.relu(x @ w1) @ w2

    def loss_of_outputs(z):
        return tf.reduce_mean((z - y) ** 2)

    def loss():
        return loss_of_outputs(outputs())
    return [w1, w2], loss, OutputLoss(outputs, loss_of_outputs)


def test_an_indefinite_hessian_is_replaced_by_the_gauss_newton_matrix():
    variables, loss, problem = _indefinite_problem()
    assert np.linalg.eigvalsh(tf.hessian(loss, variables).numpy()).min() < -1e-3
    start = [v.numpy() for v in variables]
    curvature = gauss_newton(problem, variables)
    opt = tf.optimizers.Newton(damping=1e-3, gauss_newton_fallback=True)
    opt.minimize(loss, variables, gauss_newton=problem)
    info = opt.last_step_info
    assert info["curvature"] == "gauss-newton" and info["accepted"] and info["tries"] == 1
    # the step is the damped Gauss-Newton step, lambda relative to G's mean |diagonal|
    g, matrix = curvature.gradient, curvature.matrix
    scale = np.mean(np.abs(np.diag(matrix)))
    expected = np.linalg.solve(matrix + 1e-3 * scale * np.eye(len(g)), g)
    taken = np.concatenate([(s - v.numpy()).ravel() for s, v in zip(start, variables)])
    np.testing.assert_allclose(taken, expected, rtol=1e-6, atol=1e-10)


def test_a_positive_definite_hessian_keeps_newton():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((30, 2)))
    y = tf.constant(rng.standard_normal((30, 1)))
    w = tf.Variable(np.zeros((2, 1)))

    def loss():
        return tf.reduce_mean((x @ w - y) ** 2)
    problem = OutputLoss(lambda: x @ w, lambda z: tf.reduce_mean((z - y) ** 2))
    opt = tf.optimizers.Newton(gauss_newton_fallback=True)
    opt.minimize(loss, [w], gauss_newton=problem)
    assert opt.last_step_info["curvature"] == "hessian"


def test_the_fallback_needs_the_loss_of_outputs():
    variables, loss, _ = _indefinite_problem()
    with pytest.raises(ValueError, match="gauss_newton=OutputLoss"):
        tf.optimizers.Newton(gauss_newton_fallback=True).minimize(loss, variables)
    config = tf.optimizers.Newton(gauss_newton_fallback=True).get_config()
    assert tf.optimizers.Newton.from_config(config).gauss_newton_fallback


class _Curvatures(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append(self.model.optimizer.last_step_info["curvature"])


@pytest.mark.parametrize("seed", [2, 3])
def test_relu_network_trains_further_with_the_fallback(seed):
    """Housing rows, Dense(12, relu) -> Dense(1), 10 full-batch steps from the same start:
    plain (saddle-free) Newton crawls on the indefinite ReLU Hessian, the fallback does not."""
    data = housing_split()
    x, y = data["x_train"][:400], data["y_train"][:400]
    final, curves = {}, {}
    for fallback in (False, True):
        tf.random.set_seed(seed)
        model = tf.keras.Sequential([tf.keras.layers.Dense(12, activation="relu", dtype="float64"),
                                     tf.keras.layers.Dense(1, dtype="float64")], dtype="float64")
        model.compile(optimizer=tf.optimizers.Newton(damping=1e-3,
                                                     gauss_newton_fallback=fallback), loss="mse")
        log = _Curvatures()
        history = model.fit(x, y, batch_size=400, epochs=10, shuffle=False, verbose=0,
                            callbacks=[log])
        curves[fallback] = [round(v, 3) for v in history.history["loss"]]
        final[fallback] = model.evaluate(x, y, verbose=0)
        if fallback:
            assert "gauss-newton" in log.seen
        else:
            assert set(log.seen) == {"hessian"}
    print(f"seed {seed}: Newton {curves[False]} -> {final[False]:.4f}; "
          f"with the fallback {curves[True]} -> {final[True]:.4f}")
    assert final[True] < final[False] - 0.02
