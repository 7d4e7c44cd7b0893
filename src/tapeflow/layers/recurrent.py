"""Keras's recurrent layers: ``RNN(cell)``, ``SimpleRNN``, ``LSTM``, ``GRU`` and ``Bidirectional``.

Inputs are ``(batch, timesteps, features)``.  The input half of every step is one matmul over
the whole sequence (``cell.project``); the recurrence then runs as one whole-sequence op of
``ops/rnn.py`` (its gradient back through time in one op too), so a traced step holds a few
equations per layer, not a few dozen per timestep.  ``unroll=True``, recurrent dropout while
training, activations other than Keras's defaults and GRU's ``reset_after=False`` unroll the
loop in Python instead, over the cells of ``recurrent_cells.py`` (whose step is itself one
fused op with Keras's default activations).  Gradients (to any order) are the ops' own.

Masking is Keras's: with a mask (from ``Embedding(mask_zero=True)``, ``Masking`` or
``mask=``), a masked step keeps the states of the step before and outputs the previous step's
output again (zeros before the first unmasked step; zeros at every masked step with
``zero_output_for_mask=True``), so trailing padding leaves the last real output in place.  ``go_backwards`` runs the sequence from its end and returns the outputs in
that (reversed) order; ``Bidirectional`` reverses its backward layer's back.

``stateful=True`` (Keras 3's): the last states of one call are the initial states of the next,
kept in untracked Variables ``layer.states`` (not weights: they are not saved), for the batch
size the layer was built for; ``reset_state()`` zeroes them.
"""
from ..core.context import init_scope
from ..core.tensor import Variable, convert_to_tensor
from ..ops.arithmetic import not_equal
from ..ops.nn import dropout as dropout_op
from ..ops.creation import ones, zeros
from ..ops.rnn import recurrent_sequence
from ..ops.shape import cast, concat, reverse, unstack, where
from ..serialization import deserialize, serialize, snake_case
from .base import Layer, _unique_name, name_scope
from .recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell, _Cell

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU", "Bidirectional"]


class RNN(Layer):
    """Runs ``cell`` over the timesteps (Keras's ``RNN``, for tapeflow's cells)."""

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, dict):  # a serialized cell, as a config holds it
            cell = deserialize(_with_dtype(cell, kwargs.get("dtype")), _CELLS, kind="layer")
        if not isinstance(cell, _Cell):
            raise TypeError(f"{type(self).__name__}: the cell must be a SimpleRNNCell, LSTMCell "
                            f"or GRUCell, got {type(cell).__name__}")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        object.__setattr__(self, "states", None)  # untracked: not weights, as Keras 3's
        self.unroll = bool(unroll)  # True: the steps one by one, as before the fused ops
        self.zero_output_for_mask = bool(zero_output_for_mask)  # masked steps output 0

    @property
    def units(self):
        return self.cell.units

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"{self.name}: expected inputs of shape (batch, timesteps, features), "
                             f"got shape {tuple(input_shape)}")
        if not self.cell.built:
            self.cell.build((input_shape[0], input_shape[-1]))
            self.cell.built = True
        if self.stateful:
            self._build_states(input_shape[0])
        self.built = True

    def _build_states(self, batch_size):
        if self.states is not None:
            self.reset_state()
            return
        if batch_size is None:
            raise ValueError(f"{self.name}: When using `stateful=True` in a RNN, the batch size "
                             f"must be static (give the Input a batch_size or batch_shape)")
        with init_scope():
            states = [Variable(zeros((batch_size, self.cell.units), self.dtype), trainable=False,
                               name=f"{self.name}/rnn_state_{name}")
                      for name in self.cell.state_names]
        object.__setattr__(self, "states", states)

    def reset_state(self):
        """Zero the states a stateful layer carries from call to call."""
        for v in self.states or ():
            v.assign(zeros(tuple(v.shape), v._value.dtype))

    reset_states = reset_state  # Keras 2's name

    def call(self, inputs, mask=None, training=None, initial_state=None):
        if inputs.ndim != 3:
            raise ValueError(f"{self.name}: expected inputs of shape (batch, timesteps, features), "
                             f"got shape {tuple(inputs.shape)}")
        if inputs.shape[1] == 0:
            raise ValueError(f"{self.name}: the input has no timesteps")
        cell = self.cell
        if mask is not None:
            mask = _as_bool(mask)
        if self.go_backwards:
            inputs = reverse(inputs, [1])
            mask = None if mask is None else reverse(mask, [1])
        if training and cell.dropout:  # one mask for every timestep, as Keras's
            inputs = dropout_op(inputs, cell.dropout, noise_shape=(None, 1, inputs.shape[-1]),
                                seed=cell.seed)
        recurrent_mask = None
        if training and cell.recurrent_dropout:
            recurrent_mask = dropout_op(ones((inputs.shape[0], cell.units), inputs.dtype),
                                        cell.recurrent_dropout, seed=cell.seed)
        states = self._initial_states(initial_state)
        if self.stateful and initial_state is None:
            states = self._carried_states(inputs.shape[0])
        kind = None if self.unroll or recurrent_mask is not None else cell.fused()
        if kind is not None:
            result, states = self._run_fused(kind, inputs, states, mask)
        else:
            result, states = self._run_unrolled(inputs, states, mask, recurrent_mask)
        if self.stateful:
            for variable, state in zip(self.states, states):
                variable.assign(state)
        return [result] + list(states) if self.return_state else result

    def _run_fused(self, kind, inputs, states, mask):
        """One whole-sequence op (ops/rnn.py) over the timesteps."""
        projected = self.cell.project(inputs)
        kernel, bias, given = self.cell.fused_operands(
            projected, None if states[0] is None else states)
        outputs, states = recurrent_sequence(kind, projected, kernel, bias, given, mask,
                                             self.zero_output_for_mask)
        return (outputs if self.return_sequences else outputs[:, -1]), states

    def _run_unrolled(self, inputs, states, mask, recurrent_mask):
        """The steps one by one in Python (``unroll=True``, recurrent dropout, other
        activations), each one fused op where the cell has one."""
        cell = self.cell
        steps = unstack(cell.project(inputs), axis=1)
        # [:, t, None] and concat, not expand_dims and stack (reshapes to a shape holding the
        # batch size): a traced graph then fits any batch, a saved model's too
        keeps = None if mask is None else [mask[:, t, None] for t in range(len(steps))]
        outputs, output = [], None
        for t, projected in enumerate(steps):
            new_output, new_states = cell.step(projected, states, recurrent_mask)
            if keeps is not None:  # a masked step: the previous output and states again
                new_output = where(keeps[t], new_output, 0.0 if output is None or
                                   self.zero_output_for_mask else output)
                new_states = [where(keeps[t], n, 0.0 if s is None else s)
                              for n, s in zip(new_states, states)]
            output, states = new_output, new_states
            if self.return_sequences:
                outputs.append(output[:, None])
        return (concat(outputs, axis=1) if self.return_sequences else output), states

    def _carried_states(self, batch_size):
        expected = self.states[0].shape[0]
        if batch_size is not None and batch_size != expected:
            raise ValueError(f"{self.name}: If an RNN is stateful, the batch size of the input "
                             f"sequences must be the same as the batch size of the initial "
                             f"state. Expected batch size: {expected}, received: {batch_size}")
        return list(self.states)

    def _initial_states(self, initial_state):
        n = len(self.cell.state_names)
        if initial_state is None:
            return [None] * n
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        if len(states) != n:
            raise ValueError(f"{self.name}: initial_state needs {n} tensors "
                             f"({', '.join(self.cell.state_names)}), got {len(states)}")
        states = [convert_to_tensor(s) for s in states]
        return [s if s._value.dtype == self._np_dtype else cast(s, self._np_dtype)
                for s in states]

    def compute_mask(self, inputs, mask=None):
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.cell.state_names)
        return output_mask

    def compute_output_shape(self, input_shape):
        batch, steps = input_shape[0], input_shape[1]
        output = (batch, steps, self.units) if self.return_sequences else (batch, self.units)
        if self.return_state:
            return [output] + [(batch, self.units)] * len(self.cell.state_names)
        return output

    def get_config(self):
        config = {**super().get_config(), "return_sequences": self.return_sequences,
                  "return_state": self.return_state, "go_backwards": self.go_backwards,
                  "stateful": self.stateful, "unroll": self.unroll,
                  "zero_output_for_mask": self.zero_output_for_mask}
        if type(self) is RNN:
            config["cell"] = serialize(self.cell)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if "cell" in config:
            config["cell"] = deserialize(config["cell"], _CELLS, custom_objects, kind="layer")
        return cls(**config)


def _as_bool(mask):
    mask = convert_to_tensor(mask)
    return mask if mask._value.dtype.kind == "b" else not_equal(mask, 0)


_CELLS = {"SimpleRNNCell": SimpleRNNCell, "LSTMCell": LSTMCell, "GRUCell": GRUCell}


class _CellLayer(RNN):
    """SimpleRNN / LSTM / GRU: the layer makes its cell from the cell's arguments (Keras's)."""

    cell_class = None

    def __init__(self, units, *, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False,
                 activity_regularizer=None, use_cudnn="auto", implementation=2, time_major=False,
                 name=None, trainable=True, dtype=None, input_shape=None, **cell_kwargs):
        # use_cudnn and Keras 2's implementation pick kernels (same numbers): accepted, so
        # Keras's configs load; time_major would change the input's layout
        if activity_regularizer is not None or time_major:
            raise ValueError(f"{type(self).__name__}: activity_regularizer and time_major=True "
                             f"are not supported")
        cell_name = _unique_name(snake_case(self.cell_class.__name__))
        cell = self.cell_class(units, name=cell_name, dtype=dtype, trainable=trainable,
                               **cell_kwargs)
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         zero_output_for_mask=zero_output_for_mask, name=name,
                         trainable=trainable, dtype=dtype, input_shape=input_shape)

    def get_config(self):
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key)
        return {**super().get_config(), **cell_config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class SimpleRNN(_CellLayer):
    """A fully connected RNN: ``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + b)``."""

    cell_class = SimpleRNNCell

    def __init__(self, units, activation="tanh", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)


class LSTM(_CellLayer):
    """Long short-term memory (Hochreiter & Schmidhuber, 1997), Keras's gates and defaults."""

    cell_class = LSTMCell

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                         **kwargs)


class GRU(_CellLayer):
    """Gated recurrent unit (Cho et al., 2014), Keras's gates and defaults (reset_after=True)."""

    cell_class = GRUCell

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", reset_after=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, reset_after=reset_after, **kwargs)


# =================================================================================================
class Bidirectional(Layer):
    """Runs ``layer`` forwards and a copy of it backwards over the sequence and merges the two
    outputs (``merge_mode``: "concat", "sum", "mul", "ave", or None for a list of both).  The
    backward outputs are put back in time order when the layer returns sequences."""

    _MERGES = ("concat", "sum", "mul", "ave", None)

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        super().__init__(**kwargs)
        layer, backward_layer = (_recurrent_layer(_with_dtype(x, kwargs.get("dtype")))
                                 for x in (layer, backward_layer))
        if not isinstance(layer, RNN):
            raise TypeError(f"Bidirectional wraps a recurrent layer (SimpleRNN, LSTM, GRU, RNN), "
                            f"got {type(layer).__name__}")
        if merge_mode not in self._MERGES:
            raise ValueError(f"Bidirectional merge_mode must be one of {list(self._MERGES)}, "
                             f"got {merge_mode!r}")
        if weights is not None:
            raise ValueError("Bidirectional: weights= is not supported; call set_weights after "
                             "building")
        self._given_backward = backward_layer is not None
        if backward_layer is None:
            config = layer.get_config()
            config.update(go_backwards=not layer.go_backwards, name="backward_" + layer.name)
            backward_layer = type(layer).from_config(config)
        elif not isinstance(backward_layer, RNN) or \
                backward_layer.return_sequences != layer.return_sequences or \
                backward_layer.return_state != layer.return_state:
            raise ValueError("Bidirectional: backward_layer must be a recurrent layer with the "
                             "forward layer's return_sequences and return_state")
        layer.name = "forward_" + layer.name
        self.forward_layer = layer
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def build(self, input_shape):
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                with name_scope(layer.name):
                    layer.build(input_shape)
        self.built = True

    def call(self, inputs, mask=None, training=None, initial_state=None):
        n = len(self.forward_layer.cell.state_names)
        forward_state = backward_state = None
        if initial_state is not None:
            forward_state, backward_state = initial_state[:n], initial_state[n:]
        y = self.forward_layer(inputs, mask=mask, training=training, initial_state=forward_state)
        y_rev = self.backward_layer(inputs, mask=mask, training=training,
                                    initial_state=backward_state)
        states = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences and self.backward_layer.go_backwards != \
                self.forward_layer.go_backwards:
            y_rev = reverse(y_rev, [1])
        if self.merge_mode == "concat":
            merged = concat([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            merged = y + y_rev
        elif self.merge_mode == "ave":
            merged = (y + y_rev) * 0.5
        elif self.merge_mode == "mul":
            merged = y * y_rev
        else:
            merged = [y, y_rev]
        if self.return_state:
            return (merged if isinstance(merged, list) else [merged]) + states
        return merged

    def compute_mask(self, inputs, mask=None):
        output_mask = mask if self.return_sequences else None
        masks = [output_mask, output_mask] if self.merge_mode is None else [output_mask]
        if self.return_state:
            return masks + [None] * (2 * len(self.forward_layer.cell.state_names))
        return masks if self.merge_mode is None else output_mask

    def compute_output_shape(self, input_shape):
        shape = self.forward_layer.compute_output_shape(input_shape)
        states = shape[1:] if self.return_state else []
        output = shape[0] if self.return_state else shape
        if self.merge_mode == "concat":
            output = tuple(output[:-1]) + (2 * output[-1],)
        outputs = [output, output] if self.merge_mode is None else [output]
        if self.return_state:
            return outputs + list(states) * 2
        return outputs if self.merge_mode is None else output

    def get_config(self):
        layer = self.forward_layer
        layer_config = serialize(layer)
        layer_config["config"]["name"] = layer.name[len("forward_"):]
        config = {**super().get_config(), "layer": layer_config, "merge_mode": self.merge_mode}
        if self._given_backward:
            config["backward_layer"] = serialize(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("layer", "backward_layer"):
            if config.get(key) is not None:
                config[key] = _recurrent_layer(config[key], custom_objects)
        return cls(**config)


def _with_dtype(serialized, dtype):
    """A serialized layer made in the wrapper's dtype, when the wrapper was given one."""
    if not isinstance(serialized, dict) or dtype is None:
        return serialized
    return {**serialized, "config": {**serialized.get("config", {}), "dtype": dtype}}


def _recurrent_layer(layer, custom_objects=None):
    """A layer, or a serialized one (as a config holds it) made anew."""
    if not isinstance(layer, dict):
        return layer
    known = {c.__name__: c for c in (RNN, SimpleRNN, LSTM, GRU)}
    return deserialize(layer, known, custom_objects, kind="layer")

