"""Metric state on the strict GPU stand-in: born on the current device, fed host batches
moved there once, and following device data when it was born on the host; the numbers are
numpy's.  (The whole suite also runs on the stand-in with ``pytest --device strict``; these
tests check it on a plain run too.)"""
import numpy as np
import pytest

import tapeflow as tf
from strict_device.strict_array import MODULE, StrictArray
from tapeflow import backend, metrics


@pytest.fixture
def strict_gpu():
    previous = backend.use_gpu_module(MODULE, StrictArray)
    yield
    backend.use_gpu_module(*previous)


def _factories():
    return {"mean": metrics.Mean, "mae": metrics.MeanAbsoluteError,
            "acc": metrics.BinaryAccuracy, "auc": metrics.AUC, "precision": metrics.Precision,
            "r2": lambda: metrics.R2Score(class_aggregation=None)}


def _batches():
    rng = np.random.default_rng(4)
    y = (rng.uniform(size=(20, 2)) > 0.5).astype(np.float32)
    p = rng.uniform(size=(20, 2)).astype(np.float32)
    w = rng.uniform(0.5, 2.0, 20).astype(np.float32)
    return [(y[:8], p[:8], w[:8]), (y[8:], p[8:], w[8:])]


def _run(metric, batches, prepare=lambda a: a):
    for y, p, w in batches:
        args = (p,) if type(metric) is metrics.Mean else (y, p)
        metric.update_state(*map(prepare, args), sample_weight=prepare(w))
    return metric.result()


@pytest.mark.parametrize("name", list(_factories()))
def test_state_is_born_on_the_device_and_gives_numpys_numbers(strict_gpu, name):
    make = _factories()[name]
    expected = _run(make(), _batches()).numpy()  # on the host
    with tf.device("/GPU:0"):
        metric = make()
        got = _run(metric, _batches())  # host batches: moved to the device once per update
        assert all(isinstance(v._value, StrictArray) for v in metric.variables)
        assert isinstance(got._value, StrictArray)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
        metric.reset_state()
        assert all(isinstance(v._value, StrictArray) for v in metric.variables)
        np.testing.assert_allclose(_run(metric, _batches()).numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name", ["mean", "mae", "auc"])
def test_state_born_on_the_host_follows_device_data(strict_gpu, name):
    metric = _factories()[name]()
    expected = _run(_factories()[name](), _batches()).numpy()
    with tf.device("/GPU:0"):
        got = _run(metric, _batches(), prepare=tf.constant)
    assert all(isinstance(v._value, StrictArray) for v in metric.variables)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_a_result_before_any_data_is_on_the_device(strict_gpu):
    with tf.device("/GPU:0"):
        for metric in (metrics.R2Score(), metrics.AUC(multi_label=True), metrics.Mean()):
            result = metric.result()
            assert isinstance(result._value, StrictArray) and float(result) == 0.0


def test_a_traced_update_runs_on_device_data(strict_gpu):
    y, p, w = _batches()[0]
    expected = {}
    for name, make in _factories().items():
        expected[name] = _run(make(), [(y, p, w)]).numpy()
    with tf.device("/GPU:0"):
        made = {name: make() for name, make in _factories().items()}

        @tf.function
        def step(y, p, w):
            out = {}
            for name, metric in made.items():
                args = (p,) if type(metric) is metrics.Mean else (y, p)
                metric.update_state(*args, sample_weight=w)
                out[name] = metric.result()
            return out, metrics.batch_size_tensor(p)

        out, size = step(tf.constant(y), tf.constant(p), tf.constant(w))
    assert isinstance(size._value, StrictArray) and float(size) == len(p)
    for name, value in out.items():
        assert isinstance(value._value, StrictArray), name
        np.testing.assert_allclose(value.numpy(), expected[name], rtol=1e-6, err_msg=name)
