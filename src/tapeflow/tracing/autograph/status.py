"""Whether the trace running now converts what it calls (TensorFlow's
``ag_ctx.control_status_ctx()``): a ``tf.function`` turns it on while it traces, one made with
``autograph=False`` off.  Keras layers read it to convert their ``call`` (``layer_call``)."""
import contextlib
import threading

__all__ = ["converting", "is_converting"]


class _Status(threading.local):
    enabled = False


_STATUS = _Status()


@contextlib.contextmanager
def converting(enabled):
    """Within the block, AutoGraph converts the code a trace calls if ``enabled``."""
    before = _STATUS.enabled
    _STATUS.enabled = enabled
    try:
        yield
    finally:
        _STATUS.enabled = before


def is_converting():
    return _STATUS.enabled
