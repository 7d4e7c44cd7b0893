"""Recurrent timesteps compiled with numba (the optional ``jit`` extra): one pass a step.

numpy runs a step of ``rnn_kernels._LSTM`` as some 14 calls forward and 20 back, each a pass
over a ``(batch, units)`` plane; on W3's shapes those passes, not the recurrent GEMMs, were most
of the sequence's time (issue 22), and numpy's float32 ``exp`` and ``tanh`` cost 1.9 and 2.8 ns
an element on this AVX2 machine.  Here a step is the recurrent GEMM (numpy's BLAS) and one
compiled loop that reads the gates' pre-activations and writes every saved plane and state, with
an ``exp`` that the compiler vectorizes (Cephes's float32 polynomial: 8e-8 relative, against
numpy's 2e-7).  The workspace is the one ``rnn.py`` lays out, so either path's forward feeds
either path's backward.

LSTM, GRU and SimpleRNN (``_rnn_numba.py``), with or without a Keras mask (the numpy steps'
semantics: a masked row keeps its states; its output repeats the last one, or is zeros with
``zero_output``).  Used for float32 numpy arrays from ``JIT_FROM`` projected elements, when
numba imports and ``TAPEFLOW_JIT`` is not ``0``; everything else (CuPy, other dtypes, the
strict device) runs the numpy steps.
Compiled on first use and cached on disk (numba's ``cache=True``, next to this file or in
``NUMBA_CACHE_DIR``); ``jit.py`` loads them.
"""
import numpy as np

from ..core.array_rows import TILE_FROM
from . import jit

__all__ = ["kernels", "run_forward", "run_backward"]


# From this many projected elements (all steps): below, numba's start (~1.5 s a process) would
# not pay, and the numpy steps keep small models' numbers where they were.
JIT_FROM = TILE_FROM


def kernels(projected, *arrays):
    """numba's step kernels (``_rnn_numba``), or None where the numpy steps must run: numba
    missing or switched off, an operand that is not a float32 numpy array, or a small one."""
    if projected.size < JIT_FROM or not jit.plain(projected, *arrays):
        return None
    return jit.kernels("tapeflow.ops._rnn_numba")


def run_forward(module, kind, projected, U, rb, states, saved, mask=None):
    """The timesteps forward into ``rnn.py``'s workspace views ``states`` and ``saved``; a
    masked row keeps its states (``mask``: Keras's, ``(batch, time)``, or None)."""
    proj = np.ascontiguousarray(projected)
    z = np.empty((proj.shape[0], U.shape[1]), np.float32)
    keep = None if mask is None else np.ascontiguousarray(mask, dtype=np.bool_)
    if kind == "gru":
        rb = np.zeros(U.shape[1], np.float32) if rb is None else \
            np.ascontiguousarray(rb, dtype=np.float32)
    for t in range(proj.shape[1]):
        np.matmul(states[0, t], U, out=z)
        if kind == "lstm":
            module.lstm_forward_step(z, proj, t, states[1, t], states, saved)
        elif kind == "gru":
            module.gru_forward_step(z, proj, t, rb, states[0, t], states, saved)
        else:
            module.simple_forward_step(z, proj, t, states, saved)
        if keep is not None:
            module.keep_masked_rows(states, t, keep)


def masked_outputs(states, mask, zero_output):
    """The output sequence ``(batch, time, units)`` of a masked forward, from its states: a
    masked step repeats the last output, which is the h its row kept (zeros before the row's
    first unmasked step), or gives zeros with ``zero_output``."""
    shown = mask if zero_output else np.logical_or.accumulate(mask, axis=1)
    # a copy always (ascontiguousarray gives a view of one row or step, which the zeros
    # would overwrite in the workspace); 0.14 ms at W3's shapes, copyto(where=) took 0.6
    seq = states[0, 1:].transpose(1, 0, 2).copy()
    seq[~shown] = 0.0
    return seq


def run_backward(module, kind, U, states, saved, d_seq, d_states, mask=None,
                 zero_output=False):
    """Back through the timesteps: the cotangents of the projected inputs, of every step's
    ``h @ U (+ rb)`` (the same array but for GRU's) and of the initial states (``d_states``:
    the last ones', not overwritten); ``mask`` and ``zero_output`` the forward's."""
    batch, steps, units = d_seq.shape
    d_seq = np.ascontiguousarray(d_seq, dtype=np.float32)
    d_proj = np.empty((batch, steps, U.shape[1]), np.float32)
    d_inner = np.empty_like(d_proj) if kind == "gru" else d_proj
    d = [np.array(x, dtype=np.float32) for x in d_states]  # copies: overwritten
    # the part of h's cotangent through the later step's h @ U where it is kept apart (GRU's
    # h has another way back, a masked row's all of it)
    apart = kind == "gru" or mask is not None
    through = np.zeros((batch, units), np.float32) if apart else d[0]
    U_T = U.T
    rows = [np.empty(units, np.float32) for _ in range(2)]
    # the kernels' optional arguments (none: their unmasked loops): keep, carry, zero_output
    masked = () if mask is None else (np.ascontiguousarray(mask, dtype=np.bool_),
                                      np.zeros((batch, units), np.float32), zero_output)
    for t in range(steps - 1, -1, -1):
        if kind == "lstm":
            module.lstm_backward_step(d[0], through, d[1], d_seq, t, states[1, t], saved, d_proj,
                                      *rows, *masked)
        elif kind == "gru":
            module.gru_backward_step(d[0], through, d_seq, t, states[0, t], saved, d_proj,
                                     d_inner, *rows, *masked)
        else:
            module.simple_backward_step(d[0], through, d_seq, t, saved, d_proj, *masked)
        np.matmul(d_inner[:, t], U_T, out=through)
    if apart:
        d[0] += through
    return d_proj, d_inner, d
