"""``tf.print``: print tensors' values the way TensorFlow does.

A tensor prints as its values only, numpy-like but in TensorFlow's format:
``[0 1 2 ... 7 8 9]`` (the first and last ``summarize`` elements of each axis),
floats in the shortest of 6 (float32) or 15 (float64) significant digits that
reads back exactly, else 9 or 17; bools as 1 and 0.  Python strings print as
they are; lists, tuples and dicts print with their tensors formatted inside.

Inside a ``tf.function`` the call is an op (``PrintV2``, an effect: TensorFlow's
stateful PrintV2 kernel): the trace keeps the text around the tensors as a
template and the tensors as operands, and the line is printed at every call of
the graph, in program order with the function's other effects, never while
tracing.  A saved graph names its stream only as ``stderr`` or ``stdout``: a
file path or stream object given in this process is remembered here by an id,
so a loaded file never chooses where to write (elsewhere it prints to stderr).
"""
import itertools
import math
import sys
import weakref

import numpy as np

from .backend import to_host
from .core.context import context
from .core.registry import def_primitive
from .core.tensor import Tensor

__all__ = ["print_v2", "format_tensor"]


def print_v2(*inputs, **kwargs):
    """Print ``inputs`` separated by ``sep`` (' ') and followed by ``end`` ('\\n').

    ``output_stream`` is ``sys.stderr`` (TensorFlow's default), ``sys.stdout``, any
    object with ``write``, a logging function such as ``logging.info`` (given the line
    without ``end``), or ``'file://path'`` to append to a file.  ``summarize`` (3; None
    also means 3) is how many elements at each end of every axis are shown; -1 shows all.
    """
    output_stream = kwargs.pop("output_stream", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    kwargs.pop("name", None)
    if kwargs:
        raise ValueError(f"tf.print: unrecognized keyword argument(s) {sorted(kwargs)}")
    summarize = 3 if summarize is None else int(summarize)
    _check_stream(output_stream)
    trace = context().trace
    if trace is not None:
        tensors = []
        template = [_format(x, summarize, top=True, slots=tensors) for x in inputs]
        attrs = {"template": _join(template, sep), "summarize": summarize, "end": end,
                 "stream": _stream_name(output_stream)}
        trace.apply(PRINT, tuple(tensors), attrs)
        return None
    text = sep.join(_format(x, summarize, top=True) for x in inputs)
    _write(output_stream, text, end)
    return None


def _check_stream(output_stream):
    if output_stream is None or hasattr(output_stream, "write") or callable(output_stream):
        return
    if not (isinstance(output_stream, str) and output_stream.startswith("file://")):
        raise ValueError(f"tf.print: output_stream {output_stream!r} is not a stream, a "
                         f"logging function or a 'file://' path")


def _write(output_stream, text, end):
    if output_stream is None:
        output_stream = sys.stderr  # read at call time, so redirection and capture work
    if isinstance(output_stream, str):
        with open(output_stream[len("file://"):], "a") as f:
            f.write(text + end)
    elif hasattr(output_stream, "write"):
        output_stream.write(text + end)
    else:
        output_stream(text)


# --- tf.print in a trace ---------------------------------------------------------------------
_STREAMS = weakref.WeakValueDictionary()   # id -> a stream object or logging function
_PATHS = {}                                # id -> 'file://...' given in this process
_ids = itertools.count()


def _stream_name(output_stream):
    """What a graph's PrintV2 records: 'stderr', 'stdout', or this process's id for the rest."""
    if output_stream is None or output_stream is sys.__stderr__ or output_stream is sys.stderr:
        return "stderr"
    if output_stream is sys.__stdout__ or output_stream is sys.stdout:
        return "stdout"
    name = f"process-stream-{next(_ids)}"
    if isinstance(output_stream, str):
        _PATHS[name] = output_stream
    else:
        try:
            _STREAMS[name] = output_stream
        except TypeError:  # a builtin function cannot be weakly referenced: keep it
            _PATHS[name] = output_stream
    return name


def _stream(name):
    if name == "stdout":
        return sys.stdout
    found = _PATHS.get(name) or _STREAMS.get(name)
    return found  # None (stderr): 'stderr', or an id from another process or a dropped stream


def _join(template, sep):
    """One flat template: strings and operand positions, adjacent strings merged."""
    flat = []
    for k, part in enumerate(template):
        if k:
            part = [sep] + part
        for piece in part:
            if isinstance(piece, str) and flat and isinstance(flat[-1], str):
                flat[-1] += piece
            else:
                flat.append(piece)
    return flat


def _print_forward(*arrays, template, summarize, end, stream):
    text = "".join(p if isinstance(p, str) else format_tensor(to_host(arrays[p]), summarize)
                   for p in template)
    _write(_stream(stream), text, end)
    return ()


PRINT = def_primitive("PrintV2", _print_forward, effect=True, not_differentiable=True)


def _format(x, summarize, top=False, slots=None):
    """``x`` as text; with ``slots`` (in a trace) a template: strings and tensor positions."""
    if slots is not None:
        return _template(x, summarize, top, slots)
    if isinstance(x, Tensor):
        return format_tensor(to_host(x._value), summarize)
    if isinstance(x, np.ndarray):
        return format_tensor(x, summarize)
    if isinstance(x, dict):
        return "{" + ", ".join(f"{_format(k, summarize)}: {_format(v, summarize)}"
                               for k, v in _sorted_items(x)) + "}"
    if isinstance(x, list):
        return "[" + ", ".join(_format(v, summarize) for v in x) + "]"
    if isinstance(x, tuple):
        inner = ", ".join(_format(v, summarize) for v in x)
        return "(" + inner + ("," if len(x) == 1 else "") + ")"
    return str(x) if top else repr(x)


def _sorted_items(d):
    # TensorFlow prints a dict through tf.nest, which orders it by key
    try:
        return sorted(d.items(), key=lambda kv: kv[0])
    except TypeError:
        return list(d.items())


def _template(x, summarize, top, slots):
    if isinstance(x, Tensor):
        slots.append(x)
        return [len(slots) - 1]
    if isinstance(x, (dict, list, tuple)):
        if isinstance(x, dict):
            items = [([_format(k, summarize)] + [": "] + _template(v, summarize, False, slots))
                     for k, v in _sorted_items(x)]
            opening, closing = "{", "}"
        else:
            items = [_template(v, summarize, False, slots) for v in x]
            opening, closing = ("[", "]") if isinstance(x, list) else \
                ("(", ",)" if len(x) == 1 else ")")
        out = [opening]
        for k, item in enumerate(items):
            out += ([", "] if k else []) + item
        return out + [closing]
    return [_format(x, summarize, top)]


def format_tensor(array, summarize=3):
    """An array as TensorFlow prints a tensor's value (``Tensor::SummarizeValue``, print_v2)."""
    array = np.asarray(array)
    if summarize < 0:
        summarize = array.size
    ends = min(summarize, array.size)
    if array.ndim == 0:
        return _element(array[()], array.dtype)
    return _dimension(array, ends, 0)


def _dimension(a, ends, depth):
    """One axis, recursively: the first and last ``ends`` entries, '...' between."""
    if a.ndim == 0:
        return _element(a[()], a.dtype)
    n = a.shape[0]
    spacing = " " if a.ndim == 1 else "\n" * (a.ndim - 1) + " " * (depth + 1)
    out = spacing.join(_dimension(a[i], ends, depth + 1) for i in range(min(ends, n)))
    if n > 2 * ends:
        out += spacing + "..."  # TensorFlow spaces it even with no head (summarize=0)
    for i in range(max(ends, n - ends), n):
        out += spacing + _dimension(a[i], ends, depth + 1)
    return "[" + out + "]"


def _element(v, dtype):
    kind = dtype.kind
    if kind == "b":
        return "1" if v else "0"
    if kind in "iu":
        return str(int(v))
    if kind == "f":
        return _float(v, dtype)
    if kind in "SU":
        return '"' + (v.decode() if isinstance(v, bytes) else str(v)) + '"'
    return str(v)


def _float(v, dtype):
    # TensorFlow's FloatToBuffer / DoubleToBuffer: the short form when it reads back exactly.
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    wide = dtype.itemsize >= 8
    short, full = (15, 17) if wide else (6, 9)
    kind = np.float64 if wide else np.float32
    text = "%.*g" % (short, float(v))
    if kind(text) != kind(v):
        text = "%.*g" % (full, float(v))
    return text
