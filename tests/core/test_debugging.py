"""tf.debugging, tf.Assert and tf.errors: checks that raise InvalidArgumentError eagerly and at
every call of a traced function.

Ported from TensorFlow's ``python/kernel_tests/check_ops_test.py`` (the named classes and
tests; TensorFlow's messages name the tensors, tapeflow's tensors have no names, so a
regex on ``big.*small`` becomes one on the values or on ``x < y``) and
``python/kernel_tests/numerics_test.py`` (check_numerics).  Each case runs eagerly and
inside a ``tf.function``, where the check must be an op of the graph.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.tracing.compiler import optimize

from tests.ops.gradcheck import check_grads


def _eager(check):
    check()


def _traced(check):
    tf.function(lambda: (check(), tf.constant(0))[1])()


MODES = pytest.mark.parametrize("run", [_eager, _traced], ids=["eager", "traced"])


def _raises(run, check, match, error=tf.errors.InvalidArgumentError):
    with pytest.raises(error, match=match):
        run(check)


# --- AssertEqualTest / AssertLessTest / AssertLessEqualTest / AssertGreater(Equal)Test -------
@MODES
def test_assert_equal(run):
    # TF: check_ops_test.py::AssertEqualTest (test_doesnt_raise_when_equal,
    # test_raises_when_greater, test_raises_when_less, test_doesnt_raise_when_both_empty)
    small, big = tf.constant([1, 2]), tf.constant([3, 4])
    run(lambda: tf.debugging.assert_equal(small, small))
    _raises(run, lambda: tf.debugging.assert_equal(big, small, message="fail"),
            r"fail.*\n*.*x == y did not hold.*\[3 4\].*\[1 2\]")
    _raises(run, lambda: tf.assert_equal(tf.constant([3, 1]), tf.constant([4, 2])),
            r"x == y did not hold.*\[3 1\].*\[4 2\]")
    run(lambda: tf.assert_equal(tf.constant([]), tf.constant([])))


@MODES
def test_assert_less(run):
    # TF: check_ops_test.py::AssertLessTest
    small, big = tf.constant([1, 2]), tf.constant([3, 4])
    _raises(run, lambda: tf.debugging.assert_less(small, small, message="failure message"),
            "failure message.*\n*.* x < y did not hold")
    _raises(run, lambda: tf.assert_less(big, small), "x < y did not hold")
    run(lambda: tf.assert_less(tf.constant([3, 1]), tf.constant([4, 2])))
    run(lambda: tf.assert_less(tf.constant([1]), tf.constant([3, 2])))  # broadcastable
    run(lambda: tf.assert_less(tf.constant([]), tf.constant([])))
    with pytest.raises(ValueError, match=r"Incompatible shapes: \[3\] vs. \[2\]"):
        run(lambda: tf.assert_less(tf.constant([1, 1, 1]), tf.constant([3, 2])))


@MODES
def test_assert_less_equal(run):
    # TF: check_ops_test.py::AssertLessEqualTest
    small, big = tf.constant([1, 2]), tf.constant([3, 4])
    run(lambda: tf.debugging.assert_less_equal(small, small))
    _raises(run, lambda: tf.debugging.assert_less_equal(big, small, message="fail"), "fail")
    run(lambda: tf.debugging.assert_less_equal(small, tf.constant([3, 2])))
    run(lambda: tf.debugging.assert_less_equal(tf.constant([1]), tf.constant([3, 1])))
    with pytest.raises(ValueError, match=r"Incompatible shapes: \[2\] vs. \[3\]"):
        run(lambda: tf.debugging.assert_less_equal(tf.constant([3, 1]), tf.constant([1, 1, 1])))


@MODES
def test_assert_greater_and_greater_equal(run):
    # TF: check_ops_test.py::AssertGreaterTest, AssertGreaterEqualTest
    small, big = tf.constant([1, 2]), tf.constant([3, 4])
    _raises(run, lambda: tf.debugging.assert_greater(small, small, message="fail"), "fail")
    _raises(run, lambda: tf.assert_greater(small, big), "x > y did not hold")
    run(lambda: tf.assert_greater(tf.constant([4, 2]), tf.constant([3, 1])))
    run(lambda: tf.assert_greater(tf.constant([3, 2]), tf.constant([1])))
    run(lambda: tf.assert_greater(tf.constant([]), tf.constant([])))
    run(lambda: tf.debugging.assert_greater_equal(small, small))
    _raises(run, lambda: tf.debugging.assert_greater_equal(small, big, message="fail"), "fail")
    run(lambda: tf.debugging.assert_greater_equal(tf.constant([3, 2]), small))


@MODES
def test_assert_sign(run):
    # TF: check_ops_test.py::AssertNegativeTest, AssertPositiveTest
    _raises(run, lambda: tf.debugging.assert_negative(tf.constant([1, 2]), message="fail"), "fail")
    _raises(run, lambda: tf.debugging.assert_negative(tf.constant([0])), "x < 0 did not hold")
    run(lambda: tf.debugging.assert_negative(tf.constant([-1, -2])))
    run(lambda: tf.debugging.assert_negative(tf.constant([])))
    _raises(run, lambda: tf.debugging.assert_positive(tf.constant([0])), "x > 0 did not hold")
    run(lambda: tf.debugging.assert_positive(tf.constant([1, 2])))
    run(lambda: tf.debugging.assert_non_negative(tf.constant([0, 2])))
    _raises(run, lambda: tf.debugging.assert_non_positive(tf.constant([1])), "x <= 0 did not hold")


@MODES
def test_assert_near(run):
    # TF: check_ops_test.py::AssertNearTest (default tolerances are 10 epsilons of the dtype)
    eps32, eps64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps
    run(lambda: tf.debugging.assert_near(tf.constant(0.), tf.constant(2 * eps32), rtol=0.))
    run(lambda: tf.debugging.assert_near(tf.constant(1., tf.float64),
                                         tf.constant(1. + 2 * eps64, tf.float64), atol=0.))
    run(lambda: tf.debugging.assert_near(tf.constant(1.), tf.constant(1.1), atol=0., rtol=0.5))
    run(lambda: tf.debugging.assert_near(tf.constant(0.), tf.constant(0.1), atol=0.5, rtol=0.))
    run(lambda: tf.debugging.assert_near(tf.constant([]), tf.constant([])))
    _raises(run, lambda: tf.debugging.assert_near(tf.constant(10.), tf.constant(10.2), atol=0.1,
                                                  message="failure message"),
            "x and y not equal to tolerance")
    _raises(run, lambda: tf.debugging.assert_near(tf.constant(0.1), tf.constant(0.0)),
            "x and y not equal to tolerance")


def test_assertions_return_none_eagerly():
    # TF: check_ops_test.py::AssertNearTest::test_returns_none_with_eager (and AssertLessTest's)
    assert tf.debugging.assert_near(tf.constant([1., 2.]), tf.constant([1., 2.])) is None
    assert tf.debugging.assert_less(tf.constant([1, 2]), tf.constant([3, 4])) is None


@MODES
def test_assert_rank(run):
    # TF: check_ops_test.py::AssertRankTest and AssertRankAtLeastTest, the static-rank cases
    # (tapeflow knows every rank when tracing, so they are all static: ValueError)
    with pytest.raises(ValueError, match="fail.*must have rank 1"):
        run(lambda: tf.debugging.assert_rank(tf.constant(1), 1, message="fail"))
    with pytest.raises(ValueError, match="rank 0"):
        run(lambda: tf.assert_rank(tf.constant([1, 2]), 0))
    with pytest.raises(ValueError, match="rank 2"):
        run(lambda: tf.assert_rank(tf.constant([1, 2]), 2))
    run(lambda: tf.assert_rank(tf.constant(1), 0))
    run(lambda: tf.assert_rank(tf.constant([1, 2]), tf.constant(1)))
    with pytest.raises(ValueError, match="must have rank at least 1"):
        run(lambda: tf.debugging.assert_rank_at_least(tf.constant(1), 1))
    run(lambda: tf.debugging.assert_rank_at_least(tf.constant([1, 2]), 0))
    run(lambda: tf.debugging.assert_rank_at_least(tf.constant([1, 2]), 1))


@MODES
def test_assert_shapes(run):
    # TF: check_ops_test.py::AssertShapesTest (static cases: explicit sizes, symbols shared
    # between tensors, '.'/None for any size, a leading '*' or ... for outer dimensions, a
    # scalar as shape (1,))
    x, y = tf.ones((3, 2)), tf.ones((3, 4))
    run(lambda: tf.debugging.assert_shapes([(x, ("N", "Q")), (y, ("N", "D")), (tf.constant(1.), ())]))
    run(lambda: tf.debugging.assert_shapes({x.ref(): (3, None), y.ref(): (".", 4)}))
    run(lambda: tf.debugging.assert_shapes([(tf.ones((5, 3, 2)), ("*", 3, "Q")),
                                           (tf.ones((2,)), (..., "Q"))]))
    with pytest.raises(ValueError, match=r"Tensor 1 dimension 0 must have size 3"):
        run(lambda: tf.debugging.assert_shapes([(x, (3, "Q")), (tf.ones((2, 3)), (3, "D"))]))
    with pytest.raises(ValueError, match=r"Tensor 0 dimension 1 must have size 3"):
        run(lambda: tf.debugging.assert_shapes([(x, ("N", "N"))]))
    with pytest.raises(ValueError, match=r"must have rank 2"):
        run(lambda: tf.debugging.assert_shapes([(tf.ones((3,)), ("N", "Q"))]))


@MODES
def test_tf_assert(run):
    # TF: python/ops/control_flow_ops_test.py::AssertTest-style: tf.Assert prints its data
    run(lambda: tf.Assert(tf.constant(True), ["never printed", tf.constant([1, 2])]))
    _raises(run, lambda: tf.Assert(tf.reduce_all(tf.constant([1, 3]) < 2), ["values:", tf.constant([1, 3])]),
            r"assertion failed: values: \[1 3\]")
    _raises(run, lambda: tf.Assert(tf.constant(False), [tf.range(10)], summarize=3),
            r"\[0 1 2\.\.\.\]")
    with pytest.raises(TypeError, match="bool"):
        tf.Assert(tf.constant(1), [])


# --- what a trace does with them ------------------------------------------------------------
def test_traced_assertion_runs_at_every_call_and_does_not_poison_the_next():
    calls = []

    @tf.function
    def halve(x):
        calls.append(1)
        tf.debugging.assert_positive(x, message="x must be positive")
        return x / 2.0

    assert halve(tf.constant([2.0, 4.0])).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
        halve(tf.constant([2.0, -4.0]))
    assert halve(tf.constant([6.0, 8.0])).numpy().tolist() == [3.0, 4.0]
    assert len(calls) == 1  # one trace: the check is in the graph, not Python


def test_assertion_is_kept_by_the_optimizer_and_ordered_before_later_ops():
    # TensorFlow runs stateful ops in program order: an Assert whose result nobody uses still
    # runs, and before the ops written after it
    @tf.function
    def f(x):
        tf.debugging.assert_less(x, 10.0)
        return x * 3.0

    graph = optimize(f.get_concrete_function(tf.constant(1.0)).graph)
    names = [e.op.name for e in graph.eqns]
    assert "Assert" in names and names.index("Assert") < names.index("Mul")


def test_failed_trace_time_values_do_not_raise_when_tracing():
    # An assertion in the branch not taken would fail on the trace's example values: it must
    # not raise then, only when a call takes that branch.
    @tf.function
    def f(x):
        def checked():
            tf.debugging.assert_negative(x)
            return x - 1.0
        return tf.cond(x > 0.0, lambda: x + 1.0, checked)

    assert float(f(tf.constant(2.0))) == 3.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="x < 0 did not hold"):
        f(tf.constant(0.0))
    assert float(f(tf.constant(-2.0))) == -3.0


def test_assertion_inside_a_traced_loop_checks_every_iteration_and_differentiates():
    @tf.function
    def f(x):
        def body(i, acc):
            tf.debugging.assert_less(acc, 100.0, message="overflow")
            return i + 1, acc * x
        return tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.constant(1.0)])[1]

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert float(y) == 8.0 and float(tape.gradient(y, x)) == 12.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="overflow"):
        f(tf.constant(10.0))


# --- numerics_test.py -----------------------------------------------------------------------
@MODES
def test_check_numerics(run):
    # TF: numerics_test.py::NumericsTest (testInf, testNaN, testBoth, testPassThrough)
    _raises(run, lambda: tf.debugging.check_numerics(tf.constant([1.0, np.inf]), "Inf found"),
            "Inf found : Tensor had Inf values")
    _raises(run, lambda: tf.debugging.check_numerics(tf.constant([np.nan, 0.0]), "NaN found"),
            "Tensor had NaN values")
    _raises(run, lambda: tf.debugging.check_numerics(tf.constant([np.nan, np.inf]), "both"),
            "Tensor had Inf and NaN values")
    _raises(run, lambda: tf.debugging.assert_all_finite(tf.constant([np.inf]), "not finite"),
            "not finite")


def test_check_numerics_passes_its_input_through():
    # TF: numerics_test.py::NumericsTest::testPassThrough
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    np.testing.assert_array_equal(tf.debugging.check_numerics(tf.constant(x), "m").numpy(), x)
    traced = tf.function(lambda t: tf.debugging.check_numerics(t, "m"))
    np.testing.assert_array_equal(traced(tf.constant(x)).numpy(), x)
    with pytest.raises(TypeError, match="floating-point"):
        tf.debugging.check_numerics(tf.constant([1, 2]), "ints")


def test_check_numerics_gradient_is_the_identity():
    # TF: numerics_test.py (check_numerics passes its input through; its gradient is the
    # identity), checked by finite differences to second order, eagerly and traced
    fn = lambda x: tf.debugging.check_numerics(x * x, "m") * x  # noqa: E731
    check_grads(fn, [np.array([0.5, -1.5])])
    check_grads(tf.function(fn), [np.array([0.5, -1.5])])


def test_errors_module():
    # TF: python/framework/errors_test.py (the classes, their codes and message)
    err = tf.errors.InvalidArgumentError(None, None, "bad")
    assert isinstance(err, tf.errors.OpError) and err.message == "bad" and str(err) == "bad"
    assert err.error_code == tf.errors.INVALID_ARGUMENT == 3
    assert tf.errors.OutOfRangeError(None, None, "end").error_code == tf.errors.OUT_OF_RANGE == 11
    assert err.node_def is None and err.op is None


def test_a_saved_function_keeps_its_assertion(tmp_path):
    module = tf.Module()
    module.f = tf.function(lambda x: (tf.debugging.assert_non_negative(x, message="negative"),
                                      tf.sqrt(x))[1],
                           input_signature=[tf.TensorSpec([2], "float32")])
    tf.saved_model.save(module, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    assert loaded.f(tf.constant([4.0, 9.0])).numpy().tolist() == [2.0, 3.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        loaded.f(tf.constant([4.0, -9.0]))


def test_a_branch_that_only_asserts_still_runs():
    @tf.function
    def f(x, strict):
        tf.cond(strict, lambda: tf.debugging.assert_positive(x, message="strict"), lambda: None)
        return x + 1.0

    assert float(f(tf.constant(-1.0), tf.constant(False))) == 0.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="strict"):
        f(tf.constant(-1.0), tf.constant(True))


def test_static_type_and_rank_checks():
    # TF: check_ops_test.py::AssertRankInTest, AssertScalarTest, AssertTypeTest,
    # AssertIntegerTest (their static cases)
    tf.debugging.assert_rank_in(tf.constant([1, 2]), (0, 1))
    with pytest.raises(ValueError, match=r"rank in \(0, 2\)"):
        tf.debugging.assert_rank_in(tf.constant([1, 2]), (0, 2))
    tf.debugging.assert_scalar(tf.constant(3.0))
    with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2,\)"):
        tf.debugging.assert_scalar(tf.constant([1, 2]))
    tf.debugging.assert_type(tf.constant(1.0), tf.float32)
    with pytest.raises(TypeError, match="must be of type tf.float32; got tf.int32"):
        tf.debugging.assert_type(tf.constant(1), tf.float32)
    tf.debugging.assert_integer(tf.constant(1))
    with pytest.raises(TypeError, match="Expected integer type"):
        tf.debugging.assert_integer(tf.constant(1.0))
