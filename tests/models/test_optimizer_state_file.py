"""save_weights / load_weights carry a compiled model's optimizer state, keyed by structure.

The layers' variables are Keras 3's ``layers/<layer>/vars/<i>``; the optimizer's state is
Keras 3's ``optimizer/vars/<i>``, each dataset naming its ``optimizer.get_state()`` key
(``sequential/dense/kernel/momentum``), so training continues exactly in another process
whose layer counters differ.
"""
import subprocess
import sys
import textwrap
import warnings

import h5py
import numpy as np
import pytest

import tapeflow as tf

from .helpers import assert_same_weights, regression_data, single_error, small_model

Dense = tf.keras.layers.Dense


def unrelated():
    return tf.keras.Sequential([tf.keras.Input(shape=(3,)), Dense(2), Dense(2)])


def train(model, epochs):
    x, y = regression_data(32)
    model.fit(x, y, epochs=epochs, batch_size=len(x), shuffle=False, verbose=0)


def stored(path, group):
    """``{name: array}`` of a ``vars`` group: the optimizer's by their ``name`` attribute."""
    found = {}
    with h5py.File(path, "r") as f:
        if group in f:
            for i, ds in f[group].items():
                name = ds.attrs.get("name", i)  # fixed-length bytes in the file
                found[name.decode() if isinstance(name, bytes) else name] = ds[()]
    return found


def test_the_file_holds_the_optimizer_state_beside_unchanged_weight_keys(tmp_path):
    unrelated()
    model = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    train(model, 2)
    path = tmp_path / "w.h5"
    model.save_weights(path)
    assert sorted(stored(path, "layers/dense/vars")) == sorted(stored(path, "layers/dense_1/vars")) \
        == ["0", "1"]
    state = model.optimizer.get_state()
    in_file = stored(path, "optimizer/vars")
    assert sorted(in_file) == sorted(state)
    assert "sequential/dense/kernel/momentum" in in_file and in_file["iteration"] == 2
    for key, value in state.items():
        np.testing.assert_array_equal(in_file[key], value)


def test_no_optimizer_group_before_the_optimizer_has_state(tmp_path):
    path = tmp_path / "w.h5"
    small_model(optimizer=tf.keras.optimizers.Adam()).save_weights(path)
    small_model(compile=False).save_weights(tmp_path / "u.h5")
    for p in (path, tmp_path / "u.h5"):
        with h5py.File(p, "r") as f:
            assert list(f) == ["layers", "vars"]


def test_load_restores_the_optimizer_state_in_a_model_built_with_other_counters(tmp_path):
    first = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    train(first, 3)
    path = tmp_path / "w.h5"
    first.save_weights(path)
    unrelated()
    second = small_model(seed=5, optimizer=tf.keras.optimizers.Adam(0.05))
    assert second.weights[0].path != first.weights[0].path
    second.load_weights(path)
    assert_same_weights(first, second)
    assert int(second.optimizer.iterations) == 3
    train(first, 2)
    train(second, 2)
    assert_same_weights(first, second)


def test_an_uncompiled_model_loads_only_the_weights(tmp_path):
    first = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    train(first, 1)
    path = tmp_path / "w.h5"
    first.save_weights(path)
    bare = small_model(compile=False, seed=3)
    bare.load_weights(path)
    assert_same_weights(first, bare)


def test_another_optimizer_class_loads_the_weights_and_says_it_skipped_the_state(tmp_path):
    first = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    train(first, 1)
    path = tmp_path / "w.h5"
    first.save_weights(path)
    other = small_model(seed=3, optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.9))
    with pytest.warns(UserWarning, match="Adam.*SGD"):
        other.load_weights(path)
    assert_same_weights(first, other)
    assert int(other.optimizer.iterations) == 0


def test_mismatched_optimizer_state_fails_before_anything_is_assigned(tmp_path):
    first = small_model(optimizer=tf.keras.optimizers.Adam(0.05, amsgrad=True))
    train(first, 1)
    path = tmp_path / "w.h5"
    first.save_weights(path)
    other = small_model(seed=3, optimizer=tf.keras.optimizers.Adam(0.05))
    before = other.get_weights()
    with pytest.raises(ValueError) as excinfo:
        other.load_weights(path)
    message = single_error(excinfo)
    assert "sequential/dense/kernel/velocity_hat" in message and str(path) in message
    assert_same_weights(before, other.get_weights())  # the weights were not loaded either
    assert other.optimizer.get_state().keys() == {"iteration", "learning_rate"}


# The second process builds an unrelated model first, so every variable name shifts.
CONTINUE = textwrap.dedent("""
    import sys
    import numpy as np
    import tapeflow as tf
    Dense = tf.keras.layers.Dense
    tf.keras.Sequential([tf.keras.Input(shape=(3,)), Dense(2), Dense(2), Dense(2)])
    tf.random.set_seed(11)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(8, activation="tanh"), Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    print(model.weights[0].path)
    model.load_weights(sys.argv[1])
    print(int(model.optimizer.iterations))
    data = np.load(sys.argv[2])
    x, y = data["x"], data["y"]
    model.fit(x, y, epochs=2, batch_size=len(x), shuffle=False, verbose=0)
    np.savez(sys.argv[3], *model.get_weights())
""")


def test_training_continues_exactly_in_a_new_process(tmp_path):
    x, y = regression_data(32)
    first = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    first.fit(x, y, epochs=3, batch_size=len(x), shuffle=False, verbose=0)
    path = tmp_path / "w.h5"
    first.save_weights(path)
    np.savez(tmp_path / "data.npz", x=x, y=y)
    done = subprocess.run([sys.executable, "-c", CONTINUE, str(path), str(tmp_path / "data.npz"),
                           str(tmp_path / "after.npz")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    name, iterations = done.stdout.split()
    assert name == "sequential_1/dense_3/kernel" and iterations == "3"
    first.fit(x, y, epochs=2, batch_size=len(x), shuffle=False, verbose=0)
    with np.load(tmp_path / "after.npz") as after:
        continued = [after[f"arr_{i}"] for i in range(len(after.files))]
    assert_same_weights(first.get_weights(), continued)


def test_a_file_without_optimizer_state_loads_into_a_compiled_model(tmp_path):
    path = tmp_path / "old.h5"
    source = small_model(compile=False)
    source.save_weights(path)  # as files written before the optimizer group existed
    model = small_model(seed=4, optimizer=tf.keras.optimizers.Adam())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.load_weights(path)
    assert_same_weights(source, model)
