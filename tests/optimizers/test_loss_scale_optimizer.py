"""LossScaleOptimizer: Keras 3's dynamic loss scaling, its tests ported with their values
(keras/src/optimizers/loss_scale_optimizer_test.py, the stateful cases), then the same steps
in a traced function and the wrapping that Model.compile does for mixed_float16."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.mixed_precision import LossScaleOptimizer
from tapeflow.optimizers import SGD


def test_config():
    # Keras: loss_scale_optimizer_test.py::test_config (run_class_serialization_test)
    inner = SGD(learning_rate=0.5, momentum=0.06, nesterov=True, weight_decay=0.004)
    optimizer = LossScaleOptimizer(inner)
    config = tf.keras.optimizers.serialize(optimizer)
    revived = tf.keras.optimizers.deserialize(config)
    assert isinstance(revived, LossScaleOptimizer)
    assert tf.keras.optimizers.serialize(revived) == config
    assert revived.get_config()["inner_optimizer"]["config"]["momentum"] == 0.06
    assert (revived.initial_scale, revived.dynamic_growth_steps) == (2.0 ** 15, 2000)


def test_finite_step():
    # Keras: loss_scale_optimizer_test.py::test_finite_step (stateful)
    optimizer = LossScaleOptimizer(SGD(learning_rate=0.5))
    grads = [tf.constant([1.0, 6.0, 7.0, 2.0]) * optimizer.initial_scale]
    variables = [tf.Variable([1.0, 2.0, 3.0, 4.0])]
    optimizer.apply(grads, variables)
    np.testing.assert_allclose(variables[0].numpy(), [0.5, -1.0, -0.5, 3.0], rtol=1e-4, atol=1e-4)
    assert int(optimizer.iterations.numpy()) == 1


def test_infinite_step():
    # Keras: loss_scale_optimizer_test.py::test_infinite_step (stateful)
    optimizer = LossScaleOptimizer(SGD(learning_rate=0.5))
    grads = [tf.constant([np.inf, np.inf, np.inf, np.inf])]
    variables = [tf.Variable([1.0, 2.0, 3.0, 4.0])]
    optimizer.apply(grads, variables)
    np.testing.assert_allclose(variables[0].numpy(), [1.0, 2.0, 3.0, 4.0], rtol=1e-4, atol=1e-4)
    assert int(optimizer.iterations.numpy()) == 0  # the step was skipped


def test_downscaling():
    # Keras: loss_scale_optimizer_test.py::test_downscaling (stateful)
    optimizer = LossScaleOptimizer(SGD(learning_rate=0.5), initial_scale=400.0)
    variables = [tf.Variable([1.0, 2.0, 3.0, 4.0])]
    optimizer.build(variables)
    grads = [tf.constant([np.inf, np.inf, np.inf, np.inf])]
    for _ in range(4):
        optimizer.apply(grads, variables)
    np.testing.assert_allclose(optimizer.scale_loss(1.0).numpy(), 25.0)


def test_upscaling():
    # Keras: loss_scale_optimizer_test.py::test_upscaling (stateful)
    optimizer = LossScaleOptimizer(SGD(learning_rate=0.5), initial_scale=2.0,
                                   dynamic_growth_steps=2)
    variables = [tf.Variable([1.0, 2.0, 3.0, 4.0])]
    optimizer.build(variables)
    grads = [tf.constant([1.0, 6.0, 7.0, 2.0])]
    for _ in range(8):
        optimizer.apply(grads, variables)
    np.testing.assert_allclose(optimizer.scale_loss(1.0).numpy(), 32.0)


def test_traced_steps_skip_a_non_finite_step_and_halve_the_scale():
    """The finite and infinite cases above in one tf.function: both branches traced."""
    optimizer = LossScaleOptimizer(SGD(learning_rate=0.5), initial_scale=4.0)
    variable = tf.Variable([1.0, 2.0])

    @tf.function
    def step(grad):
        optimizer.apply([grad], [variable])

    step(tf.constant([8.0, 4.0]))         # unscaled [2, 1]: one SGD step
    np.testing.assert_allclose(variable.numpy(), [0.0, 1.5])
    step(tf.constant([np.nan, 4.0]))      # skipped, the scale halved
    np.testing.assert_allclose(variable.numpy(), [0.0, 1.5])
    assert float(optimizer.dynamic_scale.numpy()) == 2.0
    assert int(optimizer.iterations.numpy()) == 1


def test_wraps_only_optimizers_with_clear_errors():
    with pytest.raises(TypeError, match="wraps a tapeflow Optimizer"):
        LossScaleOptimizer("sgd")
    with pytest.raises(TypeError, match="another LossScaleOptimizer"):
        LossScaleOptimizer(LossScaleOptimizer(SGD()))
    with pytest.raises(ValueError, match="initial_scale"):
        LossScaleOptimizer(SGD(), initial_scale=0.0)
    with pytest.raises(ValueError, match="dynamic_growth_steps"):
        LossScaleOptimizer(SGD(), dynamic_growth_steps=0)


def test_compile_wraps_the_optimizer_of_a_mixed_float16_model_only():
    # Keras 3's Model.compile: a mixed_float16 model's optimizer becomes a LossScaleOptimizer
    mixed = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype="mixed_float16")],
                                dtype="mixed_float16")
    mixed.compile(optimizer=SGD(0.1), loss="mse")
    assert isinstance(mixed.optimizer, LossScaleOptimizer)
    assert isinstance(mixed.optimizer.inner_optimizer, SGD)
    plain = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    plain.compile(optimizer=SGD(0.1), loss="mse")
    assert type(plain.optimizer) is SGD


def test_state_holds_the_scale_and_the_inner_optimizers_slots_and_loads_back():
    variables = [tf.Variable([1.0, 2.0])]
    optimizer = LossScaleOptimizer(tf.keras.optimizers.Adam(0.1), initial_scale=8.0)
    optimizer.apply([tf.constant([8.0, -8.0])], variables)
    optimizer.apply([tf.constant([np.inf, 0.0])], variables)
    state = optimizer.get_state()
    assert state["dynamic_scale"] == 4.0 and state["inner_optimizer/iteration"] == 1
    assert "inner_optimizer/Variable/momentum" in state  # an Adam slot
    fresh = LossScaleOptimizer(tf.keras.optimizers.Adam(0.1))
    fresh.build(variables)
    fresh.inner_optimizer.build(variables)
    fresh.set_state(state)
    assert float(fresh.dynamic_scale.numpy()) == 4.0
    assert int(fresh.iterations.numpy()) == 1
    with pytest.raises(ValueError, match="missing names"):
        fresh.set_state({k: v for k, v in state.items() if k != "dynamic_scale"})
