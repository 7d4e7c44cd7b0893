"""AutoGraph: Python control flow on tensors inside tf.function (tracing/autograph/).

Ported from TensorFlow's reference tests, tensorflow/python/autograph/tests/ (each test names
its upstream test; the converted functions are in autograph_cases.py, upstream's own), and
tensorflow/python/autograph/impl/api_test.py.  ``assert_matches_eager`` is upstream's
``assertFunctionMatchesEager``: the tf.function's result equals the function run eagerly.
"""
import functools
import inspect
import itertools
import traceback

import numpy as np
import pytest

import tapeflow as tf
from tests.ops.gradcheck import check_grads

from . import autograph_cases as cases


def _product(*axes):
    return list(itertools.product(*axes))


def _value(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v) for v in x)
    return np.asarray(x.numpy() if isinstance(x, tf.Tensor) else x).tolist()


def _fresh(args):
    """The arguments again, Variables as new ones (the function assigns them)."""
    return [tf.Variable(a.numpy()) if isinstance(a, tf.Variable) else a for a in args]


def assert_matches_eager(fn, *args):
    want = _value(fn(*_fresh(args)))
    got = _value(tf.function(fn)(*_fresh(args)))
    assert got == want, (fn.__name__, args, got, want)


def _int(x):
    return tf.constant(x, dtype=tf.int32)


def _dataset(l):  # noqa: E741
    return tf.data.Dataset.from_tensor_slices(tf.constant(l, dtype=tf.int32))


# --- cond_basic_test.py --------------------------------------------------------------------------
@pytest.mark.parametrize("target,c,type_", _product(
    (cases.if_no_vars, cases.if_else_no_vars), (True, False), (bool, tf.constant)))
def test_cond_no_vars(target, c, type_):
    # TF: autograph/tests/cond_basic_test.py::test_no_vars
    assert_matches_eager(target, type_(c), tf.Variable(0))


@pytest.mark.parametrize("target,n,type_", _product(
    (cases.if_one_var, cases.if_else_one_var, cases.if_two_vars, cases.if_else_two_vars),
    (0, 1), (int, tf.constant)))
def test_cond_several_vars(target, n, type_):
    # TF: autograph/tests/cond_basic_test.py::test_several_vars
    assert_matches_eager(target, type_(n))


def test_cond_var_lifetime_imbalanced_legal():
    # TF: autograph/tests/cond_basic_test.py::test_var_lifetime_imbalanced_legal
    assert_matches_eager(cases.if_creates_var, True)
    assert_matches_eager(cases.else_creates_var, False)
    assert_matches_eager(cases.if_destroys_var, False)
    assert_matches_eager(cases.else_destroys_var, True)


@pytest.mark.parametrize("c,type_", _product((True, False), (bool, tf.constant)))
def test_cond_if_else_var_lifetime(c, type_):
    # TF: autograph/tests/cond_basic_test.py::test_if_else_var_lifetime
    assert_matches_eager(cases.if_else_creates_var, type_(c))
    if type_ is bool:
        with pytest.raises(UnboundLocalError, match="'i'"):
            tf.function(cases.if_else_destroys_var)(c)
    else:
        with pytest.raises(ValueError, match="'i' must also be initialized"):
            tf.function(cases.if_else_destroys_var)(tf.constant(c))


@pytest.mark.parametrize("target,c,type_,exc,regex", [
    (cases.if_creates_var, False, bool, UnboundLocalError, "'i' is used before assignment"),
    (cases.if_creates_var, True, tf.constant, ValueError,
     "'i' must also be initialized in the else branch"),
    (cases.if_creates_var, False, tf.constant, ValueError,
     "'i' must also be initialized in the else branch"),
    (cases.else_creates_var, True, bool, UnboundLocalError, "'i' is used before assignment"),
    (cases.else_creates_var, True, tf.constant, ValueError,
     "'i' must also be initialized in the main branch"),
    (cases.else_creates_var, False, tf.constant, ValueError,
     "'i' must also be initialized in the main branch"),
])
def test_cond_creates_var_imbalanced_illegal(target, c, type_, exc, regex):
    # TF: autograph/tests/cond_basic_test.py::test_creates_var_imbalanced_illegal
    with pytest.raises(exc, match=regex):
        tf.function(target)(type_(c))


def test_cond_returns_none_legal():
    # TF: autograph/tests/cond_basic_test.py::test_returns_none_legal
    assert_matches_eager(cases.if_returns_none, True)
    assert_matches_eager(cases.if_else_returns_none, False)
    assert_matches_eager(cases.else_returns_none, False)


@pytest.mark.parametrize("target,c", _product(
    (cases.if_returns_none, cases.else_returns_none, cases.if_else_returns_none), (True, False)))
def test_cond_returns_none_illegal(target, c):
    # TF: autograph/tests/cond_basic_test.py::test_returns_none_illegal
    with pytest.raises(ValueError, match="'i' is None"):
        tf.function(target)(tf.constant(c))


@pytest.mark.parametrize("target,c,type_", _product(
    (cases.if_local_var, cases.if_else_local_var, cases.if_locally_modified_var),
    (True, False), (bool, tf.constant)))
def test_cond_local_vars(target, c, type_):
    # TF: autograph/tests/cond_basic_test.py::test_local_vars
    assert_matches_eager(target, type_(c))


@pytest.mark.parametrize("c1,c2", _product((True, False), (True, False)))
def test_cond_nested_if_temporarily_undefined_return(c1, c2):
    # TF: autograph/tests/cond_basic_test.py::test_nested_if_temporarily_undefined_return_legal
    # and ::test_nested_if_temporarily_undefined_return_illegal
    assert_matches_eager(cases.nested_if_temporarily_undefined_return, c1, c2)
    with pytest.raises(ValueError, match="must also have a return"):
        tf.function(cases.nested_if_temporarily_undefined_return)(tf.constant(c1),
                                                                   tf.constant(c2))


@pytest.mark.parametrize("target,n1,t1,n2,t2", [
    (target, n1, t1, n2, t2)
    for target in (cases.successive_if_elses, cases.nested_if_elses)
    for n1, n2 in ((0, 1), (1, 0), (1, 1)) for t1, t2 in ((bool, tf.constant),
                                                          (tf.constant, tf.constant))])
def test_cond_composition(target, n1, t1, n2, t2):
    # TF: autograph/tests/cond_basic_test.py::test_composition (a subset of its products)
    assert_matches_eager(target, t1(n1), t2(n2))


# --- basic_ifexp_test.py -------------------------------------------------------------------------
def test_ifexp_basic():
    # TF: autograph/tests/basic_ifexp_test.py::test_basic
    for x in [-1, 1, 5, tf.constant(-1), tf.constant(1), tf.constant(5)]:
        assert_matches_eager(cases.consecutive_conds, x)
        assert_matches_eager(cases.cond_with_multiple_values, x)


def test_ifexp_imbalanced_raises_value_error():
    # TF: autograph/tests/basic_ifexp_test.py::
    #     test_imbalanced_conditional_expression_raises_value_error
    # (upstream's function also calls tf.autograph.trace, which tapeflow does not have)
    with pytest.raises(ValueError, match="must return the same nested structure in both branches"):
        tf.function(cases.ifexp_with_imbalanced_structure)(tf.constant([1.0]))


# --- loop_basic_test.py --------------------------------------------------------------------------
@pytest.mark.parametrize("n,type_", _product((0, 2), (int, _int)))
def test_loop_while_vars(n, type_):
    # TF: autograph/tests/loop_basic_test.py::test_while_no_vars, ::test_while_one_var,
    # ::test_while_two_vars
    assert_matches_eager(cases.while_no_vars, type_(n), tf.Variable(0))
    assert_matches_eager(cases.while_one_var, type_(n))
    assert_matches_eager(cases.while_two_vars, type_(n))


@pytest.mark.parametrize("l,type_", _product(([], [1, 2]), (list, _int, _dataset)))
def test_loop_for_vars(l, type_):  # noqa: E741
    # TF: autograph/tests/loop_basic_test.py::test_for_no_vars, ::test_for_one_var,
    # ::test_for_two_vars (XLA variants left out)
    if type_ is not _dataset:
        assert_matches_eager(cases.for_no_vars, type_(l), tf.Variable(0))
    assert_matches_eager(cases.for_one_var, type_(l))
    assert_matches_eager(cases.for_two_vars, type_(l))


@pytest.mark.parametrize("type_", (list, _int))
def test_loop_for_else_not_supported(type_):
    # TF: autograph/tests/loop_basic_test.py::test_for_else
    with pytest.raises(NotImplementedError, match="for/else"):
        tf.function(cases.for_else)(type_([1, 2]), type_([]))


@pytest.mark.parametrize("type_", (int, _int))
def test_loop_while_else_not_supported(type_):
    # TF: autograph/tests/loop_basic_test.py::test_while_else
    with pytest.raises(NotImplementedError, match="while/else"):
        tf.function(cases.while_else)(type_(2), type_(0))


@pytest.mark.parametrize("n,type_", _product((1, 2), (int, _int)))
def test_loop_while_creates_var_legal(n, type_):
    # TF: autograph/tests/loop_basic_test.py::test_while_creates_var_legal
    assert_matches_eager(cases.while_creates_var, type_(n))


def test_loop_while_creates_var_illegal():
    # TF: autograph/tests/loop_basic_test.py::test_while_creates_var_illegal
    with pytest.raises(UnboundLocalError, match="used before assignment"):
        tf.function(cases.while_creates_var)(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="loop must iterate at least once"):
        tf.function(cases.while_creates_var)(tf.constant(0))


@pytest.mark.parametrize("n1,n2,type_", _product((0, 2), (2,), (int, _int)))
def test_loop_successive_while_loops(n1, n2, type_):
    # TF: autograph/tests/loop_basic_test.py::test_successive_while_loops
    assert_matches_eager(cases.successive_while_loops, type_(n1), type_(n2))


@pytest.mark.parametrize("l1,l2,type_", _product(([], [1, 2]), ([1],), (list, _int,
                                                                               _dataset)))
def test_loop_successive_for_loops(l1, l2, type_):
    # TF: autograph/tests/loop_basic_test.py::test_successive_for_loops
    assert_matches_eager(cases.successive_for_loops, type_(l1), type_(l2))


# --- loop_control_flow_test.py -------------------------------------------------------------------
@pytest.mark.parametrize("l,type_,target", [
    (l, type_, target) for l in ([], [1, 2, 3, 4]) for type_ in (list, _int, _dataset)
    for target in (cases.continue_in_single_for, cases.break_in_single_for,
                   cases.unconditional_return_in_single_for,
                   cases.effectively_unconditional_return_in_single_for)
    # upstream skips: returns inside dataset loops, and returns in loops that never run
    if not (target in (cases.unconditional_return_in_single_for,
                       cases.effectively_unconditional_return_in_single_for)
            and (type_ is _dataset or not l))])
def test_loop_control_single_for(l, type_, target):  # noqa: E741
    # TF: autograph/tests/loop_control_flow_test.py::test_single_for
    assert_matches_eager(target, type_(l))


@pytest.mark.parametrize("n,type_,target", [
    (n, type_, target) for n in (0, 4) for type_ in (int, _int)
    for target in (cases.continue_in_single_while, cases.break_in_single_while,
                   cases.multiple_breaks_in_single_while,
                   cases.break_followed_by_cond_in_single_while,
                   cases.unconditional_return_in_single_while)
    if n or target is not cases.unconditional_return_in_single_while])
def test_loop_control_single_while(n, type_, target):
    # TF: autograph/tests/loop_control_flow_test.py::test_single_while
    assert_matches_eager(target, type_(n))


@pytest.mark.parametrize("a,type_,target", _product(
    ([[], []], [[1, 2], [3, 4]]), (list, _int, _dataset),
    (cases.continue_in_inner_for, cases.break_in_inner_for, cases.break_continue_in_inner_for)))
def test_loop_control_nested_for(a, type_, target):
    # TF: autograph/tests/loop_control_flow_test.py::test_nested_for
    assert_matches_eager(target, type_(a))


@pytest.mark.parametrize("m,n,type_", _product((0, 3), (1, 4), (int, _int)))
def test_loop_control_nested_while(m, n, type_):
    # TF: autograph/tests/loop_control_flow_test.py::test_nested_while (break_in_inner_while)
    assert_matches_eager(cases.break_in_inner_while, type_(m), type_(n))


# --- early_return_test.py ------------------------------------------------------------------------
@pytest.mark.parametrize("n,type_", _product((0, 1), (int, tf.constant)))
def test_return_with_default(n, type_):
    # TF: autograph/tests/early_return_test.py::test_return_with_default
    assert_matches_eager(cases.return_with_default, type_(n))


@pytest.mark.parametrize("c,type_", _product((True, False), (bool, tf.constant)))
def test_return_dependent_on_local(c, type_):
    # TF: autograph/tests/early_return_test.py::test_return_dependent_on_local
    assert_matches_eager(cases.return_dependent_on_local, type_(c))


@pytest.mark.parametrize("n", (0, 3, 5))
def test_return_possibly_undefined(n):
    # TF: autograph/tests/early_return_test.py::test_return_possibly_undefined_legal and
    # ::test_return_possibly_undefined_illegal
    assert_matches_eager(cases.return_possibly_undefined, n)
    with pytest.raises(ValueError, match="else branch must also have a return"):
        tf.function(cases.return_possibly_undefined)(tf.constant(n))


@pytest.mark.parametrize("n,type_", _product((-1, 3, 6), (tf.constant,)))
def test_return_nested_ifs(n, type_):
    # TF: autograph/tests/early_return_test.py::test_nested_ifs
    assert_matches_eager(cases.nested_ifs, type_(n))


@pytest.mark.parametrize("c1,c2,n", _product((True, False), (True, False), (2,)))
def test_return_possible_return_before_loop(c1, c2, n):
    # TF: autograph/tests/early_return_test.py::test_possible_return_before_loop
    assert_matches_eager(cases.possible_return_before_loop, c1, c2, n)


# --- api_test.py ---------------------------------------------------------------------------------
global_n = 2


def test_to_graph_basic_and_defaults():
    # TF: autograph/impl/api_test.py::test_to_graph_basic and ::test_to_graph_with_defaults
    foo = 4

    def test_fn(x, s=foo):
        while tf.reduce_sum(x) > s:
            x //= 2
        return x

    converted = tf.autograph.to_graph(test_fn)
    assert tf.function(converted)(tf.constant([4, 8]), 4).numpy().tolist() == [1, 2]
    assert tf.function(converted)(tf.constant([4, 8])).numpy().tolist() == [1, 2]


def test_to_graph_with_globals():
    # TF: autograph/impl/api_test.py::test_to_graph_with_globals
    def test_fn(x):
        global global_n
        global_n = x + global_n
        return global_n

    converted = tf.autograph.to_graph(test_fn)
    prev = global_n
    converted(10)
    assert global_n > prev


def test_to_code_basic():
    # TF: autograph/impl/api_test.py::test_to_code_basic: parseable Python code
    def test_fn(x, s):
        while tf.reduce_sum(x) > s:
            x /= 2
        return x

    code = tf.autograph.to_code(test_fn)
    compile(code, "<to_code>", "exec")
    assert "ag__.while_stmt" in code


def test_converted_method():
    # TF: autograph/impl/api_test.py::test_converted_call_method (a method with an early return)
    class TestClass:
        def __init__(self, x):
            self.x = x

        @tf.function
        def test_method(self):
            if self.x < 0:
                return -self.x
            return self.x

        def plain_method(self, y):
            if y < self.x:
                y = y + self.x
            return y

    assert TestClass(tf.constant(-1)).test_method().numpy() == 1
    bound = tf.function(TestClass(tf.constant(3)).plain_method)
    assert bound(tf.constant(1)).numpy() == 4 and bound(tf.constant(5)).numpy() == 5


# --- tapeflow's own checks -----------------------------------------------------------------------
def test_python_conditions_stay_python():
    """A Python bool picks its branch while tracing: the other branch never runs, no graph
    control flow is made, and a side effect runs once per trace."""
    calls = []

    def side(tag):
        calls.append(tag)

    @tf.function
    def f(x, flag):
        if flag:
            side("then")
            y = x + 1.0
        else:
            side("else")
            y = x - 1.0
        for k in range(3):
            side(k)
        return y

    assert f(tf.constant(1.0), True).numpy() == 2.0
    assert f(tf.constant(1.0), True).numpy() == 2.0     # no retrace: no side effect
    assert calls == ["then", 0, 1, 2]
    names = [e.op.name for e in f.get_concrete_function(tf.constant(1.0), True).graph.eqns]
    assert "If" not in names and "While" not in names


def test_tensor_conditions_trace_both_branches_once():
    calls = []

    @tf.function
    def f(x):
        if x > 0:
            calls.append("then")
            y = x * 2.0
        else:
            calls.append("else")
            y = -x
        return y

    assert f(tf.constant(3.0)).numpy() == 6.0
    assert f(tf.constant(-2.0)).numpy() == 2.0
    assert calls == ["then", "else"]


def test_autograph_false_keeps_trace_error():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(tf.TraceError, match="truth value"):
        tf.function(f, autograph=False)(tf.constant(1.0))
    assert tf.function(f)(tf.constant(-1.0)).numpy() == 1.0


def test_do_not_convert():
    @tf.autograph.experimental.do_not_convert
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(tf.TraceError, match="truth value"):
        tf.function(f)(tf.constant(1.0))

    def g(x):
        if x > 0:
            x = x * 2.0
        return x
    unconverted = tf.autograph.experimental.do_not_convert(functools.partial(g))
    with pytest.raises(tf.TraceError):
        tf.function(unconverted)(tf.constant(1.0))


def test_called_user_functions_are_converted():
    def helper(x):
        if x > 0:
            return x * 3.0
        return x

    @tf.function
    def f(x):
        return helper(x) + 1.0

    assert f(tf.constant(2.0)).numpy() == 7.0
    assert f(tf.constant(-2.0)).numpy() == -1.0


def test_closures_see_their_variables():
    scale = [2.0]

    def make():
        factor = tf.constant(3.0)

        def f(x):
            if x > 0:
                x = x * factor * scale[0]
            return x
        return f

    f = tf.function(make())
    assert f(tf.constant(1.0)).numpy() == 6.0
    assert f(tf.constant(-1.0)).numpy() == -1.0


def test_partial_and_lambda():
    def f(x, bias):
        if x > 0:
            x = x + bias
        return x

    assert tf.function(functools.partial(f, bias=2.0))(tf.constant(1.0)).numpy() == 3.0
    lam = tf.function(lambda x: tf.cond(x > 0, lambda: x, lambda: -x))  # left unconverted
    assert lam(tf.constant(-4.0)).numpy() == 4.0


def test_for_over_tensor_range_and_rows():
    @tf.function
    def f(x, n):
        s = tf.zeros_like(x[0])
        for row in x:
            s = s + row
        t = 0.0
        for i in tf.range(n):
            t = t + tf.cast(i, tf.float32)
        return s, t

    s, t = f(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), tf.constant(4))
    assert s.numpy().tolist() == [9.0, 12.0] and t.numpy() == 6.0
    names = [e.op.name for e in f.get_concrete_function(
        tf.constant([[1.0, 2.0]]), tf.constant(4)).graph.eqns]
    assert names.count("While") == 2


def _piecewise(x):
    if tf.reduce_sum(x) > 0:
        y = x * x * x
    else:
        y = tf.sin(x)
    return y


def _power_loop(x, n):
    y = x
    i = 0
    while i < n:
        y = y * x + tf.sin(y)
        i += 1
    return y


@pytest.mark.parametrize("x", ([0.7, -0.2], [-0.7, 0.1]))
def test_gradient_through_converted_if(x):
    check_grads(tf.function(_piecewise), [np.array(x)], order=2)


def test_gradient_through_converted_while():
    n = tf.constant(3)

    def three_steps(x):
        return _power_loop(x, n)
    check_grads(tf.function(three_steps), [np.array([0.3, -0.4])], order=2)


def _mismatched_returns(x):
    if x > 0:
        return x
    else:
        return x, x


def test_error_names_line_and_form():
    line = inspect.getsourcelines(_mismatched_returns)[1] + 1
    with pytest.raises(ValueError) as info:
        tf.function(_mismatched_returns)(tf.constant(1.0))
    message = str(info.value)
    assert f"test_autograph.py, line {line}, `if` statement" in message
    assert "return value" in message and "structure" in message


def _fails_in_branch(x):
    if x > 0:
        y = x + 1.0
    else:
        y = tf.reshape(x, [5])   # cannot reshape a scalar to 5 elements
    return y


def test_traceback_points_at_user_line():
    line = inspect.getsourcelines(_fails_in_branch)[1] + 4
    with pytest.raises(Exception) as info:
        tf.function(_fails_in_branch)(tf.constant(1.0))
    frames = [f for f in traceback.extract_tb(info.value.__traceback__)
              if f.filename == __file__]
    assert frames and frames[-1].lineno == line
    assert "tf.reshape(x, [5])" in frames[-1].line


def test_loop_variable_dtype_change_names_variable():
    def f(x):
        s = 0
        for v in x:
            s = v
        return s

    with pytest.raises(ValueError, match=r"'s' is float32.*int32\[\] before the loop"):
        tf.function(f)(tf.constant([1.0, 2.0]))


def test_non_scalar_condition_names_line():
    def f(x):
        if x > 0:
            x = -x
        return x

    with pytest.raises(TypeError, match=r"line \d+, `if` statement: the condition is a "
                                        r"bool\[2\] tensor"):
        tf.function(f)(tf.constant([1.0, -2.0]))


class _Base:
    def f(self, x):
        return x * 2.0


class _Derived(_Base):
    def f(self, x):
        if x > 0:
            x = x + 1.0
        return super().f(x)     # zero-argument super() in a converted method


def test_method_with_zero_argument_super():
    f = tf.function(_Derived().f)
    assert f(tf.constant(1.0)).numpy() == 4.0 and f(tf.constant(-1.0)).numpy() == -2.0


def test_source_unavailable_runs_unconverted(caplog):
    namespace = {"tf": tf}
    exec("def no_source(x):\n    return x + 1.0\n", namespace)
    with caplog.at_level("DEBUG", logger="tapeflow.autograph"):
        assert tf.function(namespace["no_source"])(tf.constant(1.0)).numpy() == 2.0
    assert "source of no_source is unavailable" in caplog.text


def test_conversion_is_cached_per_function():
    converted = tf.autograph.to_graph(cases.if_one_var)
    assert tf.autograph.to_graph(cases.if_one_var) is converted
    assert tf.autograph.to_graph(converted) is converted
    assert converted.__code__ is not cases.if_one_var.__code__


def _helper_with_for_else(values):
    for v in values:
        if v < 0:
            break
    else:
        return 1.0
    return -1.0


def test_called_function_that_cannot_be_converted_runs_as_written():
    @tf.function
    def f(x):
        return x * _helper_with_for_else([1, 2])

    with pytest.warns(UserWarning, match="AutoGraph could not convert.*for/else"):
        assert f(tf.constant(3.0)).numpy() == 3.0


def test_converted_functions_are_not_kept_alive():
    import gc
    import weakref

    def make():
        def g(x):
            if x > 0:
                x = -x
            return x
        return g

    g = make()
    assert tf.function(g)(tf.constant(2.0)).numpy() == -2.0
    ref = weakref.ref(g)
    del g
    gc.collect()
    assert ref() is None


class _ClippedStepModel(tf.keras.Model):
    """A user's train_step with a tensor ``if``: fit traces it through tf.function, converted
    (tapeflow's own Model.train_step is not converted: it has no tensor control flow)."""

    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self(x) - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        if loss > 1e3:                      # a tensor condition: tf.cond in fit's traced step
            grads = [g * 0.0 for g in grads]
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def test_fit_traces_a_converted_user_train_step():
    model = _ClippedStepModel()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    x = np.array([[1.0], [2.0]], dtype="float32")
    history = model.fit(x, 2.0 * x, epochs=2, batch_size=2, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]
    names = [e.op.name for e in model.train_function.get_concrete_function(
        (tf.constant(x), tf.constant(2.0 * x))).graph.eqns]
    assert "If" in names


def test_nonlocal_and_global_variables_in_converted_branches():
    count = 0

    def f(x, flag):
        nonlocal count
        if flag:
            count += 1
        if x > 0:
            x = x * 2.0
        return x

    traced = tf.function(f)
    assert traced(tf.constant(1.0), True).numpy() == 2.0
    assert traced(tf.constant(-1.0), False).numpy() == -1.0
    assert count == 1


class _Scaler:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        if x > 0:
            x = x * self.factor
        return x


def test_callable_object_is_converted():
    f = tf.function(_Scaler(3.0))
    assert f(tf.constant(2.0)).numpy() == 6.0 and f(tf.constant(-2.0)).numpy() == -2.0
