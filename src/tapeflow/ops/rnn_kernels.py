"""Array code for the fused recurrent sequences of ``rnn.py``: one step forward and one step
back of each cell kind (Keras's default activations: tanh, with sigmoid gates).

A step gets ``p`` (the projected input of that timestep, ``x_t @ kernel + bias``), the states
before it, the recurrent kernel ``U`` and the recurrent bias ``rb`` (GRU only, else None).  The
gates come from one matmul ``h @ U`` (as cuDNN's and oneDNN's cells).  ``forward`` returns the
new states and what the step back needs (``saved``, a list of ``(batch, units)`` arrays, the
states before it first); ``backward`` takes those and the new states' cotangents and returns
``(dp, d states before, d inner)``, ``d inner`` the cotangent of ``h @ U (+ rb)``: the caller
turns those of every step into ``dU`` and ``d rb`` with one matmul (not one per step).
"""
__all__ = ["KERNELS"]


def _sigmoid(xp, x):
    return 0.5 * (xp.tanh(0.5 * x) + 1.0)  # stable for large |x|, same value


class _SimpleRNN:
    gates, n_states, n_saved = 1, 1, 2

    @staticmethod
    def forward(xp, p, states, U, rb):
        (h,) = states
        new = xp.tanh(p + h @ U)
        return [new], [h, new]

    @staticmethod
    def backward(xp, saved, d_new, U):
        h, new = saved
        dz = d_new[0] * (1.0 - new * new)
        return dz, [dz @ U.T], dz


class _LSTM:
    gates, n_states, n_saved = 4, 2, 7

    @staticmethod
    def forward(xp, p, states, U, rb):
        h, c = states
        z = p + h @ U
        u = h.shape[-1]
        i, f, o = (_sigmoid(xp, z[:, k * u:(k + 1) * u]) for k in (0, 1, 3))
        g = xp.tanh(z[:, 2 * u:3 * u])
        c_new = f * c + i * g
        th = xp.tanh(c_new)
        return [o * th, c_new], [h, c, i, f, g, o, th]

    @staticmethod
    def backward(xp, saved, d_new, U):
        h, c, i, f, g, o, th = saved
        dh, dc = d_new
        do = dh * th
        dc = dc + dh * o * (1.0 - th * th)
        dz = xp.concatenate([dc * g * i * (1.0 - i), dc * c * f * (1.0 - f),
                             dc * i * (1.0 - g * g), do * o * (1.0 - o)], axis=-1)
        return dz, [dz @ U.T, dc * f], dz


class _GRU:
    """reset_after=True (Keras 2's and 3's default): ``rb`` is the recurrent bias or None."""
    gates, n_states, n_saved = 3, 1, 5

    @staticmethod
    def forward(xp, p, states, U, rb):
        (h,) = states
        inner = h @ U
        if rb is not None:
            inner = inner + rb
        u = h.shape[-1]
        z = _sigmoid(xp, p[:, :u] + inner[:, :u])
        r = _sigmoid(xp, p[:, u:2 * u] + inner[:, u:2 * u])
        rh = inner[:, 2 * u:]
        hh = xp.tanh(p[:, 2 * u:] + r * rh)
        return [z * h + (1.0 - z) * hh], [h, z, r, rh, hh]

    @staticmethod
    def backward(xp, saved, d_new, U):
        h, z, r, rh, hh = saved
        (dh,) = d_new
        da = dh * (1.0 - z) * (1.0 - hh * hh)
        dz = dh * (h - hh) * z * (1.0 - z)
        dr = da * rh * r * (1.0 - r)
        dp = xp.concatenate([dz, dr, da], axis=-1)
        d_inner = xp.concatenate([dz, dr, da * r], axis=-1)
        return dp, [d_inner @ U.T + dh * z], d_inner


KERNELS = {"simple_rnn": _SimpleRNN, "lstm": _LSTM, "gru": _GRU}
