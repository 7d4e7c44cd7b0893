"""tf.config.threading: the intra-op count is BLAS's thread count, the inter-op count is kept.

Ported from TensorFlow's tensorflow/python/framework/config_test.py (ConfigTest): there a new
value after the runtime started raises RuntimeError; tapeflow applies it (config_threading.py),
so those tests' last steps are checked the other way here."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info

import tapeflow as tf

threading = tf.config.threading


def blas_threads():
    """BLAS's thread count by library (numpy's; scipy's too once something imported it)."""
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


STARTED = blas_threads()  # before any test here set a count


@pytest.fixture(autouse=True)
def system_choice_after():
    yield
    threading.set_intra_op_parallelism_threads(0)
    threading.set_inter_op_parallelism_threads(0)


def test_intra_op_parallelism_threads():  # TF: ConfigTest::testIntraOpParallelismThreads
    assert threading.get_intra_op_parallelism_threads() == 0
    threading.set_intra_op_parallelism_threads(10)
    assert threading.get_intra_op_parallelism_threads() == 10
    tf.constant(1.0) + 1.0  # TensorFlow's runtime would have started here
    threading.set_intra_op_parallelism_threads(1)
    assert threading.get_intra_op_parallelism_threads() == 1


def test_inter_op_parallelism_threads():  # TF: ConfigTest::testInterOpParallelismThreads
    assert threading.get_inter_op_parallelism_threads() == 0
    threading.set_inter_op_parallelism_threads(10)
    assert threading.get_inter_op_parallelism_threads() == 10
    tf.constant(1.0) + 1.0
    threading.set_inter_op_parallelism_threads(1)
    assert threading.get_inter_op_parallelism_threads() == 1


def test_intra_op_threads_are_blas_threads_and_zero_gives_back_the_start_up_count():
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    started = blas_threads()
    assert started, "numpy has no BLAS that threadpoolctl can see"
    assert all(started[lib] == count for lib, count in STARTED.items()), \
        "an earlier test left BLAS at another count"
    expected = tf.matmul(x, x).numpy()
    threading.set_intra_op_parallelism_threads(1)
    assert blas_threads() == dict.fromkeys(started, 1)
    np.testing.assert_allclose(tf.matmul(x, x).numpy(), expected, rtol=1e-5, atol=1e-4)
    threading.set_intra_op_parallelism_threads(3)
    assert blas_threads() == dict.fromkeys(started, 3)
    threading.set_intra_op_parallelism_threads(0)
    assert blas_threads() == started


def test_a_blas_library_loaded_after_a_call_is_set_by_the_next():
    threading.set_intra_op_parallelism_threads(1)
    import scipy.linalg  # noqa: F401 - scipy's own OpenBLAS, where its wheel bundles one
    threading.set_intra_op_parallelism_threads(2)
    assert set(blas_threads().values()) == {2}


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True, None])
@pytest.mark.parametrize("name", ["set_intra_op_parallelism_threads",
                                  "set_inter_op_parallelism_threads"])
def test_a_count_that_is_not_a_non_negative_integer_is_refused_by_name(name, bad):
    before = blas_threads()
    with pytest.raises(ValueError, match=f"{name}: num_threads must be a non-negative integer"):
        getattr(threading, name)(bad)
    assert threading.get_intra_op_parallelism_threads() == 0
    assert threading.get_inter_op_parallelism_threads() == 0
    assert blas_threads() == before


def test_a_numpy_integer_is_a_count():
    threading.set_intra_op_parallelism_threads(np.int64(2))
    assert threading.get_intra_op_parallelism_threads() == 2
    assert type(threading.get_intra_op_parallelism_threads()) is int
