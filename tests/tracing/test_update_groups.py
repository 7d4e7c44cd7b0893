"""Small optimizer updates of one compiled step run as one call (``tracing/update_groups.py``).

The grouped kernel must give every Variable and slot the bits its own update gave, so a traced
step still follows the eager steps exactly; the compiled source must show the group (or a
grouping that silently stops applying would pass); and an update is never moved past a read or
an assign of what it writes.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.registry import lookup_primitive
from tapeflow.tracing import memory_plan
from tapeflow.tracing.ir import ASSIGN, READ, Eqn, Graph
from tapeflow.tracing.update_groups import _grouped_eqn, group_updates

_ATTRS = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


@pytest.fixture
def grouped(request):
    """Whether compiled graphs group updates here: the grouped kernels are numpy's, so on the
    strict device the same tests check the results of graphs run without them."""
    return request.config.getoption("--device") != "strict"


def _kernel_names(function, *args):
    concrete = function.get_concrete_function(*args)
    return [getattr(k, "__qualname__", "") for k in concrete._run.__globals__.values()]


def _adam_update_numpy(param, g_t, t, m, v, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-7):
    # TF: python/keras/optimizer_v2/adam_test.py's reference, t counted from 0
    lr_t = lr * np.sqrt(1 - beta2 ** (t + 1)) / (1 - beta1 ** (t + 1))
    m_t = beta1 * m + (1 - beta1) * g_t
    v_t = beta2 * v + (1 - beta2) * g_t * g_t
    param_t = param - lr_t * m_t / (np.sqrt(v_t) + epsilon)
    return param_t, m_t, v_t


# TF: python/keras/optimizer_v2/adam_test.py::AdamOptimizerTest::testBasic (float32), the step
# under tf.function: its two Variables' updates are one grouped call
def test_two_variables_grouped_follow_the_numpy_reference(grouped):
    var0_np, var1_np = np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)
    grads0_np, grads1_np = np.array([0.1, 0.1], np.float32), np.array([0.01, 0.01], np.float32)
    var0, var1 = tf.Variable(var0_np), tf.Variable(var1_np)
    grads0, grads1 = tf.constant(grads0_np), tf.constant(grads1_np)
    opt = tf.optimizers.Adam()
    step = tf.function(lambda: opt.apply_gradients(zip([grads0, grads1], [var0, var1])))
    np.testing.assert_allclose(var0.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(var1.numpy(), [3.0, 4.0])
    m0 = v0 = m1 = v1 = 0.0
    for t in range(3):
        step()
        var0_np, m0, v0 = _adam_update_numpy(var0_np, grads0_np, t, m0, v0)
        var1_np, m1, v1 = _adam_update_numpy(var1_np, grads1_np, t, m1, v1)
        np.testing.assert_allclose(var0.numpy(), var0_np, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(var1.numpy(), var1_np, rtol=1e-6, atol=1e-6)
    names = _kernel_names(step)
    assert not grouped or "grouped_update[2 x _apply_adam_in_place]" in names


# Keras: keras/src/optimizers/adam_test.py::AdamTest::test_correctness_with_golden, with two
# Variables so that the traced step groups them
def test_amsgrad_golden_values_grouped(grouped):
    opt = tf.optimizers.Adam(amsgrad=True)
    x = tf.Variable(np.ones([10], np.float32))
    y = tf.Variable(np.ones([2, 5], np.float32))
    grads = np.arange(0.1, 1.1, 0.1).astype(np.float32)
    first_grads = np.full((10,), 0.01, np.float32)
    golden = np.tile([[0.999], [0.9982], [0.9974], [0.9965], [0.9955]], (1, 10))
    step = tf.function(lambda g: opt.apply_gradients([(g, x), (tf.reshape(g, [2, 5]), y)]))
    step(tf.constant(first_grads))
    for i in range(5):
        np.testing.assert_allclose(x.numpy(), golden[i], rtol=5e-4, atol=5e-4)
        np.testing.assert_allclose(y.numpy().reshape(-1), golden[i], rtol=5e-4, atol=5e-4)
        step(tf.constant(grads))
    names = _kernel_names(step, tf.constant(grads))
    assert not grouped or "grouped_update[2 x _apply_adam_amsgrad_in_place]" in names


_OPTIMIZERS = {  # name -> (make, the in-place kernel the grouped call runs)
    "adam": (lambda: tf.optimizers.Adam(0.05), "_apply_adam_in_place"),
    "adam_amsgrad": (lambda: tf.optimizers.Adam(0.05, amsgrad=True),
                     "_apply_adam_amsgrad_in_place"),
    "adamax": (lambda: tf.optimizers.Adamax(0.05), "_apply_adamax_in_place"),
    "nadam": (lambda: tf.optimizers.Nadam(0.05), "_apply_nadam_in_place"),
    "adagrad": (lambda: tf.optimizers.Adagrad(0.1), "_apply_adagrad_in_place"),
}


def _problem(name="adam"):
    """An MLP's kinds of Variables, scalar to matrix, each with its own optimizer state."""
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (4, 1), (1,), ()]
    variables = [tf.Variable(rng.normal(size=s).astype(np.float32)) for s in shapes]
    grads = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in shapes]
    optimizer = _OPTIMIZERS[name][0]()

    def step():
        optimizer.apply_gradients(zip(grads, variables))
    return variables, optimizer, step


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_grouped_step_gives_the_eager_steps_bits(name, grouped):
    # TF: optimizer tests compare a tf.function step with eager steps the same way
    eager_vars, eager_opt, eager_step = _problem(name)
    traced_vars, traced_opt, step = _problem(name)
    traced_step = tf.function(step)
    for k in range(4):
        eager_step()
        (step if k == 2 else traced_step)()  # an eager step on the grouped arrays' views too
        for got, want in zip(traced_vars + traced_opt.variables,
                             eager_vars + eager_opt.variables):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    kernel = _OPTIMIZERS[name][1]
    assert not grouped or f"grouped_update[5 x {kernel}]" in _kernel_names(traced_step)


def test_large_variables_are_left_to_their_in_place_updates(monkeypatch, grouped):
    monkeypatch.setattr(memory_plan, "MIN_BUFFER_BYTES", 16)  # small: (1,) and () float32
    _, _, step = _problem()
    traced = tf.function(step)
    traced()
    source = traced.get_concrete_function()._run.source
    names = _kernel_names(traced)
    assert not grouped or ("grouped_update[2 x _apply_adam_in_place]" in names
                           and source.count("_owned(") == 3)  # the other three in place


# --- the grouping itself, on graphs written by hand ---------------------------------------------
def _adam_graph(between=None, returned=False):
    """Two ApplyAdam updates of (2,) float32 Variables 0-2 and 3-5 sharing lr and iterations,
    each followed by its three assigns; ``between`` is put between the two updates."""
    graph = Graph("step")
    f32 = np.dtype(np.float32)
    lr, iterations = graph.new_value((), f32), graph.new_value((), np.dtype(np.int64))
    graph.inputs = [lr, iterations]
    adam = lookup_primitive("ApplyAdam")
    for first in (0, 3):
        reads = [graph.new_value((2,), f32) for _ in range(3)]
        grad = graph.new_value((2,), f32)
        graph.inputs.append(grad)
        graph.eqns += [Eqn(READ, {"variable": first + i}, (), (r,)) for i, r in enumerate(reads)]
        outs = [graph.new_value((2,), f32) for _ in range(3)]
        graph.eqns.append(Eqn(adam, dict(_ATTRS), reads + [grad, lr, iterations], outs))
        graph.eqns += [Eqn(ASSIGN, {"variable": first + i}, (o,), ()) for i, o in enumerate(outs)]
        if first == 0 and between is not None:
            graph.eqns.append(between(graph))
        if returned:
            graph.outputs.append(outs[0])
    return graph


def _ops(graph):
    return [e.op.name for e in graph.eqns]


def test_two_updates_become_one_equation_before_all_their_assigns():
    graph = _adam_graph()
    grouped = group_updates(graph)
    assert _ops(grouped) == ["ReadVariableOp"] * 6 + ["GroupedApplyAdam"] + \
        ["AssignVariableOp"] * 6
    assert [e.attrs["variable"] for e in grouped.eqns[7:]] == [0, 1, 2, 3, 4, 5]
    assert len(graph.eqns) == 14  # the graph given is left as it was


@pytest.mark.parametrize("kind, variable, kept", [("read", 0, True), ("read", 2, True),
                                                   ("read", 4, False), ("assign", 1, True)])
def test_a_read_or_assign_of_an_updated_variable_keeps_the_updates_apart(kind, variable, kept):
    # reading Variable 0 (or 2) after its assign must see the new value, and Variable 1's two
    # assigns must keep their order: the first update stays put
    def between(graph):
        value = graph.new_value((2,), np.float32)
        if kind == "read":
            return Eqn(READ, {"variable": variable}, (), (value,))
        graph.inputs.append(value)
        return Eqn(ASSIGN, {"variable": variable}, (value,), ())
    grouped = group_updates(_adam_graph(between=between))
    assert ("GroupedApplyAdam" not in _ops(grouped)) == kept


def test_an_update_whose_result_is_read_elsewhere_is_not_moved():
    assert "GroupedApplyAdam" not in _ops(group_updates(_adam_graph(returned=True)))


def test_an_assign_is_not_moved_past_another_groups_assign_of_its_variable():
    # updates A1, B1, B2, A2 (two groups: beta_1 differs); A1 and B1 both assign Variable 0,
    # B1 last: grouping A1 with A2 would put A1's assign after B1's
    graph = Graph("step")
    f32 = np.dtype(np.float32)
    shared = [graph.new_value((), f32), graph.new_value((), np.dtype(np.int64))]
    graph.inputs = list(shared)
    for beta_1, variables in ((0.9, (0, 1, 2)), (0.5, (0, 3, 4)), (0.5, (5, 6, 7)),
                              (0.9, (8, 9, 10))):
        ins = [graph.new_value((2,), f32) for _ in range(4)]
        graph.inputs += ins
        outs = [graph.new_value((2,), f32) for _ in range(3)]
        graph.eqns.append(Eqn(lookup_primitive("ApplyAdam"), dict(_ATTRS, beta_1=beta_1),
                              ins + shared, outs))
        graph.eqns += [Eqn(ASSIGN, {"variable": v}, (o,), ()) for v, o in zip(variables, outs)]
    grouped = group_updates(graph)
    assert _ops(grouped)[:4] == ["ApplyAdam"] + ["AssignVariableOp"] * 3  # A1 stays first
    assert _ops(grouped).count("GroupedApplyAdam") == 1  # B1 and B2
    assigns_of_0 = [e for e in grouped.eqns if e.op is ASSIGN and e.attrs["variable"] == 0]
    assert assigns_of_0[-1].inputs[0] == graph.eqns[4].outputs[0]  # B1's result is the last


def test_grouped_kernel_gives_each_updates_bits():
    rng = np.random.default_rng(2)
    shapes = [(3, 2), (5,), ()]
    operands = [[rng.normal(size=s).astype(np.float32) for _ in range(4)] for s in shapes]
    for ops in operands:
        ops[2] = np.abs(ops[2])  # v
    lr, iterations = np.array(0.01, np.float32), np.array(4, np.int64)
    forward = lookup_primitive("ApplyAdam").forward
    graph = Graph("step")
    shared = [graph.new_value((), np.float32), graph.new_value((), np.int64)]
    eqns = []
    for s in shapes:
        ins = [graph.new_value(s, np.float32) for _ in range(4)] + shared
        eqns.append(Eqn(lookup_primitive("ApplyAdam"), dict(_ATTRS), ins,
                        [graph.new_value(s, np.float32) for _ in range(3)]))
    kernel = _grouped_eqn(eqns).op.forward
    given = [a.copy() for ops in operands for a in ops]
    got = kernel(*given, lr, iterations)
    want = [r for ops in operands for r in forward(*ops, lr, iterations, **_ATTRS)]
    for g, o in zip(given, [a for ops in operands for a in ops]):
        np.testing.assert_array_equal(g, o)  # its in-place kernel writes its own copies only
    assert len(got) == len(want) == 9
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
