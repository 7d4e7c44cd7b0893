"""``apply``: the one path by which an op runs.

Eagerly, an op's forward runs on its inputs' arrays; when anything is
watching (a tape, a forward accumulator, custom_gradient's variable watcher) the op is
also recorded (``graph.record``); while a function is traced, the op becomes an equation of
the graph instead (``tracing.tracer.Tracer.apply``): its forward then runs on the trace's
example arrays (the first call's arguments, or zeros for a TensorSpec) only to learn the
output's shape and dtype, and an effect op (``tf.print``, an assertion) does not run at all.
``primitive`` turns array code into such an op.
"""
import functools

from .context import PER_THREAD
from .graph import record
from .registry import def_primitive, define_primitive
from .tensor import Tensor, convert_to_tensor

__all__ = ["apply", "apply_unary", "apply_binary", "primitive"]


def apply(op, inputs, attrs=None):
    """Run ``op`` on Tensors ``inputs`` (a tuple); one Tensor, or a tuple for several outputs."""
    ctx = PER_THREAD.context
    if ctx.active and ctx.trace is not None:
        results = ctx.trace.apply(op, inputs, attrs)
    else:
        if attrs:
            out = op.forward(*[t._value for t in inputs], **attrs)
        else:
            out = op.forward(*[t._value for t in inputs])
        if op.num_outputs == 1:
            result = Tensor(out)
            if ctx.active:
                record(op, inputs, (result,), attrs, ctx)
            return result
        results = tuple([Tensor(o) for o in out])
    if results and ctx.active and (ctx.tapes or ctx.watchers or ctx.accumulators):
        record(op, inputs, results, attrs, ctx)
    return results[0] if op.num_outputs == 1 else results


# The two entries below are ``apply`` for one-output ops of one and two inputs without
# attributes, the hottest calls of eager code (Tensor's operators): the same three cases,
# without building argument tuples and lists.  Recording is still ``record``'s alone.
def apply_unary(op, x):
    ctx = PER_THREAD.context
    if ctx.active and ctx.trace is not None:
        return apply(op, (x,))
    out = Tensor(op.forward(x._value))
    if ctx.active:
        record(op, (x,), (out,), None, ctx)
    return out


def apply_binary(op, x, y):
    ctx = PER_THREAD.context
    if ctx.active and ctx.trace is not None:
        return apply(op, (x, y))
    out = Tensor(op.forward(x._value, y._value))
    if ctx.active:
        record(op, (x, y), (out,), None, ctx)
    return out


def primitive(name, num_outputs=1, *, grad=None, not_differentiable=False,
              saves=("inputs", "outputs"), vectorized=False):
    """Turn array code into a tapeflow op named ``name``.

    The decorated function receives arrays (numpy, or CuPy on a GPU) for its
    positional arguments and returns an array (or ``num_outputs`` arrays);
    keyword arguments are passed through as attributes (``op.get_attr``).
    Its gradient comes with it (``grad=``, with ``saves=`` and ``vectorized=`` as
    ``RegisterGradient`` takes them, or ``not_differentiable=True``), or later from
    ``tapeflow.RegisterGradient(name)``; until then a gradient through it raises
    LookupError::

        def _cube_grad(op, dy):
            (x,) = op.inputs
            return dy * 3.0 * x * x

        @tf.primitive("Cube", grad=_cube_grad)
        def cube(x):
            return x ** 3
    """
    def decorate(fn):
        if grad is not None:
            op = def_primitive(name, fn, num_outputs=num_outputs, grad=grad, saves=saves,
                               vectorized=vectorized)
        elif not_differentiable:
            op = def_primitive(name, fn, num_outputs=num_outputs, not_differentiable=True)
        else:  # TensorFlow's way: RegisterGradient(name) may follow
            op = define_primitive(name, fn, num_outputs=num_outputs)

        @functools.wraps(fn)
        def call(*args, **attrs):
            tensors = tuple(convert_to_tensor(a) for a in args)
            return apply(op, tensors, attrs or None)

        call.op = op
        return call
    return decorate


