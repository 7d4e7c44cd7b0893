"""tapeflow on the strict stand-in: tensors born on the device, and a small model's forward,
backward and optimizer step give the numbers numpy gives."""
import numpy as np
import pytest

import tapeflow as tf
from strict_device.strict_array import StrictArray


def test_the_stand_in_is_listed_as_a_gpu(strict_gpu):
    assert [d.device_type for d in tf.config.list_physical_devices("GPU")] == ["GPU"]


def test_creation_initializers_and_draws_are_born_on_the_device(strict_gpu):
    with tf.device("/GPU:0"):
        made = [tf.zeros([2, 3]), tf.ones([2]), tf.fill([2], 3.0), tf.eye(2), tf.range(4),
                tf.linspace(0.0, 1.0, 3), tf.random.normal([2]), tf.random.uniform([2]),
                tf.random.truncated_normal([2]), tf.random.Generator.from_seed(1).normal([2]),
                tf.keras.initializers.GlorotUniform(seed=1)([3, 2]),
                tf.keras.initializers.Orthogonal(seed=1)([3, 3]),
                tf.keras.initializers.Constant(2.0)([2]), tf.keras.initializers.Zeros()([2])]
    for t in made:
        assert isinstance(t._value, StrictArray), t
        assert t.device == "GPU:0"


def test_a_seed_gives_the_same_draws_on_either_device(strict_gpu):
    tf.random.set_seed(3)
    host = tf.random.normal([4]).numpy()
    tf.random.set_seed(3)
    with tf.device("/GPU:0"):
        device = tf.random.normal([4])
    np.testing.assert_array_equal(device.numpy(), host)


def _train_one_step():
    tf.keras.backend.clear_session()
    tf.random.set_seed(0)
    x = tf.random.normal([8, 4])
    y = tf.random.normal([8, 1])
    model = tf.keras.Sequential([tf.keras.layers.Dense(5, activation="tanh"),
                                 tf.keras.layers.Dense(1)])
    optimizer = tf.keras.optimizers.SGD(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss, grads, model.trainable_variables


def test_a_model_step_on_the_device_matches_numpy(strict_gpu):
    with tf.device("/CPU:0"):
        want = _train_one_step()
    with tf.device("/GPU:0"):
        got = _train_one_step()
    assert isinstance(got[0]._value, StrictArray)
    for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got)):
        assert isinstance(g._value, StrictArray)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_a_default_device_holds_in_this_thread_and_in_new_threads(strict_gpu):
    import threading
    before = tf.config.get_default_device()
    try:
        tf.config.set_default_device("/GPU:0")
        assert tf.config.get_default_device() == "GPU:0"
        assert isinstance(tf.zeros([2])._value, StrictArray)
        seen = []
        thread = threading.Thread(target=lambda: seen.append(tf.ones([2])._value))
        thread.start()
        thread.join()
        assert isinstance(seen[0], StrictArray)
        with tf.device("/CPU:0"):  # a block still wins
            assert type(tf.zeros([2])._value) is np.ndarray
    finally:
        tf.config.set_default_device("/CPU:0" if before == "CPU:0" else before)
    assert tf.config.get_default_device() == before


def test_a_default_gpu_without_one_is_refused_and_changes_nothing(monkeypatch):
    from tapeflow import backend
    from tapeflow.device import GPUUnavailableError
    before = tf.config.get_default_device()  # GPU:0 under --device strict
    monkeypatch.setattr(backend, "gpu_missing", lambda: "CuPy is not installed")
    with pytest.raises(GPUUnavailableError, match="CuPy is not installed"):
        tf.config.set_default_device("/GPU:0")
    assert tf.config.get_default_device() == before


def test_a_traced_function_is_traced_once_per_device(strict_gpu):
    @tf.function
    def layer(x, w):
        return tf.reduce_mean(tf.nn.relu(tf.matmul(x, w)))

    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    w = np.ones((3, 1), np.float32)
    with tf.device("/CPU:0"):
        on_cpu = layer(tf.constant(x), tf.constant(w))
        cpu_source = layer.get_concrete_function(tf.constant(x), tf.constant(w))._run.source
    with tf.device("/GPU:0"):
        on_gpu = layer(tf.constant(x), tf.constant(w))
    assert layer.experimental_get_tracing_count() == 2
    assert isinstance(on_gpu._value, StrictArray) and type(on_cpu._value) is not StrictArray
    assert on_gpu.numpy() == on_cpu.numpy() == np.float32(3.0)  # relu([-3, 6]) averaged
    # numpy's specialized kernels are the CPU graph's only: the device graph calls the ops
    with tf.device("/GPU:0"):
        device_source = layer.get_concrete_function(tf.constant(x), tf.constant(w))._run.source
    assert "np.maximum" in cpu_source and "np." not in device_source


def test_assign_moves_a_value_to_the_variable_s_device(strict_gpu):
    with tf.device("/GPU:0"):
        on_gpu = tf.Variable([1.0, 2.0])
        device_value = tf.constant([5.0, 6.0])
    with tf.device("/CPU:0"):
        on_cpu = tf.Variable([0.0, 0.0])
    on_gpu.assign(np.array([3.0, 4.0], np.float32))  # a loaded weight, on the host
    on_cpu.assign(device_value)
    assert isinstance(on_gpu._value, StrictArray) and on_gpu.numpy().tolist() == [3.0, 4.0]
    assert type(on_cpu._value) is np.ndarray and on_cpu.numpy().tolist() == [5.0, 6.0]


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "adagrad", "adamax", "nadam"])
def test_every_optimizer_updates_the_device_as_it_does_the_host(strict_gpu, name):
    def three_steps():
        tf.keras.backend.clear_session()
        w = tf.Variable([[0.5, -1.0], [2.0, 0.25]])
        optimizer = tf.keras.optimizers.get(name)
        for k in range(3):  # t = 1, 2, 3: the bias corrections change with the step
            optimizer.apply_gradients([(tf.constant([[0.1, -0.2], [0.3, 0.05]]) * (k + 1), w)])
        return w
    with tf.device("/CPU:0"):
        want = three_steps()
    with tf.device("/GPU:0"):
        got = three_steps()
    assert isinstance(got._value, StrictArray)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_philox_gives_the_device_the_host_s_bits(strict_gpu):
    from tapeflow.ops import philox
    from strict_device.strict_array import MODULE
    for dtype in (np.float32, np.float64):
        on_device = philox.uniform(MODULE, (5, 6), (7, 8), dtype)
        assert isinstance(on_device, StrictArray)
        np.testing.assert_array_equal(MODULE.asnumpy(on_device),
                                      philox.uniform(np, (5, 6), (7, 8), dtype))


def test_dropout_on_the_device_draws_there_seeded(strict_gpu):
    def masks():
        tf.random.set_seed(5)
        with tf.device("/GPU:0"):
            x = tf.ones([200, 50])
            return [tf.nn.dropout(x, rate=0.3) for _ in range(2)]
    first, second = masks()
    assert isinstance(first._value, StrictArray)
    kept = first.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02  # the rate holds
    np.testing.assert_allclose(first.numpy()[kept], 1 / 0.7, rtol=1e-6)
    assert not np.array_equal(first.numpy(), second.numpy())  # each call its own mask
    again = masks()
    np.testing.assert_array_equal(again[0].numpy(), first.numpy())  # the seed replays them
    np.testing.assert_array_equal(again[1].numpy(), second.numpy())
