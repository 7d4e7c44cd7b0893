"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
counter-based generator written in array operations, so it runs on the device that holds the
data, CuPy's or numpy's, and gives the same bits on either.

A draw of ``n`` numbers takes a 64-bit key (from the host's seeded generator: no device data is
read) and counters ``0 .. ceil(n / 4) - 1``; each counter gives four 32-bit words.  The
products of two 32-bit words are formed in uint64, where they fit exactly.
"""
import numpy as np

__all__ = ["philox4x32", "uniform"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57   # the round multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85   # the key schedule's increments (golden ratio, sqrt(3) - 1)
_LOW = 0xFFFFFFFF


def philox4x32(xp, counters, key, rounds=10):
    """The four uint32 output words (uint64 arrays) for ``counters`` (four uint64 arrays of
    32-bit values) under ``key`` (two Python ints below 2**32)."""
    c0, c1, c2, c3 = counters
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W0) & _LOW, (k1 + _W1) & _LOW
        p0 = c0 * _M0
        p1 = c2 * _M1
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _LOW, (p0 >> 32) ^ c3 ^ k1, p0 & _LOW
    return c0, c1, c2, c3


def uniform(xp, shape, key, dtype):
    """Uniform numbers in [0, 1) of ``shape`` and float ``dtype`` on ``xp``'s device, multiples of
    2**-p for the dtype's precision p (24 for float32, 11 for float16, 53 for float64): each
    is exact in the dtype, so none rounds up to 1."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    wide = dtype.itemsize > 4
    words = n * (2 if wide else 1)
    index = xp.arange((words + 3) // 4, dtype=np.uint64)
    zero = xp.zeros_like(index)
    bits = xp.stack(philox4x32(xp, (index & _LOW, index >> 32, zero, zero), key), axis=1)
    bits = bits.reshape(-1)[:words]
    if wide:
        high, low = bits[0::2] >> 5, bits[1::2] >> 6   # 27 + 26 = 53 bits
        values = (high.astype(np.float64) * 67108864.0 + low.astype(np.float64)) * 2.0 ** -53
    else:
        precision = np.finfo(dtype).nmant + 1
        values = (bits >> (32 - precision)).astype(np.float32) * np.float32(2.0 ** -precision)
    return values.astype(dtype, copy=False).reshape(shape)
