"""AutoGraph: inside ``tf.function``, Python ``if``/``while``/``for`` on tensors become
``tf.cond``/``tf.while_loop`` by a source-to-source rewrite of the function.

conversion.py (source -> function, caching, what is left alone), lowering.py
(``return``/``break``/``continue`` to flags), transformer.py (statements to calls),
analysis.py (which variables a statement carries), operators.py (the calls, at run time),
status.py (whether the trace running now converts).
"""
from . import experimental
from .conversion import convert, do_not_convert, to_code

__all__ = ["experimental", "to_graph", "to_code", "do_not_convert", "convert"]


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """``entity`` converted: the Python function ``tf.function`` traces (TensorFlow's name)."""
    return convert(entity)
