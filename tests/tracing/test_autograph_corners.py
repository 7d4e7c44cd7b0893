"""AutoGraph's corner cases (tracing/autograph/): loops that must run to define a variable,
attributes and items of objects assigned in tensor branches and loops, and a Keras layer's
``call`` converted inside a traced step.

Ported from TensorFlow's reference tests, tensorflow/python/autograph/tests/ (the functions
below are upstream's own, each test names its upstream test), and from Keras's
engine/base_layer_test.py.  ``_matches_eager`` is upstream's ``assertFunctionMatchesEager``.
"""
import itertools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.tracing.autograph import conversion


def _value(x):
    if isinstance(x, dict):
        return {k: _value(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v) for v in x)
    return np.asarray(x.numpy() if isinstance(x, tf.Tensor) else x).tolist()


def _matches_eager(fn, *args):
    want = _value(fn(*args))
    got = _value(tf.function(fn)(*args))
    assert got == want, (fn.__name__, args, got, want)


def _product(*axes):
    return list(itertools.product(*axes))


# --- composite_names_in_control_flow_test.py -----------------------------------------------------
def if_basic_dict(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = 1
    else:
        x["b"] = -1
    return x


def if_basic_list(a):
    x = [a, 0]
    if x[0] > 0:
        x[1] = 1
    else:
        x[1] = -1
    return x


def if_imbalanced(a):
    x = {"a": a}
    if x["a"] > 0:
        x["b"] = 1
    return x


def else_imbalanced(a):
    x = {"a": a}
    if x["a"] > 0:
        pass
    else:
        x["b"] = 1
    return x


def if_imbalanced_nested(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["a"]["b"] = 1
    return x


def else_imbalanced_nested(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        pass
    else:
        x["a"]["b"] = 1
    return x


def if_buggy(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    else:
        x["b"]["a"] = -1
    return x


def if_imbalanced_buggy(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    return x


def while_basic_dict(x, a, b):
    y = {"a": a, "b": b}
    while x > 0:
        x -= 1
        y["a"] += 1
    return y


def while_basic_list(x, a, b):
    y = [a, b]
    while x > 0:
        x -= 1
        y[0] += 1
    return y


def while_state_only_dict(a, b):
    y = {"a": a, "b": b}
    while y["b"] <= 10:
        y["a"] += 1
        y["b"] *= 2
    return y


def while_state_only_list(a, b):
    y = [a, b]
    while y[1] <= 10:
        y[0] += 1
        y[1] *= 2
    return y


def while_imbalanced(b):
    y = {"b": b}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] *= 2
    return y


def for_basic_dict(n, x, a, b):
    y = {"a": a, "b": b}
    for i in range(n):
        x -= 1
        y["a"] += i
    return y


def for_state_only_list(n, a, b):
    y = [a, b]
    for _ in range(n):
        y[0] += 1
    return y


def for_imbalanced(n, x):
    y = {}
    for i in range(n):
        x -= i
        y["a"] = x
    return y


@pytest.mark.parametrize("target,a,type_", _product(
    (if_basic_dict, if_basic_list), (0, 1), (bool, tf.constant)))
def test_composite_if_basic(target, a, type_):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_if_basic
    _matches_eager(target, type_(a))


@pytest.mark.parametrize("target,a", _product(
    (if_imbalanced, else_imbalanced, if_imbalanced_nested, else_imbalanced_nested), (0, 1)))
def test_composite_if_imbalanced_legal(target, a):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_if_imbalanced_legal
    _matches_eager(target, a)


@pytest.mark.parametrize("target,a,type_,exc,regex", [
    (if_imbalanced, 0, tf.constant, ValueError, r"'x\['b'\]' must also be initialized in the else"),
    (if_imbalanced, 1, tf.constant, ValueError, r"'x\['b'\]' must also be initialized in the else"),
    (else_imbalanced, 0, tf.constant, ValueError,
     r"'x\['b'\]' must also be initialized in the main"),
    (else_imbalanced, 1, tf.constant, ValueError,
     r"'x\['b'\]' must also be initialized in the main"),
    (if_imbalanced_nested, 0, tf.constant, ValueError,
     r"'x\['a'\]\['b'\]' must also be initialized in the else"),
    (if_imbalanced_nested, 1, tf.constant, ValueError,
     r"'x\['a'\]\['b'\]' must also be initialized in the else"),
    (else_imbalanced_nested, 0, tf.constant, ValueError,
     r"'x\['a'\]\['b'\]' must also be initialized in the main"),
    (else_imbalanced_nested, 1, tf.constant, ValueError,
     r"'x\['a'\]\['b'\]' must also be initialized in the main"),
    (if_buggy, 1, int, KeyError, "'b'"),
    (if_buggy, 1, tf.constant, KeyError, "'b'"),
    (if_buggy, 0, tf.constant, KeyError, "'b'"),
    (if_imbalanced_buggy, 1, int, KeyError, "'b'"),
    (if_imbalanced_buggy, 1, tf.constant, KeyError, "'b'"),
    (if_imbalanced_buggy, 0, tf.constant, KeyError, "'b'"),
])
def test_composite_if_imbalanced_illegal(target, a, type_, exc, regex):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_if_imbalanced_illegal
    with pytest.raises(exc, match=regex):
        tf.function(target)(type_(a))


def test_composite_if_error_names_the_line():
    with pytest.raises(ValueError, match=r"test_autograph_corners.py, line \d+, `if` statement"):
        tf.function(if_imbalanced)(tf.constant(1))


@pytest.mark.parametrize("target,x,type_", _product(
    (while_basic_dict, while_basic_list), (0, 2), (bool, tf.constant)))
def test_composite_while_basic(target, x, type_):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_while_basic (a=3)
    _matches_eager(target, type_(x), 3, 0)


@pytest.mark.parametrize("target,type_,b", _product(
    (while_state_only_dict, while_state_only_list), (bool, tf.constant), (3, 6)))
def test_composite_while_state_only(target, type_, b):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_while_state_only
    _matches_eager(target, 0, type_(b))


@pytest.mark.parametrize("b,type_", [(5, int), (11, int), (5, tf.constant), (10, tf.constant)])
def test_composite_while_imbalanced_legal(b, type_):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_while_imbalanced_legal
    _matches_eager(while_imbalanced, type_(b))


def test_composite_while_imbalanced_illegal():
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_while_imbalanced_illegal
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"loop must iterate at least once to initialize y\['a'\]"):
        tf.function(while_imbalanced)(tf.constant(11))


@pytest.mark.parametrize("target,n,type_", _product(
    (for_basic_dict, for_state_only_list), (0, 2), (bool, tf.constant)))
def test_composite_for_basic_and_state_only(target, n, type_):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_for_basic,
    # ::test_for_state_only
    args = (1, 1, 1) if target is for_basic_dict else (1, 1)
    _matches_eager(target, type_(n), *args)


@pytest.mark.parametrize("n,type_", [(0, int), (2, int), (1, tf.constant), (2, tf.constant)])
def test_composite_for_imbalanced_legal(n, type_):
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_for_imbalanced_legal
    _matches_eager(for_imbalanced, type_(n), 0)


def test_composite_for_imbalanced_illegal():
    # TF: autograph/tests/composite_names_in_control_flow_test.py::test_for_imbalanced_illegal
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"loop must iterate at least once to initialize y\['a'\]"):
        tf.function(for_imbalanced)(tf.constant(0), 0)


class _Counter:
    def __init__(self):
        self.total = tf.constant(0)


def attribute_in_while(n, counter):
    trips = 0
    while counter.total < n and trips < 10:   # (bounded: untracked, the test never changes)
        counter.total += 2
        trips += 1
    return counter.total


def attribute_in_if(x, counter):
    if x > 0:
        counter.total = x
    return counter.total


def test_attribute_assigned_in_tensor_loop_and_branch():
    # as composite_names_in_control_flow_test.py, with ``self.x``-style attributes (upstream's
    # control_flow.py docstring: ``while cond: self.x += i``); before, the loop never ended and
    # the branch leaked its traced value whichever way the condition went
    assert tf.function(attribute_in_while)(tf.constant(5), _Counter()).numpy() == 6
    assert tf.function(attribute_in_if)(tf.constant(-3), _Counter()).numpy() == 0
    assert tf.function(attribute_in_if)(tf.constant(3), _Counter()).numpy() == 3


# --- loop_basic_test.py, loop_created_variables_test.py, loop_scoping_test.py --------------------
def for_creates_var(l):  # noqa: E741
    for i in l:
        pass
    return i  # noqa: F821 - upstream's: defined only if the loop ran


def while_creates_var_static_shape(n):
    i = 0
    while i < n:
        v = tf.zeros([1, 2, 3])
        i += 1
    return v


def while_creates_nested_var_static_shape(n):
    i = 0
    while i < n:
        v = {"a": tf.zeros([1, 2, 3]), "b": tf.ones([1, 2, 3])}
        i += 1
    return v["a"], v["b"]


def for_defines_iterate(n, fn):
    s = 0
    for i in fn(n):
        s = s * 10 + i
    return i, s  # noqa: F821


@pytest.mark.parametrize("l,type_", _product(([1], [1, 2]), (list, tf.constant)))
def test_for_creates_var_legal(l, type_):  # noqa: E741
    # TF: autograph/tests/loop_basic_test.py::test_for_creates_var_legal
    _matches_eager(for_creates_var, type_(l))


def test_for_creates_var_illegal():
    # TF: autograph/tests/loop_basic_test.py::test_for_creates_var_illegal
    with pytest.raises(UnboundLocalError, match="used before assignment"):
        tf.function(for_creates_var)([])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"line \d+, `for` statement: loop must iterate at least once "
                             "to initialize i"):
        tf.function(for_creates_var)(tf.constant([]))


@pytest.mark.parametrize("target", (while_creates_var_static_shape,
                                    while_creates_nested_var_static_shape))
def test_while_creates_var_illegal(target):
    # TF: autograph/tests/loop_created_variables_test.py::test_while_creates_var_illegal_tf,
    # ::test_while_creates_var_illegal_py (the static-shape functions)
    with pytest.raises(tf.errors.InvalidArgumentError, match="must iterate at least once"):
        tf.function(target)(tf.constant(0))
    with pytest.raises(UnboundLocalError):
        tf.function(target)(0)


@pytest.mark.parametrize("target,n,type_", _product(
    (while_creates_var_static_shape, while_creates_nested_var_static_shape), (1, 2),
    (int, tf.constant)))
def test_while_creates_var(target, n, type_):
    # TF: autograph/tests/loop_created_variables_test.py::test_while_creates_var
    _matches_eager(target, type_(n))


def test_zero_trip_check_runs_at_every_call_and_names_the_line():
    # the check is an op of the graph: the same trace passes for 2 and fails for 0, and a
    # failed call does not poison the next one
    f = tf.function(while_creates_var_static_shape)
    assert f(tf.constant(2)).shape == (1, 2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        f(tf.constant(0))
    assert f(tf.constant(1)).shape == (1, 2, 3)
    assert f.experimental_get_tracing_count() == 1
    line = while_creates_var_static_shape.__code__.co_firstlineno + 2
    assert f"test_autograph_corners.py, line {line}, `while` statement: loop must iterate at " \
           "least once to initialize v" in str(info.value)


@pytest.mark.parametrize("n,fn", _product((1, 2), (range, tf.range)))
def test_for_defines_iterate_legal_cases(n, fn):
    # TF: autograph/tests/loop_scoping_test.py::test_for_defines_iterate_legal_cases
    _matches_eager(for_defines_iterate, n, fn)


def test_for_defines_iterate_tf_range():
    # TF: autograph/tests/loop_scoping_test.py::test_for_defines_iterate_tf_range (TensorFlow's
    # deviation: a range's loop variable starts at the range's start, no check)
    assert _value(tf.function(for_defines_iterate)(0, tf.range)) == (0, 0)


# --- Keras: a layer's call converted in a traced step --------------------------------------------
class _SignGate(tf.keras.layers.Layer):
    """A user's layer whose call branches on a tensor (Keras converts ``call`` with
    autograph.tf_convert in base_layer.Layer._autographed_call)."""

    def call(self, inputs):
        if tf.reduce_sum(inputs) > 0:
            outputs = inputs * 2.0
        else:
            outputs = -inputs
        return outputs


def test_user_layer_call_is_converted_under_fit():
    model = tf.keras.Sequential([tf.keras.layers.Dense(2), _SignGate(), tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    x = np.ones((4, 3), "float32")
    history = model.fit(x, np.ones((4, 1), "float32"), epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    names = [e.op.name for e in model.train_function.get_concrete_function(
        (tf.constant(x), tf.constant(np.ones((4, 1), "float32")))).graph.eqns]
    assert "If" in names
    # converted once per class; tapeflow's own layers run their call as written
    assert conversion._layer_calls[_SignGate][1] is not _SignGate.call
    assert conversion._layer_calls[tf.keras.layers.Dense][1] is tf.keras.layers.Dense.call


def test_user_layer_call_under_tf_function():
    f = tf.function(lambda t: _SignGate()(t))
    assert f(tf.constant([1.0, -3.0])).numpy().tolist() == [-1.0, 3.0]
    assert f(tf.constant([1.0, 3.0])).numpy().tolist() == [2.0, 6.0]


def test_disabling_in_context_is_matched():
    # Keras: engine/base_layer_test.py::AutographControlFlowTest::
    # test_disabling_in_context_is_matched (TensorFlow raises a TypeError, tapeflow its
    # TraceError; the condition reads the input, as a constant's value is known while tracing)
    class MyLayer(tf.keras.layers.Layer):
        def call(self, inputs, training=None):
            if tf.reduce_sum(inputs) < 0:
                return inputs * 1.0
            return inputs * 0.0

    @tf.function(autograph=False)
    def test_fn():
        return MyLayer()(tf.constant([[1.0, 2.0, 3.0]]))

    with pytest.raises(tf.TraceError, match="truth value"):
        test_fn()
