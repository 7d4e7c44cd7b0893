"""The LSTM's timesteps compiled with numba (the optional ``jit`` extra): one pass a step.

numpy runs a step of ``rnn_kernels._LSTM`` as some 14 calls forward and 20 back, each a pass
over a ``(batch, units)`` plane; on W3's shapes those passes, not the recurrent GEMMs, were most
of the sequence's time (issue 22), and numpy's float32 ``exp`` and ``tanh`` cost 1.9 and 2.8 ns
an element on this AVX2 machine.  Here a step is the recurrent GEMM (numpy's BLAS) and one
compiled loop that reads the gates' pre-activations and writes every saved plane and state, with
an ``exp`` that the compiler vectorizes (Cephes's float32 polynomial: 8e-8 relative, against
numpy's 2e-7).  The workspace is the one ``rnn.py`` lays out, so either path's forward feeds
either path's backward.

Used for float32 numpy arrays without a mask when numba imports and ``TAPEFLOW_JIT`` is not
``0``; everything else (CuPy, other dtypes, masks, the strict device) runs the numpy steps.
Compiled on first use and cached on disk (numba's ``cache=True``, next to this file or in
``NUMBA_CACHE_DIR``); ``jit.py`` loads them.
"""
import numpy as np

from . import jit

__all__ = ["lstm_kernels", "run_forward", "run_backward"]


def lstm_kernels(*arrays):
    """``(forward_step, backward_step)`` compiled, or None where the numpy steps must run:
    numba missing or switched off, or an operand that is not a float32 numpy array."""
    module = jit.kernels("tapeflow.ops._lstm_numba") if jit.plain(*arrays) else None
    return None if module is None else (module.forward_step, module.backward_step)


def run_forward(kernels, projected, U, states, saved):
    """The timesteps forward into ``rnn.py``'s workspace views ``states`` and ``saved``."""
    forward_step = kernels[0]
    proj = np.ascontiguousarray(projected)
    z = np.empty((proj.shape[0], U.shape[1]), np.float32)
    for t in range(proj.shape[1]):
        np.matmul(states[0, t], U, out=z)
        forward_step(z, proj, t, states[1, t], states, saved)


def run_backward(kernels, U, states, saved, d_seq, d_states):
    """Back through the timesteps: the cotangent of the projected inputs, and those of the
    initial h and c (``d_states``: the last ones', not overwritten)."""
    backward_step = kernels[1]
    batch, steps, units = d_seq.shape
    d_seq = np.ascontiguousarray(d_seq, dtype=np.float32)
    d_proj = np.empty((batch, steps, U.shape[1]), np.float32)
    dh, dc = (np.array(d, dtype=np.float32) for d in d_states)  # copies: overwritten
    U_T = U.T
    h_bar, c_bar = np.empty(units, np.float32), np.empty(units, np.float32)
    for t in range(steps - 1, -1, -1):
        backward_step(dh, dc, d_seq, t, states[1, t], saved, d_proj, h_bar, c_bar)
        np.matmul(d_proj[:, t], U_T, out=dh)
    return d_proj, [dh, dc]
