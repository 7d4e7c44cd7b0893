"""Numerical gradient checks for every differentiable case in ``op_cases.CASES``.

* first order: tape.gradient(reduce_sum(out * w), inputs) against central differences;
* second order (smooth cases): Hessian-vector products from nested tapes against
  central differences of the first-order gradient;
* jacobians: tape.jacobian (one vectorized pass, and chunk_size=2) against one
  tape.gradient per output element; batch_jacobian against the diagonal blocks.

All in float64, with shapes and parameters drawn by hypothesis and values from a
drawn numpy seed in each case's domain.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tapeflow as tf

from .gradcheck import check_batch_jacobian, check_grads, check_jacobian
from .op_cases import BATCH_CASES, CASES

SEEDS = st.integers(0, 2 ** 32 - 1)
_COMMON = dict(deadline=None, database=None, print_blob=True,
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# On the strict device the battery checks that every rule runs where its data lives (no host
# reads); the numbers are the numpy run's to check, with all its examples: fewer here.
_STRICT = os.environ.get("TAPEFLOW_TESTS_ON_STRICT_DEVICE") == "1"
FEW = settings(max_examples=6 if _STRICT else 15, **_COMMON)
FEWER = settings(max_examples=4 if _STRICT else 8, **_COMMON)

SMOOTH = [c for c in CASES if c.smooth]


def _ids(c):
    return c.name


@pytest.mark.parametrize("case", CASES, ids=_ids)
@FEW
@given(data=st.data(), seed=SEEDS)
def test_first_order(case, data, seed):
    fn, args = case.draw(data.draw, seed)
    check_grads(fn, args, order=1, eps=case.eps, rtol=case.rtol, atol=case.atol, seed=seed)


@pytest.mark.parametrize("case", SMOOTH, ids=_ids)
@FEW
@given(data=st.data(), seed=SEEDS)
def test_second_order(case, data, seed):
    fn, args = case.draw(data.draw, seed)
    check_grads(fn, args, order=2, eps=case.eps, rtol=case.rtol, atol=case.atol, seed=seed)


@pytest.mark.parametrize("case", CASES, ids=_ids)
@FEWER
@given(data=st.data(), seed=SEEDS)
def test_jacobian_matches_gradient_loop(case, data, seed):
    fn, args = case.draw(data.draw, seed)
    check_jacobian(fn, args, chunk_sizes=(None, 2))


@pytest.mark.parametrize("bcase", BATCH_CASES, ids=lambda c: c.name)
@FEWER
@given(batch=st.integers(1, 4), seed=SEEDS)
def test_batch_jacobian_is_jacobian_diagonal(bcase, batch, seed):
    (x,) = bcase.domain(np.random.default_rng(seed), [(batch,) + bcase.example_shape])
    check_batch_jacobian(bcase.fn, x, chunk_sizes=(None, 2))


# --- edge cases of the jacobian itself -------------------------------------------------------------
def test_jacobian_of_empty_target():
    """An empty target (x[1:] of a length-1 axis, an all-false mask) has an empty jacobian."""
    check_jacobian(lambda x: x[1:], [np.ones((1, 2))], chunk_sizes=(None, 2))


# --- the checker catches what it should ------------------------------------------------------------
# Rules swapped in with gradient_override_map; nothing registered here outlives its test
# (tests/conftest.py's scratch_registry).


def _sin_with(grad_name):
    def fn(x):
        with tf.gradient_override_map({"Sin": grad_name}):
            return tf.math.sin(x)
    return fn


def test_check_grads_catches_a_wrong_first_order_rule():
    @tf.RegisterGradient("SinGradOffByALittle", saves="inputs", vectorized=True)
    def _bad(op, g):
        return g * tf.math.cos(op.inputs[0]) * 1.0001

    x = np.linspace(-1, 1, 5)
    with pytest.raises(AssertionError, match="first-order"):
        check_grads(_sin_with("SinGradOffByALittle"), [x], order=1)


def test_check_grads_catches_a_rule_that_is_not_differentiable_itself():
    @tf.RegisterGradient("SinGradFrozen", saves="inputs", vectorized=True)
    def _frozen(op, g):  # right values, but its own derivative in x is lost
        return g * tf.math.cos(tf.stop_gradient(op.inputs[0]))

    x = np.linspace(-1, 1, 5)
    check_grads(_sin_with("SinGradFrozen"), [x], order=1)
    with pytest.raises(AssertionError, match="second-order"):
        check_grads(_sin_with("SinGradFrozen"), [x], order=2)


def test_check_jacobian_catches_a_rule_that_mixes_jacobian_rows():
    @tf.primitive("ScratchCumsum")
    def scratch_cumsum(x):
        return x.cumsum(axis=-1)  # the array's method: numpy or CuPy data alike

    @tf.RegisterGradient("ScratchCumsum", saves=(), vectorized=True)
    def _axis0(op, g):  # right for a 1-D cotangent, wrong once jacobian rows lead
        return tf.cumsum(g, axis=0, reverse=True)

    x = np.linspace(-1, 1, 4)
    check_grads(scratch_cumsum, [x], order=1)
    with pytest.raises(AssertionError, match="jacobian"):
        check_jacobian(scratch_cumsum, [x])
