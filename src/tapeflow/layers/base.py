"""``Layer``: Keras's shape — config in ``__init__``, weights in ``build``, math in ``call``.

A layer builds itself on its first call, from the input's shape.  Variables
made with ``add_weight`` are named as Keras 3 names them: ``name`` is the name
given (``kernel``) and ``path`` the hierarchical one, from the layers being
called when they are created (``sequential/dense_1/kernel``), unique in a
model.  Layer names count up per process (``dense``, ``dense_1`` ...);
``clear_session()`` starts the counts again.  (Weight files key on the
model's structure, which does not depend on these counts: see
``models/weights_tree.py``.)

Tracking: assigning a Layer, a Variable, or a list/tuple/dict of them to an
attribute tracks it.  Variable order (documented, stable): a layer's own
weights in creation order, then each tracked sub-layer's, depth first, in the
order the sub-layers were assigned.

Losses (Keras 3's): ``add_loss`` in ``call`` and an ``activity_regularizer``'s
penalty on the outputs are the last call's -- the outermost layer call clears
those of its whole tree first -- and ``losses`` lists them, then the weights'
regularization penalties.  ``Model.compute_loss`` adds them to the compiled loss.
"""
import functools
import inspect
import weakref

import numpy as np

from ..core.context import context, init_scope, reset as reset_context
from ..core.tensor import Tensor, Variable, convert_to_tensor
from ..dtypes import numpy_dtype
from .. import dtype_policy as dtype_policies
from ..core import nest
from ..ops.shape import cast, shape
from ..ops.special import divide_no_nan
from .. import backend, initializers, regularizers
from ..serialization import snake_case
from .symbolic import call_on_symbols, holds_keras_tensor
from .autocast import variables_in_compute_dtype
from .weight_budget import charge
from ..tracing.autograph.conversion import layer_call
from ..dtypes import is_float_dtype

__all__ = ["Layer", "name_scope", "clear_session"]

CALLED_ON_A_LAYER = (
    "call layers on tensors: tf.keras.Input(shape=...) returns the symbolic tensor of the "
    "functional API (an InputLayer's is its .output), and each layer call returns the next "
    "one, as in x = tf.keras.Input(shape=(8,)); y = Dense(1)(x); model = tf.keras.Model(x, y)")


# The layers whose ``add_loss`` losses (or activity-regularized outputs) of their last call are
# held: an outermost call clears its tree's, and walks the tree only when this is not empty.
_HOLDING_LOSSES = weakref.WeakSet()


def _unique_name(base):
    counts = context().name_counts
    n = counts.get(base, 0)
    counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def clear_session():
    """Start afresh, as Keras's: layer names count from ``dense`` again, no tapes, an unseeded
    random state (this thread's context, see ``core.context``)."""
    reset_context()


class name_scope:
    """Variables created inside are named ``<scope>/<name>``."""

    def __init__(self, name):
        self._name = name

    def __enter__(self):
        context().name_scopes.append(self._name)
        return self

    def __exit__(self, *exc):
        context().name_scopes.pop()
        return False


class Layer:
    """Base class of layers and models."""

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 activity_regularizer=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(kwargs)}")
        object.__setattr__(self, "_tracked_layers", [])
        object.__setattr__(self, "_own_weights", [])
        self.name = name or _unique_name(snake_case(type(self).__name__))
        self._trainable = bool(trainable)
        self.built = False
        # Keras 3's dtype policy: inputs are cast to its compute dtype, variables made in its
        # variable dtype (``dtype``); the two differ for "mixed_float16"
        policy = self._dtype_policy = dtype_policies.get(dtype)
        self._np_dtype = np.dtype(policy.compute_dtype)
        self.dtype = policy.variable_dtype
        self._casts_variables = (is_float_dtype(self._np_dtype)
                                 and self._np_dtype != np.dtype(self.dtype))
        self._call_takes_training = "training" in inspect.signature(self.call).parameters
        self._call_takes_mask = "mask" in inspect.signature(self.call).parameters
        # Keras 2's ``Dense(30, input_shape=(8,))``: a Sequential builds from it at once
        self._declared_input_shape = None if input_shape is None else \
            (None,) + tuple(input_shape if not isinstance(input_shape, int) else (input_shape,))
        self._regularized = []  # (regularizer, variable)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        object.__setattr__(self, "_added_losses", [])  # add_loss's, from the last call
        object.__setattr__(self, "_regularized_outputs", [])  # for activity_regularizer

    # --- tracking -----------------------------------------------------------------------
    def __setattr__(self, name, value):
        self._track(value)
        object.__setattr__(self, name, value)

    def _track(self, value):
        if isinstance(value, Layer):
            if value is not self and not any(value is l for l in self._tracked_layers):
                self._tracked_layers.append(value)
        elif isinstance(value, Variable):
            if not any(value is w for w in self._own_weights):
                self._own_weights.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                self._track(v)
        elif isinstance(value, dict):
            for v in value.values():
                self._track(v)

    @property
    def layers(self):
        return list(self._tracked_layers)

    # --- weights ---------------------------------------------------------------------------
    def add_weight(self, name, shape=(), initializer="glorot_uniform", dtype=None,
                   trainable=True, regularizer=None, constraint=None):
        """Create, track and return a Variable named after the layers being built."""
        init = initializers.get(initializer)
        dtype = numpy_dtype(dtype) or np.dtype(self.dtype)
        shape = tuple(int(d) for d in shape)
        charge(f"{self.name}.{name}", shape, dtype)
        with init_scope():  # on a first call inside tf.function too: weights are data, not ops
            value = init(shape, dtype=dtype)
        scopes = context().name_scopes
        path = "/".join(scopes + [name]) if scopes and scopes[-1] == self.name else \
            "/".join(scopes + [self.name, name])
        variable = Variable(value, trainable=trainable, name=path, dtype=dtype, constraint=constraint)
        variable._keras_name = name
        self._own_weights.append(variable)
        reg = regularizers.get(regularizer)
        if reg is not None:
            self._regularized.append((reg, variable))
        return variable

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._tracked_layers:
            layer.trainable = value

    def _all_weights(self):
        return list(self._unique(self._walk_all()))

    def _walk_all(self):
        yield from self._own_weights
        for layer in self._tracked_layers:
            yield from layer._walk_all()

    @staticmethod
    def _unique(variables):
        """Each variable once, at its first place: a layer shared by two parents counts once."""
        seen = set()
        for v in variables:
            if id(v) not in seen:
                seen.add(id(v))
                yield v

    @property
    def trainable_variables(self):
        return list(self._unique(self._walk_weights(trainable=True)))

    @property
    def non_trainable_variables(self):
        return list(self._unique(self._walk_weights(trainable=False)))

    def _walk_weights(self, trainable):
        for v in self._own_weights:
            if (v.trainable and self._trainable) == trainable:
                yield v
        for layer in self._tracked_layers:
            yield from layer._walk_weights(trainable)

    @property
    def variables(self):
        return self._all_weights()

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables

    def get_weights(self):
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        own = self.weights
        weights = list(weights)
        if len(weights) != len(own):
            raise ValueError(f"{self.name}.set_weights: expected {len(own)} arrays "
                             f"({[v.path for v in own]}), got {len(weights)}")
        for v, w in zip(own, weights):
            w = w if backend.is_array(w) else np.asarray(w)  # device data stays there
            if tuple(w.shape) != tuple(v.shape):
                raise ValueError(f"{self.name}.set_weights: {v.path} has shape {tuple(v.shape)}, "
                                 f"the array has shape {tuple(w.shape)}")
            v.assign(w.astype(v._value.dtype))

    def count_params(self):
        return int(sum(np.prod(v.shape) for v in self.weights))

    # --- losses: add_loss's and the regularizers' ---------------------------------------------------
    def add_loss(self, loss):
        """Add a loss tensor (or a list of them) while ``call`` runs: a KL term, an activity
        penalty.  As in Keras 3, the losses are those of the last call: the outermost layer
        call (a model's, in ``fit``) starts by clearing them in itself and every sub-layer,
        so a traced training step adds the ones its own forward pass makes."""
        for value in nest.flatten(loss):
            if holds_keras_tensor(value):
                raise ValueError(f"{self.name}.add_loss got a symbolic tensor ({value}): as in "
                                 f"Keras 3, losses are added inside a layer's call, on its "
                                 f"tensors (write a layer whose call does self.add_loss(...))")
            if not isinstance(value, Tensor):
                raise ValueError(f"{self.name}.add_loss takes tensors computed in call() (or "
                                 f"build()), got {type(value).__name__}: {value!r}")
            self._added_losses.append(value)
            _HOLDING_LOSSES.add(self)

    @property
    def losses(self):
        """The losses ``add_loss`` added in the last call (this layer's, then its sub-layers'),
        then the weights' regularization penalties (recomputed), as Keras 3's."""
        out = []
        for layer in self._self_and_sublayers():
            out.extend(layer._added_losses)
            out.extend(layer._activity_losses())
        return out + self._regularization_losses()

    def _regularization_losses(self):
        out = [reg(v) for reg, v in self._regularized]
        for layer in self._tracked_layers:
            out.extend(layer._regularization_losses())
        return out

    def _self_and_sublayers(self):
        """This layer and every layer under it, each once (a shared one at its first place)."""
        order, seen, stack = [], set(), [self]
        while stack:
            layer = stack.pop()
            if id(layer) not in seen:
                seen.add(id(layer))
                order.append(layer)
                stack.extend(reversed(layer._tracked_layers))
        return order

    def _clear_losses(self):
        if not _HOLDING_LOSSES:  # the common case: no layer holds any, nothing to walk
            return
        for layer in self._self_and_sublayers():
            if layer in _HOLDING_LOSSES:
                layer._added_losses.clear()
                layer._regularized_outputs.clear()
                _HOLDING_LOSSES.discard(layer)

    def _activity_losses(self):
        """The activity regularizer's penalty on each output of the last call, divided by the
        batch size (Keras 3's: the same strength for any batch size; 0 for an empty batch).
        Computed when ``losses`` is read (in the same step), so that a call traced for saving
        holds no batch-size-dependent penalty nobody reads."""
        out = []
        for output in self._regularized_outputs:
            loss = self.activity_regularizer(output)
            if output.ndim:
                loss = divide_no_nan(loss, cast(shape(output)[0], loss.dtype))
            out.append(loss)
        return out

    # --- building and calling ----------------------------------------------------------------------
    def build(self, input_shape):
        self.built = True

    def call(self, inputs, *args, **kwargs):
        return inputs

    def __call__(self, inputs, *args, training=None, **kwargs):
        if inputs.__class__ is not Tensor or args or kwargs:
            if _holds_layer(inputs):
                raise TypeError(f"{self.name} was called on a layer ({_layer_names(inputs)}), "
                                f"not on data or a symbolic tensor: {CALLED_ON_A_LAYER}")
            if holds_keras_tensor((inputs, args, kwargs)):  # the functional API: record a node
                outputs = call_on_symbols(self, inputs, args, kwargs, training)
                self._clear_losses()  # the trial call's: a symbolic call adds none (Keras 3's)
                return outputs
        if inputs.__class__ is not Tensor and (
                not isinstance(inputs, (Tensor, list, tuple, dict)) or _plain_data(inputs)):
            inputs = convert_to_tensor(inputs, dtype_hint=self._np_dtype)
        elif isinstance(inputs, Tensor) and inputs._value.dtype != self._np_dtype \
                and is_float_dtype(inputs._value.dtype) and self._autocast:
            inputs = cast(inputs, self._np_dtype)
        if args:  # Keras 3's CallSpec: layer(x, mask) is call(x, mask=mask) where call says so
            args = _positional_as_keywords(self, args, kwargs)
            training = kwargs.pop("training", training)
        if self._call_takes_training:
            kwargs["training"] = training
        mask = _mask_argument(self, inputs, kwargs)
        ctx = context()
        outermost = ctx.outermost_layer is None
        if outermost:  # losses are the last call's: the outermost call clears the old ones
            ctx.outermost_layer = self
            self._clear_losses()
        try:
            if not self.built:  # the name scope only matters while weights are being created
                with name_scope(self.name):
                    self.build(_shape_of(inputs))
                    self.built = True
                    self._clear_losses()  # of shape trials the build ran (Sequential's)
                    outputs = self._call_in_compute_dtype(inputs, args, kwargs)
            else:
                outputs = self._call_in_compute_dtype(inputs, args, kwargs)
            if self.activity_regularizer is not None:
                self._regularized_outputs.extend(
                    t for t in nest.flatten(outputs) if isinstance(t, Tensor))
                _HOLDING_LOSSES.add(self)
        finally:
            if outermost:
                ctx.outermost_layer = None
        return _with_mask(self, inputs, outputs, mask)

    def _call_in_compute_dtype(self, inputs, args, kwargs):
        # in a trace, a user's call is AutoGraph-converted (Keras's tf_convert of call)
        call = self.call if context().trace is None else layer_call(self)
        if not self._casts_variables:
            return call(inputs, *args, **kwargs)
        with variables_in_compute_dtype(self):
            return call(inputs, *args, **kwargs)

    # --- dtype policy (Keras 3's) ----------------------------------------------------------------
    @property
    def dtype_policy(self):
        return self._dtype_policy

    @property
    def compute_dtype(self):
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        return self._dtype_policy.variable_dtype

    _autocast = True
    supports_masking = False  # Keras's: True for a layer that passes its input's mask on

    def compute_mask(self, inputs, mask=None):
        """The mask of the output (Keras's convention; None: no mask): the input's ``mask`` for a
        layer that ``supports_masking``.  Layers that make a mask (Embedding(mask_zero=True),
        Masking) or consume one (an RNN without return_sequences) override this."""
        return mask if self.supports_masking else None

    def compute_output_shape(self, input_shape):
        """The output shape for ``input_shape`` (None for an unknown batch size)."""
        shape = tuple(1 if d is None else d for d in input_shape)
        out = self(Tensor(backend.device_module().zeros(shape, np.dtype(self.dtype))),
                   training=False)
        return (input_shape[0],) + tuple(out.shape[1:])

    # --- config ----------------------------------------------------------------------------------
    def get_config(self):
        policy = self._dtype_policy  # a mixed policy by its name, a plain one as its dtype
        dtype = policy.name if policy.compute_dtype != policy.variable_dtype else self.dtype
        config = {"name": self.name, "trainable": self.trainable, "dtype": dtype}
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


# --- masks (Keras's convention) ---------------------------------------------------------------------
# A mask rides on a tensor as ``tensor._keras_mask`` (one bool per timestep): the input's goes to
# ``call(mask=...)`` when call takes it, and ``compute_mask(inputs, mask)`` gives the output's.
def _mask_argument(layer, inputs, kwargs):
    """The input's mask, also passed to ``call`` when it takes ``mask`` (an explicit one wins)."""
    if "mask" in kwargs:
        return kwargs["mask"]
    mask = getattr(inputs, "_keras_mask", None)
    if mask is not None and layer._call_takes_mask:
        kwargs["mask"] = mask
    return mask


def _positional_as_keywords(layer, args, kwargs):
    """Arguments after ``inputs`` moved into ``kwargs`` under the names ``call`` gives them,
    so a mask or ``training`` passed by position is seen as one (a ``call(inputs, *args)``
    keeps them by position).  Returns the positional arguments left."""
    names = _call_argument_names(type(layer).call)
    if names is None:
        return args
    if len(args) > len(names):
        raise TypeError(f"{layer.name}: {type(layer).__name__}.call takes inputs and "
                        f"{len(names)} more argument(s) {list(names)}, got {len(args)} more "
                        f"by position")
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"{layer.name}: '{name}' given by position and by keyword")
        kwargs[name] = value
    return ()


@functools.lru_cache(maxsize=None)
def _call_argument_names(call):
    """The names of ``call``'s parameters after ``inputs`` that a position can fill, or None
    when it takes ``*args``."""
    params = list(inspect.signature(call).parameters.values())[2:]  # self, inputs
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return tuple(p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD)


def _with_mask(layer, inputs, outputs, mask):
    """``outputs`` with ``layer.compute_mask(inputs, mask)`` attached where they have none."""
    if mask is None and type(layer).compute_mask is Layer.compute_mask:
        return outputs  # nothing to attach: the common case, kept cheap
    if getattr(outputs, "_keras_mask", None) is not None:
        return outputs  # call attached it (Keras's Masking does)
    masks = layer.compute_mask(inputs, mask)
    if masks is None:
        return outputs
    several = isinstance(outputs, (list, tuple))
    if isinstance(masks, (list, tuple)):
        pairs = zip(outputs if several else (outputs,), masks)
    elif several:  # one mask for several outputs is the first's (Attention's scores have none)
        pairs = ((outputs[0], masks),) if outputs else ()
    else:
        pairs = ((outputs, masks),)
    for tensor, m in pairs:
        if m is not None and isinstance(tensor, Tensor) and \
                getattr(tensor, "_keras_mask", None) is None:
            tensor._keras_mask = m
    return outputs


def _holds_layer(inputs):
    """A layer (an ``Input``), or a list or dict with one: what the functional API passes."""
    if isinstance(inputs, Layer):
        return True
    if isinstance(inputs, dict):
        inputs = list(inputs.values())
    return isinstance(inputs, (list, tuple)) and any(isinstance(x, Layer) for x in inputs)


def _layer_names(inputs):
    if isinstance(inputs, dict):
        inputs = list(inputs.values())
    layers = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    return ", ".join(f"{type(x).__name__} '{x.name}'" for x in layers if isinstance(x, Layer))


def _plain_data(inputs):
    """A (nested) list of numbers, such as ``[[1., 2.]]``: one input, not a list of inputs."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        return False
    first = inputs[0]
    return isinstance(first, (int, float)) or _plain_data(first)


def _shape_of(inputs):
    if isinstance(inputs, Tensor):
        return tuple(inputs._value.shape)
    if isinstance(inputs, (list, tuple)):
        return [_shape_of(x) for x in inputs]
    if isinstance(inputs, dict):
        return {k: _shape_of(v) for k, v in inputs.items()}
    if backend.is_array(inputs):
        return tuple(inputs.shape)
    return tuple(np.shape(inputs))
