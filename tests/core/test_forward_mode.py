"""Forward mode: ``tf.autodiff.ForwardAccumulator``, ``jvp``, ``hvp`` and ``linearize``.

The per-op battery runs over every case of the gradient battery (tests/ops/op_cases.py), so an
op registered with a gradient case is checked in forward mode too, with nothing to add here:
its JVP against finite differences and against reverse mode, and (smooth cases) the JVP of
its gradient, forward over reverse, against nested tapes.  Then TensorFlow's documented
behaviour of the accumulator, nesting with tapes and accumulators, Variables, structures,
unconnected targets, and Hessian-vector products against ``tf.hessian``.
"""
import gc
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from ops.gradcheck import check_forward_over_reverse, check_jvp  # tests/ is the test packages' root
from ops.op_cases import CASES, NON_DIFFERENTIABLE
from ops.test_gradients import _sin_with

import tapeflow as tf
from tapeflow.core.context import context

SEEDS = st.integers(0, 2 ** 32 - 1)
FEWER = settings(max_examples=6, deadline=None, database=None, print_blob=True,
                 phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SMOOTH = [c for c in CASES if c.smooth]


# =================================================================================================
# Every op: forward mode derived from its gradient rule
# =================================================================================================
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@FEWER
@given(data=st.data(), seed=SEEDS)
def test_jvp_of_every_op_matches_finite_differences(case, data, seed):
    fn, args = case.draw(data.draw, seed)
    check_jvp(fn, args, eps=case.eps, rtol=case.rtol, atol=case.atol, seed=seed)


@pytest.mark.parametrize("case", SMOOTH, ids=lambda c: c.name)
@FEWER
@given(data=st.data(), seed=SEEDS)
def test_forward_over_reverse_of_every_op_matches_finite_differences(case, data, seed):
    fn, args = case.draw(data.draw, seed)
    check_forward_over_reverse(fn, args, eps=case.eps, rtol=case.rtol, atol=case.atol, seed=seed)


@pytest.mark.parametrize("op", sorted(op for op, e in NON_DIFFERENTIABLE.items()
                                      if e.kind != "no_gradient"))
def test_non_differentiable_ops_stop_tangents(op):
    x = tf.constant(np.random.default_rng(0).uniform(-2, 2, size=(2, 3, 3, 2)))
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        out = NON_DIFFERENTIABLE[op].probe(x)
    assert acc.jvp(out) is None
    assert not np.any(acc.jvp(out, unconnected_gradients="zero").numpy())


@pytest.mark.parametrize("op", sorted(op for op, e in NON_DIFFERENTIABLE.items()
                                      if e.kind == "no_gradient"))
def test_ops_without_gradient_raise_lookup_error_in_forward_mode(op):
    x = tf.constant(np.random.default_rng(0).uniform(-2, 2, size=(2, 3, 3, 2)))
    with pytest.raises(LookupError, match=op):
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)):
            NON_DIFFERENTIABLE[op].probe(x)


# --- the checks catch what they should -------------------------------------------------------------
# Wrong rules swapped in with gradient_override_map, in a scratch copy of the registries.


def test_check_jvp_catches_a_wrong_rule():
    @tf.RegisterGradient("SinGradOffByALittleFwd", saves="inputs", vectorized=True)
    def _bad(op, g):
        return g * tf.math.cos(op.inputs[0]) * 1.0001

    x = np.linspace(-1, 1, 5)
    check_jvp(tf.math.sin, [x])
    with pytest.raises(AssertionError, match="forward mode"):
        check_jvp(_sin_with("SinGradOffByALittleFwd"), [x])


def test_check_forward_over_reverse_catches_a_rule_that_is_not_differentiable():
    @tf.RegisterGradient("SinGradFrozenFwd", saves="inputs", vectorized=True)
    def _frozen(op, g):  # right values, but its own derivative in x is lost
        return g * tf.math.cos(tf.stop_gradient(op.inputs[0]))

    x = np.linspace(-1, 1, 5)
    check_jvp(_sin_with("SinGradFrozenFwd"), [x])  # first order is right
    with pytest.raises(AssertionError, match="forward-over-reverse"):
        check_forward_over_reverse(_sin_with("SinGradFrozenFwd"), [x])


def test_a_new_op_has_forward_mode_from_its_gradient_alone():
    @tf.primitive("ScratchCube")
    def cube(x):
        return x ** 3

    @tf.RegisterGradient("ScratchCube", saves="inputs", vectorized=True)
    def _cube_grad(op, g):
        (x,) = op.inputs
        return g * 3.0 * x * x

    check_jvp(cube, [np.linspace(-1, 1, 4)])
    check_forward_over_reverse(cube, [np.linspace(-1, 1, 4)])


# =================================================================================================
# TensorFlow's documented behaviour
# =================================================================================================
def test_tf_doc_linear_regression_columns_match_the_gradient():
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    targets = tf.constant([[1.], [-1.]])
    dense = tf.keras.layers.Dense(1)
    dense.build([None, 2])

    def loss_fn():
        return tf.reduce_sum((dense(x) - targets) ** 2.)

    kernel_fprop = []
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[1.], [0.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[0.], [1.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.bias, tf.constant([1.])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (dense.kernel, dense.bias))
    assert kernel_fprop[0].shape == () and kernel_fprop[0].dtype == tf.float32
    np.testing.assert_allclose(kernel_grad, tf.stack(kernel_fprop)[:, None], rtol=1e-6)
    np.testing.assert_allclose(bias_grad, bias_fprop[None], rtol=1e-6)


def test_tf_doc_nested_accumulators_give_higher_order_jvps():
    primal = tf.constant(1.1)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as outer:
        with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as inner:
            primal_out = primal ** tf.constant(3.5)
    inner_jvp = inner.jvp(primal_out)
    np.testing.assert_allclose(inner_jvp.numpy(), 4.4417057, rtol=1e-6)  # 3.5 * 1.1 ** 2.5
    np.testing.assert_allclose(outer.jvp(inner_jvp).numpy(), 10.094786, rtol=1e-6)  # 3.5*2.5*1.1**1.5
    # the other way round does not work: inner accumulators do not see outer JVP computations
    assert inner.jvp(outer.jvp(primal_out)) is None


def test_tf_doc_forward_over_backward_hessian_vector_product():
    v = tf.Variable([1., 2.])
    with tf.autodiff.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward = tape.gradient(y, v)
    np.testing.assert_allclose(backward.numpy(), [3., 12.])
    np.testing.assert_allclose(acc.jvp(backward).numpy(), [6., 0.])


def test_a_primal_given_twice_is_refused():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="specified as a primal multiple times"):
        tf.autodiff.ForwardAccumulator([x, x], [tf.constant(1.0), tf.constant(2.0)])


def test_mismatched_structures_and_shapes_are_refused():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError, match="same structure"):
        tf.autodiff.ForwardAccumulator([x], [tf.ones(2), tf.ones(2)])
    with pytest.raises(ValueError, match="shape"):
        tf.autodiff.ForwardAccumulator(x, tf.ones(3))
    with pytest.raises(TypeError, match="tensors and Variables"):
        tf.autodiff.ForwardAccumulator(np.ones(2), np.ones(2))


def test_an_integer_primal_warns_as_tensorflow_does():
    with pytest.warns(UserWarning, match="must be floating"):
        tf.autodiff.ForwardAccumulator(tf.constant(3), tf.constant(1))


def test_accumulator_cannot_be_entered_twice():
    x = tf.constant(1.0)
    acc = tf.autodiff.ForwardAccumulator(x, tf.constant(1.0))
    with acc:
        with pytest.raises(ValueError, match="already recording"):
            acc.__enter__()


def test_tangents_are_computed_only_inside_the_context_and_read_any_time():
    x = tf.constant(2.0)
    acc = tf.autodiff.ForwardAccumulator(x, tf.constant(1.0))
    before = x * x
    with acc:
        inside = x * x
        assert acc.jvp(inside).numpy() == 4.0  # jvp works inside the block too
    after = x * x
    assert acc.jvp(before) is None and acc.jvp(after) is None
    assert acc.jvp(inside).numpy() == 4.0 and acc.jvp(x).numpy() == 1.0
    assert not context().active and context().accumulators == []


# =================================================================================================
# Primals: Variables, structures; targets: unconnected, integer
# =================================================================================================
def test_variables_as_primals_and_their_reads():
    v = tf.Variable([1.0, 2.0, 3.0])
    w = tf.Variable([0.5, -1.0, 2.0])
    t = tf.constant([1.0, 0.0, -1.0])
    with tf.autodiff.ForwardAccumulator(v, t) as acc:
        y = tf.reduce_sum(v * w)            # v read directly
        z = tf.reduce_sum(v.value() ** 2.0)  # and through a read
    assert acc.jvp(v) is t
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.dot(w.numpy(), t.numpy()))
    np.testing.assert_allclose(acc.jvp(z).numpy(), np.dot(2 * v.numpy(), t.numpy()))
    assert acc.jvp(w) is None  # a Variable that is not a primal has no tangent


def test_nested_structures_of_primals_and_targets():
    a, b = tf.constant([1.0, 2.0]), tf.Variable(3.0)
    primals = {"a": a, "rest": [b]}
    tangents = {"rest": [tf.constant(2.0)], "a": tf.constant([1.0, 1.0])}
    with tf.autodiff.ForwardAccumulator(primals, tangents) as acc:
        out = {"sum": tf.reduce_sum(a) * b, "pair": (a * 2.0, b + 1.0)}
    jvps = acc.jvp(out)
    assert set(jvps) == {"sum", "pair"} and isinstance(jvps["pair"], tuple)
    np.testing.assert_allclose(jvps["sum"].numpy(), 2.0 * 3.0 + 3.0 * 2.0)
    np.testing.assert_allclose(jvps["pair"][0].numpy(), [2.0, 2.0])
    np.testing.assert_allclose(jvps["pair"][1].numpy(), 2.0)


def test_unconnected_targets_are_none_or_zeros():
    x, c = tf.constant([1.0, 2.0]), tf.constant([[3.0, 4.0]])
    with tf.autodiff.ForwardAccumulator(x, tf.ones(2)) as acc:
        y = c * 2.0
        n = tf.argmax(x)  # an integer result has no tangent
        s = tf.stop_gradient(x) * 3.0
    assert acc.jvp(y) is None and acc.jvp(n) is None and acc.jvp(s) is None
    z = acc.jvp([y, n, s], unconnected_gradients="zero")
    assert z[0].shape == (1, 2) and z[0].dtype == tf.float32 and not np.any(z[0].numpy())
    assert z[1].dtype == n.dtype and z[1].numpy() == 0
    assert acc.jvp(y, unconnected_gradients=tf.UnconnectedGradients.ZERO).shape == (1, 2)
    with pytest.raises(ValueError, match="unconnected_gradients"):
        acc.jvp(y, unconnected_gradients="zeros!")


def test_tangent_dtype_follows_the_primal():
    x = tf.constant([1.0, 2.0], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, np.array([1.0, 0.5])) as acc:
        y = tf.sin(x)
    assert acc.jvp(y).dtype == tf.float64
    np.testing.assert_allclose(acc.jvp(y).numpy(), np.cos([1.0, 2.0]) * [1.0, 0.5])


def test_a_tensor_used_many_times_sums_its_tangent_paths():
    x = tf.constant(1.5, tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as acc:
        y = x
        for _ in range(5):
            y = y * x + tf.sin(x)
    def f(u):
        y = u
        for _ in range(5):
            y = y * u + np.sin(u)
        return y
    numeric = (f(1.5 + 1e-6) - f(1.5 - 1e-6)) / 2e-6
    np.testing.assert_allclose(acc.jvp(y).numpy(), numeric, rtol=1e-7)


def test_broadcasting_ops_take_broadcast_tangents():
    x = tf.constant(np.arange(3.0))           # (3,) broadcast against (2, 3)
    m = tf.constant(np.ones((2, 3)) * 2.0)
    with tf.autodiff.ForwardAccumulator([x, m], [tf.constant(np.ones(3)),
                                                 tf.constant(np.full((2, 3), 0.5))]) as acc:
        y = x * m
    np.testing.assert_allclose(acc.jvp(y).numpy(), 1.0 * 2.0 + np.arange(3.0) * 0.5 * np.ones((2, 3)))


# =================================================================================================
# Composition with tapes, custom gradients, overrides, functions
# =================================================================================================
def _mlp_problem(seed=0):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.standard_normal((16, 3)))
    y = tf.constant(rng.standard_normal((16, 1)))
    w1 = tf.Variable(rng.standard_normal((3, 5)) * 0.5, name="w1")
    b1 = tf.Variable(rng.standard_normal(5) * 0.1, name="b1")
    w2 = tf.Variable(rng.standard_normal((5, 1)) * 0.5, name="w2")
    b2 = tf.Variable(np.zeros(1), name="b2")
    variables = [w1, b1, w2, b2]

    def loss_fn():
        h = tf.tanh(tf.matmul(x, w1) + b1)
        out = tf.nn.softplus(tf.matmul(h, w2)) + b2
        return tf.reduce_mean((out - y) ** 2)
    return loss_fn, variables


def test_forward_over_reverse_hvps_agree_with_tf_hessian_on_an_mlp():
    loss_fn, variables = _mlp_problem()
    h = tf.hessian(loss_fn, variables).numpy()
    n = h.shape[0]
    rng = np.random.default_rng(1)
    for direction in [np.eye(n)[0], np.eye(n)[n - 1], rng.standard_normal(n)]:
        vs = tf.unflatten(tf.constant(direction), variables)
        with tf.autodiff.ForwardAccumulator(variables, vs) as acc:
            with tf.GradientTape() as tape:
                loss = loss_fn()
            grads = tape.gradient(loss, variables)
        hv = tf.flatten(acc.jvp(grads)).numpy()
        np.testing.assert_allclose(hv, h @ direction, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(
            tf.flatten(tf.autodiff.hvp(lambda *vars_: loss_fn(), variables, vs)).numpy(),
            h @ direction, rtol=1e-10, atol=1e-12)


def test_reverse_over_forward_gives_the_same_hvp():
    loss_fn, variables = _mlp_problem(seed=2)
    h = tf.hessian(loss_fn, variables).numpy()
    direction = np.random.default_rng(3).standard_normal(h.shape[0])
    vs = tf.unflatten(tf.constant(direction), variables)
    with tf.GradientTape() as tape:
        with tf.autodiff.ForwardAccumulator(variables, vs) as acc:
            loss = loss_fn()
        directional = acc.jvp(loss)  # grad . v, a function of the variables the tape saw
    hv = tf.flatten(tape.gradient(directional, variables)).numpy()
    np.testing.assert_allclose(hv, h @ direction, rtol=1e-10, atol=1e-12)


def test_a_tape_inside_an_accumulator_does_not_record_its_jvps():
    x = tf.constant([0.3, -0.4], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 2.0], tf.float64)) as acc:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x)
    assert acc.jvp(y) is not None
    assert tape.gradient(acc.jvp(y), x) is None  # TF: inner tapes ignore outer accumulators
    assert tape.gradient(y, x) is not None


def test_forward_over_forward_second_directional_derivative():
    x = tf.constant([0.7, -0.2], tf.float64)
    u, v = tf.constant([1.0, 0.5], tf.float64), tf.constant([-0.3, 2.0], tf.float64)
    f = lambda a: tf.reduce_sum(tf.exp(a[0] * a) * tf.cos(a))  # noqa: E731
    with tf.autodiff.ForwardAccumulator(x, u) as outer:
        with tf.autodiff.ForwardAccumulator(x, v) as inner:
            y = f(x)
        d_v = inner.jvp(y)
    xv = tf.Variable(x)
    h = tf.hessian(lambda: f(xv), [xv]).numpy()
    np.testing.assert_allclose(outer.jvp(d_v).numpy(), u.numpy() @ h @ v.numpy(), rtol=1e-10)


def test_custom_gradient_forward_mode_uses_grad_fn():
    @tf.custom_gradient
    def clipped_identity(x):
        def grad_fn(dy):
            return dy * 0.5  # deliberately not the true derivative
        return tf.identity(x), grad_fn

    x = tf.constant([1.0, 2.0])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 1.0])) as acc:
        y = clipped_identity(x) * 3.0
    np.testing.assert_allclose(acc.jvp(y).numpy(), [1.5, 1.5])


def test_gradient_override_map_applies_to_forward_mode():
    @tf.RegisterGradient("TwiceSinGradFwd", saves="inputs", vectorized=True)
    def _twice(op, g):
        return 2.0 * g * tf.cos(op.inputs[0])

    x = tf.constant([0.1, 0.2], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        with tf.gradient_override_map({"Sin": "TwiceSinGradFwd"}):
            y = tf.sin(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2 * np.cos([0.1, 0.2]))


def test_a_tf_function_called_under_an_accumulator_carries_tangents():
    @tf.function
    def f(a):
        return tf.reduce_sum(tf.tanh(a) ** 2)

    x = tf.constant([0.5, -1.0], tf.float64)
    f(x)  # traced and compiled outside
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0], tf.float64)) as acc:
        y = f(x)
    expected = 2 * np.tanh(0.5) * (1 - np.tanh(0.5) ** 2)
    np.testing.assert_allclose(acc.jvp(y).numpy(), expected, rtol=1e-12)


def test_a_function_traced_under_an_accumulator_carries_tangents_on_its_first_call():
    @tf.function
    def f(a):
        return tf.reduce_sum(tf.tanh(a) ** 2)

    x = tf.constant([0.5, -1.0], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0], tf.float64)) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2 * np.tanh(0.5) * (1 - np.tanh(0.5) ** 2))


def test_control_flow_carries_tangents_eagerly_and_in_a_function():
    x = tf.constant(0.7, tf.float64)

    def power3(a):
        return tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * a),
                             (tf.constant(0), tf.constant(1.0, tf.float64)))[1]
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0, tf.float64)) as acc:
        c = tf.cond(x > 0, lambda: tf.sin(x), lambda: tf.cos(x))
        y = power3(x)
        m = tf.map_fn(lambda e: e * x, tf.constant([1.0, 2.0], tf.float64))
        z = tf.function(power3)(x)
    np.testing.assert_allclose(acc.jvp(c).numpy(), np.cos(0.7))
    np.testing.assert_allclose(acc.jvp(y).numpy(), 3 * 0.7 ** 2)
    np.testing.assert_allclose(acc.jvp(m).numpy(), [1.0, 2.0])
    np.testing.assert_allclose(acc.jvp(z).numpy(), 3 * 0.7 ** 2)


def test_an_accumulator_inside_a_traced_function_is_refused_not_silently_empty():
    @tf.function
    def g(a):
        with tf.autodiff.ForwardAccumulator(a, tf.ones_like(a)) as acc:
            y = tf.sin(a)
        return acc.jvp(y)

    with pytest.raises(NotImplementedError, match="around the call"):
        g(tf.constant([0.5, -1.0]))


def test_a_keras_model_jvp_matches_the_jacobian():
    model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                                 tf.keras.layers.Dense(2)])
    x = tf.constant(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    model(x)
    kernel = model.layers[0].kernel
    direction = tf.constant(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))
    with tf.autodiff.ForwardAccumulator(kernel, direction) as acc:
        out = model(x)
    with tf.GradientTape() as tape:
        out2 = model(x)
    jac = tape.jacobian(out2, kernel).numpy().reshape(10, 12)
    np.testing.assert_allclose(acc.jvp(out).numpy().ravel(), jac @ direction.numpy().ravel(),
                               rtol=1e-5, atol=1e-6)


# =================================================================================================
# The functional forms
# =================================================================================================
def test_jvp_helper_matches_the_jacobian():
    def f(a, b):
        return tf.sin(a) * b, tf.reduce_sum(a ** 2)
    a = tf.constant([0.1, 0.7], tf.float64)
    b = tf.constant([2.0, -1.0], tf.float64)
    ta, tb = tf.constant([1.0, -2.0], tf.float64), tf.constant([0.5, 0.25], tf.float64)
    (y, s), (ty, ts) = tf.autodiff.jvp(f, (a, b), (ta, tb))
    np.testing.assert_allclose(y.numpy(), np.sin([0.1, 0.7]) * [2.0, -1.0])
    np.testing.assert_allclose(ty.numpy(), np.cos([0.1, 0.7]) * [2.0, -1.0] * [1.0, -2.0]
                               + np.sin([0.1, 0.7]) * [0.5, 0.25])
    np.testing.assert_allclose(ts.numpy(), 2 * 0.1 * 1.0 + 2 * 0.7 * -2.0)
    # one primal as itself, and an output that does not depend on it: zeros
    out, t = tf.autodiff.jvp(lambda u: (u * 3.0, tf.constant(1.0)), a, ta)
    np.testing.assert_allclose(t[0].numpy(), 3.0 * ta.numpy())
    assert t[1].numpy() == 0.0


def test_hvp_helper_matches_hessian_and_rejects_non_scalar_functions():
    f = lambda a, b: tf.reduce_sum(tf.tanh(a * b) * a)  # noqa: E731
    a, b = tf.constant([0.3, -0.8], tf.float64), tf.constant([1.5, 0.2], tf.float64)
    va, vb = tf.constant([1.0, 0.0], tf.float64), tf.constant([0.0, 2.0], tf.float64)
    ha, hb = tf.autodiff.hvp(f, [a, b], [va, vb])
    av, bv = tf.Variable(a), tf.Variable(b)
    h = tf.hessian(lambda: f(av, bv), [av, bv]).numpy()
    np.testing.assert_allclose(np.concatenate([ha.numpy(), hb.numpy()]),
                               h @ np.array([1.0, 0.0, 0.0, 2.0]), rtol=1e-10)
    with pytest.raises(ValueError, match="scalar"):
        tf.autodiff.hvp(lambda u: u * 2.0, [a], [va])


def test_linearize_reuses_one_forward_pass():
    calls = []

    def f(a):
        calls.append(1)
        return tf.exp(a) * tf.sin(a)
    a = tf.constant([0.2, 1.1, -0.5], tf.float64)
    out, f_jvp = tf.autodiff.linearize(f, a)
    for t in (np.array([1.0, 0.0, 0.0]), np.array([0.3, -1.0, 2.0])):
        expected = (np.exp(a.numpy()) * (np.sin(a.numpy()) + np.cos(a.numpy()))) * t
        np.testing.assert_allclose(f_jvp(tf.constant(t)).numpy(), expected, rtol=1e-12)
    assert len(calls) == 1
    np.testing.assert_allclose(out.numpy(), np.exp(a.numpy()) * np.sin(a.numpy()))


def test_autodiff_namespace_has_tensorflows_names():
    assert tf.autodiff.GradientTape is tf.GradientTape
    assert tf.autodiff.ForwardAccumulator.__name__ == "ForwardAccumulator"


# =================================================================================================
# Lifetime, threads, the fast path
# =================================================================================================
def test_tangents_are_dropped_with_their_tensors():
    x = tf.constant(np.ones((256, 256)))
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        kept = tf.sin(x)
        for _ in range(10):
            tf.exp(x)  # results (and their tangents) dropped at once
    gc.collect()
    assert len(acc._tangents) == 2  # the primal and `kept`
    assert acc.jvp(kept) is not None


def test_a_tape_record_keeps_the_tangent_its_rule_reads():
    # Exp's rule reads op.outputs: the record keeps the array, and the tangent with it, after
    # the Python tensor is gone (forward over reverse needs it).
    x = tf.constant([0.5, 1.0], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1.0, 0.0], tf.float64)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.exp(x))  # the Exp output tensor dies here
        gc.collect()
        g = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(g).numpy(), [np.exp(0.5), 0.0])


def test_an_accumulator_sees_only_its_own_thread():
    x = tf.constant(2.0)
    seen = {}
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        def other():
            seen["y"] = x * x
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert acc.jvp(seen["y"]) is None


def test_clear_session_is_refused_inside_an_accumulator():
    with tf.autodiff.ForwardAccumulator(tf.constant(1.0), tf.constant(1.0)):
        with pytest.raises(RuntimeError, match="ForwardAccumulator"):
            tf.keras.backend.clear_session()


def test_init_scope_hides_accumulators():
    x = tf.constant(2.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        with tf.init_scope():
            y = x * x
    assert acc.jvp(y) is None
