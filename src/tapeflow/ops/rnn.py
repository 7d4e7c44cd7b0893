"""Whole-sequence recurrent primitives: ``SimpleRNNSequence``, ``LSTMSequence``, ``GRUSequence``.

One op runs a cell over every timestep of a sequence (the loop in array code, the step math of
``rnn_kernels.py``), so a traced training step holds one equation per layer instead of a few
dozen per timestep.  Its operands are the projected inputs ``x @ kernel + bias`` of every step
``(batch, time, gates * units)`` (one matmul, outside), the recurrent kernel, GRU's recurrent
bias, the initial states (zeros when not given) and a Keras mask ``(batch, time)``; its outputs
the output sequence, the last states, and a workspace (what each step saved, for the way back).

Masks are Keras's: a masked step keeps the states before it and outputs the last output again
(zeros before the first unmasked step, or at every masked step with ``zero_output``).

The gradient is ``<Kind>SequenceGrad``: back through time in array code from the workspace,
O(T).  Its own gradient (second order) differentiates the same computation written in tapeflow
ops (``unrolled_sequence``) on a tape, as ``WhileGrad``'s does.

Where numba is (the ``jit`` extra), the forward and the gradient run as compiled steps
(``rnn_jit``) on large float32 numpy arrays, masked or not; the array code here is their
reference, and runs everywhere else.
"""
import numpy as np

from .. import backend
from ..core.context import context
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tape import GradientTape
from .creation import zeros_like
from .elementwise import identity, sigmoid, tanh
from . import rnn_jit
from .rnn_kernels import KERNELS, overflow_ignored
from .shape import reshape, split, stack, where

__all__ = ["recurrent_sequence", "unrolled_sequence"]

_NAMES = {"simple_rnn": "SimpleRNN", "lstm": "LSTM", "gru": "GRU"}


def _layout(operands, kind, has_bias, has_init, has_mask):
    """(projected, U, recurrent bias, initial states, mask) from the operand list (Nones where
    an operand is absent), and how many operands that took."""
    kernel = KERNELS[kind]
    it = iter(operands)
    projected, U = next(it), next(it)
    rb = next(it) if has_bias else None
    init = [next(it) for _ in range(kernel.n_states)] if has_init else None
    mask = next(it) if has_mask else None
    used = 2 + bool(has_bias) + (kernel.n_states if has_init else 0) + bool(has_mask)
    return projected, U, rb, init, mask, used


def _workspace_views(ws, kernel, steps, batch, units):
    """The workspace ``(rows, batch, units)`` as ``(states, saved)``: every state at every step
    boundary ``(n_states, steps + 1, batch, units)`` (the initial states first), and the
    planes each step saved, ``(steps, saved_planes, batch, units)``.  Time-major and a plane
    per gate, so each of a step's planes is contiguous, and all steps' ``h`` are one block."""
    n = kernel.n_states * (steps + 1)
    states = ws[:n].reshape(kernel.n_states, steps + 1, batch, units)
    return states, ws[n:].reshape(steps, kernel.saved_planes, batch, units)


def _workspace_rows(kernel, steps):
    return kernel.n_states * (steps + 1) + kernel.saved_planes * steps


def _sequence_forward(*operands, kind, has_bias, has_init, has_mask, zero_output):
    kernel = KERNELS[kind]
    projected, U, rb, init, mask, _ = _layout(operands, kind, has_bias, has_init, has_mask)
    xp = backend.array_module(projected)
    batch, steps = projected.shape[:2]
    units = U.shape[0]
    dtype = projected.dtype
    if context().trace is not None:  # shape inference: the types alone
        ws = xp.zeros((_workspace_rows(kernel, steps), batch, units), dtype)
        states = [xp.zeros((batch, units), dtype) for _ in range(kernel.n_states)]
        return (xp.zeros((batch, steps, units), dtype),) + tuple(states) + (ws,)
    ws = xp.empty((_workspace_rows(kernel, steps), batch, units), dtype)
    states, saved = _workspace_views(ws, kernel, steps, batch, units)
    for k in range(kernel.n_states):
        states[k, 0] = 0.0 if init is None else init[k]
    jit = rnn_jit.kernels(projected, U)
    if jit is not None:
        rnn_jit.run_forward(jit, kind, projected, U, rb, states, saved, mask)
        seq = None if mask is None else rnn_jit.masked_outputs(states, mask, zero_output)
    else:
        seq = _numpy_steps(xp, kernel, projected, U, rb, mask, zero_output, states, saved)
    if mask is None:  # every output is the new h: one copy, batch first
        seq = xp.ascontiguousarray(states[0, 1:].transpose(1, 0, 2))
    return (seq,) + tuple(states[k, steps].copy() for k in range(kernel.n_states)) + (ws,)


def _numpy_steps(xp, kernel, projected, U, rb, mask, zero_output, states, saved):
    """The timesteps forward in array code (``rnn_kernels``) into the workspace views; the
    output sequence where a mask makes it differ from the states (else None)."""
    batch, steps = projected.shape[:2]
    units = U.shape[0]
    dtype = projected.dtype
    by_gate = projected.reshape(batch, steps, kernel.gates, units)
    neg_U = -U
    z = xp.empty((batch, kernel.gates * units), dtype)
    tmp = [xp.empty((batch, units), dtype) for _ in range(2)]
    seq = None if mask is None else xp.empty((batch, steps, units), dtype)
    output = None if mask is None else xp.zeros((batch, units), dtype)
    with overflow_ignored():
        for t in range(steps):
            after = list(states[:, t + 1])
            kernel.forward(xp, by_gate[:, t], list(states[:, t]), after, saved[t], neg_U, rb,
                           z, tmp)
            if mask is not None:
                keep = mask[:, t, None]
                output = xp.where(keep, after[0], 0.0 if zero_output else output)
                seq[:, t] = output
                for new, old in zip(after, states[:, t]):  # a masked row keeps its states
                    xp.copyto(new, old, where=~keep)
    return seq


def _sequence_backward(*operands, kind, has_bias, has_init, has_mask, zero_output):
    """Operands: the forward's, its workspace, then the cotangents of its sequence and last
    states.  Gradients of projected, U, the recurrent bias and the initial states given."""
    kernel = KERNELS[kind]
    projected, U, rb, init, mask, used = _layout(operands, kind, has_bias, has_init, has_mask)
    ws, d_seq, d_states = operands[used], operands[used + 1], list(operands[used + 2:])
    xp = backend.array_module(projected)
    dtype = projected.dtype
    batch, steps = projected.shape[:2]
    units = U.shape[0]
    tracing = context().trace is not None  # shape inference: the types alone
    jit = None if tracing else rnn_jit.kernels(projected, U)
    if jit is not None:
        states, saved = _workspace_views(ws, kernel, steps, batch, units)
        d_proj, d_inner, d_states = rnn_jit.run_backward(jit, kind, U, states, saved, d_seq,
                                                         d_states, mask, zero_output)
        return _weight_grads(d_proj, U, rb, states[0, :steps].transpose(1, 0, 2), d_inner,
                             d_states, has_init)
    new = xp.zeros if tracing else xp.empty  # the loop writes every element
    d_proj = new(projected.shape, dtype)
    # the cotangents of every step's h @ U (+ rb): d_proj's own array where they are the same
    d_inner = d_proj if kernel.inner_is_projected else new(projected.shape, dtype)
    if not tracing:
        states, saved = _workspace_views(ws, kernel, steps, batch, units)
        gate_shape = (batch, steps, kernel.gates, units)
        d_proj_by_gate, d_inner_by_gate = d_proj.reshape(gate_shape), d_inner.reshape(gate_shape)
        D = xp.empty((kernel.gates, batch, units), dtype)
        tmp = [xp.empty((batch, units), dtype) for _ in range(2)]
        # the states' cotangents in arrays of our own, which the steps overwrite
        d_states = [d.copy() for d in d_states]
        carry = None  # the cotangent of the output a masked step kept
        for t in range(steps - 1, -1, -1):
            if mask is None:
                d_states[0] += d_seq[:, t]
                d_new = d_states
            else:
                d_out = d_seq[:, t] if carry is None else d_seq[:, t] + carry
                keep = mask[:, t, None].astype(dtype)
                skip = 1.0 - keep
                d_new = [keep * d for d in d_states]
                d_new[0] += keep * d_out
                if not zero_output:
                    carry = skip * d_out
            d_prev = kernel.backward(xp, list(states[:, t]), saved[t], d_new, D, tmp)
            d_proj_by_gate[:, t] = D.transpose(1, 0, 2)
            if d_inner is not d_proj:
                kernel.to_inner(xp, D, saved[t])
                d_inner_by_gate[:, t] = D.transpose(1, 0, 2)
            through_U = xp.matmul(d_inner[:, t], U.T, out=d_new[0])  # d_new[0] is spent
            if d_prev[0] is not None:
                through_U += d_prev[0]
            d_prev[0] = through_U
            if mask is not None:
                d_prev = [a + skip * d for a, d in zip(d_prev, d_states)]
            d_states = d_prev
        hs = states[0, :steps].transpose(1, 0, 2)  # batch first, as d_inner's rows
    else:
        d_states = [xp.zeros((batch, units), dtype) for _ in d_states]
        hs = xp.zeros((batch, steps, units), dtype)
    return _weight_grads(d_proj, U, rb, hs, d_inner, d_states, has_init)


def _weight_grads(d_proj, U, rb, hs, d_inner, d_states, has_init):
    """The gradients ``_sequence_backward`` returns, ``dU`` and ``d rb`` from every step's h
    ``hs`` (batch first) against every step's ``d_inner`` in one matmul."""
    flat = d_inner.reshape(-1, U.shape[1])
    dU = hs.reshape(-1, U.shape[0]).T @ flat
    d_rb = None if rb is None else flat.sum(axis=0)
    grads = [d_proj, dU] + ([] if d_rb is None else [d_rb])
    return tuple(grads + (list(d_states) if has_init else []))


def _attrs(op):
    return {k: op.get_attr(k) for k in ("kind", "has_bias", "has_init", "has_mask",
                                        "zero_output")}


def _or_zeros(d, like):
    return zeros_like(like) if d is None else d


def _rows(op, dys):
    """The cotangents ``dys`` as a list of rows when they carry extra leading axes (a
    jacobian's), with those axes; else ``[dys]`` and ``()``."""
    k, d = next(((k, d) for k, d in enumerate(dys) if d is not None), (0, None))
    lead = () if d is None else tuple(d.shape[:d.ndim - len(op.output_shape(k))])
    if not lead:
        return [list(dys)], lead
    n = int(np.prod(lead))
    flat = [None if d is None else reshape(d, (n,) + tuple(d.shape[len(lead):])) for d in dys]
    return [[None if d is None else d[r] for d in flat] for r in range(n)], lead


def _stacked(rows, lead):
    """Per-row gradients back in one tensor each, the leading axes first."""
    if not lead:
        return rows[0]
    return [None if g is None else reshape(stack([row[i] for row in rows]), lead + tuple(g.shape))
            for i, g in enumerate(rows[0])]


def _per_row(rule):
    """``rule`` for cotangents with extra leading axes (a jacobian's rows): row by row."""
    def vectorized(op, *dys):
        rows, lead = _rows(op, dys)
        return _stacked([rule(op, *row) for row in rows], lead)
    vectorized.__name__ = vectorized.__qualname__ = rule.__name__
    return vectorized


def _sequence_grad(op, *dys):
    attrs = _attrs(op)
    n_states = KERNELS[attrs["kind"]].n_states
    outs = op.outputs
    cotangents = [_or_zeros(d, t) for d, t in zip(dys[:1 + n_states], outs[:1 + n_states])]
    grads = apply(_GRADS[attrs["kind"]], tuple(op.inputs) + (outs[-1],) + tuple(cotangents),
                  attrs)
    grads = list(grads) if isinstance(grads, tuple) else [grads]
    return grads + [None] * (len(op.inputs) - len(grads))  # the mask has none


def _sequence_grad_grad(op, *gs):
    """Second order: the same gradient computed by ``unrolled_sequence``'s ops under a tape,
    differentiated on an outer one."""
    attrs = _attrs(op)
    _, _, _, _, _, used = _layout(op.inputs, **{k: attrs[k] for k in (
        "kind", "has_bias", "has_init", "has_mask")})
    rows, lead = _rows(op, gs)
    with GradientTape(persistent=len(rows) > 1) as outer:  # the forward once for every row
        operands = [identity(t) for t in op.inputs]
        ins, dys = operands[:used], operands[used + 1:]
        floats = ins[:-1] if attrs["has_mask"] else ins
        outer.watch(floats + dys)
        with GradientTape() as inner:
            inner.watch(floats)
            seq, states = unrolled_sequence(attrs["kind"], *_unpack(ins, attrs),
                                            zero_output=attrs["zero_output"])
        grads = inner.gradient([seq] + states, floats, output_gradients=dys)
    results = []
    for row in rows:
        out = outer.gradient(grads, floats + dys,
                             output_gradients=[_or_zeros(g, t) for g, t in zip(row, grads)])
        results.append(out[:len(floats)] + [None] * (used - len(floats)) + [None] +
                       out[len(floats):])
    return _stacked(results, lead)


def _unpack(ins, attrs):
    projected, U, rb, init, mask, _ = _layout(ins, attrs["kind"], attrs["has_bias"],
                                              attrs["has_init"], attrs["has_mask"])
    return projected, U, rb, init, mask


_SEQUENCES, _GRADS = {}, {}
for _kind, _name in _NAMES.items():
    _SEQUENCES[_kind] = def_primitive(f"{_name}Sequence", _sequence_forward, num_outputs=None,
                                      grad=_per_row(_sequence_grad), saves=("inputs", "outputs"))
    _GRADS[_kind] = def_primitive(f"{_name}SequenceGrad", _sequence_backward, num_outputs=None,
                                  grad=_sequence_grad_grad, saves="inputs")


def recurrent_sequence(kind, projected, recurrent_kernel, recurrent_bias=None,
                       initial_states=None, mask=None, zero_output=False):
    """``(outputs (batch, time, units), [last states])`` of a ``kind`` cell ("simple_rnn",
    "lstm", "gru") over ``projected`` (every step's ``x_t @ kernel + bias``) as one op."""
    if kind not in KERNELS:
        raise ValueError(f"recurrent_sequence: kind must be one of {sorted(KERNELS)}, "
                         f"got {kind!r}")
    width = KERNELS[kind].gates * recurrent_kernel.shape[0]
    if projected.ndim != 3 or projected.shape[-1] != width or \
            tuple(recurrent_kernel.shape) != (recurrent_kernel.shape[0], width):
        raise ValueError(f"recurrent_sequence: a {kind} cell of {recurrent_kernel.shape[0]} "
                         f"units takes projected inputs (batch, time, {width}) and a recurrent "
                         f"kernel ({recurrent_kernel.shape[0]}, {width}), got "
                         f"{tuple(projected.shape)} and {tuple(recurrent_kernel.shape)}")
    if mask is not None and mask.dtype != "bool":
        raise TypeError(f"recurrent_sequence: the mask must be bool, got {mask.dtype}")
    operands = [projected, recurrent_kernel]
    if recurrent_bias is not None:
        operands.append(recurrent_bias)
    if initial_states is not None:
        operands += list(initial_states)
    if mask is not None:
        operands.append(mask)
    attrs = {"kind": kind, "has_bias": recurrent_bias is not None,
             "has_init": initial_states is not None, "has_mask": mask is not None,
             "zero_output": bool(zero_output)}
    outs = apply(_SEQUENCES[kind], tuple(operands), attrs)
    return outs[0], list(outs[1:-1])


def unrolled_sequence(kind, projected, recurrent_kernel, recurrent_bias=None,
                      initial_states=None, mask=None, zero_output=False):
    """What ``recurrent_sequence`` computes, step by step in tapeflow ops (its second order)."""
    kernel = KERNELS[kind]
    steps = projected.shape[1]
    states = initial_states
    if states is None:
        zero = zeros_like(projected[:, 0, :recurrent_kernel.shape[0]])
        states = [zero] * kernel.n_states
    states = list(states)
    output = zeros_like(states[0])
    outputs = []
    for t in range(steps):
        new = _op_step(kind, projected[:, t], states, recurrent_kernel, recurrent_bias)
        if mask is None:
            output = new[0]
        else:
            keep = mask[:, t, None]
            output = where(keep, new[0], zeros_like(output) if zero_output else output)
            new = [where(keep, n, s) for n, s in zip(new, states)]
        outputs.append(output)
        states = new
    return stack(outputs, axis=1), states


def _op_step(kind, p, states, U, rb):
    h = states[0]
    inner = h @ U
    if kind == "simple_rnn":
        return [tanh(p + inner)]
    if kind == "lstm":
        i, f, g, o = split(p + inner, 4, axis=-1)
        c = sigmoid(f) * states[1] + sigmoid(i) * tanh(g)
        return [sigmoid(o) * tanh(c), c]
    if rb is not None:
        inner = inner + rb
    xz, xr, xh = split(p, 3, axis=-1)
    rz, rr, rh = split(inner, 3, axis=-1)
    z, r = sigmoid(xz + rz), sigmoid(xr + rr)
    return [z * h + (1.0 - z) * tanh(xh + r * rh)]

