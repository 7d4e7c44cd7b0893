"""Keras's autocast of a mixed-precision layer's variables: float32 variables read in ``call``
as the layer's compute dtype (float16 for ``mixed_float16``).

Keras 3 does this with a scope that variable reads consult; tapeflow's ops read a Variable's
array directly, so instead, for the length of one ``call``, each float variable the layer
holds as an attribute (``self.kernel``) is replaced by its cast.  The cast is an op on the
variable: tapes and traces see the read, and the gradient comes back in the variable's dtype.
Variables a layer keeps elsewhere (in a list) are not cast.
"""
import contextlib

from ..core.tensor import Variable
from ..ops.shape import cast


@contextlib.contextmanager
def variables_in_compute_dtype(layer):
    """While the block runs, ``layer``'s float variable attributes are their casts to its
    compute dtype; the variables are back when it ends, error or not."""
    compute = layer._np_dtype
    swapped = [(name, value) for name, value in vars(layer).items()
               if isinstance(value, Variable) and value._value.dtype.kind == "f"
               and value._value.dtype != compute]
    for name, variable in swapped:
        object.__setattr__(layer, name, cast(variable, compute))
    try:
        yield
    finally:
        for name, variable in swapped:
            object.__setattr__(layer, name, variable)
