"""Where numba is installed but cannot load tapeflow's kernels, numpy's code runs, with one
warning that says why and what to set: numba refuses ``cache=True`` functions at import when it
finds no writable cache directory (a read-only site-packages and no writable home: numba issue
#4908), and that must not stop a training run."""
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

import numba.core.caching  # noqa: E402 - after the skip

import tapeflow as tf  # noqa: E402
from tapeflow.ops import bias_activation, jit  # noqa: E402

DENSE = "tapeflow.ops._dense_numba"


@pytest.fixture
def no_cache_directory(monkeypatch):
    """numba as on a read-only install: no cache locator works, and the kernel module is
    imported afresh."""
    monkeypatch.setattr(numba.core.caching.CacheImpl, "_locator_classes", [])
    monkeypatch.delitem(sys.modules, DENSE, raising=False)
    monkeypatch.setattr(jit, "_LOADED", {})


def test_a_kernel_module_numba_refuses_leaves_numpys_code_and_one_warning(no_cache_directory):
    with pytest.warns(RuntimeWarning, match=r"_dense_numba\) did not load.*no locator "
                                            r"available.*NUMBA_CACHE_DIR"):
        assert jit.kernels(DENSE) is None
    assert jit.kernels(DENSE) is None  # decided once: no second warning, no second import
    assert not jit.loaded()


def test_a_dense_layer_still_trains_on_numpys_code(no_cache_directory):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024, 64)).astype(np.float32)  # past TILE_FROM: the kernels' size
    layer = tf.keras.layers.Dense(64, activation="relu")
    # on the CPU under --device strict too: the kernels are for numpy's arrays
    with tf.device("/CPU:0"), pytest.warns(RuntimeWarning, match="did not load"):
        with tf.GradientTape() as tape:
            y = layer(x)
            total = tf.reduce_sum(y)
        grads = tape.gradient(total, layer.trainable_variables)
    expected = np.maximum(x @ layer.kernel.numpy() + layer.bias.numpy(), 0)
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(grads[1].numpy(), (expected > 0).sum(axis=0))
    assert bias_activation._relu_kernels(x, layer.bias.numpy()) is None
