"""Keras's autocast of a mixed-precision layer's variables: float32 variables read in ``call``
as the layer's compute dtype (float16 for ``mixed_float16``).

Keras 3 does this with a scope that variable reads consult; tapeflow's ops read a Variable's
array directly, so instead, for the length of one ``call``, each trainable float variable
that the layer -- or a sub-layer of the same compute dtype (an RNN's cell, whose ``call`` the
RNN runs itself) -- holds as an attribute (``self.kernel``) is replaced by its cast.  The cast
is an op on the variable: tapes and traces see the read, and the gradient comes back in the
variable's dtype.  Non-trainable variables (BatchNormalization's moving statistics) stay
variables, since ``call`` assigns them; variables kept elsewhere (in a list) are not cast.
"""
import contextlib

from ..core.tensor import Variable
from ..ops.shape import cast
from ..dtypes import is_float_dtype


@contextlib.contextmanager
def variables_in_compute_dtype(layer):
    """While the block runs, the float variable attributes of ``layer`` and its sub-layers of
    the same compute dtype are their casts to it; the variables are back when it ends, error
    or not."""
    compute = layer._np_dtype
    swapped = [(owner, name, value) for owner in _same_compute_layers(layer, compute)
               for name, value in vars(owner).items()
               if isinstance(value, Variable) and value.trainable
               and is_float_dtype(value._value.dtype) and value._value.dtype != compute]
    for owner, name, variable in swapped:
        object.__setattr__(owner, name, cast(variable, compute))
    try:
        yield
    finally:
        for owner, name, variable in swapped:
            object.__setattr__(owner, name, variable)


def _same_compute_layers(layer, compute):
    """``layer`` and, depth first, its sub-layers that cast their variables to ``compute``
    (a float32 sub-layer, such as a float32 output head, keeps its own)."""
    found, stack, seen = [], [layer], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        stack.extend(sub for sub in current._tracked_layers
                     if sub._casts_variables and sub._np_dtype == compute)
    return found
