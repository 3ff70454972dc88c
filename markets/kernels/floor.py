"""The probability floor of the market's beliefs, on rows the validator has already normalised.

:func:`aggregators.validation.apply_floor` (the pools' rule) recomputes every row's log-sum-exp
(one ``exp`` per entry) and renormalises a floored row with a full ``exp`` pass per round. The
market's beliefs reach the floor already normalised (``markets.agents.prepare_beliefs`` validates
them first), so the same mass-preserving rule needs far less: floored entries get exactly
``floor``, the others keep their proportions and share ``1 - m floor``, i.e. they move by
``shift = log(1 - m floor) - log(1 - s)`` where ``s`` is the mass of the ``m`` floored entries (the
unfloored mass of a normalised row is ``1 - s``); an entry that the shift pushes below the floor
is floored in turn. A row with nothing below the floor costs a compare pass and a copy (no
``exp``); an array with nothing below it is not copied at all (:func:`count_rows_below`, a
read-only compare pass); a floored row takes its ``exp`` from the vectorised
:func:`solvers.kernels.fastexp.exp_scaled` (within 1.5 ulp). Measured (load 5, 9 x 100 x 1,024 beliefs of the market grid, medians of 21):
Dirichlet (80% of entries below 1e-9) 10-16 ms against 23-37 ms for ``apply_floor``; Gaussian
logits (78 entries below) 0.5 ms against 12-20 ms (``benchmarks/results/core-at-scale-markets-session8.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled


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
def _floor_row(a, r, out, floor, log_floor, e, buf):
    """``out[r]``: row ``a[r]`` (normalised log-probabilities) floored by the rule of the module
    docstring (``out[r]`` marks the floored entries ``-inf`` while it works). ``e`` and ``buf``
    are scratch of length K. Returns how many entries were floored."""
    K = a.shape[1]
    m = 0
    for k in range(K):  # compare only: most rows of dense beliefs stop here
        v = a[r, k]
        m += v < log_floor
        out[r, k] = v
    if m == 0:
        return 0
    exp_scaled(a[r], 1.0, e, buf)  # vectorised: a branchy scalar exp per floored entry was 3x slower
    s = 0.0
    for k in range(K):
        v = out[r, k]
        low = v < log_floor
        s += e[k] if low else 0.0
        out[r, k] = -np.inf if low else v
    shift = 0.0
    for _ in range(K):  # each round floors at least one more entry, or ends
        shift = np.log1p(-m * floor) - np.log1p(-s)
        newly = 0
        for k in range(K):  # branch-free (vectorisable): floored entries stay -inf
            v = out[r, k]
            hit = v + shift < log_floor and v > -np.inf
            s += e[k] if hit else 0.0
            newly += hit
            out[r, k] = -np.inf if hit else v
        if newly == 0:
            break
        m += newly
    for k in range(K):
        v = out[r, k]
        out[r, k] = log_floor if v == -np.inf else v + shift
    return m


@njit(cache=True, error_model="numpy")
def floor_rows(a, out, floor):
    """``out`` = ``a`` (R, K; normalised log-probability rows) floored at ``floor`` in (0, 1/K), one
    pass; rows with nothing below the floor are copied. Returns the number of entries floored.
    Serial, as :func:`count_rows_below`: a parallel region costs a wait for every thread to be
    scheduled, 9-16 ms per call measured at load 5 on the 2-core machine, against 0.3-10 ms for
    the whole serial pass over a million beliefs."""
    K = a.shape[1]
    return floor_item(a, out, floor, np.empty(K), np.empty(K))


@njit(cache=True, error_model="numpy")
def floor_item(L, out, floor, e, buf):
    """``out`` = one item's beliefs ``L`` (A, K; normalised rows) floored at ``floor``; ``e`` and
    ``buf`` are scratch of at least K floats. The lean equilibrium driver calls it per item inside its
    parallel loop. Returns the number of entries floored."""
    log_floor = np.log(floor)
    n = 0
    for r in range(L.shape[0]):
        n += _floor_row(L, r, out, floor, log_floor, e, buf)
    return n
