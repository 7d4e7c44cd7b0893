"""``Attention`` (Luong-style dot-product attention) and ``MultiHeadAttention``, as Keras's.

Both weigh the rows of ``value`` by ``softmax(scores)`` of the query against
the key; masked positions get a large negative number added to their scores
first (Keras's 1e9), so they take no weight.  Everything is written in
tapeflow's ops (``matmul``, ``softmax``), whose gradient rules
differentiate again, so the layers have second derivatives and trace.

``MultiHeadAttention``'s weights are laid out as Keras's EinsumDense kernels:
``query``/``key``/``value`` kernels ``(dim, num_heads, key_dim)`` with biases
``(num_heads, key_dim)``, and the ``attention_output`` kernel ``(num_heads,
value_dim, output dim)``, so Keras weights load by position.
"""
import math

import numpy as np

from .. import backend, constraints, initializers, regularizers
from ..core.tensor import Tensor, convert_to_tensor
from ..ops.arithmetic import logical_and
from ..ops.elementwise import tanh
from ..ops.linalg import matmul
from ..ops.nn import dropout, softmax
from ..ops.reduce import reduce_sum
from ..ops.shape import cast, reshape, transpose
from ..serialization import serialize
from .base import Layer, name_scope
from .symbolic import holds_keras_tensor
from ..dtypes import is_float_dtype

__all__ = ["Attention", "MultiHeadAttention"]

_LARGE = 1e9  # Keras's: subtracted from a masked score


def _as_tensor(x, dtype):
    """``x`` as a tensor of the layer's float dtype (a list's items are not converted by
    ``Layer.__call__``, nor a second positional argument)."""
    if isinstance(x, Tensor):
        keep = x._value.dtype == dtype or not is_float_dtype(x._value.dtype)
        return x if keep else cast(x, dtype)
    return convert_to_tensor(x, dtype=dtype)


def _expand(x, axis):
    """``x`` with a new axis of size 1 at ``axis``, by indexing (``expand_dims`` records a
    reshape to the traced shape, which ties a traced graph to one batch size)."""
    index = (slice(None),) * axis + (None,) if axis >= 0 else \
        (Ellipsis, None) + (slice(None),) * (-axis - 1)
    return x[index]


def _masked_softmax(scores, keep):
    """``softmax(scores)`` over the last axis, entries where ``keep`` is False pushed to ~0."""
    if keep is not None:
        scores = scores - _LARGE * (1.0 - cast(keep, scores.dtype))
    return softmax(scores, axis=-1)


def _causal(scores):
    """(1, Tq, Tk): True where query position i may see key position j: j <= i (Keras's),
    made on the scores' device."""
    q_len, k_len = scores.shape[-2:]
    xp = backend.module_of(scores._value)
    return Tensor(xp.tril(xp.ones((1, q_len, k_len), dtype=bool)))


def _combine(*masks):
    """The logical and of the masks given (None: no mask)."""
    out = None
    for m in masks:
        if m is not None:
            m = m if isinstance(m, Tensor) else convert_to_tensor(m, dtype=bool)
            if m.dtype != np.bool_:
                m = cast(m, np.bool_)
            out = m if out is None else logical_and(out, m)
    return out


# --- Attention -----------------------------------------------------------------------------------
class Attention(Layer):
    """Dot-product attention: called on ``[query, value]`` or ``[query, value, key]`` (key
    defaults to value), shapes ``(batch, Tq, dim)``, ``(batch, Tv, dim)``; returns
    ``(batch, Tq, dim)`` = ``softmax(query @ key^T) @ value``.

    ``use_scale``: a learned scalar multiplies the scores.  ``score_mode="concat"``:
    scores ``sum(tanh(query + key))`` over the features (times a learned scalar).
    ``mask=[query_mask, value_mask]`` (booleans ``(batch, Tq)``, ``(batch, Tv)``) hides value
    positions and zeroes masked query rows; ``use_causal_mask`` lets position i see only
    positions <= i.
    """

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention: score_mode must be 'dot' or 'concat', got "
                             f"{score_mode!r}")
        if not 0 <= float(dropout) < 1:
            raise ValueError(f"Attention: dropout must be in [0, 1), got {dropout!r}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode
        self.dropout = float(dropout)
        self.seed = seed
        self.scale = None
        self.concat_score_weight = None

    def build(self, input_shape):
        _check_attention_inputs(self.name, input_shape)
        if self.use_scale:
            self.scale = self.add_weight("scale", (), "ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (), "ones")
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        pairs = _expand(query, -2) + _expand(key, -3)  # (batch, Tq, Tv, dim)
        if self.scale is not None:
            pairs = pairs * self.scale
        return self.concat_score_weight * reduce_sum(tanh(pairs), axis=-1)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        _check_attention_inputs(self.name, inputs, mask)
        dtype = self._np_dtype
        query, value = _as_tensor(inputs[0], dtype), _as_tensor(inputs[1], dtype)
        key = _as_tensor(inputs[2], dtype) if len(inputs) > 2 else value
        _check_shapes(self.name, query=query, value=value, key=key)
        if query.shape[-1] != key.shape[-1]:
            raise ValueError(f"{self.name}: the query's and the key's last dimensions must be "
                             f"equal (their scores are dot products), got shapes "
                             f"{tuple(query.shape)} and {tuple(key.shape)}")
        if key.shape[-2] != value.shape[-2]:
            raise ValueError(f"{self.name}: key and value need the same number of positions, "
                             f"got shapes {tuple(key.shape)} and {tuple(value.shape)}")
        q_mask, v_mask = (mask[0], mask[1]) if mask is not None else (None, None)
        scores = self._scores(query, key)
        keep = _combine(None if v_mask is None else _expand(_combine(v_mask), -2),
                        _causal(scores) if use_causal_mask else None)
        weights = _masked_softmax(scores, keep)
        if training and self.dropout > 0:
            weights = dropout(weights, self.dropout, seed=self.seed)
        result = matmul(weights, value)
        if q_mask is not None:
            result = result * _expand(cast(_combine(q_mask), result.dtype), -1)
        return (result, weights) if return_attention_scores else result

    def compute_mask(self, inputs, mask=None):
        return None if mask is None or mask[0] is None else mask[0]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0][:-1]) + (input_shape[1][-1],)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}


def _check_attention_inputs(name, inputs, mask=None):
    if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
        raise ValueError(f"{name}: call Attention on a list [query, value] or "
                         f"[query, value, key], got {type(inputs).__name__}"
                         f"{'' if not isinstance(inputs, (list, tuple)) else f' of {len(inputs)}'}")
    if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3)):
        raise ValueError(f"{name}: mask must be a list [query_mask, value_mask] (either may be "
                         f"None), got {type(mask).__name__}")


def _check_shapes(name, **tensors):
    for what, x in tensors.items():
        if x.ndim != 3:
            raise ValueError(f"{name}: {what} must have shape (batch, time, features), got "
                             f"{tuple(x.shape)}")


# --- MultiHeadAttention --------------------------------------------------------------------------
class _Projection(Layer):
    """A kernel and bias laid out as the EinsumDense layers of Keras's MultiHeadAttention (so
    Keras weights load by position), applied as one 2-D GEMM over every position, as Keras's
    EinsumDense runs them (a product per sample and head measured 1.3-1.6x slower, issue 22).

    ``"heads"``: ``(batch, T, dim)`` times kernel ``(dim, heads, size)`` viewed as ``(dim,
    heads * size)``, plus bias ``(heads, size)``, to ``(batch, heads, T, size)``.  ``"merge"``:
    ``(batch, heads, T, size)`` as ``(batch, T, heads * size)`` times kernel ``(heads, size,
    out...)`` viewed as ``(heads * size, out)``, plus bias ``(out...)``, to ``(batch, T,
    out...)``.
    """

    def __init__(self, name, mode, kernel_shape, use_bias, kernel_initializer, bias_initializer,
                 kernel_regularizer, bias_regularizer, kernel_constraint, bias_constraint,
                 dtype):
        super().__init__(name=name, dtype=dtype)
        self.mode = mode
        self.kernel_shape = tuple(int(d) for d in kernel_shape)
        self.kernel = self.add_weight("kernel", self.kernel_shape, kernel_initializer,
                                      regularizer=kernel_regularizer,
                                      constraint=kernel_constraint)
        self.bias = None
        if use_bias:
            bias_shape = self.kernel_shape[1:] if mode == "heads" else self.kernel_shape[2:]
            self.bias = self.add_weight("bias", bias_shape, bias_initializer,
                                        regularizer=bias_regularizer, constraint=bias_constraint)
        self.built = True

    def call(self, inputs, scale=None):
        """``scale`` (heads mode): the result times it, applied to the kernel and bias (the
        query's 1/sqrt(key_dim): d*H*K + H*K multiplications, not B*T*H*K, each way)."""
        return self._heads(inputs, scale) if self.mode == "heads" else self._merge(inputs)

    def _heads(self, x, scale=None):
        dim, heads_n, size = self.kernel_shape
        kernel = reshape(self.kernel, (dim, heads_n * size))
        y = self._dense(x, kernel if scale is None else kernel * scale, scale)  # (B, T, H*K)
        return transpose(reshape(y, (-1, x.shape[1], heads_n, size)), (0, 2, 1, 3))

    def _merge(self, heads):
        heads_n, size, *out = self.kernel_shape
        rows = reshape(transpose(heads, (0, 2, 1, 3)), (-1, heads.shape[2], heads_n * size))
        y = self._dense(rows, reshape(self.kernel, (heads_n * size, math.prod(out))))
        return y if len(out) == 1 else reshape(y, (-1, y.shape[1]) + tuple(out))

    def _dense(self, x, kernel, scale=None):
        """``x @ kernel`` plus the bias flattened (times ``scale``): (B, T, n) @ (n, m) is one
        (B*T, n) GEMM, and so is its kernel's gradient (``matmul``'s rank-3-by-matrix case)."""
        y = matmul(x, kernel)
        if self.bias is None:
            return y
        bias = reshape(self.bias, (-1,))
        return y + (bias if scale is None else bias * scale)


class MultiHeadAttention(Layer):
    """Multi-head attention (Vaswani et al.), as Keras's: ``mha(query, value, key=None,
    attention_mask=None, return_attention_scores=False, use_causal_mask=False)``.

    ``query`` ``(batch, Tq, dim_q)``, ``value`` ``(batch, Tv, dim_v)``, ``key`` (default:
    value).  Each head projects them to ``key_dim`` (``value_dim`` for values), attends with
    scores ``q k^T / sqrt(key_dim)``, and the heads' results are projected back to ``dim_q``
    (or ``output_shape``).  ``attention_mask`` ``(batch, Tq, Tv)``: True where attention is
    allowed.  Attends over the last-but-one axis (rank-3 inputs); ``attention_axes`` other than
    that are not supported.
    """

    supports_masking = True  # the output keeps the query's mask

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = _positive(num_heads, "num_heads")
        self.key_dim = _positive(key_dim, "key_dim")
        self.value_dim = self.key_dim if value_dim is None else _positive(value_dim, "value_dim")
        if not 0 <= float(dropout) < 1:
            raise ValueError(f"MultiHeadAttention: dropout must be in [0, 1), got {dropout!r}")
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if output_shape is not None:
            output_shape = (output_shape,) if isinstance(output_shape, int) else \
                tuple(int(d) for d in output_shape)
        self._output_shape = output_shape
        if attention_axes is not None:
            axes = (attention_axes,) if isinstance(attention_axes, int) else tuple(attention_axes)
            attention_axes = [int(a) for a in axes]  # checked against the rank when built
        self.attention_axes = attention_axes
        if activity_regularizer is not None:
            raise NotImplementedError("MultiHeadAttention: activity_regularizer is not supported")
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.seed = seed

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        for what, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) < 3 or shape[-1] is None:
                raise ValueError(f"{self.name}: {what} must have shape (batch, time, features) "
                                 f"(or batch, positions..., features) with known features, got "
                                 f"{tuple(shape)}")
        rank = len(query_shape)
        if self.attention_axes is not None and \
                sorted(a % rank for a in self.attention_axes) != list(range(1, rank - 1)):
            raise NotImplementedError(
                f"{self.name}: attention_axes={self.attention_axes!r} is not supported for "
                f"inputs of rank {rank}; tapeflow attends over every axis between the batch and "
                f"the features, jointly (attention_axes=None, or all of those axes)")
        out = self._output_shape or (query_shape[-1],)
        heads = self.num_heads
        self._query_dense = self._projection("query", "heads",
                                             (query_shape[-1], heads, self.key_dim))
        self._key_dense = self._projection("key", "heads", (key_shape[-1], heads, self.key_dim))
        self._value_dense = self._projection("value", "heads",
                                             (value_shape[-1], heads, self.value_dim))
        self._output_dense = self._projection("attention_output", "merge",
                                              (heads, self.value_dim) + tuple(out))
        self.built = True

    # Keras's public names for the projections (a Keras 3 weights file is keyed by them)
    query_dense = property(lambda self: self._query_dense)
    key_dense = property(lambda self: self._key_dense)
    value_dense = property(lambda self: self._value_dense)
    output_dense = property(lambda self: self._output_dense)

    def _projection(self, name, mode, kernel_shape):
        with name_scope(name):
            return _Projection(name, mode, kernel_shape, self.use_bias,
                               self.kernel_initializer, self.bias_initializer,
                               self.kernel_regularizer, self.bias_regularizer,
                               self.kernel_constraint, self.bias_constraint, self.dtype_policy)

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise TypeError(f"{self.name}: MultiHeadAttention is called as mha(query, value) "
                            f"(value is required; for self-attention pass the same tensor "
                            f"twice: mha(x, x))")
        if key is not None:
            kwargs["key"] = key
        if not self.built and not holds_keras_tensor((query, value, key)):
            # built here from all three shapes (Layer.__call__ would pass the query's alone)
            with name_scope(self.name):
                self.build(_shape(query), _shape(value), None if key is None else _shape(key))
        return super().__call__(query, value, **kwargs)

    def call(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
             training=None, use_causal_mask=False):
        masks = [getattr(t, "_keras_mask", None) for t in (query, value, key)]
        dtype = self._np_dtype
        query, value = _as_tensor(query, dtype), _as_tensor(value, dtype)
        key = value if key is None else _as_tensor(key, dtype)
        positions = tuple(query.shape[1:-1]), tuple(value.shape[1:-1])
        if query.ndim > 3 or value.ndim > 3 or key.ndim > 3:
            # Keras's attention_axes=None: every axis between batch and features, attended
            # jointly, which is attention over those positions flattened into one axis
            query, value, key = (_flat_positions(x) for x in (query, value, key))
            masks = [None if m is None else _flat_positions(convert_to_tensor(m), features=False)
                     for m in masks]
            if attention_mask is not None:
                attention_mask = reshape(convert_to_tensor(attention_mask),
                                         (-1, query.shape[1], value.shape[1]))
        _check_shapes(self.name, query=query, value=value, key=key)
        for what, x, dense in (("query", query, self._query_dense),
                               ("value", value, self._value_dense), ("key", key, self._key_dense)):
            if x.shape[-1] != dense.kernel_shape[0]:
                raise ValueError(f"{self.name}: was built for {what}s of {dense.kernel_shape[0]} "
                                 f"features, got shape {tuple(x.shape)}")
        if key.shape[-2] != value.shape[-2]:
            raise ValueError(f"{self.name}: key and value need the same number of positions, "
                             f"got shapes {tuple(key.shape)} and {tuple(value.shape)}")
        q = self._query_dense(query, scale=1.0 / math.sqrt(self.key_dim))  # (B, H, Tq, Dk)
        k = self._key_dense(key)                                          # (B, H, Tk, Dk)
        v = self._value_dense(value)                                      # (B, H, Tv, Dv)
        scores = matmul(q, k, transpose_b=True)                           # (B, H, Tq, Tk)
        keep = _keep_mask(masks, scores, attention_mask, use_causal_mask)
        weights = _masked_softmax(scores, None if keep is None else _expand(keep, 1))
        attended = weights
        if training and self.dropout > 0:
            attended = dropout(weights, self.dropout, seed=self.seed)
        output = self._output_dense(matmul(attended, v))                 # (B, H, Tq, Dv) in
        if len(positions[0]) > 1 or len(positions[1]) > 1:  # the positions' own axes again
            output = reshape(output, (-1,) + positions[0] + tuple(output.shape[2:]))
            weights = reshape(weights, (-1, self.num_heads) + positions[0] + positions[1])
        return (output, weights) if return_attention_scores else output

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        return tuple(query_shape[:-1]) + (self._output_shape or (query_shape[-1],))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "output_shape": None if self._output_shape is None else list(self._output_shape),
                "attention_axes": self.attention_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": _maybe(self.kernel_regularizer),
                "bias_regularizer": _maybe(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint), "seed": self.seed}


def _keep_mask(masks, scores, attention_mask, use_causal_mask):
    """(B, Tq, Tk) or None, as Keras's: the explicit mask, the Keras masks of the query (rows),
    value and key (columns), and causality."""
    q_mask, v_mask, k_mask = masks
    return _combine(attention_mask,
                    None if q_mask is None else _expand(_combine(q_mask), -1),
                    None if v_mask is None else _expand(_combine(v_mask), -2),
                    None if k_mask is None else _expand(_combine(k_mask), -2),
                    _causal(scores) if use_causal_mask else None)


def _flat_positions(x, features=True):
    """``(batch, positions..., features)`` as ``(batch, positions, features)`` (a mask,
    ``features=False``: ``(batch, positions...)`` as ``(batch, positions)``)."""
    if x.ndim == (3 if features else 2):
        return x
    tail = (x.shape[-1],) if features else ()
    return reshape(x, (-1, math.prod(x.shape[1:x.ndim - len(tail)])) + tail)


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _maybe(obj):
    return None if obj is None else serialize(obj)


def _positive(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"MultiHeadAttention: {what} must be a positive integer, got {value!r}")
    return int(value)
