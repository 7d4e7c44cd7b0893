"""``tf.print`` inside ``tf.function``: an op that prints at every call, in program order.

Ported from TensorFlow's ``python/kernel_tests/logging_ops_test.py`` (PrintV2Test), run inside
traced functions, where tapeflow used to refuse tf.print with a TraceError.
"""
import io

import numpy as np
import pytest

import tapeflow as tf


def _calls(fn, *args, stream):
    stream.seek(0)
    stream.truncate()
    out = fn(*args)
    return out, stream.getvalue()


@pytest.fixture
def stream():
    return io.StringIO()


def test_prints_at_every_call_not_at_trace(stream):
    """TF: logging_ops_test.py::testPrintInDefunWithoutExplicitEvalOfPrint."""
    @tf.function
    def f():
        tensor = tf.range(10)
        tf.print(tensor, output_stream=stream)
        return tensor

    _, first = _calls(f, stream=stream)
    _, second = _calls(f, stream=stream)
    assert first == "[0 1 2 ... 7 8 9]\n"
    assert second == "[0 1 2 ... 7 8 9]\n"  # not only on the first call
    assert f.experimental_get_tracing_count() == 1
    f.get_concrete_function()
    assert stream.getvalue() == "[0 1 2 ... 7 8 9]\n"  # tracing prints nothing


def test_prints_are_ordered(stream):
    """TF: logging_ops_test.py::testPrintsOrderedInDefun."""
    @tf.function
    def prints():
        tf.print("A", output_stream=stream)
        tf.print("B", output_stream=stream)
        tf.print("C", output_stream=stream)

    assert _calls(prints, stream=stream)[1] == "A\nB\nC\n"
    assert _calls(prints, stream=stream)[1] == "A\nB\nC\n"


def test_complex_structure_in_a_trace(stream):
    """TF: logging_ops_test.py::testPrintComplexTensorStruct (dict keys print sorted)."""
    @tf.function
    def f(tensor):
        small = tf.constant([0.3, 12.4, -16.1])
        big = tf.multiply(tensor, 10)
        tf.print("first:", tensor, "middle:", {"small": small, "Big": big}, 10,
                 [tensor * 2, tensor], output_stream=stream)

    expected = ("first: [0 1 2 ... 7 8 9] middle: {'Big': [0 10 20 ... 70 80 90], "
                "'small': [0.3 12.4 -16.1]} 10 [[0 2 4 ... 14 16 18], [0 1 2 ... 7 8 9]]\n")
    assert _calls(f, tf.range(10), stream=stream)[1] == expected
    assert _calls(f, tf.range(10) + 1, stream=stream)[1].startswith("first: [1 2 3 ... 8 9 10]")


def test_python_values_sep_and_end_are_kept(stream):
    """TF: logging_ops_test.py::testPrintNoTensors, testPrintTwoTensorsDifferentSep,
    testPrintStringScalarDifferentEnd, testPrintPlaceholderGeneration, inside a trace."""
    @tf.function
    def f(t):
        tf.print(23, [23, 5], {"6": 12}, output_stream=stream)
        tf.print(t, t * 10, sep="<separator>", output_stream=stream)
        tf.print("{}6", {"{}": t * 10}, end="<customend>", output_stream=stream)

    printed = _calls(f, tf.range(10), stream=stream)[1]
    assert printed == ("23 [23, 5] {'6': 12}\n"
                       "[0 1 2 ... 7 8 9]<separator>[0 10 20 ... 70 80 90]\n"
                       "{}6 {'{}': [0 10 20 ... 70 80 90]}<customend>")


def test_sees_the_variable_after_an_assign(stream):
    """TF: logging_ops_test.py::testPrintTwoVariablesInStructWithAssignAdd, in a trace: the
    print comes after the assignment in program order, so it shows the new value."""
    var_one = tf.Variable(2.14)
    var_two = tf.Variable(tf.range(10))

    @tf.function
    def f():
        var_one.assign_add(1.0)
        tf.print(var_one, {"second": var_two}, output_stream=stream)

    assert _calls(f, stream=stream)[1] == "3.14 {'second': [0 1 2 ... 7 8 9]}\n"
    # float32: 3.14 + 1 is 4.14000034, and TensorFlow prints the 9 digits that read back
    assert _calls(f, stream=stream)[1] == "4.14000034 {'second': [0 1 2 ... 7 8 9]}\n"


def test_default_stream_is_read_at_call_time(capsys):
    """TF: logging_ops_test.py::testPrintOneTensorStdout and the stderr default."""
    @tf.function
    def f(x):
        tf.print("err", x)
        tf.print("out", x, output_stream=__import__("sys").stdout)
        return x

    f(tf.constant(1))
    captured = capsys.readouterr()
    assert captured.err == "err 1\n" and captured.out == "out 1\n"
    f(tf.constant(2))
    captured = capsys.readouterr()
    assert captured.err == "err 2\n" and captured.out == "out 2\n"


def test_to_a_file_at_every_call(tmp_path):
    """TF: logging_ops_test.py::testPrintTensorsToFile, from a traced function."""
    path = tmp_path / "printed.txt"

    @tf.function
    def f(t):
        tf.print(t, output_stream="file://" + str(path))

    f(tf.range(0, 10))
    f(tf.range(11, 20))
    assert path.read_text() == "[0 1 2 ... 7 8 9]\n[11 12 13 ... 17 18 19]\n"


def test_unknown_stream_is_refused_while_tracing():
    """TF: logging_ops_test.py::testInvalidOutputStreamRaisesError."""
    @tf.function
    def f(t):
        tf.print(t, output_stream="unknown")

    with pytest.raises(ValueError, match="output_stream 'unknown'"):
        f(tf.range(3))


def test_only_the_taken_branch_prints_once(stream):
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (tf.print("pos", x, output_stream=stream), x)[1],
                       lambda: (tf.print("neg", x, output_stream=stream), -x)[1])

    assert _calls(f, tf.constant(2.0), stream=stream)[1] == "pos 2\n"
    assert _calls(f, tf.constant(-3.0), stream=stream)[1] == "neg -3\n"


def test_loop_body_prints_each_trip_and_gradients_do_not_repeat_it(stream):
    @tf.function
    def f(x):
        def body(i, y):
            tf.print("trip", i, output_stream=stream)
            return i + 1, y * x
        return tf.while_loop(lambda i, y: i < 3, body, (tf.constant(0), tf.constant(1.0)))[1]

    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y, printed = _calls(f, x, stream=stream)
    assert printed == "trip 0\ntrip 1\ntrip 2\n"
    assert float(y) == 8.0
    assert float(tape.gradient(y, x)) == pytest.approx(12.0)  # d(x^3)/dx at 2
    assert stream.getvalue() == printed  # the backward pass printed nothing


def test_gradient_is_unchanged_by_a_print():
    """TF: logging_ops_test.py::PrintGradientTest::testPrintGradient, through a traced print."""
    inp = tf.constant(np.full((100, 32), 2.0, np.float32))
    w = tf.Variable(np.full((10, 100), 4.0, np.float32))

    @tf.function
    def plain():
        return tf.matmul(w, inp)

    @tf.function
    def printed():
        wx = tf.matmul(w, inp)
        tf.print(w, w, w, output_stream=io.StringIO())
        return wx

    grads = []
    for fn in (plain, printed):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(fn())
        grads.append(tape.gradient(y, w).numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_saved_function_prints_after_loading_and_saves_no_path(tmp_path, capsys):
    target = tmp_path / "secret.txt"
    module = tf.Module()
    module.f = tf.function(lambda x: (tf.print("x is", x), x * 2)[1],
                           input_signature=[tf.TensorSpec([2], tf.float32)])
    module.g = tf.function(lambda x: (tf.print(x, output_stream="file://" + str(target)), x)[1],
                           input_signature=[tf.TensorSpec([], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / "saved"))
    capsys.readouterr()
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    np.testing.assert_array_equal(loaded.f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    assert capsys.readouterr().err == "x is [1 2]\n"
    saved_bytes = b"".join(p.read_bytes() for p in (tmp_path / "saved").rglob("*") if p.is_file())
    assert str(target).encode() not in saved_bytes  # a file never says where to write


def test_an_unknown_stream_id_prints_to_stderr(capsys):
    from tapeflow.printing import PRINT
    PRINT.forward(np.arange(3), template=["v ", 0], summarize=3, end="\n",
                  stream="process-stream-from-elsewhere")
    assert capsys.readouterr().err == "v [0 1 2]\n"
