"""Array code for the fused recurrent sequences of ``rnn.py``: one step forward and one step
back of each cell kind (Keras's default activations: tanh, with sigmoid gates).

The steps write into arrays the caller allocated once per call (``out=``), never into their
operands: the states before and after the step (``(batch, units)`` rows of the workspace),
what the step saves for the way back (``saved``: per kind, ``saved_widths`` arrays of
``(batch, width * units)``), and two scratch rows (``scratch``: ``(batch, units)`` each).
Every array a step writes is contiguous, so each pass over it is one plain loop, and the
gates come from one matmul ``h @ U`` (as cuDNN's and oneDNN's cells) written straight into
the saved row that keeps them.

A step gets ``p`` (the projected input of that timestep, ``x_t @ kernel + bias``, a strided
view), ``U`` and the recurrent bias ``rb`` (GRU only, else None).  ``backward`` fills ``dz``
(``(batch, gates * units)``, contiguous) with the cotangent of the step's projected input and
returns the cotangents of the states before it but the recurrent matmul's (``dz @ U.T``, which
the caller adds: it sees ``dz`` after ``to_inner``).  ``to_inner(dz, saved)`` turns ``dz`` in
place into the cotangent of ``h @ U (+ rb)`` (GRU scales its candidate part by the reset
gate): the caller turns those of every step into ``dU`` and ``d rb`` with one matmul.
"""
import numpy as np

__all__ = ["KERNELS", "sigmoid_in_place", "overflow_ignored"]


def overflow_ignored():
    """The context the steps run in: ``exp`` of a large argument overflows to inf on purpose
    (``1 / (1 + inf)`` is sigmoid's limit 0).  numpy's error state (CuPy has none: it gives
    inf silently)."""
    return np.errstate(over="ignore")


def sigmoid_in_place(xp, z):
    """``z = 1 / (1 + exp(-z))`` in place: one transcendental pass (faster than tanh's on
    numpy), exact limits at both ends (under ``overflow_ignored``)."""
    xp.negative(z, out=z)
    xp.exp(z, out=z)
    z += 1.0
    xp.reciprocal(z, out=z)


def _tanh_from_sigmoid(xp, s):
    """``s = sigmoid(2x)`` in place to ``tanh(x) = 2 sigmoid(2x) - 1``."""
    s *= 2.0
    s -= 1.0


def _one_minus_square(xp, x, out):
    """``out = 1 - x * x`` (tanh's derivative from its value)."""
    xp.multiply(x, x, out=out)
    xp.subtract(1.0, out, out=out)


class _SimpleRNN:
    gates, n_states, saved_widths = 1, 1, (1,)  # saved: the new state before any mask
    inner_is_projected = True

    @staticmethod
    def forward(xp, p, before, after, saved, U, rb, scratch):
        (h,), (new,) = before, saved
        xp.matmul(h, U, out=new)
        new += p
        xp.tanh(new, out=new)
        after[0][...] = new

    @staticmethod
    def backward(xp, before, saved, d_new, dz, scratch):
        (new,), (dh,) = saved, d_new
        _one_minus_square(xp, new, dz)
        dz *= dh
        return [None]

    @staticmethod
    def to_inner(xp, dz, saved):
        pass


class _LSTM:
    gates, n_states, saved_widths = 4, 2, (4, 1)  # saved: the gates i, f, g, o; tanh(c)
    inner_is_projected = True

    @staticmethod
    def forward(xp, p, before, after, saved, U, rb, scratch):
        (h, c), (h_new, c_new), (z, th) = before, after, saved
        u = h.shape[-1]
        xp.matmul(h, U, out=z)
        z += p
        # every gate through one sigmoid pass: g = tanh(x) = 2 sigmoid(2x) - 1
        z[:, 2 * u:3 * u] *= 2.0
        sigmoid_in_place(xp, z)
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        _tanh_from_sigmoid(xp, g)
        xp.multiply(f, c, out=c_new)
        xp.multiply(i, g, out=scratch[0])
        c_new += scratch[0]
        xp.tanh(c_new, out=th)
        xp.multiply(o, th, out=h_new)

    @staticmethod
    def backward(xp, before, saved, d_new, dz, scratch):
        (_, c), (z, th), (dh, dc_in) = before, saved, d_new
        u = c.shape[-1]
        i, f, g, o = (z[:, k * u:(k + 1) * u] for k in range(4))
        di, df, dg, do = (dz[:, k * u:(k + 1) * u] for k in range(4))
        dc, tmp = scratch
        # dc = dc_in + dh * o * (1 - th^2)
        _one_minus_square(xp, th, dc)
        dc *= o
        dc *= dh
        dc += dc_in
        # each gate's pre-activation: sigmoid' = s (1 - s), tanh' = 1 - t^2
        xp.multiply(dh, th, out=do)
        xp.subtract(1.0, o, out=tmp)
        tmp *= o
        do *= tmp
        xp.multiply(dc, g, out=di)
        xp.subtract(1.0, i, out=tmp)
        tmp *= i
        di *= tmp
        xp.multiply(dc, c, out=df)
        xp.subtract(1.0, f, out=tmp)
        tmp *= f
        df *= tmp
        _one_minus_square(xp, g, dg)
        dg *= i
        dg *= dc
        return [None, dc * f]

    @staticmethod
    def to_inner(xp, dz, saved):
        pass


class _GRU:
    """reset_after=True (Keras 2's and 3's default): ``rb`` is the recurrent bias or None."""
    gates, n_states, saved_widths = 3, 1, (3, 1)  # saved: z, r and h @ U's candidate part; hh
    inner_is_projected = False  # the candidate's part is scaled by r in h @ U's

    @staticmethod
    def forward(xp, p, before, after, saved, U, rb, scratch):
        (h,), (new,), (inner, hh) = before, after, saved
        u = h.shape[-1]
        xp.matmul(h, U, out=inner)
        if rb is not None:
            inner += rb
        zr = inner[:, :2 * u]  # becomes the gates z, r; the candidate part rh stays
        zr += p[:, :2 * u]
        sigmoid_in_place(xp, zr)
        z, r, rh = (inner[:, k * u:(k + 1) * u] for k in range(3))
        xp.multiply(r, rh, out=hh)
        hh += p[:, 2 * u:]
        xp.tanh(hh, out=hh)
        # z * h + (1 - z) * hh
        xp.subtract(h, hh, out=new)
        new *= z
        new += hh

    @staticmethod
    def backward(xp, before, saved, d_new, dz, scratch):
        (h,), (inner, hh), (dh,) = before, saved, d_new
        u = h.shape[-1]
        z, r, rh = (inner[:, k * u:(k + 1) * u] for k in range(3))
        dzz, dr, da = (dz[:, k * u:(k + 1) * u] for k in range(3))
        one_minus_z, tmp = scratch
        xp.subtract(1.0, z, out=one_minus_z)
        # da = dh (1 - z) (1 - hh^2)
        _one_minus_square(xp, hh, da)
        da *= one_minus_z
        da *= dh
        # dz = dh (h - hh) z (1 - z)
        xp.subtract(h, hh, out=dzz)
        dzz *= dh
        dzz *= z
        dzz *= one_minus_z
        # dr = da rh r (1 - r)
        xp.multiply(da, rh, out=dr)
        xp.subtract(1.0, r, out=tmp)
        tmp *= r
        dr *= tmp
        return [dh * z]

    @staticmethod
    def to_inner(xp, dz, saved):
        u = saved[1].shape[-1]
        dz[:, 2 * u:] *= saved[0][:, u:2 * u]  # the candidate's inner part is scaled by r


KERNELS = {"simple_rnn": _SimpleRNN, "lstm": _LSTM, "gru": _GRU}
