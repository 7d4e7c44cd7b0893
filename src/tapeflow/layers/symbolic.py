"""The functional API's symbolic tensors: ``tf.keras.Input(...)`` and what layers return on it.

A ``KerasTensor`` holds a shape (None for the batch and any size not known
yet), a dtype, and its history: the layer call (``Node``) that produced it and
which of that call's outputs it is.  Calling a layer on KerasTensors (alone,
in lists, tuples or dicts, in any argument) records one ``Node`` on the layer
(``layer._inbound_nodes``) and returns KerasTensors shaped as the call's
outputs; ``models.functional.Functional`` replays the nodes on data.

Output shapes come from a trial call: the layer is called (eagerly, outside
any trace or tape, in inference mode) on zeros of the inputs' shapes, with
every unknown size set to 2, and again with 3 when there was one; a size that
differs between the two is unknown (None) in the output.  The first trial call
builds the layer, as its first call on data would.

Python's operators on a KerasTensor (``a + b``, ``x[:, :2]``, ``-x``, ``x > 0``)
and tapeflow's public functions called on one (``tf.concat``, ``tf.nn.relu``:
``core.symbolic_dispatch``) are layer calls too, of a ``TFOpLambda`` layer
(``layers.tf_op_layer``); conversions that need values (``np.asarray(x)``,
``bool(x)``, ``float(x)``) are refused with one message.  ``==`` and ``!=`` stay
identity comparisons, as in Keras 3.
"""

from .. import backend
from ..core import nest
from ..core.context import init_scope
from ..core.symbolic_dispatch import Symbolic
from ..core.tensor import Tensor, TensorShape
from ..dtypes import as_dtype, numpy_dtype

__all__ = ["KerasTensor", "Node", "holds_keras_tensor", "call_on_symbols", "input_tensor",
           "keras_tensors"]

_NOT_DATA = ("{what} is a symbolic tensor of the functional API ({tensor}): it has no values. "
             "Operators and most tf functions on it are recorded as layer calls (a + b, "
             "x[:, :2], tf.concat([a, b], -1)); wrap code that needs values, or a function "
             "that is not recorded, in a tf.keras.layers.Lambda.  Then make a model with "
             "tf.keras.Model(inputs, outputs) and call the model on data.")


# How an operator or a public function applied to a KerasTensor is recorded: as a call of a
# TFOpLambda layer, which ``layers.tf_op_layer`` installs here when it is imported (its layer
# class is built on ``layers.base``, which imports this module, so this module cannot import it).
_RECORDERS = {}


def install_recorders(call_operator, call_function):
    """Record ``x + y`` with ``call_operator(name, operands)`` and ``tf.concat([x, y], -1)`` with
    ``call_function(name, function, args, kwargs)``."""
    _RECORDERS["operator"], _RECORDERS["function"] = call_operator, call_function


def _recorded(name, operands):
    return _RECORDERS["operator"](name, operands)


def _operator(name):
    """A KerasTensor's operator: ``operator.<name>(self, *others)``, recorded as a layer call."""
    def method(self, *others):
        return _recorded(name, (self,) + others)
    method.__name__ = name
    return method


def _reflected(name):
    """The reflected operator (``2.0 - x``): ``operator.<name>(other, self)``."""
    def method(self, other):
        return _recorded(name, (other, self))
    method.__name__ = f"r{name}"
    return method


class KerasTensor(Symbolic):
    """A symbolic tensor: the shape and dtype of a layer's output, and the call that made it.
    Python's operators and tapeflow's public functions on it are recorded as layer calls
    (``layers.tf_op_layer.TFOpLambda``)."""

    def __init__(self, shape, dtype="float32", name=None):
        self._shape = TensorShape(None if d is None else int(d) for d in shape)
        self._dtype = as_dtype(dtype)
        self.name = name
        self._keras_history = None  # (layer, node index, output index), set by Node

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def node(self):
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __repr__(self):
        name = f", name={self.name}" if self.name else ""
        return f"<KerasTensor shape={tuple(self._shape)}, dtype={self._dtype.name}{name}>"

    def _refuse(self, *args, **kwargs):
        raise TypeError(_NOT_DATA.format(what="This", tensor=repr(self)))

    # Conversions would need values: one message that says what to write instead.
    __array__ = __bool__ = __float__ = __int__ = __index__ = __len__ = __iter__ = _refuse
    numpy = _refuse
    __array_ufunc__ = None  # numpy scalars and arrays defer to the reflected operators
    # == and != stay identity (as Keras 3's): KerasTensors are kept in lists and dicts
    __hash__ = object.__hash__

    __add__, __radd__ = _operator("add"), _reflected("add")
    __sub__, __rsub__ = _operator("sub"), _reflected("sub")
    __mul__, __rmul__ = _operator("mul"), _reflected("mul")
    __truediv__, __rtruediv__ = _operator("truediv"), _reflected("truediv")
    __floordiv__, __rfloordiv__ = _operator("floordiv"), _reflected("floordiv")
    __mod__, __rmod__ = _operator("mod"), _reflected("mod")
    __pow__, __rpow__ = _operator("pow"), _reflected("pow")
    __matmul__, __rmatmul__ = _operator("matmul"), _reflected("matmul")
    __and__, __rand__ = _operator("and_"), _reflected("and_")
    __or__, __ror__ = _operator("or_"), _reflected("or_")
    __xor__, __rxor__ = _operator("xor"), _reflected("xor")
    __neg__, __abs__, __invert__ = _operator("neg"), _operator("abs"), _operator("invert")
    __lt__, __le__ = _operator("lt"), _operator("le")
    __gt__, __ge__ = _operator("gt"), _operator("ge")
    __getitem__ = _operator("getitem")

    @classmethod
    def _call_function(cls, name, function, args, kwargs):
        """A public tapeflow function called on KerasTensors (``core.symbolic_dispatch``)."""
        return _RECORDERS["function"](name, function, args, kwargs)


class Node:
    """One call of ``layer`` on symbolic tensors: its arguments (KerasTensors inside any
    structure, and plain Python values) and its outputs (a structure of KerasTensors)."""

    def __init__(self, layer, args=(), kwargs=None, outputs=()):
        self.layer = layer
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.outputs = outputs
        self.input_tensors = keras_tensors((self.args, self.kwargs))
        self.output_tensors = nest.flatten(outputs)
        nodes = layer.__dict__.get("_inbound_nodes")
        if nodes is None:  # set past Layer.__setattr__: nodes are not tracked state
            nodes = []
            object.__setattr__(layer, "_inbound_nodes", nodes)
        self.index = len(nodes)
        nodes.append(self)
        for i, t in enumerate(self.output_tensors):
            t._keras_history = (layer, self.index, i)

    @property
    def is_input(self):
        return not self.input_tensors

    @property
    def parent_nodes(self):
        return [t.node for t in self.input_tensors]

    def __repr__(self):
        return f"<Node {self.layer.name}[{self.index}]>"


def keras_tensors(structure):
    """The KerasTensors in ``structure`` (nested lists, tuples, dicts), in ``nest`` order."""
    return [t for t in nest.flatten(structure) if isinstance(t, KerasTensor)]


def holds_keras_tensor(structure):
    if isinstance(structure, KerasTensor):
        return True
    if not isinstance(structure, (list, tuple, dict)):
        return False
    return any(isinstance(t, KerasTensor) for t in nest.flatten(structure))


def input_tensor(layer, shape, dtype, name):
    """The KerasTensor an ``InputLayer`` stands for (its node has no inputs)."""
    tensor = KerasTensor(shape, dtype, name=name)
    Node(layer, outputs=tensor)
    return tensor


def call_on_symbols(layer, inputs, args, kwargs, training):
    """``layer(inputs, *args, **kwargs)`` on KerasTensors: one Node, KerasTensor outputs."""
    call_kwargs = dict(kwargs)
    if training is not None:  # given in the call (Monte Carlo dropout): kept for every replay
        call_kwargs["training"] = training
    call_args = (inputs,) + tuple(args)
    sizes = (2, 3) if any(d is None for t in keras_tensors((call_args, call_kwargs))
                          for d in t.shape) else (2,)
    trials = [_trial_call(layer, call_args, call_kwargs, size) for size in sizes]
    if getattr(layer, "stateful", False):  # a stateful RNN: the trials on zeros leave no state
        layer.reset_state()
    flat = [nest.flatten(t) for t in trials]
    outputs = nest.pack_sequence_as(trials[0], [_symbol_of(*ts) for ts in zip(*flat)])
    Node(layer, call_args, call_kwargs, outputs)
    for t in nest.flatten(outputs):
        t.name = layer.name
    return outputs


def _trial_call(layer, args, kwargs, size):
    """The layer's outputs on zeros shaped as the KerasTensors (unknown sizes = ``size``)."""
    def zeros(t):
        if not isinstance(t, KerasTensor):
            return t
        shape = tuple(size if d is None else d for d in t.shape)
        return Tensor(backend.device_module().zeros(shape, numpy_dtype(t.dtype)))
    shapes = ", ".join(str(tuple(t.shape)) for t in keras_tensors((args, kwargs)))
    args = nest.map_structure(zeros, args)
    kwargs = {k: nest.map_structure(zeros, v) for k, v in kwargs.items()}
    kwargs["training"] = False
    with init_scope():  # data, not ops: outside any trace, tape or accumulator
        try:
            outputs = layer(*args, **kwargs)
        except (ValueError, TypeError, IndexError) as e:
            raise type(e)(f"{e} (calling {layer.name} on symbolic inputs of shape {shapes}; the "
                          f"call ran on zeros with {size} for each None)") from e
    for t in nest.flatten(outputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"{layer.name} returned {type(t).__name__} on symbolic inputs; a "
                            f"layer in a functional model returns tensors (in lists, tuples or "
                            f"dicts)")
    return outputs


def _symbol_of(*trials):
    """A KerasTensor for one output: the trial calls' shape, None where they disagree."""
    first = trials[0]
    shape = [d if all(t.shape[i] == d for t in trials) else None
             for i, d in enumerate(first.shape)]
    if any(t.ndim != first.ndim for t in trials):
        raise ValueError(f"a layer's output has rank {first.ndim} for one batch size and "
                         f"{trials[-1].ndim} for another")
    return KerasTensor(shape, first.dtype)
