"""Memory planning in compiled graphs (``tracing/memory_plan.py``): values dropped after their
last use, temporaries written into buffers the function keeps, optimizer updates in place.

Every test lowers the size threshold to 0 so that small arrays take the planned paths, and
checks in the generated source that they did, so a plan that silently stops applying fails.
"""
import sys
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.registry import lookup_primitive
from tapeflow.optimizers.adam import _apply_adam, _apply_adam_in_place
from tapeflow.optimizers.sgd import _apply_gradient_descent, _apply_gradient_descent_in_place
from tapeflow.tracing import memory_plan


@pytest.fixture(autouse=True)
def plan_small_arrays(monkeypatch):
    monkeypatch.setattr(memory_plan, "MIN_BUFFER_BYTES", 0)
    monkeypatch.setattr(memory_plan, "BUFFERS", True)  # measured no faster: off by default


@pytest.fixture
def planned(request):
    """Whether compiled graphs are planned here: buffers and in-place updates are numpy's, so
    on the strict device the same tests check the results of graphs run without them."""
    return request.config.getoption("--device") != "strict"


def _source(function, *args):
    return function.get_concrete_function(*args)._run.source


def _layer(x, w):
    h = tf.nn.relu(x @ w) + 1.0
    y = h * h - h
    return y, tf.reduce_sum(y)  # y is returned and read again: a buffer must not hold it


def _reference(x, w):
    h = np.maximum(x @ w, 0) + np.float32(1.0)
    y = h * h - h
    return y, y.sum()


def _data(seed, shape=(6, 4)):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype(np.float32)


def test_outputs_are_not_aliased_between_calls(planned):
    f = tf.function(_layer)
    w = tf.constant(_data(0, (4, 5)))
    x1, x2 = tf.constant(_data(1)), tf.constant(_data(2))
    assert not planned or "out=b" in _source(f, x1, w)
    first, _ = f(x1, w)
    second, _ = f(x2, w)
    third, _ = f(x1, w)
    assert not planned or not np.shares_memory(first._value, second._value)
    assert not planned or not np.shares_memory(first._value, third._value)
    np.testing.assert_allclose(first.numpy(), _reference(x1.numpy(), w.numpy())[0], rtol=1e-6)
    np.testing.assert_allclose(second.numpy(), _reference(x2.numpy(), w.numpy())[0], rtol=1e-6)
    np.testing.assert_array_equal(first.numpy(), third.numpy())


def test_dead_values_are_dropped_after_their_last_use():
    f = tf.function(_layer)
    x, w = tf.constant(_data(1)), tf.constant(_data(0, (4, 5)))
    concrete = f.get_concrete_function(x, w)
    plan = memory_plan.plan_memory(concrete.optimized_graph, buffers=False, in_place=False)
    graph = concrete.optimized_graph
    for k, dead in plan.frees.items():
        for vid in dead:  # read by no later equation, and not returned
            assert vid not in graph.outputs
            assert all(vid not in e.inputs for e in graph.eqns[k + 1:])
    matmul = next(e for e in graph.eqns if e.op.name == "BatchMatMulV2")
    assert any(matmul.outputs[0] in dead for dead in plan.frees.values())
    assert f"del v{matmul.outputs[0]}" in concrete._run.source


def test_two_threads_calling_one_function_get_their_own_results(planned):
    def layer(x, w):  # the product's buffer is live across sigmoid's kernel, a Python
        h = x @ w       # function: a point where the other thread may run
        return h * h + tf.reduce_sum(tf.sigmoid(x))

    def reference(x, w):
        h = x @ w
        return h * h + (1 / (1 + np.exp(-x))).sum()

    f = tf.function(layer)
    w = tf.constant(_data(0, (4, 5)))
    inputs = [tf.constant(_data(seed)) for seed in range(2)]
    assert not planned or "out=b" in _source(f, inputs[0], w)
    barrier = threading.Barrier(2)
    errors = []

    def work(k):
        try:
            barrier.wait(timeout=10)
            want = reference(inputs[k].numpy(), w.numpy())
            for _ in range(50):
                np.testing.assert_allclose(f(inputs[k], w).numpy(), want, rtol=1e-5)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads inside calls, not only between them
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors


def test_a_direct_call_at_other_shapes_is_refused_not_run_on_the_buffers(planned):
    """A ConcreteFunction's buffers (and kernels) are sized for its traced types: a call at
    another shape is TensorFlow's binding TypeError, not a (6, 5) buffer broadcast into."""
    f = tf.function(_layer)
    w = tf.constant(_data(0, (4, 5)))
    concrete = f.get_concrete_function(tf.constant(_data(1)), w)
    assert not planned or "out=b" in concrete._run.source
    x = _data(3, (1, 4))
    with pytest.raises(TypeError, match=r"can not cast TensorSpec\(shape=\(1, 4\)"):
        concrete(tf.constant(x), w)
    got, total = f(tf.constant(x), w)  # the tf.function traces for it
    want, want_total = _reference(x, w.numpy())
    assert got.shape == (1, 5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), want_total, rtol=1e-6)


def test_relaxed_batch_sizes_give_the_results_of_each_size():
    f = tf.function(_layer, reduce_retracing=True)
    w = tf.constant(_data(0, (4, 5)))
    for batch in (6, 3, 9, 6):
        x = _data(batch, (batch, 4))
        got, _ = f(tf.constant(x), w)
        np.testing.assert_allclose(got.numpy(), _reference(x, w.numpy())[0], rtol=1e-6)


def test_a_value_returned_as_a_view_is_not_written_through_a_buffer(planned):
    f = tf.function(lambda x, w: tf.reshape(x @ w, [-1]))
    w = tf.constant(_data(0, (4, 5)))
    x1, x2 = tf.constant(_data(1)), tf.constant(_data(2))
    assert "out=b" not in _source(f, x1, w)  # its reshape may be a view of the product
    first, second = f(x1, w), f(x2, w)
    np.testing.assert_allclose(first.numpy(), (x1.numpy() @ w.numpy()).ravel(), rtol=1e-6)
    assert not planned or not np.shares_memory(first._value, second._value)


_UNARY = {"Neg", "Tanh", "Square", "Relu"}


@pytest.mark.parametrize("name", sorted(memory_plan.WRITERS))
def test_each_writer_computes_its_ops_forward(name):
    """The ``out=`` kernels give the same bits as the ops' own forwards."""
    op = lookup_primitive(name)
    a, b = _data(5, (3, 4)), _data(6, (3, 4))
    operands = (a,) if name in _UNARY else (a, b.T.copy()) if name == "BatchMatMulV2" else (a, b)
    attrs = {"transpose_a": False, "transpose_b": False} if name == "BatchMatMulV2" else {}
    want = op.forward(*operands, **attrs)
    template = memory_plan.WRITERS[name]([(x.shape, x.dtype) for x in operands], attrs)
    names = {f"x{i}": x for i, x in enumerate(operands)}
    out = np.empty_like(want)
    got = eval(template.format(*names, out="out"), {"np": np, "out": out, **names})  # noqa: S307
    assert got is out
    np.testing.assert_array_equal(got, want)


# TF: python/kernel_tests/variables/resource_variable_ops_test.py::testCachedValueReadBeforeWrite
def test_a_value_read_before_an_update_keeps_its_old_value(planned):
    v = tf.Variable(np.zeros((3, 4), np.float32))
    optimizer = tf.optimizers.SGD(1.0)

    @tf.function
    def step():
        optimizer.apply_gradients([(tf.fill([3, 4], -1.0), v)])

    step()  # traced; v is 1.0
    assert not planned or "_owned(" in step.get_concrete_function()._run.source
    value = v.value()  # an eager tensor on the current array: the update must not touch it
    step()
    assert np.all(value.numpy() == 1.0)
    assert np.all(v.numpy() == 2.0)
    read = v.read_value()
    held = np.asarray(v)  # a numpy view: the update must not write through it either
    step()
    assert np.all(read.numpy() == 2.0) and np.all(held == 2.0)
    assert np.all(v.numpy() == 3.0)


def test_an_unheld_variable_is_updated_in_its_own_array(planned):
    if not planned:
        pytest.skip("in-place updates are numpy's")
    v = tf.Variable(np.zeros((3, 4), np.float32))
    optimizer = tf.optimizers.SGD(1.0)

    @tf.function
    def step():
        optimizer.apply_gradients([(tf.fill([3, 4], -1.0), v)])

    step()
    address = v._value.ctypes.data  # not the array itself: holding it would forbid the update
    step()
    assert v._value.ctypes.data == address  # written in place: nothing else held it
    assert np.all(v.numpy() == 2.0)


def test_in_graph_read_before_an_assign_keeps_its_old_value():
    # TF: resource_variable_ops_test.py::testCachedValueReadBeforeWrite, in one graph
    v = tf.Variable(0.0)

    @tf.function
    def read_then_add():
        value = v.read_value()
        v.assign_add(1.0)
        return value

    assert read_then_add().numpy() == 0.0
    assert v.numpy() == 1.0


def _adam_problem():
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(size=(3, 2)).astype(np.float32))
    x = tf.constant(rng.normal(size=(8, 3)).astype(np.float32))
    y = tf.constant(rng.normal(size=(8, 2)).astype(np.float32))
    optimizer = tf.optimizers.Adam(0.05)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w - y) ** 2)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    return w, step


def test_adam_in_place_in_a_traced_step_follows_the_eager_steps(planned):
    eager_w, eager_step = _adam_problem()
    traced_w, step = _adam_problem()
    traced_step = tf.function(step)
    for _ in range(4):
        eager_step()
        traced_step()
        np.testing.assert_array_equal(traced_w.numpy(), eager_w.numpy())
    assert not planned or "_owned(" in traced_step.get_concrete_function()._run.source


def test_in_place_kernels_give_the_forwards_bits():
    rng = np.random.default_rng(1)
    var, m, v, grad = (rng.normal(size=(4, 3)).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    lr, iterations = np.array(0.01, np.float32), np.array(4, np.int64)
    attrs = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    want = _apply_adam(var, m, v, grad, lr, iterations, **attrs)
    targets = (var.copy(), m.copy(), v.copy())
    got = _apply_adam_in_place(*targets, grad, lr, iterations, **attrs)
    assert all(g is t for g, t in zip(got, targets))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    want = _apply_gradient_descent(var, grad, lr)
    target = var.copy()
    assert _apply_gradient_descent_in_place(target, grad, lr) is target
    np.testing.assert_array_equal(target, want)
