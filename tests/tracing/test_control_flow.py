"""tf.cond, tf.while_loop and tf.map_fn: Python eagerly, one equation with nested graphs in a trace.

Values and first and second derivatives of each are compared three ways (eager, the traced
graph recorded on tapes, both tapes inside a tf.function); then what a trace holds, the
errors, Variables inside, and what the optimizer may not do with them.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.tracing.graph_vjp import graph_vjp

from .helpers import assert_same, derivatives, derivatives_inside, equation_names

X = tf.constant([0.5, -1.0, 0.3], dtype=tf.float64)
W = tf.constant([[0.5, 1.0, -0.2], [0.1, 0.2, 0.3]], dtype=tf.float64)


def three_ways(fn, *args):
    want = derivatives(fn, args)
    assert_same(derivatives(tf.function(fn), args), want)
    assert_same(derivatives_inside(fn, args), want)
    return want


# --- tf.cond -----------------------------------------------------------------------------------
def branchy(x, p):
    return tf.cond(p, lambda: tf.sin(x) * x, lambda: tf.exp(x) - x * x)


@pytest.mark.parametrize("p", [True, False])
def test_cond_values_and_derivatives_traced_vs_eager(p):
    value = three_ways(branchy, X, tf.constant(p))[0]
    x = X.numpy()
    np.testing.assert_allclose(value, np.sin(x) * x if p else np.exp(x) - x * x)


def test_cond_is_one_equation_and_both_branches_trace_once():
    calls = []

    def fn(x, p):
        def yes():
            calls.append("true")
            return x * 2.0

        def no():
            calls.append("false")
            return x - 1.0
        return tf.cond(p, yes, no)

    f = tf.function(fn)
    assert f(X, tf.constant(True)).numpy().tolist() == (X.numpy() * 2).tolist()
    assert f(X, tf.constant(False)).numpy().tolist() == (X.numpy() - 1).tolist()
    assert calls == ["true", "false"] and f.experimental_get_tracing_count() == 1
    assert equation_names(f, X, tf.constant(True)) == ["If"]
    listing = str(f.get_concrete_function(X, tf.constant(True)).graph)
    assert "= If " in listing and "then_branch =" in listing and "else_branch =" in listing


def test_cond_on_a_known_predicate_runs_one_branch_only():
    calls = []

    def fn(x):
        return tf.cond(tf.constant(True), lambda: calls.append("t") or x + 1.0,
                       lambda: calls.append("f") or x - 1.0)

    assert fn(X).numpy().tolist() == (X.numpy() + 1).tolist() and calls == ["t"]
    f = tf.function(fn)
    f(X)
    assert calls == ["t", "t"] and "If" not in equation_names(f, X)
    assert tf.cond(False, lambda: 1, lambda: 2) == 2


def test_cond_captures_outer_values_constants_and_nested_conds():
    def fn(x, p, q):
        y = x * 3.0
        inner = lambda: tf.cond(q, lambda: y * y, lambda: tf.constant([1.0, 2.0, 3.0], tf.float64))
        return tf.cond(p, inner, lambda: y)   # the false branch returns the outer value itself

    for p in (True, False):
        for q in (True, False):
            three_ways(fn, X, tf.constant(p), tf.constant(q))


def test_cond_several_outputs_in_a_structure():
    def structured(x, p):
        out = tf.cond(p, lambda: (x * x, [tf.reduce_sum(x)]), lambda: (-x, [tf.reduce_max(x)]))
        return out[0] * out[1][0]

    for p in (True, False):
        three_ways(structured, X, tf.constant(p))


@pytest.mark.parametrize("true_fn, false_fn, error, match", [
    (lambda x: x, lambda x: x[:2], ValueError, r"output 0 is float64\[3\] from true_fn but "
                                               r"float64\[2\] from false_fn"),
    (lambda x: x, lambda x: tf.cast(x, tf.float32), ValueError, "same shape and dtype"),
    (lambda x: (x, x), lambda x: x, ValueError, "same structure"),
])
def test_cond_branches_must_match(true_fn, false_fn, error, match):
    f = tf.function(lambda x, p: tf.cond(p, lambda: true_fn(x), lambda: false_fn(x)))
    with pytest.raises(error, match=match):
        f(X, tf.constant(True))


def test_cond_predicate_must_be_a_scalar_bool():
    f = tf.function(lambda x: tf.cond(x[0], lambda: x, lambda: x))
    with pytest.raises(TypeError, match=r"scalar bool tensor, got float64\[\]"):
        f(X)
    with pytest.raises(ValueError, match="scalar"):
        tf.cond(tf.constant([True, False]), lambda: 1, lambda: 2)


def test_cond_assigns_variables_at_each_call():
    v = tf.Variable(1.0)

    @tf.function
    def step(x):
        tf.cond(x > 0, lambda: v.assign_add(x), lambda: v.assign(-1.0))
        return v * 2.0       # reads the value the cond left

    assert step(tf.constant(2.0)).numpy() == 6.0 and v.numpy() == 3.0
    assert step(tf.constant(3.0)).numpy() == 12.0 and v.numpy() == 6.0
    assert step(tf.constant(-3.0)).numpy() == -2.0 and v.numpy() == -1.0
    assert step.experimental_get_tracing_count() == 1
    names = equation_names(step, tf.constant(1.0))
    assert names.index("AssignVariableOp") == names.index("If") + 1


def test_cond_gradient_reaches_variables_read_in_a_branch():
    w = tf.Variable(3.0)
    f = tf.function(lambda x: tf.cond(x > 0, lambda: w * x, lambda: w * w))
    for x, want in ((2.0, 2.0), (-2.0, 6.0)):
        with tf.GradientTape() as tape:
            y = f(tf.constant(x))
        assert tape.gradient(y, w).numpy() == want


def test_cond_second_derivative_wrt_a_constant_made_in_the_function():
    """Ported from tensorflow/python/ops/cond_v2_test.py::CondV2Test::testSecondDerivative: x is
    a tf.constant made inside the function (both branches capture it, neither embeds it) and
    the predicate is traced.  d[x^3]/dx = 3x^2 = 27, d2 = 6x = 18; d[x]/dx = 1, d2 = 0."""
    @tf.function
    def grads(pred):
        x = tf.constant(3.0)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                out = tf.cond(pred, lambda: tf.pow(x, 3), lambda: x)
            grad = inner.gradient(out, x)
        return grad, outer.gradient(grad, x, unconnected_gradients="zero")

    assert [g.numpy() for g in grads(tf.constant(True))] == [27.0, 18.0]
    assert [g.numpy() for g in grads(tf.constant(False))] == [1.0, 0.0]


def test_cond_in_a_traced_function_under_a_jacobian():
    f = tf.function(lambda x, p: tf.cond(p, lambda: tf.sin(x) * x[0], lambda: x * x))
    for p in (True, False):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(X)
            y = f(X, tf.constant(p))
            ye = branchy_like(X, p)
        np.testing.assert_allclose(tape.jacobian(y, X).numpy(), tape.jacobian(ye, X).numpy())


def branchy_like(x, p):
    return tf.sin(x) * x[0] if p else x * x


# --- tf.while_loop -----------------------------------------------------------------------------
def exp_series(x, terms):
    """exp(x) as its power series, summed while k < terms."""
    def body(k, term, total):
        term = term * x / tf.cast(k, tf.float64)
        return k + 1, term, total + term
    one = tf.ones_like(x)
    return tf.while_loop(lambda k, t, s: k < terms, body, (1, one, one))[2]


def test_while_loop_power_series_traced_vs_eager():
    n = tf.constant(16)
    value = three_ways(exp_series, X, n)[0]
    np.testing.assert_allclose(value, np.exp(X.numpy()), rtol=1e-12)
    f = tf.function(exp_series)
    f(X, tf.constant(4))
    f(X, tf.constant(20))           # the trip count is data: one graph serves both
    assert f.experimental_get_tracing_count() == 1
    assert equation_names(f, X, n).count("While") == 1
    # d/dx of the series is the series one term shorter
    _, grad, _ = derivatives(lambda x: exp_series(x, n), [X])
    w = np.random.default_rng(1).standard_normal(3)
    np.testing.assert_allclose(grad, w * np.exp(X.numpy()), rtol=1e-10)


def test_while_loop_maximum_iterations_and_zero_trips():
    def fn(x, limit):
        def body(i, y):
            return i + 1, tf.sin(y) * x + y
        return tf.while_loop(lambda i, y: tf.reduce_sum(y) < limit, body, (0, x),
                             maximum_iterations=4)[1]

    for limit in (-10.0, 1.0, 100.0):   # no trip, a few, stopped by maximum_iterations
        three_ways(fn, X, tf.constant(limit, tf.float64))
    trips = tf.function(lambda x: tf.while_loop(lambda i: True, lambda i: i + 1, [0],
                                                maximum_iterations=7))
    assert trips(X)[0].numpy() == 7


def test_while_loop_body_may_return_a_lone_tensor_and_takes_a_single_loop_var():
    assert tf.while_loop(lambda i: i < 5, lambda i: i + 2, [0])[0].numpy() == 6
    f = tf.function(lambda n: tf.while_loop(lambda i: i < n, lambda i: i + 2, [0]))
    assert f(tf.constant(5))[0].numpy() == 6
    g = tf.function(lambda x: tf.while_loop(lambda y: tf.reduce_sum(y) < 10.0, lambda y: y * 2.0, x))
    np.testing.assert_array_equal(g(tf.constant([1.0, 1.0])).numpy(), [8.0, 8.0])


def test_while_loop_is_not_run_while_tracing_nor_folded():
    """A loop that never ends on the signature's zeros is not run at trace time, and a loop on
    constants stays an equation (the optimizer does not run it)."""
    f = tf.function(lambda x: tf.while_loop(lambda y: y < 10.0, lambda y: y * 2.0, [x])[0],
                    input_signature=[tf.TensorSpec([], tf.float32)])
    f.get_concrete_function()
    assert f(tf.constant(1.0)).numpy() == 16.0
    g = tf.function(lambda: tf.while_loop(lambda y: y < 10.0, lambda y: y * 2.0, [1.0])[0])
    assert g().numpy() == 16.0
    assert [e.op.name for e in g.get_concrete_function().optimized_graph.eqns] == ["While"]


def test_while_loop_carries_assigned_variables():
    c = tf.Variable(0.0)

    @tf.function
    def total(n):
        def body(i):
            c.assign_add(tf.cast(i, tf.float32))
            return i + 1
        tf.while_loop(lambda i: i < n, body, [0])
        return c.read_value()

    assert total(tf.constant(5)).numpy() == 10.0 and c.numpy() == 10.0
    assert total(tf.constant(3)).numpy() == 13.0 and c.numpy() == 13.0


def test_while_loop_gradients_reach_a_constant_the_body_captures():
    """Ported from tensorflow/python/kernel_tests/control_flow/while_v2_test.py::WhileV2Test::
    testCaptureExternalTensorInBody, in a tf.function: ret = x y^2 = 18 and d ret/dx = 9, as
    upstream asserts; then through the constant y the body captures (upstream stops at x):
    d ret/dy = 2xy = 12, d2 ret/dy2 = 2x = 4."""
    @tf.function
    def loop():
        x, y = tf.constant(2.0), tf.constant(3.0)
        with tf.GradientTape() as outer:
            outer.watch(y)
            with tf.GradientTape() as inner:
                inner.watch([x, y])
                ret = tf.while_loop(lambda v: v < 8.0, lambda v: v * y, [x])[0]
            dx, dy = inner.gradient(ret, [x, y])
        return ret, dx, dy, outer.gradient(dy, y)

    assert [t.numpy() for t in loop()] == [18.0, 9.0, 12.0, 4.0]


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_while_loop_body_may_return_a_tuple_for_list_loop_vars(dtype):
    """Ported from tensorflow/python/kernel_tests/control_flow/while_v2_test.py::WhileV2Test::
    testGradientTapeResourceVariable: list loop_vars, a body returning a tuple, traced (x * v
    twice from 2: the gradient with respect to v = 1 is 4)."""
    v = tf.Variable(1.0, dtype=dtype)

    @tf.function
    def fn_with_loop():
        with tf.GradientTape() as tape:
            _, x = tf.while_loop(lambda i, _: i < 2, lambda i, x: (i + 1, x * v),
                                 [0, tf.constant(2.0, dtype=dtype)])
        return tape.gradient(x, v)

    assert fn_with_loop().numpy() == 4.0


@pytest.mark.parametrize("traced", [False, True])
def test_while_loop_list_and_tuple_are_one_structure_at_the_top_level(traced):
    """Ported from tensorflow/python/kernel_tests/control_flow/while_v2_test.py::WhileV2Test::
    testMultipleLoopVarsBasic (x = 5, y = 3, while x < 45: x = x * y): [45, 3] and d ret/dx =
    [9], eagerly and traced.  TensorFlow compares the body's result with loop_vars as lists at
    the top level; nested structures must still match, or it is a clear error."""
    def basic():
        x, y = tf.constant(5.0), tf.constant(3.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            ret = tf.while_loop(lambda v, _: v < 45.0, lambda v, w: (v * w, w), [x, y])
        return ret, tape.gradient(ret, [x])

    def nested_mismatch():
        return tf.while_loop(lambda p, s: p[0] < 3, lambda p, s: ([p[0] + 1, s], s),
                             [(tf.constant(0), tf.constant(1.0)), tf.constant(1.0)])

    run = tf.function if traced else (lambda fn: fn)
    ret, grad = run(basic)()
    assert [t.numpy() for t in ret] == [45.0, 3.0] and [g.numpy() for g in grad] == [9.0]
    with pytest.raises(ValueError, match=r"loop_vars and body must return the same structure; "
                                         r"got \[\(0, 0\), 0\] and \[\[0, 0\], 0\]"):
        run(nested_mismatch)()


def test_while_loop_errors():
    f = tf.function(lambda x: tf.while_loop(lambda y: tf.reduce_sum(y) < 5.0,
                                            lambda y: tf.concat([y, y], 0), [x]))
    with pytest.raises(ValueError, match=r"output 0 is float64\[3\] from loop_vars but "
                                         r"float64\[6\] from body"):
        f(X)
    g = tf.function(lambda x: tf.while_loop(lambda y: y, lambda y: y, [x]))
    with pytest.raises(TypeError, match="cond must return one scalar bool"):
        g(X)
    h = tf.function(lambda x, n: tf.while_loop(lambda y: True, lambda y: y, [x],
                                               maximum_iterations=n))
    with pytest.raises(TypeError, match="maximum_iterations must be known"):
        h(X, tf.constant(3))


# --- tf.map_fn ---------------------------------------------------------------------------------
def rows(w, x):
    return tf.map_fn(lambda r: tf.tanh(tf.reduce_sum(r * x) + r), w)


def test_map_fn_over_rows_traced_vs_eager():
    value = three_ways(rows, W, X)[0]
    w, x = W.numpy(), X.numpy()
    np.testing.assert_allclose(value, np.tanh((w * x).sum(1, keepdims=True) + w))
    f = tf.function(rows)
    assert equation_names(f, W, X).count("MapFn") == 1
    f(tf.concat([W, W], 0), X)   # another row count: its own trace (shapes are the signature)


def test_map_fn_structures_dtypes_and_no_rows():
    def fn(a, b):
        out = tf.map_fn(lambda ab: (ab[0] * ab[1], tf.reduce_sum(ab[0])), (a, b),
                        fn_output_signature=(tf.float64, tf.float64))
        return out[0] + out[1][:, None]

    three_ways(fn, W, W * 2.0)
    empty = tf.zeros([0, 3], tf.float64)
    for g in (fn, tf.function(fn)):
        assert g(empty, empty).shape == (0, 3)
    with pytest.raises(TypeError, match="output 0 of fn is float64, fn_output_signature says int32"):
        tf.map_fn(lambda r: r * 2.0, W, fn_output_signature=tf.int32)
    with pytest.raises(ValueError, match="same number of rows"):
        tf.map_fn(lambda ab: ab[0], (W, X))


def test_map_fn_assigning_inside_is_refused_in_a_trace():
    v = tf.Variable(0.0)
    f = tf.function(lambda w: tf.map_fn(lambda r: v.assign_add(1.0) * tf.reduce_sum(r), w))
    with pytest.raises(tf.TraceError, match="runs once per row"):
        f(tf.constant([[1.0], [2.0]]))


# --- gradients -----------------------------------------------------------------------------------
def test_gradient_refuses_to_recompute_random_draws():
    f = tf.function(lambda x, p: tf.cond(p, lambda: x * tf.random.uniform([3], dtype=tf.float64),
                                         lambda: x))
    with tf.GradientTape() as tape:
        tape.watch(X)
        y = f(X, tf.constant(True))
    with pytest.raises(NotImplementedError, match="draw random values outside tf.cond"):
        tape.gradient(y, X)


def test_graph_vjp_of_a_traced_graph_matches_the_tape():
    f = tf.function(lambda a, b: (tf.matmul(a, b[:, None]) * 2.0, tf.reduce_sum(tf.exp(b))))
    graph = f.get_concrete_function(W, X).optimized_graph
    dys = [tf.ones([2, 1], tf.float64), tf.constant(3.0, tf.float64)]
    got = graph_vjp(graph, [W, X], dys)
    with tf.GradientTape() as tape:
        tape.watch([W, X])
        outs = f(W, X)
    want = tape.gradient(list(outs), [W, X], output_gradients=dys)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy())


def test_run_functions_eagerly_runs_control_flow_as_python():
    calls = []
    f = tf.function(lambda x, p: tf.cond(p, lambda: calls.append(1) or x, lambda: -x))
    tf.config.run_functions_eagerly(True)
    try:
        f(X, tf.constant(True))
        f(X, tf.constant(True))
    finally:
        tf.config.run_functions_eagerly(False)
    assert calls == [1, 1] and f.experimental_get_tracing_count() == 0


def test_a_tape_inside_the_function_reaches_variables_read_in_nested_graphs():
    """Regression: a Variable read inside a branch, body or mapped function was passed in as
    its read value, so a tape opened inside the traced function did not see (or watch) the
    Variable and its gradient was None."""
    w = tf.Variable([[0.5], [-1.0], [2.0]], dtype=tf.float64)

    def loss(x, p):
        y = tf.cond(p, lambda: tf.matmul(x, w) + 1.0, lambda: tf.tanh(tf.matmul(x, w)))
        z = tf.map_fn(lambda r: tf.reduce_sum(r * w[0]), y)
        return tf.reduce_sum(tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a * w[1]),
                                           (0, z))[1])

    def grad(x, p):
        with tf.GradientTape() as tape:
            y = loss(x, p)
        return y, tape.gradient(y, w)

    traced = tf.function(grad, input_signature=[tf.TensorSpec([None, 3], tf.float64),
                                                tf.TensorSpec([], tf.bool)])
    for n in (1, 4):
        x = tf.constant(np.random.default_rng(n).standard_normal((n, 3)))
        for p in (True, False):
            got, want = traced(x, tf.constant(p)), grad(x, tf.constant(p))
            for g, e in zip(got, want):
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    names = equation_names(traced, tf.ones([2, 3], tf.float64), tf.constant(True))
    assert names.count("ReadVariableOp") == 1   # read once, passed to every nested graph


@tf.custom_gradient
def _half_gradient(x):
    return tf.identity(x), lambda dy: dy * 0.5


def test_map_fn_of_a_while_loop_of_a_cond_with_a_custom_gradient():
    def fn(x):
        def row(r):
            def body(i, a):
                a = tf.cond(tf.reduce_sum(a) > 0.0, lambda: tf.sin(a) * r,
                            lambda: _half_gradient(a) * 1.5 + r * r)
                return i + 1, a
            return tf.while_loop(lambda i, a: i < 3, body, (0, r))[1]
        return tf.map_fn(row, x)

    x = tf.constant([[0.5, -1.0, 0.3], [0.2, 0.1, -0.4]], dtype=tf.float64)
    three_ways(fn, x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        traced, eager = tf.function(fn)(x), fn(x)
    with pytest.warns(UserWarning, match="loops over"):   # the custom gradient's rule loops
        want = tape.jacobian(eager, x).numpy()
    np.testing.assert_allclose(tape.jacobian(traced, x).numpy(), want, rtol=1e-12)


def test_one_graph_with_control_flow_serves_every_batch_size():
    """Nested graphs compile without the traced sizes, so a None dimension stays free."""
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.bool)])
    def f(x, p):
        y = tf.cond(p, lambda: x * 2.0, lambda: tf.nn.softmax(x))
        z = tf.map_fn(lambda r: tf.reduce_sum(r), y)
        return tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 0.5), (0, z))[1]

    for n in (1, 3, 6, 0):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        for p in (True, False):
            y = x * 2 if p else np.exp(x) / np.exp(x).sum(1, keepdims=True)
            np.testing.assert_allclose(f(tf.constant(x), tf.constant(p)).numpy(), y.sum(1) / 8,
                                       rtol=1e-6)
    assert f.experimental_get_tracing_count() == 1
