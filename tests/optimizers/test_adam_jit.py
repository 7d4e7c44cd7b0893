"""Adam's update through numba (``optimizers/_adam_numba.py``, the ``jit`` extra) gives numpy's
bits, so whether a compiled step takes it never changes a result.  Skipped without numba."""
import numpy as np
import pytest

pytest.importorskip("numba")

import tapeflow as tf  # noqa: E402 - after the skip
from tapeflow.ops import jit  # noqa: E402
from tapeflow.optimizers import adam  # noqa: E402

NUMBA_ADAM = "tapeflow.optimizers._adam_numba"


def _state(n, seed):
    rng = np.random.default_rng(seed)
    var, m, g = (rng.normal(size=n).astype(np.float32) for _ in range(3))
    v = (rng.normal(size=n) ** 2).astype(np.float32)
    return var, 0.1 * m, 0.01 * v, g


@pytest.mark.parametrize("n", [7, 40_000])
def test_the_compiled_update_gives_numpys_bits(n, monkeypatch):
    var, m, v, g = _state(n, n)
    compiled, numpy_ = [var.copy(), m.copy(), v.copy()], [var.copy(), m.copy(), v.copy()]
    assert jit.kernels(NUMBA_ADAM) is not None  # loaded: small arrays take it too from now
    assert adam._compiled_update(*compiled, g) is not None
    for t in range(4):
        adam._apply_adam_in_place(*compiled, g, 3e-3, t, beta_1=0.8, beta_2=0.99, epsilon=1e-7)
    monkeypatch.setattr(jit, "_LOADED", {NUMBA_ADAM: None})  # numba off: numpy's passes
    assert adam._compiled_update(*numpy_, g) is None
    for t in range(4):
        adam._apply_adam_in_place(*numpy_, g, 3e-3, t, beta_1=0.8, beta_2=0.99, epsilon=1e-7)
    for got, want in zip(compiled, numpy_):
        np.testing.assert_array_equal(got, want)


def test_only_float32_numpy_arrays_in_one_piece():
    var, m, v, g = _state(40_000, 0)
    assert adam._compiled_update(var, m, v, g) is not None
    assert adam._compiled_update(var.astype(np.float64), m, v, g) is None
    assert adam._compiled_update(var[::2], m[::2], v[::2], g[::2]) is None


def test_a_compiled_training_step_is_unchanged_by_it(monkeypatch):
    """Keras's Adam in a traced step on a Dense kernel past the size threshold, with and
    without the compiled update: the same weights after three steps."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 256)).astype(np.float32)
    y = rng.normal(size=(16, 160)).astype(np.float32)

    def train(numba_on):
        if not numba_on:
            monkeypatch.setattr(jit, "_LOADED", {NUMBA_ADAM: None})
        tf.keras.utils.set_random_seed(1)
        model = tf.keras.Sequential([tf.keras.Input((256,)), tf.keras.layers.Dense(160)])
        model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
        model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
        monkeypatch.undo()
        return model.get_weights()

    for got, want in zip(train(True), train(False)):
        np.testing.assert_array_equal(got, want)
