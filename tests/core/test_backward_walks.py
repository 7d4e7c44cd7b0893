"""The tape's backward pass and graph_vjp's walk share core/backward.py's steps: one
"No gradient defined" error, naming the op, whichever walk (or forward mode) meets it."""
import pathlib

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.dispatch import apply
from tapeflow.core.registry import def_primitive
from tapeflow.tracing.graph_vjp import graph_vjp

def _double(x):
    return x * 2.0


_MESSAGE_OP = "TestOpWithoutGradient"
_MESSAGE = ("No gradient defined for operation 'TestOpWithoutGradient' "
            r"\(op type: TestOpWithoutGradient\)\. Register one with "
            r"tapeflow\.RegisterGradient\('TestOpWithoutGradient'\)\.")
X = tf.constant([1.0, 2.0], tf.float64)


def _uses_the_op(x):
    # An op nobody registers a gradient for, registered inside the test (conftest's
    # scratch_registry drops it after): one made at import would outlive every test.
    op = def_primitive(_MESSAGE_OP, _double, no_gradient="the message's subject")
    return tf.reduce_sum(apply(op, (x * 3.0,)))


def test_the_message_is_written_once():
    src = pathlib.Path(tf.__file__).parent
    found = [p.name for p in src.rglob("*.py") if 'f"No gradient defined' in p.read_text()]
    assert found == ["backward.py"]


def test_the_tape_walk_names_the_op():
    # TF's message: python/ops/gradients_util.py (_GradientsHelper) "No gradient defined for
    # operation '%s' (op type: %s)"
    with tf.GradientTape() as tape:
        tape.watch(X)
        y = _uses_the_op(X)
    with pytest.raises(LookupError, match=_MESSAGE):
        tape.gradient(y, X)


def test_the_graph_walk_names_the_op():
    graph = tf.function(_uses_the_op).get_concrete_function(X).optimized_graph
    with pytest.raises(LookupError, match=_MESSAGE):
        graph_vjp(graph, [X], [tf.constant(1.0, tf.float64)])


def test_a_cond_in_a_function_names_the_op():
    f = tf.function(lambda x, p: tf.cond(p, lambda: _uses_the_op(x), lambda: tf.reduce_sum(x)))
    with tf.GradientTape() as tape:
        tape.watch(X)
        y = f(X, tf.constant(True))
    with pytest.raises(LookupError, match=_MESSAGE):
        tape.gradient(y, X)


def test_forward_mode_names_the_op():
    with tf.autodiff.ForwardAccumulator(X, tf.ones_like(X)):
        with pytest.raises(LookupError, match="No gradient defined for operation "
                                              "'TestOpWithoutGradient'.*Forward mode"):
            _uses_the_op(X)


def test_both_walks_cast_back_and_unbroadcast_alike():
    """A float32 input broadcast against float64 rows: the tape's pass and graph_vjp give the
    same cotangent, summed back to (1, 2) and cast back to float32."""
    b = tf.constant([[0.5, -1.0]], tf.float32)

    def f(x, b):
        return tf.reduce_sum(tf.sin(x * tf.cast(b, tf.float64)))

    rows = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(b)
        y = f(rows, b)
    want = tape.gradient(y, b)
    graph = tf.function(f).get_concrete_function(rows, b).optimized_graph
    got = graph_vjp(graph, [rows, b], [tf.constant(1.0, tf.float64)])[1]
    assert got.dtype == want.dtype == tf.float32 and got.shape == want.shape == (1, 2)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    np.testing.assert_allclose(want.numpy()[0], np.sum(rows.numpy() * np.cos(rows.numpy() *
                                                       b.numpy().astype(np.float64)), axis=0),
                               rtol=1e-6)
