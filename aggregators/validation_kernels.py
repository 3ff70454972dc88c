"""Compiled fast path of :func:`aggregators.validation.as_log_probs` for large inputs.

One parallel pass per row of log-probabilities: reject NaN, ``+inf`` and all-``-inf`` rows, and
write the row normalised by its max-shifted log-sum-exp. NumPy's version makes six full passes
with array-sized temporaries (about 30-60 ns per entry at 2,000 x 269 x 64); this one costs one
scalar ``exp`` per entry. Any row it cannot take makes it report failure, and the caller runs the
NumPy checks, which find and name the offending entry (the error messages live in one place).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, error_model="numpy")
def _row_lse(a, r):
    """``logsumexp(a[r])`` shifted by the row's max, or NaN when the row is refused (a NaN or
    ``+inf`` entry, every entry ``-inf``, or a log-sum-exp that overflows)."""
    K = a.shape[1]
    m = -np.inf
    for k in range(K):
        v = a[r, k]
        if v != v or v == np.inf:
            return np.nan
        if v > m:
            m = v
    if m == -np.inf:
        return np.nan
    s = 0.0
    for k in range(K):
        s += np.exp(a[r, k] - m)
    lse = m + np.log(s)
    return lse if np.isfinite(lse) else np.nan


@njit(cache=True, parallel=True, error_model="numpy")
def normalise_log_rows(a, out):
    """``out[r] = a[r] - logsumexp(a[r])`` for every row of ``a`` (R, K). Returns the number of
    rows it refused (a NaN or ``+inf`` entry, every entry ``-inf``, or a log-sum-exp that
    overflows); those rows of ``out`` are left unset."""
    R, K = a.shape
    bad = 0
    for r in prange(R):
        lse = _row_lse(a, r)
        if lse != lse:
            bad += 1
            continue
        for k in range(K):
            out[r, k] = a[r, k] - lse
    return bad


@njit(cache=True, parallel=True, error_model="numpy")
def normalise_floor_rows(a, out, floor):
    """The fused validate + floor pass: ``out[r]`` = row ``a[r]`` normalised (as
    :func:`normalise_log_rows`), then floored with the mass-preserving rule of
    :func:`aggregators.validation.apply_floor` while the row is in cache (``floor`` in (0, 1/K)).

    Returns ``(refused, floored)``: the number of rows it refused (as :func:`normalise_log_rows`;
    those rows of ``out`` are left unset) and the number of entries raised to the floor. ``a`` and
    ``out`` may be the same array.
    """
    R, K = a.shape
    log_floor = np.log(floor)
    bad = 0
    floored = 0
    for r in prange(R):
        lse = _row_lse(a, r)
        if lse != lse:
            bad += 1
            continue
        # out[r] holds the normalised row; an entry to be floored is marked -inf (no allocation)
        nfix = 0
        for k in range(K):
            v = a[r, k] - lse
            if v < log_floor:
                v = -np.inf
                nfix += 1
            out[r, k] = v
        if nfix == 0:
            continue
        # floored entries get exactly `floor`, the others share 1 - m*floor in their old
        # proportions; repeat while rescaling pushes another entry below the floor
        shift = 0.0
        for _ in range(K):
            mx = -np.inf
            for k in range(K):
                if out[r, k] > mx:
                    mx = out[r, k]
            z = 0.0
            for k in range(K):
                z += np.exp(out[r, k] - mx)
            shift = np.log1p(-nfix * floor) - (mx + np.log(z))
            newly = 0
            for k in range(K):
                if out[r, k] > -np.inf and out[r, k] + shift < log_floor:
                    out[r, k] = -np.inf
                    newly += 1
            if newly == 0:
                break
            nfix += newly
        for k in range(K):
            out[r, k] = log_floor if out[r, k] == -np.inf else out[r, k] + shift
        floored += nfix
    return bad, floored
