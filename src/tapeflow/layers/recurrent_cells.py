"""Keras's recurrent cells: ``SimpleRNNCell``, ``LSTMCell`` and ``GRUCell``, one timestep each.

Weights have Keras's layout, so Keras weights load as they are: ``kernel`` is
``(input_dim, gates * units)``, ``recurrent_kernel`` ``(units, gates * units)``, gates side by
side in Keras's order (LSTM: input, forget, cell, output; GRU: update z, reset r, candidate h).
GRU's ``bias`` is ``(2, 3 * units)`` with ``reset_after=True`` (input and recurrent biases, the
default of Keras 2 and 3), ``(3 * units,)`` otherwise.

A cell's step is split in two so that a layer runs the input half once for the whole sequence:
``project(inputs)`` is ``inputs @ kernel + bias`` for inputs of any rank (one matmul over
``(batch, time, features)``), and ``step(projected_t, states)`` is the recurrence.  A state of
None is the zero state (the first step): it is skipped rather than made, so no op holds the
batch size and a traced graph fits any batch.  Everything is tapeflow ops, so gradients (to any
order) come from the ops' rules.
"""
import contextlib
import threading

import numpy as np

from .. import activations, constraints, initializers, regularizers
from ..core.tensor import convert_to_tensor
from ..ops.creation import zeros
from ..ops.rnn import recurrent_sequence
from ..ops.shape import cast, concat, split
from ..serialization import serialize
from .base import Layer

_STEPS = threading.local()


@contextlib.contextmanager
def elementwise_steps():
    """Recurrent cells traced in this block run as their elementwise ops, step by step, not
    as ops.rnn's fused ops: for an exporter (ONNX) that maps elementwise ops one by one."""
    before = getattr(_STEPS, "elementwise", False)
    _STEPS.elementwise = True
    try:
        yield
    finally:
        _STEPS.elementwise = before

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell"]


def _maybe(obj):
    return None if obj is None else serialize(obj)


def _dropped(h, mask):
    return h if h is None or mask is None else h * mask


class _Cell(Layer):
    """What the three cells share: arguments, weights, config and the input half."""

    gates = 1

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        kind = type(self).__name__
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units <= 0:
            raise ValueError(f"{kind} units must be a positive integer, got {units!r}")
        for what, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not 0 <= float(rate) < 1:
                raise ValueError(f"{kind} {what} must be in [0, 1), got {rate!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = float(dropout)
        self.recurrent_dropout = float(recurrent_dropout)
        self.seed = seed
        self.kernel = self.recurrent_kernel = self.bias = None

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        features = input_shape[-1]
        if features is None:
            raise ValueError(f"{self.name}: the last dimension of the input must be known")
        width = self.gates * self.units
        self.kernel = self.add_weight("kernel", (features, width), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, width), self.recurrent_initializer,
            regularizer=self.recurrent_regularizer, constraint=self.recurrent_constraint)
        if self.use_bias:
            self.bias = self.add_weight("bias", self._bias_shape(), self._bias_initializer(),
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        self.built = True

    def _bias_shape(self):
        return (self.gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def _input_bias(self):
        return self.bias

    def project(self, inputs):
        """The input half of every step at once: ``inputs @ kernel + bias`` (any leading axes)."""
        if inputs.shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{self.name}: expected inputs with last dimension "
                             f"{self.kernel.shape[0]}, got shape {tuple(inputs.shape)}")
        projected = inputs @ self.kernel
        bias = self._input_bias() if self.use_bias else None
        return projected if bias is None else projected + bias

    def step(self, projected, states, recurrent_mask=None):
        """(output, new states) for one timestep from its projected input; None states are 0.
        ``recurrent_mask``: recurrent dropout's mask for the previous output (Keras's use).
        With Keras's default activations the step is one fused op (the whole-sequence op of
        ``ops/rnn.py`` over one timestep: one gate matmul, a hand-written backward)."""
        kind = self.fused()
        if kind is None:
            return self.step_ops(projected, states, recurrent_mask)
        # the previous output only enters the gate matmul (LSTM, SimpleRNN), or is dropped
        # everywhere (Keras's GRUCell): dropping the state passed in is the same
        given = None if states[0] is None else \
            [_dropped(states[0], recurrent_mask)] + list(states[1:])
        kernel, bias, given = self.fused_operands(projected, given)
        outputs, states = recurrent_sequence(kind, projected[:, None], kernel, bias, given)
        return outputs[:, 0], states

    def step_ops(self, projected, states, recurrent_mask=None):
        """``step`` in elementwise ops and a matmul (any activations)."""
        raise NotImplementedError

    def fused_operands(self, projected, states=None):
        """The recurrent kernel, recurrent bias and ``states`` in ``projected``'s dtype (the
        fused op takes one dtype; a variable may be kept in another)."""
        dtype = projected._value.dtype

        def same_dtype(t):
            if t is None:
                return None
            t = convert_to_tensor(t)
            return t if t._value.dtype == dtype else cast(t, dtype)
        return (same_dtype(self.recurrent_kernel), same_dtype(self.recurrent_bias()),
                None if states is None else [same_dtype(t) for t in states])

    fused_kind = None  # the kind of ops.rnn's whole-sequence op that runs this cell, if any

    def fused(self):
        """The whole-sequence op's kind when it computes this cell (Keras's default activations),
        else None (the layer then unrolls the steps)."""
        if getattr(_STEPS, "elementwise", False):
            return None
        defaults = self.activation is activations.get("tanh") and (
            self.gates == 1 or self.recurrent_activation is activations.get("sigmoid"))
        return self.fused_kind if defaults else None

    def recurrent_bias(self):
        """The bias added to ``h @ recurrent_kernel`` (GRU's reset_after), or None."""
        return None

    def get_initial_state(self, batch_size=None):
        """Zero states for ``batch_size`` rows (Keras's); the layers skip them instead."""
        return [zeros((int(batch_size), self.units), self.dtype) for _ in self.state_names]

    def call(self, inputs, states, training=None):
        """One step, Keras's cell API: ``output, new_states = cell(x_t, states)``."""
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        return self.step(self.project(inputs), states)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation),
                "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(self.kernel_regularizer),
                "recurrent_regularizer": _maybe(self.recurrent_regularizer),
                "bias_regularizer": _maybe(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
                "seed": self.seed}


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``."""

    state_names = ("h",)
    fused_kind = "simple_rnn"

    def __init__(self, units, activation="tanh", use_bias=True, **kwargs):
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)

    def step_ops(self, projected, states, recurrent_mask=None):
        (h,) = states
        z = projected if h is None else projected + _dropped(h, recurrent_mask) @ \
            self.recurrent_kernel
        h = self.activation(z)
        return h, [h]


class LSTMCell(_Cell):
    """Keras's LSTM step, gates i, f, c, o side by side::

        i, f, g, o = split(x @ kernel + h_prev @ recurrent_kernel + bias, 4)
        c = sigma(f) * c_prev + sigma(i) * act(g);   h = sigma(o) * act(c)

    ``unit_forget_bias``: the forget gate's bias starts at 1 (Jozefowicz et al.)."""

    gates = 4
    state_names = ("h", "c")
    fused_kind = "lstm"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        init, units = self.bias_initializer, self.units

        def forget_bias_one(shape, dtype="float32"):
            parts = [init((units,), dtype), initializers.Ones()((units,), dtype),
                     init((2 * units,), dtype)]
            return concat(parts, axis=0)
        return forget_bias_one

    def step_ops(self, projected, states, recurrent_mask=None):
        h, c = states
        z = projected if h is None else projected + _dropped(h, recurrent_mask) @ \
            self.recurrent_kernel
        i, f, g, o = split(z, 4, axis=-1)
        sigma, act = self.recurrent_activation, self.activation
        c = sigma(i) * act(g) if c is None else sigma(f) * c + sigma(i) * act(g)
        h = sigma(o) * act(c)
        return h, [h, c]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """Keras's GRU step, gates z, r, h side by side (``reset_after=True``, the default)::

        xz, xr, xh = split(x @ kernel + input_bias, 3)
        rz, rr, rh = split(h_prev @ recurrent_kernel + recurrent_bias, 3)
        z = sigma(xz + rz);  r = sigma(xr + rr);  hh = act(xh + r * rh)
        h = z * h_prev + (1 - z) * hh

    With ``reset_after=False`` the reset gate applies before the matmul:
    ``hh = act(xh + (r * h_prev) @ recurrent_kernel[:, 2u:])`` and there is one bias."""

    gates = 3
    state_names = ("h",)
    fused_kind = "gru"

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 reset_after=True, **kwargs):
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, **kwargs)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def fused(self):
        return super().fused() if self.reset_after else None  # reset_after=False: unrolled

    def recurrent_bias(self):
        return self.bias[1] if self.reset_after and self.use_bias else None

    def step_ops(self, projected, states, recurrent_mask=None):
        h = _dropped(states[0], recurrent_mask)  # Keras's GRUCell drops h_prev everywhere
        u = self.units
        sigma, act = self.recurrent_activation, self.activation
        xz, xr, xh = split(projected, 3, axis=-1)
        if self.reset_after:
            inner = None if h is None else h @ self.recurrent_kernel
            if self.use_bias:
                inner = self.bias[1] if inner is None else inner + self.bias[1]
            if inner is None:
                z, r, rh = sigma(xz), sigma(xr), None
            else:
                rz, rr, rh = split(inner, 3, axis=-1)
                z, r = sigma(xz + rz), sigma(xr + rr)
            hh = act(xh if rh is None else xh + r * rh)
        else:
            if h is None:
                z, r = sigma(xz), sigma(xr)
                hh = act(xh)
            else:
                rz, rr = split(h @ self.recurrent_kernel[:, :2 * u], 2, axis=-1)
                z, r = sigma(xz + rz), sigma(xr + rr)
                hh = act(xh + (r * h) @ self.recurrent_kernel[:, 2 * u:])
        h = (1.0 - z) * hh if h is None else z * h + (1.0 - z) * hh
        return h, [h]

    def get_config(self):
        return {**super().get_config(),
                "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}
