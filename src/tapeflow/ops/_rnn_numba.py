"""numba kernels of one recurrent timestep, float32 (imported by ``rnn_jit`` only where numba
is): LSTM, GRU (reset_after, Keras's default) and SimpleRNN, with Keras's default activations.

Layouts (all C-contiguous, as ``rnn.py`` allocates them): ``proj`` and ``d_proj`` are
``(batch, time, gates * units)`` in Keras's gate order (LSTM i, f, g, o; GRU z, r, h);
``states`` is ``(n_states, time + 1, batch, units)`` (h, and LSTM's c, at every step boundary);
``saved`` is ``(time, saved_planes, batch, units)``: what ``rnn_kernels`` saves for each step.
``t`` is the step.  Loops run over whole arrays indexed by ``t`` (not strided views), so each
inner loop has unit stride and is vectorized; a state read at step t and written at t + 1 comes
as an array of its own (a load and stores through one array at a run-time distance keep a loop
from being vectorized), and each gate's block of a row is written by a loop of its own.

Masks (Keras's, ``keep`` ``(batch, time)``, bool).  Forward, a masked row's step is computed
and saved as any other (the workspace stays numpy's: either path's backward reads every row of
it), then ``keep_masked_rows`` puts its states back (one small kernel for every cell: masked
forward kernels measured no faster and cost ~5 s more of compiling, cold).  Backward, the
step kernels take the mask as optional arguments, with what the masked way needs; left out
(None), numba prunes each ``keep is None`` branch when it compiles, so the unmasked steps are
the loops they were before masks.  A masked row passes its states' cotangents through and its
gates get none; ``through`` then holds the part of h's cotangent through the later step's
``h @ U`` (the caller's matmul), ``dh`` the rest, and ``carry`` the cotangent of the output a
masked step repeated, which the last unmasked step before it takes on (none with
``zero_output``: a masked step outputs zeros).
"""
import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

_F = np.float32
# FMA contraction only: reassociation would fold exp's rounding trick away
_MATH = {"contract"}
_LOG2E, _LN2_HI, _LN2_LO = _F(1.4426950408889634), _F(0.693359375), _F(-2.12194440e-4)
_ROUND = _F(12582912.0)  # 1.5 * 2**23: adding and subtracting it rounds to an integer
# exp's range: above ln(FLT_MAX) it is inf; below -86.5 it is under 3e-38 and given as 0 (2**n is
# built from the bits of n + 126, a normal exponent, times 2)
_EXP_MAX, _EXP_MIN = _F(88.72284), _F(-86.5)
_INF, _ZERO = _F(np.inf), _F(0.0)
_ONE, _TWO = _F(1.0), _F(2.0)


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits`` (an LLVM bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))
    return types.float32(types.int32), codegen


@numba.njit(inline="always", fastmath=_MATH, error_model="numpy")
def _exp(x):
    """Cephes's ``expf``: x = n ln2 + r, a degree-5 polynomial in r, times 2**n built from
    its bits; 1.5e-7 relative at most.  inf above float32's range, 0 below -86.5 (what the
    activations need of it), NaN passed through (every comparison with it is false)."""
    c = _EXP_MAX if x > _EXP_MAX else x
    c = _EXP_MIN if c < _EXP_MIN else c
    n = (c * _LOG2E + _ROUND) - _ROUND
    r = c - n * _LN2_HI - n * _LN2_LO
    p = _F(1.9875691500e-4) * r + _F(1.3981999507e-3)
    p = p * r + _F(8.3334519073e-3)
    p = p * r + _F(4.1665795894e-2)
    p = p * r + _F(1.6666665459e-1)
    p = p * r + _F(5.0000001201e-1)
    y = (p * (r * r) + r + _ONE) * _TWO
    y = y * _float32_from_bits((np.int32(n) + np.int32(126)) << np.int32(23))
    y = _INF if x > _EXP_MAX else y
    return _ZERO if x < _EXP_MIN else y


@numba.njit(inline="always", fastmath=_MATH, error_model="numpy")
def _sigmoid(x):
    return _ONE / (_ONE + _exp(-x))


@numba.njit(inline="always", fastmath=_MATH, error_model="numpy")
def _tanh(x):
    """Cephes's ``tanhf``: an odd polynomial below 0.625 (where ``1 - 2 / (exp(2x) + 1)``
    would lose relative accuracy), that expression above."""
    a = -x if x < 0 else x
    s = x * x
    small = (((_F(-5.70498872745e-3) * s + _F(2.06390887954e-2)) * s
              - _F(5.37397155531e-2)) * s + _F(1.33314422036e-1)) * s - _F(3.33332819422e-1)
    small = small * s * x + x
    large = _ONE - _TWO / (_exp(_TWO * a) + _ONE)
    large = large if x >= 0 else -large
    return small if a < _F(0.625) else large


@numba.njit(cache=True)
def keep_masked_rows(states, t, keep):
    """After step ``t`` of any cell: a masked row's states are those before the step."""
    for b in range(states.shape[2]):
        if not keep[b, t]:
            for k in range(states.shape[0]):
                for j in range(states.shape[3]):
                    states[k, t + 1, b, j] = states[k, t, b, j]


@numba.njit(inline="always")
def _pass_masked_row(b, t, dh, through, d_seq, carry, zero_output, d_proj, d_inner):
    """Step ``t`` back for a masked row: its h's cotangent passes on whole (into ``dh``), the
    output it repeated adds its cotangent to ``carry``, its gates get none."""
    for j in range(dh.shape[1]):
        dh[b, j] += through[b, j]
    if not zero_output:
        for j in range(dh.shape[1]):
            carry[b, j] += d_seq[b, t, j]
    for j in range(d_proj.shape[2]):
        d_proj[b, t, j] = _ZERO
        d_inner[b, t, j] = _ZERO


@numba.njit(inline="always", fastmath=_MATH, error_model="numpy")
def _h_cotangent_kept(b, t, j, dh, through, d_seq, carry):
    """The cotangent of an unmasked row's new h at step ``t``: what came back through the state
    and the step's own output plus the masked steps' after it, which ``carry`` gives up."""
    h = (dh[b, j] + through[b, j]) + (d_seq[b, t, j] + carry[b, j])
    carry[b, j] = _ZERO
    return h


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def lstm_forward_step(z, proj, t, c_prev, states, saved):
    """Step ``t``: gates from ``z = h @ U`` plus the projected input, the new c and h
    (``c_prev`` is ``states[1, t]``)."""
    batch, units = states.shape[2], states.shape[3]
    for b in range(batch):
        for j in range(units):
            i = _sigmoid(z[b, j] + proj[b, t, j])
            f = _sigmoid(z[b, units + j] + proj[b, t, units + j])
            g = _tanh(z[b, 2 * units + j] + proj[b, t, 2 * units + j])
            o = _sigmoid(z[b, 3 * units + j] + proj[b, t, 3 * units + j])
            c = f * c_prev[b, j] + i * g
            th = _tanh(c)
            saved[t, 0, b, j] = i
            saved[t, 1, b, j] = f
            saved[t, 2, b, j] = g
            saved[t, 3, b, j] = o
            saved[t, 4, b, j] = th
            states[1, t + 1, b, j] = c
            states[0, t + 1, b, j] = o * th


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def lstm_backward_step(dh, through, dc, d_seq, t, c_prev, saved, d_proj, h_bar, c_bar,
                       keep=None, carry=None, zero_output=False):
    """Step ``t`` back: ``dh`` holds the cotangent of its h from the later steps (the sequence
    output's ``d_seq[:, t]`` is added here), ``dc`` that of its c, which becomes that of the
    c before the step; the gates' pre-activation cotangents go to ``d_proj[:, t]``.
    ``h_bar`` and ``c_bar`` are ``(units,)`` scratch rows (one loop over the row measured 14 us
    against 2-5 a gate block).  ``through``: unmasked, ``dh``'s own array (the caller's matmul
    writes all of the cotangent of the h before the step there); masked, an array of its own
    for that part, and ``dh`` carries the rest (a masked row's)."""
    batch, units = dh.shape
    for b in range(batch):
        if keep is not None and not keep[b, t]:
            _pass_masked_row(b, t, dh, through, d_seq, carry, zero_output, d_proj, d_proj)
            continue
        for j in range(units):
            f = saved[t, 1, b, j]
            o = saved[t, 3, b, j]
            th = saved[t, 4, b, j]
            if keep is None:
                h = dh[b, j] + d_seq[b, t, j]
            else:
                h = _h_cotangent_kept(b, t, j, dh, through, d_seq, carry)
                dh[b, j] = _ZERO
            c = dc[b, j] + h * o * (_ONE - th * th)
            h_bar[j] = h
            c_bar[j] = c
            dc[b, j] = c * f
        for j in range(units):
            i = saved[t, 0, b, j]
            d_proj[b, t, j] = c_bar[j] * saved[t, 2, b, j] * i * (_ONE - i)
        for j in range(units):
            f = saved[t, 1, b, j]
            d_proj[b, t, units + j] = c_bar[j] * c_prev[b, j] * f * (_ONE - f)
        for j in range(units):
            g = saved[t, 2, b, j]
            d_proj[b, t, 2 * units + j] = c_bar[j] * saved[t, 0, b, j] * (_ONE - g * g)
        for j in range(units):
            o = saved[t, 3, b, j]
            d_proj[b, t, 3 * units + j] = h_bar[j] * saved[t, 4, b, j] * o * (_ONE - o)


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def gru_forward_step(z, proj, t, rb, h_prev, states, saved):
    """Step ``t``: ``z = h @ U``, ``rb`` the recurrent bias (zeros where there is none); saves
    the gates z, r, the candidate's inner part ``h @ U_h + rb_h`` and the candidate."""
    batch, units = h_prev.shape
    for b in range(batch):
        for j in range(units):
            zg = _sigmoid(proj[b, t, j] + z[b, j] + rb[j])
            r = _sigmoid(proj[b, t, units + j] + z[b, units + j] + rb[units + j])
            rh = z[b, 2 * units + j] + rb[2 * units + j]
            hh = _tanh(proj[b, t, 2 * units + j] + r * rh)
            saved[t, 0, b, j] = zg
            saved[t, 1, b, j] = r
            saved[t, 2, b, j] = rh
            saved[t, 3, b, j] = hh
            states[0, t + 1, b, j] = (h_prev[b, j] - hh) * zg + hh


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def gru_backward_step(dh, through, d_seq, t, h_prev, saved, d_proj, d_inner, h_bar, a_bar,
                      keep=None, carry=None, zero_output=False):
    """Step ``t`` back: the cotangent of its h is ``dh`` (the part through z * h of the step
    after) plus ``through`` (the part through that step's ``h @ U``) plus ``d_seq[:, t]``;
    ``dh`` becomes the part of the h before the step through z * h.  The gates'
    pre-activation cotangents go to ``d_proj[:, t]``, those of ``h @ U (+ rb)`` to
    ``d_inner[:, t]`` (the candidate's scaled by r).  ``h_bar``, ``a_bar``: scratch rows."""
    batch, units = dh.shape
    for b in range(batch):
        if keep is not None and not keep[b, t]:
            _pass_masked_row(b, t, dh, through, d_seq, carry, zero_output, d_proj, d_inner)
            continue
        for j in range(units):
            zg = saved[t, 0, b, j]
            hh = saved[t, 3, b, j]
            if keep is None:
                h = dh[b, j] + through[b, j] + d_seq[b, t, j]
            else:
                h = _h_cotangent_kept(b, t, j, dh, through, d_seq, carry)
            h_bar[j] = h
            a_bar[j] = h * (_ONE - zg) * (_ONE - hh * hh)
            dh[b, j] = h * zg
        for j in range(units):
            zg = saved[t, 0, b, j]
            v = h_bar[j] * (h_prev[b, j] - saved[t, 3, b, j]) * zg * (_ONE - zg)
            d_proj[b, t, j] = v
            d_inner[b, t, j] = v
        for j in range(units):
            r = saved[t, 1, b, j]
            v = a_bar[j] * saved[t, 2, b, j] * r * (_ONE - r)
            d_proj[b, t, units + j] = v
            d_inner[b, t, units + j] = v
        for j in range(units):
            d_proj[b, t, 2 * units + j] = a_bar[j]
        for j in range(units):
            d_inner[b, t, 2 * units + j] = a_bar[j] * saved[t, 1, b, j]


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def simple_forward_step(z, proj, t, states, saved):
    """Step ``t``: ``tanh(x_t @ W + b + h @ U)``, saved before any mask."""
    batch, units = z.shape
    for b in range(batch):
        for j in range(units):
            new = _tanh(proj[b, t, j] + z[b, j])
            saved[t, 0, b, j] = new
            states[0, t + 1, b, j] = new


@numba.njit(cache=True, fastmath=_MATH, error_model="numpy")
def simple_backward_step(dh, through, d_seq, t, saved, d_proj, keep=None, carry=None,
                         zero_output=False):
    """Step ``t`` back: ``dh`` (from the step after) plus ``d_seq[:, t]`` through tanh into
    ``d_proj[:, t]``; the caller's matmul makes ``through`` the h before's (``through`` as in
    ``lstm_backward_step``)."""
    batch, units = dh.shape
    for b in range(batch):
        if keep is not None and not keep[b, t]:
            _pass_masked_row(b, t, dh, through, d_seq, carry, zero_output, d_proj, d_proj)
            continue
        for j in range(units):
            new = saved[t, 0, b, j]
            if keep is None:
                h = dh[b, j] + d_seq[b, t, j]
            else:
                h = _h_cotangent_kept(b, t, j, dh, through, d_seq, carry)
                dh[b, j] = _ZERO
            d_proj[b, t, j] = h * (_ONE - new * new)
