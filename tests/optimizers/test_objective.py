"""``optimizers.Objective``: one batch's loss, replayed random draws, per-example chunks and
the variables' point, as Newton's and Levenberg-Marquardt's ``minimize(objective)`` take it.

Keras and TensorFlow have no second-order optimizer, so no upstream test covers this: the
references here are the definitions (the unchunked Jacobian, the step ``fit`` takes)."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.optimizers import Objective
from tapeflow.optimizers.gauss_newton import output_jacobian
from tapeflow.optimizers.objective import FunctionObjective

layers = tf.keras.layers


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return tf.constant(x), tf.constant(np.sin(x[:, :1]) + x[:, 1:2] * x[:, 2:3])


def _model(*middle, units=4, loss="mse", optimizer="newton"):
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.Input((3,)), layers.Dense(units, activation="tanh"),
                                 *middle, layers.Dense(1)])
    model.compile(optimizer=optimizer, loss=loss)
    return model


def _weights(model):
    return [v.numpy().copy() for v in model.variables]


# --- replayed randomness ------------------------------------------------------------------------
def test_every_evaluation_replays_the_steps_random_draws():
    x, y = _data()
    model = _model(layers.Dropout(0.5))
    objective = Objective(model, x, y)
    first, second = objective.loss().numpy(), objective.loss().numpy()
    assert first == second  # the same Dropout mask twice: bit for bit
    np.testing.assert_array_equal(objective.outputs().numpy(), objective.outputs().numpy())
    # the mask is a real draw: the model without dropout, and the next step's mask, differ
    assert model.evaluate(x, y, verbose=0) != pytest.approx(float(first), rel=1e-6)
    assert Objective(model, x, y).loss().numpy() != first


def test_curvature_loss_is_a_subsample_only_of_a_larger_batch():
    x, _ = _data(n=24)
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.Input((3,)),
                                 layers.Dense(1, kernel_initializer="zeros")])
    model.compile(optimizer="newton", loss="mse")
    # every example's loss is 1, weighted 2**i: the subsample's loss names its examples
    weight = tf.constant(2.0 ** np.arange(24), dtype="float32")
    objective = Objective(model, x, tf.ones((24, 1)), weight)
    assert objective.curvature_loss(None) is None and objective.curvature_loss(24) is None
    total = int(float(objective.curvature_loss(8)()) * 8)
    rows = [i for i in range(24) if total >> i & 1]
    assert len(rows) == 8 and total == sum(2 ** i for i in rows)


# --- per-example chunks -------------------------------------------------------------------------
@pytest.mark.parametrize("middle, chunked", ids=["dense", "layer_norm", "dropout"], argvalues=[
    ((), True),                                # Dense layers: per layer, one pass
    ((layers.LayerNormalization(),), True),    # a chunk of examples at a time
    ((layers.Dropout(0.3),), False),           # masks drawn per batch: the whole batch
])
def test_the_jacobian_from_chunks_of_examples_equals_the_whole_batchs(middle, chunked):
    x, y = _data(n=80)  # more examples than a chunk (64 rows) and more parameters
    model = _model(*middle, units=16)
    objective = Objective(model, x, y)
    calls = []

    def outputs_on(start, stop):
        calls.append((start, stop))
        return objective.outputs_on(start, stop)
    z, jacobian = output_jacobian(objective.outputs, objective.variables, outputs_on)
    whole_z, whole = output_jacobian(objective.outputs, objective.variables)
    np.testing.assert_array_equal(z.numpy(), whole_z.numpy())
    np.testing.assert_allclose(jacobian, whole, rtol=1e-5, atol=1e-6)
    assert calls[0] == (0, 64)  # the check that the examples are independent
    if middle and chunked:
        assert calls[1:] == [(0, 64), (64, 80)]
    else:
        assert calls == [(0, 64)]
    if chunked:  # outputs on a chunk alone are the whole batch's rows
        np.testing.assert_allclose(objective.outputs_on(64, 80).numpy(), z.numpy()[64:],
                                   rtol=1e-6)


# --- the variables' point and the layers' state ----------------------------------------------------
def test_move_and_restore_put_the_variables_back_bit_for_bit():
    x, y = _data()
    model = _model()
    objective = Objective(model, x, y)
    before = _weights(model)
    start = objective.values()
    n = sum(int(np.size(w)) for w in before)
    objective.move(start, np.linspace(-1.0, 1.0, n))
    moved = _weights(model)
    np.testing.assert_allclose(moved[0].ravel(), before[0].ravel() - np.linspace(-1, 1, n)[:12],
                               rtol=1e-6)
    objective.restore(start)
    for a, b in zip(_weights(model), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:overflow")  # trial points far enough to be rejected
@pytest.mark.parametrize("make_optimizer", [
    lambda: tf.optimizers.Newton(learning_rate=1e12, max_tries=2),
    lambda: tf.optimizers.LevenbergMarquardt(learning_rate=1e12, max_rejections=1)],
    ids=["newton", "levenberg_marquardt"])
def test_a_rejected_step_leaves_the_weights_and_moves_the_layers_state_once(make_optimizer):
    x, y = _data(n=32)
    x = x * 3.0 + 2.0
    bn = layers.BatchNormalization(momentum=0.5)
    model = _model(bn, layers.Dropout(0.2), optimizer=make_optimizer())
    hidden = model.layers[0](x).numpy()  # what the step's first forward pass normalizes
    before = _weights(model)
    objective = Objective(model, x, y)
    model.optimizer.minimize(objective)
    assert model.optimizer.last_step_info["accepted"] is False  # every trial rejected
    loss, outputs = objective.finish()
    after = _weights(model)
    trainable = {id(v) for v in model.trainable_variables}
    for v, a, b in zip(model.variables, after, before):
        if id(v) in trainable:
            np.testing.assert_array_equal(a, b)
    # the trials moved BatchNormalization's statistics too; finish puts them back to once
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * hidden.mean(0), rtol=1e-4,
                               atol=1e-5)
    assert float(loss) == pytest.approx(model.optimizer.last_step_info["loss"], rel=1e-6)
    assert outputs.shape == (32, 1)


def test_finish_before_any_evaluation_is_refused():
    x, y = _data()
    with pytest.raises(RuntimeError, match="never evaluated"):
        Objective(_model(), x, y).finish()


# --- minimize(objective) --------------------------------------------------------------------------
@pytest.mark.parametrize("optimizer", ["newton", "levenberg_marquardt"])
def test_minimize_objective_outside_fit_takes_fits_step(optimizer):
    x, y = _data(n=32)
    fitted = _model(layers.Dropout(0.3), optimizer=optimizer)
    history = fitted.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    by_hand = _model(layers.Dropout(0.3), optimizer=optimizer)
    objective = Objective(by_hand, x, y)
    assert by_hand.optimizer.minimize(objective) is by_hand.optimizer.iterations
    loss, _ = objective.finish()
    for a, b in zip(_weights(by_hand), _weights(fitted)):
        np.testing.assert_array_equal(a, b)
    assert float(loss) == pytest.approx(history.history["loss"][0], rel=1e-6)


def test_minimize_objective_takes_nothing_else():
    x, y = _data()
    model = _model()
    objective = Objective(model, x, y)
    with pytest.raises(TypeError, match=r"minimize\(objective\) takes the objective alone.*"
                                        r"var_list"):
        model.optimizer.minimize(objective, model.trainable_variables)
    with pytest.raises(TypeError, match="var_list is missing"):
        tf.optimizers.LevenbergMarquardt().minimize(lambda: model(x) - y)


def test_a_function_objective_without_outputs_is_refused_a_gauss_newton_step():
    w = tf.Variable([1.0, 2.0])
    objective = FunctionObjective(lambda: tf.reduce_sum(w ** 2), [w])
    with pytest.raises(ValueError, match="LevenbergMarquardt needs the loss as a function of "
                                         "outputs"):
        tf.optimizers.LevenbergMarquardt().minimize(objective)
    tf.optimizers.Newton().minimize(objective)  # Newton's own step needs the loss alone
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0], atol=1e-6)
