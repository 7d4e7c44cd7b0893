"""Optimizers' in-place kernels (``core/in_place.py``): a compiled step writes an update into
its Variables' own arrays where no one else holds them, with the forward's bits.

Adam and SGD's are tested with the memory plan (tests/tracing/test_memory_plan.py); these are
the other optimizers' kernels.  Each must give its op's forward bit for bit, so a traced step
follows the eager steps exactly, and a traced step must take the in-place path (its source
shows the ``_owned`` check), or a kernel that silently stops applying would pass.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.in_place import in_place_kernel
from tapeflow.core.registry import lookup_primitive
from tapeflow.tracing import memory_plan

_ATTRS = {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}


def _operands(rng, op_name):
    """(operands, attrs) of one update op on (4, 3) float32 arrays, slots as after a few steps."""
    var, m, v, v_hat, grad = (rng.normal(size=(4, 3)).astype(np.float32) for _ in range(5))
    v, v_hat = np.abs(v), np.abs(v_hat)
    lr, iterations = np.array(0.01, np.float32), np.array(4, np.int64)
    if op_name == "ApplyAdagrad":
        return (var, v, grad, lr), {"epsilon": 1e-7}
    if op_name == "ApplyAdaMax":
        return (var, m, v, grad, lr, iterations), _ATTRS
    if op_name == "ApplyNadam":
        return (var, m, v, grad, lr, np.array(0.7, np.float32), iterations), _ATTRS
    return (var, m, v, v_hat, grad, lr, iterations), _ATTRS  # ApplyAdamWithAmsgrad


@pytest.mark.parametrize("op_name", ["ApplyAdagrad", "ApplyAdaMax", "ApplyNadam",
                                     "ApplyAdamWithAmsgrad"])
def test_in_place_kernel_gives_the_forwards_bits(op_name):
    operands, attrs = _operands(np.random.default_rng(3), op_name)
    kernel, targets = in_place_kernel(op_name)
    want = lookup_primitive(op_name).forward(*operands, **attrs)
    written = tuple(a.copy() for a in operands[:targets])
    got = kernel(*written, *operands[targets:], **attrs)
    assert len(got) == targets and all(g is w for g, w in zip(got, written))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


_OPTIMIZERS = {
    "adagrad": lambda: tf.optimizers.Adagrad(0.1),
    "adamax": lambda: tf.optimizers.Adamax(0.05),
    "nadam": lambda: tf.optimizers.Nadam(0.05),
    "adam_amsgrad": lambda: tf.optimizers.Adam(0.05, amsgrad=True),
}


def _problem(make_optimizer):
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.normal(size=(3, 2)).astype(np.float32))
    x = tf.constant(rng.normal(size=(8, 3)).astype(np.float32))
    y = tf.constant(rng.normal(size=(8, 2)).astype(np.float32))
    optimizer = make_optimizer()

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ w - y) ** 2)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    return w, step


@pytest.mark.parametrize("name", sorted(_OPTIMIZERS))
def test_traced_step_updates_in_place_and_follows_the_eager_steps(name, monkeypatch, request):
    # TF: optimizer tests compare a tf.function step with eager steps the same way
    monkeypatch.setattr(memory_plan, "MIN_BUFFER_BYTES", 0)  # these small arrays too
    eager_w, eager_step = _problem(_OPTIMIZERS[name])
    traced_w, step = _problem(_OPTIMIZERS[name])
    traced_step = tf.function(step)
    for _ in range(3):
        eager_step()
        traced_step()
        np.testing.assert_array_equal(traced_w.numpy(), eager_w.numpy())
    if request.config.getoption("--device") != "strict":  # in-place kernels are numpy's
        assert "_owned(" in traced_step.get_concrete_function()._run.source
