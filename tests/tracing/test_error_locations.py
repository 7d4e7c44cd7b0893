"""Errors raised while a traced graph runs name the user's line that made the failing op
(issue 18, item 8): each equation keeps its source location, as a jaxpr equation carries
``source_info``, and the compiled function's source is registered with ``linecache``."""
import linecache
import traceback

import pytest

import tapeflow as tf


def _notes(error):
    return getattr(error, "__notes__", [])


def _index_error_function():
    @tf.function
    def f(x, i):
        y = x * 2.0
        z = tf.gather(y, i)  # the line the note names
        return z + 1.0
    return f, f.python_function.__code__.co_firstlineno + 3


def test_a_compiled_graph_names_the_users_line():
    f, line = _index_error_function()
    f(tf.constant([1.0, 2.0]), tf.constant(0))
    with pytest.raises(ValueError, match=r"indices = 5 is not in \[0, 2\)") as caught:
        f(tf.constant([1.0, 2.0]), tf.constant(5))
    assert _notes(caught.value) == [
        f"Raised by the traced op GatherV2, made at {__file__}:{line} in f."]


def test_the_generated_lines_show_in_the_traceback():
    f, _ = _index_error_function()
    f(tf.constant([1.0, 2.0]), tf.constant(0))
    with pytest.raises(ValueError) as caught:
        f(tf.constant([1.0, 2.0]), tf.constant(5))
    text = "".join(traceback.format_exception(caught.value))
    assert "<tapeflow graph" in text and "= k" in text  # the compiled line, from linecache


def test_a_graph_run_op_by_op_under_a_tape_names_the_line_too():
    f, line = _index_error_function()
    x = tf.constant([1.0, 2.0])
    f(x, tf.constant(0))
    with pytest.raises(ValueError) as caught:
        with tf.GradientTape() as tape:
            tape.watch(x)
            f(x, tf.constant(7))
    assert _notes(caught.value) == [
        f"Raised by the traced op GatherV2, made at {__file__}:{line} in f."]


def test_a_branch_names_its_line_and_the_cond_s():
    @tf.function
    def g(x, i):
        return tf.cond(x[0] > 0, lambda: tf.gather(x, i), lambda: x[0])

    g(tf.constant([1.0, 2.0]), tf.constant(1))
    with pytest.raises(ValueError) as caught:
        g(tf.constant([1.0, 2.0]), tf.constant(4))
    notes = _notes(caught.value)
    assert [n.split(",")[0] for n in notes] == ["Raised by the traced op GatherV2",
                                                "Raised by the traced op If"]
    assert all(f"{__file__}:" in n for n in notes)


def test_the_linecache_entry_goes_with_the_compiled_function():
    import gc
    f, _ = _index_error_function()
    concrete = f.get_concrete_function(tf.constant([1.0, 2.0]), tf.constant(0))
    names = [name for name in linecache.cache if name.startswith("<tapeflow graph")]
    assert names
    del f, concrete
    gc.collect()
    assert len([n for n in linecache.cache if n.startswith("<tapeflow graph")]) < len(names)
