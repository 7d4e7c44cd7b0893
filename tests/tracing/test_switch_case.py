"""tf.switch_case and tf.case (issue 18, item 3), eager and traced, with gradients.

Ported from TensorFlow's ``python/kernel_tests/control_flow/functional_ops_test.py`` (the Case
op: an index past the branches or below zero runs the last one), ``compiler/tests/case_test.py``
(testCaseBasic) and the documented examples of ``tf.case``.
"""
import numpy as np
import pytest

import tapeflow as tf


def _three_branches(x):
    return [lambda: x * 2.0, lambda: x * 3.0, lambda: x * 4.0]


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("branch, x, want", [
    (0, 1.0, 2.0), (1, 7.0, 21.0), (2, -3.0, -12.0),
    (7, -4.0, -16.0),   # >= N: the default, the last branch
    (-1, -5.0, -20.0),  # < 0: the default
])
def test_case_op_branches_and_default(traced, branch, x, want):
    """TF: functional_ops_test.py::FunctionalOpsCaseTest::testCase (Run(branch, x))."""
    def run(b, v):
        return tf.switch_case(b, _three_branches(v))
    fn = tf.function(run) if traced else run
    assert float(fn(tf.constant(branch), tf.constant(x))) == want


def test_case_basic_in_a_function():
    """TF: compiler/tests/case_test.py::CaseTest::testCaseBasic."""
    @tf.function
    def switch_case_test(branch_index):
        return tf.switch_case(branch_index, [lambda: tf.constant(17), lambda: tf.constant(31),
                                             lambda: tf.constant(-1)])

    assert int(switch_case_test(tf.constant(0))) == 17
    assert int(switch_case_test(tf.constant(1))) == 31
    assert int(switch_case_test(tf.constant(2))) == -1
    assert int(switch_case_test(tf.constant(3))) == -1
    assert switch_case_test.experimental_get_tracing_count() == 1


def test_switch_case_with_default_and_dict_branches():
    """TF's docstring example: branches {0: 17, 1: 31}, default -1."""
    branches = {0: lambda: tf.constant(17), 1: lambda: tf.constant(31)}
    for index, want in ((0, 17), (1, 31), (5, -1)):
        for fn in (tf.switch_case, tf.function(tf.switch_case)):
            got = fn(tf.constant(index), branches, default=lambda: tf.constant(-1))
            assert int(got) == want


def test_switch_case_runs_one_branch_eagerly():
    ran = []
    tf.switch_case(tf.constant(1), [lambda: ran.append(0) or tf.constant(0),
                                    lambda: ran.append(1) or tf.constant(1)])
    assert ran == [1]


def test_switch_case_gradient_to_second_order():
    def f(x, i):
        return tf.switch_case(i, [lambda: tf.sin(x) * x, lambda: x ** 3, lambda: tf.exp(x)])

    for i, d1, d2 in ((0, lambda v: np.cos(v) * v + np.sin(v), lambda v: 2 * np.cos(v) - v * np.sin(v)),
                      (1, lambda v: 3 * v ** 2, lambda v: 6 * v),
                      (2, np.exp, np.exp)):
        for fn in (f, tf.function(f)):
            x = tf.Variable(0.7, dtype=tf.float64)
            with tf.GradientTape() as outer:
                with tf.GradientTape() as inner:
                    y = fn(x, tf.constant(i))
                g = inner.gradient(y, x)
            h = outer.gradient(g, x)
            np.testing.assert_allclose([float(g), float(h)], [d1(0.7), d2(0.7)], rtol=1e-12)


def test_switch_case_refuses_a_non_integer_index():
    with pytest.raises(TypeError, match="scalar int32 or int64"):
        tf.switch_case(tf.constant(1.0), [lambda: 1.0])


def test_case_first_true_predicate_wins():
    """TF: tf.case's documented example: `if (x < y) return 17; else return 23;` and the
    if/elif chain `x < y -> 17, x > z -> 23, else -1`."""
    def chain(x, y, z):
        return tf.case([(tf.less(x, y), lambda: tf.constant(17)),
                        (tf.greater(x, z), lambda: tf.constant(23))],
                       default=lambda: tf.constant(-1))

    for fn in (chain, tf.function(chain)):
        assert int(fn(tf.constant(1), tf.constant(2), tf.constant(0))) == 17
        assert int(fn(tf.constant(3), tf.constant(2), tf.constant(0))) == 23
        assert int(fn(tf.constant(-1), tf.constant(-2), tf.constant(0))) == -1
    assert int(tf.case([(tf.less(1, 2), lambda: tf.constant(17))],
                       default=lambda: tf.constant(23))) == 17


def test_case_exclusive_refuses_two_true_predicates():
    with pytest.raises(tf.errors.InvalidArgumentError, match="2 predicates are true"):
        tf.case([(tf.constant(True), lambda: tf.constant(1)),
                 (tf.constant(True), lambda: tf.constant(2))],
                default=lambda: tf.constant(3), exclusive=True)


def test_case_branches_must_agree_in_a_trace():
    @tf.function
    def f(x):
        return tf.switch_case(tf.cast(x > 0, tf.int32), [lambda: x, lambda: (x, x)])

    with pytest.raises((TypeError, ValueError)):
        f(tf.constant(1.0))
