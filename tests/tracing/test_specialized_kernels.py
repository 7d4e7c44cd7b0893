"""A compiled graph may run an op's specialized kernel: it must give its forward's bits.

Every primitive with ``specialize`` has cases here (the completeness test fails otherwise);
each case compares the kernel made for the inputs' (shape, dtype) with the forward on the
same arrays, bit for bit, or checks that the specializer declines.
"""
import numpy as np
import pytest

import tapeflow as tf  # noqa: F401 - registers every op
from tapeflow.core.registry import Inline, registered_primitives
from tapeflow.metrics.base import _leading_size

RNG = np.random.default_rng(0)


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _with_signed_zeros_and_nan(a):
    a.flat[:4] = [-0.0, 0.0, np.nan, -np.inf]
    return a


# op name -> [(inputs, attrs)]
CASES = {
    "BatchMatMulV2": [
        ((arr(5, 3), arr(3, 4)), {"transpose_a": False, "transpose_b": False}),
        ((arr(3, 5), arr(3, 4)), {"transpose_a": True, "transpose_b": False}),
        ((arr(5, 3), arr(4, 3)), {"transpose_a": False, "transpose_b": True}),
        ((arr(3, 5), arr(4, 3)), {"transpose_a": True, "transpose_b": True}),
        ((arr(5, 3, dtype=np.float64), arr(3, 2, dtype=np.float64)),
         {"transpose_a": False, "transpose_b": False}),
        ((arr(32, 1), arr(30, 1)), {"transpose_a": False, "transpose_b": True}),  # outer
        ((arr(1, 32), arr(1, 30)), {"transpose_a": True, "transpose_b": False}),
        ((arr(1, 32), arr(30, 1)), {"transpose_a": True, "transpose_b": True}),
        ((arr(32, 1), arr(1, 30)), {"transpose_a": False, "transpose_b": False}),
    ],
    "AddV2": [((arr(32, 30), arr(30)), {}), ((arr(3), arr(2, 3, dtype=np.float32)), {})],
    "Sub": [((arr(32, 1), arr(32, 1)), {})],
    "Mul": [((np.float32(2.0), arr(4, 5)), {}), ((arr(4, 5), arr(4, 5)), {})],
    "Neg": [((arr(3, 3),), {}), ((np.array([0.0, -0.0], np.float32),), {})],
    "ReluGrad": [((arr(32, 30), arr(32, 30)), {}), ((arr(5), np.array([-0.0, 0.0, 1.0, -1.0, np.nan], np.float32)), {})],
    "ApplyGradientDescent": [((arr(8, 30), arr(8, 30), np.asarray(0.001)), {}),
                             ((arr(1), arr(1), np.asarray(0.5)), {}),
                             ((np.asarray(1.5, np.float32), np.asarray(0.25, np.float32), np.asarray(0.1)), {})],
    "SumToShape": [
        ((arr(32, 30),), {"shape": (30,), "batch_ndim": 0}),
        ((arr(32, 1),), {"shape": (1,), "batch_ndim": 0}),
        ((arr(4, 6, 5),), {"shape": (6, 1), "batch_ndim": 0}),
        ((arr(3, 4, 5),), {"shape": (4, 5), "batch_ndim": 1}),
        ((arr(4, 5),), {"shape": (4, 5), "batch_ndim": 0}),
        # from array_rows.TILE_FROM elements a product with ones (BLAS), eagerly too
        ((arr(512, 64),), {"shape": (64,), "batch_ndim": 0}),
        ((arr(512, 64),), {"shape": (1, 64), "batch_ndim": 0}),
        ((arr(2, 256, 64),), {"shape": (64,), "batch_ndim": 1}),
        ((arr(64, 32, 16, dtype=np.float64),), {"shape": (1, 16), "batch_ndim": 0}),
        ((arr(64, 32, 16),), {"shape": (32, 1), "batch_ndim": 0}),  # not leading: numpy's sum
    ],
    "Mean": [
        ((arr(32, 1),), {"axes": None, "keepdims": False}),
        ((arr(3, 7),), {"axes": None, "keepdims": False}),  # divided by 21.0: rounds as by float32(21)
        ((arr(7, 5),), {"axes": (-1,), "keepdims": True}),
        ((arr(7, 5, 3),), {"axes": (-3, -1), "keepdims": False}),
        ((arr(6, 4, dtype=np.float64),), {"axes": (-2,), "keepdims": False}),
        ((arr(7, 3, dtype=np.float64),), {"axes": None, "keepdims": False}),
        ((arr(3, 5),), {"axes": None, "keepdims": True}),
    ],
    "Relu": [((arr(32, 30),), {}), ((np.array([-0.0, 0.0, np.nan, -1.0, 2.0], np.float32),), {}),
             ((arr(4, 3, dtype=np.float64),), {}), ((arr(6, dtype=np.float16),), {}),
             ((_with_signed_zeros_and_nan(arr(512, 64)),), {}),  # wide rows against zeros
             ((arr(8, 64, 65, dtype=np.float64),), {})],
    "Square": [((arr(32, 1),), {}), ((np.arange(5, dtype=np.int32),), {})],
    "SelectV2": [
        ((np.asarray(True), np.asarray(1.5, np.float32), np.asarray(-2.0, np.float32)), {}),
        ((np.asarray(False), np.asarray(1.5, np.float32), np.asarray(-2.0, np.float32)), {}),
    ],
    "MetricSums": [
        ((np.asarray(0.731, np.float32), np.asarray(32.0, np.float32)),
         {"reduce": "mean", "dtype": np.dtype(np.float32)}),
        ((np.float32(1.25), np.asarray(7.0, np.float32)),
         {"reduce": "mean", "dtype": np.dtype(np.float32)}),
    ],
    # Dense's bias and activation: plain below 32,768 elements, through tiled rows above
    "BiasActivation": [((arr(32, 30), arr(30)), {"activation": "relu"}),
                       ((arr(32, 30), arr(30)), {"activation": "linear"}),
                       ((arr(512, 64), arr(64)), {"activation": "relu"}),
                       ((arr(8, 64, 64), arr(64)), {"activation": "relu"}),
                       ((arr(512, 64, dtype=np.float64), arr(64, dtype=np.float64)),
                        {"activation": "sigmoid"}),
                       ((arr(1000, 33) * 50, arr(33)), {"activation": "sigmoid"}),
                       ((arr(512, 64), arr(64)), {"activation": "tanh"}),
                       ((arr(32768, 1), arr(1)), {"activation": "linear"})],
    "BiasActivationGrad": [((arr(32, 30), np.maximum(arr(32, 30), 0)), {"activation": "relu"}),
                           ((arr(2, 6, 4, 5), arr(6, 4, 5)), {"activation": "tanh"}),
                           ((arr(1024, 64, dtype=np.float64), arr(1024, 64, dtype=np.float64)),
                            {"activation": "sigmoid"})],
    "BiasAddGrad": [((arr(32, 1),), {"ndim": 2}), ((arr(2, 4, 6, 5),), {"ndim": 3})],
    # fit's loss tracker weighs each step by the batch's length, made once for a known shape
    "MetricValues": [((arr(32, 8),), {"fn": _leading_size, "kwargs": ()}),
                     ((arr(7),), {"fn": _leading_size, "kwargs": ()})],
}

# Inputs a specializer must decline (the general forward handles them).
DECLINED = {
    "BatchMatMulV2": [((arr(2, 5, 3), arr(3, 4)), {"transpose_a": False, "transpose_b": False}),
                      ((arr(5, 3, dtype=np.int32), arr(3, 4, dtype=np.int32)),
                       {"transpose_a": False, "transpose_b": False})],
    "Mean": [((arr(3, 4, dtype=np.float16),), {"axes": None, "keepdims": False}),
             ((arr(3, 4, dtype=np.int32),), {"axes": None, "keepdims": False})],
    "SelectV2": [((np.asarray([True, False]), arr(2), arr(2)), {})],
    "Relu": [((np.arange(5, dtype=np.int32) - 2,), {})],
    "BiasActivation": [((arr(32, 30), arr(30)), {"activation": "sigmoid"}),  # the forward's own
                       ((arr(512, 64, dtype=np.float16), arr(64, dtype=np.float16)),
                        {"activation": "relu"})],
    "BiasActivationGrad": [((arr(5), arr(5)), {"activation": "relu"}),  # nothing to sum
                           ((arr(4, 5, dtype=np.float16), arr(4, 5, dtype=np.float16)),
                            {"activation": "relu"})],
    "BiasAddGrad": [((arr(4, 5, dtype=np.float16),), {"ndim": 2})],
    "MetricSums": [((arr(32), np.asarray(32.0, np.float32)),
                    {"reduce": "mean", "dtype": np.dtype(np.float32)})],
    "MetricValues": [((np.asarray(3.0),), {"fn": _leading_size, "kwargs": ()}),
                     ((arr(32, 8),), {"fn": np.sum, "kwargs": ()})],
}


def run_kernel(kernel, inputs):
    """Call a kernel, or evaluate an Inline expression as a compiled graph would write it."""
    if isinstance(kernel, Inline):
        names = {f"a{i}": a for i, a in enumerate(inputs)}
        return eval(kernel.format(*names), {"np": np}, names)  # noqa: S307 - tapeflow's own templates
    return kernel(*inputs)


def specialized_ops():
    return sorted(name for name, op in registered_primitives().items() if op.specialize is not None)


def test_every_specialized_op_has_cases():
    assert specialized_ops() and set(specialized_ops()) <= set(CASES), set(specialized_ops()) - set(CASES)


def _types(inputs):
    return [(tuple(np.shape(a)), np.asarray(a).dtype) for a in inputs]


@pytest.mark.parametrize("name,inputs,attrs",
                         [(n, i, a) for n, cases in CASES.items() for i, a in cases])
def test_the_kernel_gives_the_forwards_bits(name, inputs, attrs):
    op = registered_primitives()[name]
    kernel = op.specialize(_types(inputs), attrs)
    assert kernel is not None, f"{name} declined {_types(inputs)}"
    want = op.forward(*inputs, **attrs)
    got = run_kernel(kernel, inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got, strict=True):
        w, g = np.asarray(w), np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        assert np.array_equal(np.signbit(g), np.signbit(w))


@pytest.mark.parametrize("name,inputs,attrs",
                         [(n, i, a) for n, cases in DECLINED.items() for i, a in cases])
def test_the_specializer_declines_what_it_does_not_cover(name, inputs, attrs):
    op = registered_primitives()[name]
    assert op.specialize(_types(inputs), attrs) is None


def test_a_compiled_graph_uses_the_specialized_kernels_and_matches_eager():
    x = tf.constant(arr(32, 8))
    w = tf.Variable(arr(8, 30))

    def f(x):
        h = tf.nn.relu(x @ w)
        return tf.reduce_mean(h), tf.reduce_mean(h, axis=-1)

    traced = tf.function(f)
    for got, want in zip(traced(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    source = traced.get_concrete_function(x)._run.source
    assert "k" in source  # the compiled function is one line per equation
