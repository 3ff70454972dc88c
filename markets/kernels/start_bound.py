"""A lower bound on every equilibrium price of an isoelastic market, and warm starts lifted to it.

Derivation (seed 003, Eq. 2.35 and the clearing condition of Table 2.4). Agent ``i`` of order
``g_i = 1/eta_i`` (``g = 1``: the log agent) spends ``W_i Q_ik`` on good ``k``, with
``Q_ik = P_ik^g c_k^(1-g) / z_i`` and ``z_i = sum_k P_ik^g c_k^(1-g)``. By Hölder,
``z_i <= (sum_k P_ik)^g (sum_k c_k)^(1-g) = 1``. Clearing, ``(sum_j W_j) c_k = sum_j W_j Q_jk``, with
every term non-negative, gives for each agent ``i``

    (sum_j W_j) c_k >= W_i P_ik^g c_k^(1-g),   so   log c_k >= log P_ik + log(W_i / sum_j W_j) / g_i.

The bound is the largest of these over the agents. It fails with exponential agents in the
market (their spending ``c_k (W + a_k - sum c a)`` may be negative): there a start is only raised to
:data:`START_FLOOR`, where prices are still normal doubles.

Why: Newton on the potential recovers a log-price started far below its equilibrium only a few
units per step (about ``log(1 + 1/g)`` from the step in ``c``; measured session 44: 2 units a step
at ``eta = 2``, 1 with a log agent, 9 at ``eta = 10``), so a start 400 units low took 200-400 Newton
steps where the seed's fixed point took 50-300; and a log-price below ``-745`` is a price of exactly
zero in double precision, where every method stopped after one step, unconverged, with an infinite
clearing error. A start is only a start: raising a coordinate to the bound moves it towards the
equilibrium, which lies above it (``tests/markets/test_start_bound.py`` checks the bound at solved
equilibria)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.simplex_log import normalise_log

from .potential import ISO

START_FLOOR = -700.0
"""The least normalised log-price of a warm start in a market without the bound (an exponential agent
in it): ``exp(-700)`` is a normal double (the vectorised exp flushes below ``-708``, libm's reaches zero
below ``-745``). Such a start still costs Newton steps in proportion to its distance (session 44:
a start 400 units low, eta = 2 with an exponential agent, 208 steps; tâtonnement 167)."""


@njit(cache=True, error_model="numpy")
def bound_coefficients(kind, inv_eta, W):
    """``log(W_i / sum W) / g_i`` per agent (``-inf`` for a bankrupt agent), or an empty array when
    the bound does not hold (an exponential agent, a non-positive total wealth)."""
    A = W.shape[0]
    Wsum = 0.0
    for i in range(A):
        if kind[i] != ISO or not W[i] >= 0.0:
            return np.empty(0)
        Wsum += W[i]
    if not Wsum > 0.0:
        return np.empty(0)
    coef = np.empty(A)
    for i in range(A):
        coef[i] = np.log(W[i] / Wsum) / inv_eta[i] if W[i] > 0.0 else -np.inf
    return coef


@njit(cache=True, fastmath={"nnan", "nsz"}, error_model="numpy")
def _max_into(b, x, c):
    """``b = max(b, x + c)`` entry by entry (a compare and select LLVM vectorises; beliefs are never
    NaN here: the validator refused them)."""
    for k in range(b.shape[0]):
        v = x[k] + c
        b[k] = v if v > b[k] else b[k]


@njit(cache=True, error_model="numpy")
def lift_start(L, coef, u, b):
    """Raise the normalised log-prices ``u`` (K,) to the bound ``b_k = max_i L_ik + coef_i`` of
    beliefs ``L`` (A, K) where they lie below it, then normalise again (``logsumexp(u) = 0``);
    ``b`` (K,) is scratch. NaN entries are left alone. Returns the number of goods lifted."""
    A, K = L.shape
    for k in range(K):
        b[k] = -np.inf
    for i in range(A):
        ci = coef[i]
        if ci == -np.inf:
            continue
        _max_into(b, L[i], ci)
    lifted = 0
    for k in range(K):
        if u[k] < b[k]:
            u[k] = b[k]
            lifted += 1
    if lifted:
        normalise_log(u)
    return lifted


@njit(cache=True, error_model="numpy", parallel=True)
def lift_starts(L, kind, inv_eta, W, U):
    """:func:`lift_start` for every item of ``L`` (n, A, K) and warm starts ``U`` (n, K), items in
    parallel; without the bound (an exponential agent) to :data:`START_FLOOR` only. An item whose
    start lies above ``max_i coef_i`` everywhere is not read (the bound is below that: ``P <= 1``).
    Measured (session 44, one thread): one pass over the beliefs, 0.45 ns an entry at 100 x 1,024
    (memory-bound), 2-6 % of a warm-started call where the items are read. Returns the goods lifted."""
    coef = bound_coefficients(kind, inv_eta, W)
    n, A, K = L.shape
    counts = np.zeros(n, np.int64)
    if coef.shape[0] != A:  # no bound: only out of the range where a price is zero or subnormal
        for j in prange(n):
            counts[j] = _raise_to(U[j], START_FLOOR)
        return counts.sum()
    cmax = -np.inf  # beliefs are at most 1: the bound is at most max_i coef_i, and a start whose
    for i in range(A):  # log-prices are all above that needs no pass over the item's beliefs
        cmax = max(cmax, coef[i])
    for j in prange(n):
        u = U[j]
        low = np.inf
        for k in range(K):
            low = min(low, u[k])
        if not low >= cmax:
            counts[j] = lift_start(L[j], coef, u, np.empty(K))
    return counts.sum()


@njit(cache=True, error_model="numpy")
def _raise_to(u, lo):
    """``u = max(u, lo)`` entry by entry, normalised again if anything moved; the count moved."""
    moved = 0
    for k in range(u.shape[0]):
        if u[k] < lo:
            u[k] = lo
            moved += 1
    if moved:
        normalise_log(u)
    return moved
