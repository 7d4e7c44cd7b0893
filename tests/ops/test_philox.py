"""Philox4x32-10 in array operations (ops/philox.py): Random123's known answers, and uniforms."""
import numpy as np
import pytest

from tapeflow.ops import philox

LOW = 0xFFFFFFFF


@pytest.mark.parametrize("counter, key, want", [  # Random123's kat_vectors, philox4x32 10 rounds
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((LOW, LOW, LOW, LOW), (LOW, LOW), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
])
def test_known_answers(counter, key, want):
    words = philox.philox4x32(np, [np.array([c], np.uint64) for c in counter], key)
    assert tuple(int(w[0]) for w in words) == want


@pytest.mark.parametrize("dtype, bits", [(np.float32, 24), (np.float64, 53), (np.float16, 11)])
def test_uniforms_lie_in_the_unit_interval_on_their_grid(dtype, bits):
    u = philox.uniform(np, (300, 7), (12345, 678), dtype)
    assert u.dtype == dtype and u.shape == (300, 7)
    assert u.min() >= 0 and u.max() < 1
    grid = u.astype(np.float64) * 2.0 ** bits
    assert np.array_equal(grid, np.floor(grid))  # multiples of 2**-bits: no rounding up to 1
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.var() - 1 / 12) < 0.01


def test_a_key_gives_one_stream_and_another_key_another():
    a = philox.uniform(np, (1000,), (1, 2), np.float32)
    np.testing.assert_array_equal(philox.uniform(np, (1000,), (1, 2), np.float32), a)
    np.testing.assert_array_equal(philox.uniform(np, (10,), (1, 2), np.float32), a[:10])
    b = philox.uniform(np, (1000,), (1, 3), np.float32)
    assert np.mean(a == b) < 0.01
