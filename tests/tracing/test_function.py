"""tf.function: when it traces, what a trace holds, what it refuses, and its derivatives.

Traces are counted with ``experimental_get_tracing_count``; graphs are read as equation
lists (``graph`` as traced, ``optimized_graph`` as run) and as their printed listing.
"""
import collections
import warnings

import numpy as np
import pytest

import tapeflow as tf

from .helpers import assert_same, derivatives, derivatives_inside

X = tf.constant([0.5, -1.0, 0.3], dtype=tf.float64)


def names(graph):
    return [e.op.name for e in graph.eqns]


# --- when it traces ------------------------------------------------------------------------------
def test_traces_once_per_signature():
    seen = []

    @tf.function
    def f(x):
        seen.append(tuple(x.shape))   # Python side effects happen while tracing only
        return x * 2.0

    for _ in range(3):
        f(tf.constant([1.0, 2.0]))
    assert f.experimental_get_tracing_count() == 1 and seen == [(2,)]
    f(tf.constant([1.0, 2.0, 3.0]))                   # another shape
    f(tf.constant([1.0, 2.0], dtype=tf.float64))      # another dtype
    f(tf.constant([5.0, 6.0]))                        # the first signature again
    assert f.experimental_get_tracing_count() == 3 and seen == [(2,), (3,), (2,)]


def test_python_values_are_keyed_by_equality():
    @tf.function
    def scale(x, k, mode):
        return x * k if mode == "mul" else x + k

    x = tf.constant(1.0)
    assert scale(x, 2, "mul").numpy() == 2.0
    assert scale(x, 2, "mul").numpy() == 2.0
    assert scale.experimental_get_tracing_count() == 1
    assert scale(x, 3, "mul").numpy() == 3.0
    assert scale(x, 2, "add").numpy() == 3.0
    assert scale(x, 3, "mul").numpy() == 3.0
    assert scale.experimental_get_tracing_count() == 3
    with pytest.raises(TypeError, match="neither a tensor nor a hashable Python value"):
        scale(x, {2}, "mul")


def test_the_nesting_of_the_arguments_is_part_of_the_signature():
    """Ported from tensorflow/python/eager/polymorphic_function/tracing_compilation_test.py::
    TracingCompilationTest::testCacheKeyNestedLists: the same leaves nested another way trace
    a second graph (1, then 2 traces), and each call gets its own structure and values back."""
    defined = tf.function(lambda l: l)
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    first = defined([[a], b, c])
    assert defined.experimental_get_tracing_count() == 1
    second = defined([[a, b], c])
    assert defined.experimental_get_tracing_count() == 2
    assert [[t.numpy() for t in first[0]], first[1].numpy(), first[2].numpy()] == [[1.0], 2.0, 3.0]
    assert [[t.numpy() for t in second[0]], second[1].numpy()] == [[1.0, 2.0], 3.0]


Pair = collections.namedtuple("Pair", ["p", "q"])


@pytest.mark.parametrize("one, other", [
    ([X, X], (X, X)),                       # list and tuple
    ((X, X), Pair(X, X)),                   # tuple and namedtuple
    ({"p": X, "q": X}, {"p": X, "r": X}),   # dicts with other keys
])
def test_each_kind_of_nesting_traces_its_own_graph(one, other):
    defined = tf.function(lambda s: s)
    for structure in (one, other, one, other):
        out = defined(structure)
        assert type(out) is type(structure)
        if isinstance(structure, dict):
            assert list(out) == list(structure)
    assert defined.experimental_get_tracing_count() == 2


def test_retracing_again_and_again_warns_once():
    f = tf.function(lambda x: x + 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 9):
            f(tf.ones([n]))
    retraces = [str(w.message) for w in caught if "retracing" in str(w.message)]
    assert f.experimental_get_tracing_count() == 8
    assert len(retraces) == 1 and retraces[0].startswith("6 calls to <lambda> triggered tf.function "
                                                         "retracing")
    assert "input_signature with None dimensions" in retraces[0]


def test_input_signature_with_a_free_batch_dimension_traces_once():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def row_sums(x):
        return tf.reduce_sum(x * 2.0, axis=1)

    for n in (1, 4, 7):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(row_sums(tf.constant(x)).numpy(), (x * 2).sum(1))
    assert row_sums.experimental_get_tracing_count() == 1
    (spec,), _ = row_sums.get_concrete_function().structured_input_signature
    assert spec.shape == (None, 3)


def test_a_free_dimension_never_runs_the_python_body_twice_in_one_call():
    """Issue 18: the two-size check ran the body twice on the first call (Python side effects
    twice while the tracing count said 1).  Now the first call traces once, at its shape; the
    first call with another size traces for that call and finds the graph the same; after that
    no size traces again (TF: polymorphic_function_test.py::testInputSignatureWithPartialShape
    traces once: tapeflow runs the body a second time, at the second size, to check it)."""
    runs = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        runs.append(x.shape[0])
        return tf.reduce_sum(x * 2.0, axis=1)

    f(tf.ones([2, 3]))
    assert runs == [2]
    f(tf.ones([5, 3]))
    assert runs == [2, 5]
    for n in (7, 1, 2):
        np.testing.assert_array_equal(f(tf.ones([n, 3])).numpy(), np.full(n, 6.0))
    assert runs == [2, 5] and f.experimental_get_tracing_count() == 1


def test_input_signature_retraces_per_shape_when_the_code_bakes_the_size():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def flat(x):
        return tf.reshape(x, [x.shape[0] * 3])     # the size read at trace time: a constant

    for n, traces in ((1, 1), (4, 2), (7, 3), (4, 3), (1, 3)):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(flat(tf.constant(x)).numpy(), x.ravel())
        assert flat.experimental_get_tracing_count() == traces


@pytest.mark.parametrize("value", [tf.ones([2, 4]), tf.ones([2, 3], tf.float64), tf.ones([3]),
                                   tf.ones([1, 2, 3])])
def test_input_signature_refuses_incompatible_inputs(value):
    f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    with pytest.raises(ValueError, match=r"Python inputs incompatible with input_signature: "
                                         r"argument 0 of <lambda> is a .* tensor of shape"):
        f(value)
    with pytest.raises(TypeError, match="the input_signature has 1 arguments, the call passed 2"):
        f(tf.ones([2, 3]), tf.ones([2, 3]))


def test_a_method_traces_per_instance():
    class Scaler:
        def __init__(self, s):
            self.s = s
            self.traces = 0

        @tf.function
        def __call__(self, x):
            self.traces += 1
            return x * self.s

    a, b = Scaler(2.0), Scaler(3.0)
    assert a(tf.constant(1.0)).numpy() == 2.0 and b(tf.constant(1.0)).numpy() == 3.0
    assert a(tf.constant(5.0)).numpy() == 10.0
    assert (a.traces, b.traces) == (1, 1)
    a.s = 7.0   # a Python attribute read at trace time stays baked into that instance's graph
    assert a(tf.constant(1.0)).numpy() == 2.0
    assert Scaler.__call__.experimental_get_tracing_count() == 0


# --- Variables -------------------------------------------------------------------------------------
def test_variables_are_captured_by_reference():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        v.assign_add(x)
        return tf.reduce_sum(v * v)

    one = tf.constant([1.0, 1.0])
    assert step(one).numpy() == 13.0 and v.numpy().tolist() == [2.0, 3.0]
    assert step(one).numpy() == 25.0 and v.numpy().tolist() == [3.0, 4.0]
    v.assign([0.0, 0.0])                      # changed outside: the replay reads the new value
    assert step(one).numpy() == 2.0 and v.numpy().tolist() == [1.0, 1.0]
    assert step.experimental_get_tracing_count() == 1
    assert step.get_concrete_function(one).variables == (v,)


def test_reading_a_variable_sees_assignments_before_it_in_program_order():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        before = v.read_value()
        v.assign(v * 10.0)
        return before, v.read_value()

    assert [t.numpy() for t in f()] == [1.0, 10.0]
    assert [t.numpy() for t in f()] == [10.0, 100.0]


def test_run_functions_eagerly_runs_the_python_each_call():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x * 2.0 if x.numpy() > 0 else -x      # fine eagerly, refused in a trace

    tf.config.run_functions_eagerly(True)
    try:
        assert tf.config.functions_run_eagerly()
        assert f(tf.constant(2.0)).numpy() == 4.0 and f(tf.constant(-2.0)).numpy() == 2.0
    finally:
        tf.config.run_functions_eagerly(False)
    assert calls == [1, 1] and f.experimental_get_tracing_count() == 0
    with pytest.raises(tf.TraceError):
        f(tf.constant(2.0))


# --- the graph -------------------------------------------------------------------------------------
def test_printed_graph_listing():
    v = tf.Variable(tf.ones([3, 2]))

    @tf.function
    def layer(x):
        y = tf.nn.relu(tf.matmul(x, v))
        v.assign_sub(tf.ones([3, 2]) * 0.5)
        return tf.reduce_mean(y)

    cf = layer.get_concrete_function(tf.ones([4, 3]))
    assert str(cf.graph) == cf.pretty_printed_graph()
    assert cf.pretty_printed_graph() == (
        "{ lambda a:f32[3,2] b:f32[]; c:f32[4,3]. let\n"
        "    d:f32[3,2] = ReadVariableOp[variable=0]\n"
        "    e:f32[4,2] = BatchMatMulV2[transpose_a=False, transpose_b=False] c d\n"
        "    f:f32[4,2] = Relu e\n"
        "    g:f32[3,2] = Mul a b\n"
        "    h:f32[3,2] = Sub d g\n"
        "    AssignVariableOp[variable=0] h\n"
        "    i:f32[] = Mean[axes=None, keepdims=False] f\n"
        "  in (i) }")


def test_optimize_folds_constants_merges_and_drops_dead_code():
    @tf.function
    def f(x):
        a = x * 2.0 + 1.0
        b = x * 2.0 + 1.0                   # the same again: merged
        c = tf.constant(3.0) * tf.constant(4.0) + 1.0   # constants only: folded
        tf.exp(x)                           # unused: dropped
        return a + b + c

    cf = f.get_concrete_function(tf.constant([1.0, 2.0]))
    assert names(cf.graph) == ["Mul", "AddV2", "Mul", "AddV2", "Mul", "AddV2", "Exp", "AddV2",
                               "AddV2"]
    assert names(cf.optimized_graph) == ["Mul", "AddV2", "AddV2", "AddV2"]
    folded = [a for a in cf.optimized_graph.consts.values() if a.shape == () and a == 13.0]
    assert len(folded) == 1
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [19.0, 23.0])


def test_optimize_never_drops_an_assign():
    v = tf.Variable([0.0, 0.0])
    w = tf.Variable([5.0, 5.0])

    @tf.function
    def f(x):
        v.assign(x * 2.0)          # its result unused, and nothing returned depends on it
        w.assign(tf.constant([1.0, 1.0]) + 1.0)   # an assign of a constant: folded, still run
        return x + 1.0

    cf = f.get_concrete_function(tf.constant([1.0, 2.0]))
    assert names(cf.optimized_graph) == ["Mul", "AssignVariableOp", "AssignVariableOp", "AddV2"]
    f(tf.constant([1.0, 2.0]))
    assert v.numpy().tolist() == [2.0, 4.0] and w.numpy().tolist() == [2.0, 2.0]


# --- errors while tracing ------------------------------------------------------------------------
def python_if(x):
    if x > 0:
        return x
    return -x


def to_numpy(x):
    return x.numpy() * 2.0


def to_float(x):
    return float(x) * 2.0


def masked(x):
    return tf.boolean_mask(x, x > 0)


@pytest.mark.parametrize("fn, match", [
    (python_if, r"needs the truth value of a traced tensor while tracing of 'python_if'.*"
                r"Python `if`/`while` on a tensor cannot be traced: use tf.cond, tf.while_loop "
                r"or tf.where"),
    (to_numpy, r"needs the value \(numpy\(\)\) of a traced tensor while tracing of 'to_numpy'.*"
               r"run_functions_eagerly\(True\)"),
    (to_float, r"needs the value \(float\(\)\) of a traced tensor while tracing of 'to_float'.*"
               r"Compute it outside the tf.function and pass it in"),
    (masked, r"'boolean_mask' needs the value .* of a traced tensor while tracing of 'masked'.*"
             r"use graph control flow"),
])
def test_asking_for_a_traced_value_is_a_clear_trace_error(fn, match):
    with pytest.raises(tf.TraceError, match=match):
        tf.function(fn, autograph=False)(tf.constant([1.0, -2.0]))
    fn(tf.constant([1.0]) if fn is not to_float else tf.constant(1.0))  # eagerly they run


def test_a_mask_known_at_trace_time_is_fine():
    f = tf.function(lambda x: tf.boolean_mask(x, [True, False, True]))
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0, 3.0])).numpy(), [1.0, 3.0])


# --- derivatives -----------------------------------------------------------------------------------
def smooth(x, y):
    return tf.reduce_sum(tf.tanh(tf.matmul(x[:, None], y[None, :])) * tf.exp(-x[:, None] ** 2), 1)


def test_second_order_through_a_traced_function_matches_eager():
    y = tf.constant([0.2, 0.4, -0.6], dtype=tf.float64)
    want = derivatives(smooth, [X, y])
    assert_same(derivatives(tf.function(smooth), [X, y]), want)
    assert_same(derivatives_inside(smooth, [X, y]), want)


def test_gradient_reaches_variables_through_a_traced_function():
    w = tf.Variable([[1.0, -2.0], [0.5, 0.25]], dtype=tf.float64)
    f = tf.function(lambda x: tf.reduce_sum(tf.sin(tf.matmul(x, w)) ** 2))
    x = tf.constant([[0.3, 0.1]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        traced = f(x)
    with tf.GradientTape() as eager_tape:
        eager = tf.reduce_sum(tf.sin(tf.matmul(x, w)) ** 2)
    np.testing.assert_allclose(tape.gradient(traced, w).numpy(),
                               eager_tape.gradient(eager, w).numpy(), rtol=1e-12)


def test_nested_tf_functions_trace_and_differentiate():
    """Regression: calling a tf.function inside another one's trace traced the inner function
    on an abstract value and failed; it now traces on the outer trace's example data and is
    inlined."""
    inner = tf.function(lambda x: tf.sin(x) * x)

    def outer(x):
        return inner(x) * inner(x * 2.0)

    f = tf.function(outer)
    np.testing.assert_allclose(f(X).numpy(), outer(X).numpy(), rtol=1e-15)
    assert names(f.get_concrete_function(X).graph) == ["Sin", "Mul", "Mul", "Sin", "Mul", "Mul"]
    assert inner.experimental_get_tracing_count() == 1
    assert_same(derivatives(f, [X]), derivatives(outer, [X]))
    assert_same(derivatives_inside(outer, [X]), derivatives(outer, [X]))


@tf.custom_gradient
def clipped_identity(x):
    def grad(dy):
        return tf.clip_by_value(dy, -0.1, 0.1)
    return tf.identity(x), grad


def test_custom_gradient_inside_a_traced_function_is_used():
    f = tf.function(lambda x: tf.reduce_sum(clipped_identity(x) * 5.0))

    @tf.function
    def grad_inside(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(clipped_identity(x) * 5.0)
        return tape.gradient(y, x)

    with tf.GradientTape() as tape:      # an outer tape over the traced call
        tape.watch(X)
        y = f(X)
    np.testing.assert_array_equal(tape.gradient(y, X).numpy(), [0.1, 0.1, 0.1])
    np.testing.assert_array_equal(grad_inside(X).numpy(), [0.1, 0.1, 0.1])
    assert "IdentityN" in names(f.get_concrete_function(X).graph)


def test_custom_gradient_with_several_outputs_inside_a_traced_function():
    """Regression: IdentityN made one output, so a custom_gradient function returning two
    tensors could not be traced (pack_sequence_as: 1 leaves are fewer than the structure)."""
    @tf.custom_gradient
    def two(x):
        def grad(da, db):
            return da * 10.0 + db * 100.0
        return (x * 1.0, x * 2.0), grad

    def fn(x):
        a, b = two(x)
        return a + b

    f = tf.function(fn)
    np.testing.assert_array_equal(f(X).numpy(), 3.0 * X.numpy())
    for g in (fn, f):
        with tf.GradientTape() as tape:
            tape.watch(X)
            y = g(X)
        np.testing.assert_array_equal(tape.gradient(y, X).numpy(), [110.0] * 3)


def test_a_variable_made_at_every_trace_raises_tensorflows_error():
    """TF: polymorphic_function_test.py::testVariableCreationOnEveryCallRaises-style: Variables
    made on the first call are kept (lifted); a body that makes one unconditionally would make
    it at every trace, and raises TensorFlow's ValueError on the first call."""
    @tf.function
    def f(x):
        v = tf.Variable(1.0)
        return v + x

    with pytest.raises(ValueError, match="only supports singleton tf.Variables created on the "
                                         "first call"):
        f(tf.constant(1.0))


def test_a_guarded_variable_is_made_once_and_kept_across_traces():
    """TF's guide (Variables inside tf.function): create on the first call behind a guard."""
    class Scale(tf.Module):
        def __init__(self):
            self.v = None
            self.made = 0

        @tf.function
        def __call__(self, x):
            if self.v is None:
                self.made += 1
                self.v = tf.Variable(2.0)
            return self.v * x

    m = Scale()
    assert float(m(tf.constant(3.0))) == 6.0
    np.testing.assert_array_equal(m(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])  # a new trace
    m.v.assign(5.0)
    assert float(m(tf.constant(1.0))) == 5.0
    assert m.made == 1


def test_python_side_effects_happen_when_tracing_only():
    """TF: polymorphic_function_test.py (side_effecting_function): the list append runs when
    the function is traced, not when its graph is called again; the Python function itself
    still appends."""
    state = []

    @tf.function
    def side_effecting_function():
        state.append(0)

    side_effecting_function()
    assert state == [0]
    side_effecting_function()
    assert state == [0]
    side_effecting_function.python_function()
    assert state == [0, 0]


def test_a_variable_appended_at_every_call_raises():
    """TF: polymorphic_function_test.py (fn appending variables.Variable(1.0) to a list, then
    `with self.assertRaises(ValueError): fn(1.0)`)."""
    state = []

    @tf.function
    def fn(x):
        state.append(tf.Variable(1.0))
        return state[-1] + x

    with pytest.raises(ValueError):
        fn(1.0)
