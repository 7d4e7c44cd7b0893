"""Layouts that make numpy's row-wise passes fast on large float arrays (shared by kernels).

- numpy runs a ufunc's inner loop once per row of its output, so a row broadcast over many short
  rows (a bias, relu's zero) costs a call per row: ``wide_rows`` views a C-contiguous array as
  rows of a few thousand elements, along which the row is tiled once; ``np.maximum`` against a
  row of zeros that long measured ~3x faster than against the scalar 0 (and gives the same bits).
- A sum over the rows of a (rows, columns) float array is a product with ones: BLAS's gemv
  measured 4-6x faster than ``sum(axis=0)`` over (1024, 64) float32 and ~15x over (8192, 64).
  It rounds differently from numpy's sum (float rounding only), so the eager op and its
  compiled kernel must both take it, at the same sizes (``sums_rows_by_blas``).
"""
import math

import numpy as np

__all__ = ["BLAS_SUM_DTYPES", "TILE_FROM", "sums_rows_by_blas", "tiled_row", "wide_rows"]

_TILED_ELEMENTS = 2048  # a row this long makes numpy's inner loop, not its per-row calls, the cost
# From about this many elements the tiled rows pay for their set-up (measured: 512 x 64 float32
# 28 us tiled against 32 plain; 256 x 64: 27 against 23); below it the plain ufuncs are faster.
TILE_FROM = 32768
BLAS_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def wide_rows(shape):
    """(rows, k * units) and k for an array of ``shape`` (last axis units): wider rows for a
    row of ``units`` broadcast along them (numpy runs its inner loop once per row)."""
    units = shape[-1]
    rows = math.prod(shape) // units
    k = math.gcd(rows, max(1, _TILED_ELEMENTS // units))
    return (rows // k, k * units), k


def tiled_row(row, k):
    """``row`` (1-D) repeated ``k`` times end to end: ``np.tile(row, k)``, whose Python
    wrapper measured ~3x the cost of this copy into a new array (4.4 against 1.4 us for 64
    float32 elements 32 times)."""
    out = np.empty(k * row.shape[0], row.dtype)
    out.reshape(k, row.shape[0])[...] = row
    return out


def sums_rows_by_blas(dtype, size):
    """Whether a row sum of ``size`` elements of ``dtype`` runs as a product with ones: from
    ``TILE_FROM`` elements, where small arrays' sums keep numpy's rounding."""
    return dtype in BLAS_SUM_DTYPES and size >= TILE_FROM
