"""fit's loss tracker weighs a step's loss by the batch's length: made once by the compiled
kernel of a graph traced at a known batch size (fit traces one per batch shape), read when the
graph runs where the size is free (a graph relaxed to every size), and the same running loss
as an eager fit (metrics/base.py's ``_metric_values_in_place``)."""
import numpy as np

import tapeflow as tf
from tapeflow.metrics.base import _leading_size, _metric_values_in_place

from .helpers import regression_data, small_model


def _kernel_names(concrete):
    return [getattr(k, "__name__", None) for k in concrete._run.__globals__.values()]


def test_a_traced_fit_weighs_full_and_short_batches_as_an_eager_fit(request):
    x, y = regression_data(40)  # batches of 16, 16 and 8
    losses = {}
    for eager in (False, True):
        model = small_model()
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", run_eagerly=eager)
        losses[eager] = model.fit(x, y, batch_size=16, epochs=2, shuffle=False,
                                  verbose=0).history["loss"]
        if not eager and request.config.getoption("--device") != "strict":  # numpy's kernels
            batch = (tf.constant(x[:16]), tf.constant(y[:16]))
            concrete = model.train_function.get_concrete_function(batch)
            assert "known_batch_size" in _kernel_names(concrete)
    np.testing.assert_allclose(losses[False], losses[True], rtol=1e-6)


def test_a_free_batch_size_is_read_when_the_graph_runs():
    """A graph relaxed to every batch size (its type None there) reads the length per call."""
    attrs = {"fn": _leading_size, "kwargs": ()}
    free = _metric_values_in_place([((None, 8), np.dtype(np.float32))], attrs)
    known = _metric_values_in_place([((16, 8), np.dtype(np.float32))], attrs)
    for rows in (16, 5):
        batch = np.zeros((rows, 8), np.float32)
        size = eval(free.format("batch"), {"np": np}, {"batch": batch})  # tapeflow's own template
        assert size.dtype == np.float32 and size == rows
    assert known(np.zeros((16, 8), np.float32)) == 16
