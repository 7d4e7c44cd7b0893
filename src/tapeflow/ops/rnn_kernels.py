"""Array code for the fused recurrent sequences of ``rnn.py``: one step forward and one step
back of each cell kind (Keras's default activations: tanh, with sigmoid gates).

The steps write into arrays the caller allocated once per call (``out=``), never into their
operands.  Each step reads and writes ``(batch, units)`` planes, each one contiguous (a pass
over a contiguous plane is one plain loop, over a column block of ``(batch, gates * units)``
one loop per row, some 2-3x slower at these sizes):

- ``before`` and ``after``: the states before and after the step;
- ``S``: what the step saves for the way back, ``(saved_planes, batch, units)``;
- ``p``: the projected input of the step, ``x_t @ kernel + bias``, as ``(batch, gates, units)``
  (a strided view of the op's operand);
- ``z``: a ``(batch, gates * units)`` scratch row for ``h @ U``: the gates come from one
  matmul (as cuDNN's and oneDNN's cells), ``p`` is subtracted there in place, and one copy
  spreads the row into ``S``'s planes;
- ``D``: ``(gates, batch, units)``, which ``backward`` fills with the cotangent of the
  projected input, gate by gate;
- ``tmp``: two ``(batch, units)`` scratch planes.

``forward`` gets the recurrent kernel negated (``-U``: a sigmoid is ``1 / (1 + exp(-x))``,
so the matmul gives ``-x`` directly).  ``backward`` gets ``d_new``, the cotangents of the new
states, in the caller's arrays, which it may overwrite: it returns the cotangents of the
states before the step, without the recurrent matmul's part (``dz @ U.T`` for the ``h``
state, which the caller adds: ``None`` where there is no other).  ``to_inner(D, S)`` turns
``D`` in place into the cotangent of ``h @ U (+ rb)`` (GRU scales its candidate part by the
reset gate); the caller turns those of every step into ``dU`` and ``d rb`` with one matmul.
"""
import numpy as np

__all__ = ["KERNELS", "overflow_ignored"]


def overflow_ignored():
    """The context the steps run in: ``exp`` of a large argument overflows to inf on purpose
    (``1 / (1 + inf)`` is sigmoid's limit 0).  numpy's error state (CuPy has none: it gives
    inf silently)."""
    return np.errstate(over="ignore")


def _sigmoid_of_negated(xp, neg, s):
    """``s = 1 / (1 + exp(neg))``: ``neg`` holds ``-x`` as ``(batch, gates, units)``, ``s``
    gets ``sigmoid(x)`` gate-major.  One ``exp`` pass over a contiguous array (numpy's float32
    ``exp`` is vectorized where its ``tanh`` is not: about half the time), exact limits at
    both ends (under ``overflow_ignored``)."""
    s.transpose(1, 0, 2)[...] = neg
    xp.exp(s, out=s)
    s += 1.0
    xp.divide(1.0, s, out=s)


def _one_minus_square(xp, x, out):
    """``out = 1 - x * x`` (tanh's derivative from its value)."""
    xp.multiply(x, x, out=out)
    xp.subtract(1.0, out, out=out)


def _sigmoid_grad(xp, s, out):
    """``out = s (1 - s)`` (sigmoid's derivative from its value)."""
    xp.subtract(1.0, s, out=out)
    out *= s


def _negated_gates(xp, h, neg_U, p, z):
    """``z = -(h @ U + p)`` as ``(batch, gates, units)``: the matmul, then ``p`` in place."""
    xp.matmul(h, neg_U, out=z)
    z = z.reshape(p.shape)
    z -= p
    return z


class _SimpleRNN:
    gates, n_states, saved_planes = 1, 1, 1  # S: the new state before any mask
    inner_is_projected = True

    @staticmethod
    def forward(xp, p, before, after, S, neg_U, rb, z, tmp):
        (h,), (new,) = before, S[:1]
        xp.negative(_negated_gates(xp, h, neg_U, p, z)[:, 0], out=new)
        xp.tanh(new, out=new)
        after[0][...] = new

    @staticmethod
    def backward(xp, before, S, d_new, D, tmp):
        _one_minus_square(xp, S[0], D[0])
        D[0] *= d_new[0]
        return [None]

    @staticmethod
    def to_inner(xp, D, S):
        pass


class _LSTM:
    gates, n_states, saved_planes = 4, 2, 5  # S: the gates i, f, g, o; tanh(c)
    inner_is_projected = True

    @staticmethod
    def forward(xp, p, before, after, S, neg_U, rb, z, tmp):
        (h, c), (h_new, c_new) = before, after
        i, f, g, o, th = S
        neg = _negated_gates(xp, h, neg_U, p, z)
        # all four gates through one sigmoid pass: g = tanh(x) = 2 sigmoid(2x) - 1; its exp
        # spreads the gates into their planes
        neg[:, 2] *= 2.0
        _sigmoid_of_negated(xp, neg, S[:4])
        g *= 2.0
        g -= 1.0
        xp.multiply(f, c, out=c_new)
        xp.multiply(i, g, out=tmp[0])
        c_new += tmp[0]
        xp.tanh(c_new, out=th)
        xp.multiply(o, th, out=h_new)

    @staticmethod
    def backward(xp, before, S, d_new, D, tmp):
        (_, c), (dh, dc_in) = before, d_new
        i, f, g, o, th = S
        di, df, dg, do = D
        dc, ds = tmp
        # dc = dc_in + dh * o * (1 - th^2)
        _one_minus_square(xp, th, dc)
        dc *= o
        dc *= dh
        dc += dc_in
        # each gate's pre-activation: sigmoid' = s (1 - s), tanh' = 1 - t^2
        xp.multiply(dh, th, out=do)
        _sigmoid_grad(xp, o, ds)
        do *= ds
        xp.multiply(dc, g, out=di)
        _sigmoid_grad(xp, i, ds)
        di *= ds
        xp.multiply(dc, c, out=df)
        _sigmoid_grad(xp, f, ds)
        df *= ds
        _one_minus_square(xp, g, dg)
        dg *= i
        dg *= dc
        return [None, xp.multiply(dc, f, out=dc_in)]

    @staticmethod
    def to_inner(xp, D, S):
        pass


class _GRU:
    """reset_after=True (Keras 2's and 3's default): ``rb`` is the recurrent bias or None."""
    gates, n_states, saved_planes = 3, 1, 4  # S: the gates z, r; h @ U's candidate part; hh
    inner_is_projected = False  # the candidate's part of h @ U is scaled by r

    @staticmethod
    def forward(xp, p, before, after, S, neg_U, rb, z, tmp):
        (h,), (new,) = before, after
        zg, r, rh, hh = S
        xp.matmul(h, neg_U, out=z)  # -(h @ U)
        z3 = z.reshape(p.shape)
        if rb is not None:
            z3 -= rb.reshape(p.shape[1:])
        xp.negative(z3[:, 2], out=rh)
        zr = z3[:, :2]
        zr -= p[:, :2]
        _sigmoid_of_negated(xp, zr, S[:2])
        xp.multiply(r, rh, out=hh)
        hh += p[:, 2]
        xp.tanh(hh, out=hh)
        # z * h + (1 - z) * hh
        xp.subtract(h, hh, out=new)
        new *= zg
        new += hh

    @staticmethod
    def backward(xp, before, S, d_new, D, tmp):
        (h,), (dh,) = before, d_new
        zg, r, rh, hh = S
        dzg, dr, da = D
        one_minus_z, ds = tmp
        xp.subtract(1.0, zg, out=one_minus_z)
        # da = dh (1 - z) (1 - hh^2)
        _one_minus_square(xp, hh, da)
        da *= one_minus_z
        da *= dh
        # dz = dh (h - hh) z (1 - z)
        xp.subtract(h, hh, out=dzg)
        dzg *= dh
        dzg *= zg
        dzg *= one_minus_z
        # dr = da rh r (1 - r)
        xp.multiply(da, rh, out=dr)
        _sigmoid_grad(xp, r, ds)
        dr *= ds
        return [dh * zg]

    @staticmethod
    def to_inner(xp, D, S):
        D[2] *= S[1]  # the candidate's inner part is scaled by r


KERNELS = {"simple_rnn": _SimpleRNN, "lstm": _LSTM, "gru": _GRU}
