"""The probability floor of the market's beliefs, on rows the validator has already normalised.

:func:`aggregators.validation.apply_floor` (the pools' rule) recomputes every row's log-sum-exp
(one ``exp`` per entry). The market's beliefs reach the floor already normalised
(``markets.agents.prepare_beliefs`` validates them first), so each row needs only the shared row
kernel :func:`solvers.kernels.floor_row.floor_row` (the same mass-preserving rule as the pools'
fused pass; a compare pass, and one vectorised ``exp`` pass for a row with an entry below the
floor); an array with nothing below the floor is not copied at all (:func:`count_rows_below`, a
read-only compare pass). Measured (load 5, 9 x 100 x 1,024 beliefs of the market grid, medians of 21):
Dirichlet (80% of entries below 1e-9) 10-16 ms against 23-37 ms for ``apply_floor``; Gaussian
logits (78 entries below) 0.5 ms against 12-20 ms (``benchmarks/results/core-at-scale-markets-session8.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.floor_row import floor_row

from .potential import ISO


@njit(cache=True, error_model="numpy")
def count_rows_below(a, log_floor):
    """Rows of ``a`` (R, K) with an entry below ``log_floor`` (compare only, no write; serial, see
    :func:`floor_rows`)."""
    R, K = a.shape
    c = 0
    for r in range(R):
        for k in range(K):
            if a[r, k] < log_floor:
                c += 1
                break
    return c


@njit(cache=True, error_model="numpy")
def floor_rows(a, out, floor):
    """``out`` = ``a`` (R, K; normalised log-probability rows) floored at ``floor`` in (0, 1/K), one
    pass; rows with nothing below the floor are copied. Returns the number of entries floored.
    Serial, as :func:`count_rows_below`: a parallel region costs a wait for every thread to be
    scheduled, 9-16 ms per call measured at load 5 on the 2-core machine, against 0.3-10 ms for
    the whole serial pass over a million beliefs."""
    K = a.shape[1]
    return floor_item(a, out, floor, np.empty(K))


@njit(cache=True, error_model="numpy")
def floor_item(L, out, floor, e):
    """``out`` = one item's beliefs ``L`` (A, K; normalised rows) floored at ``floor``; ``e`` is
    scratch of at least K floats. The lean equilibrium driver calls it per item inside its
    parallel loop. Returns the number of entries floored."""
    log_floor = np.log(floor)
    n = 0
    for r in range(L.shape[0]):
        n += floor_row(L[r], out[r], floor, log_floor, e)
    return n


@njit(cache=True, error_model="numpy")
def floor_powers_item(L, out, floor, e, kind, inv_eta, Pg):
    """:func:`floor_item` (``floor`` > 0; else ``out`` = ``L``, a copy) with each isoelastic agent's
    powers ``Pg[i] = exp(inv_eta_i out[i])`` (:func:`markets.kernels.potential.powers`, the same
    values bit for bit) taken row by row while the floored row is in cache, instead of a second pass
    over the item. The general path's drivers call it per item; returns the entries floored."""
    log_floor = np.log(floor) if floor > 0.0 else 0.0
    n = 0
    for r in range(L.shape[0]):
        if floor > 0.0:
            n += floor_row(L[r], out[r], floor, log_floor, e)
        else:
            out[r] = L[r]
        if kind[r] == ISO:
            exp_scaled(out[r], inv_eta[r], Pg[r])
    return n
