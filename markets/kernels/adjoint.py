"""The adjoint of the equilibrium for the gradient of the labels' log-likelihood with respect to the
agents' wealth (issue [core-at-scale] section 1: "the same holds for the adjoint solve of the weight
gradient").

At the equilibrium ``F(u, W) = sum_i W_i Q_i(u) - (sum_i W_i) c(u) = 0`` (the clearing conditions,
seed 000 Eq. 2.27-2.29; ``Q_i`` the effective beliefs of Eq. 2.35, ``c = exp(u)``, ``sum c = 1``).
``dF/dW_i = Q_i - c`` for an isoelastic or log agent and 0 for an exponential one (its position
``c (W_i + log(P_i/c) - S_i)`` moves with ``W_i`` exactly as its share of ``(sum W) c``), and
``-dF/du`` is the matrix ``M`` of the Newton direction (:mod:`markets.kernels.newton_cg`). By the
implicit-function theorem, the log-price of the label ``y`` (normalised: ``u_y - log sum exp u``)
has the gradient

    d u_y / d W_i = lambda . (Q_i - c),    M lambda = e_y - c,

one solve per item whatever the number of agents, by the same matrix-free CG as Newton-CG: O(K A)
per product, never a K x K matrix.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.fastexp import exp_scaled

from .newton_cg import cg_scratch_size, cg_solve, general_diagonal
from .potential import ISO, evaluate, powers


@njit(cache=True, parallel=True, error_model="numpy")
def label_gradients(L, y, kind, inv_eta, W, U, rtol, G, n_products, threads):
    """``G[j, i] = d u_{j, y_j} / d W_i`` at the equilibria ``U`` (n, K) of the items ``L`` (n, A, K)
    (module docstring). CG stops when its residual, in the clearing residual's norm, is ``rtol``
    times the right-hand side's; ``n_products[j]`` receives its products (:data:`CG_MAX_ITER` at most).

    The items are split into one chunk per thread (``threads``: Numba's thread count), whose (A, K)
    buffers are allocated once and reused by its items, as the equilibrium's drivers do, and the
    prices come from one vectorised exp. (Up to session 40 each item allocated its own buffers and
    took two scalar exps per good; session 41, one thread, CG to 1e-12, alternating the trees,
    ``benchmarks/bench_market_adjoint.py``: 4,096 goods x 10 agents 170-199 -> 137-173 us per item,
    1,024 x 100 230-297 -> 201-294; 256 goods the same within noise.)"""
    n, A, K = L.shape
    Wsum = 0.0
    for i in range(A):
        Wsum += W[i]
    no1 = np.empty(0)
    no2 = np.empty((0, 0))
    m = max(1, min(n, threads))
    for c in prange(m):
        Pg = np.zeros((A, K))  # rows of other kinds stay zero from item to item
        Q = np.zeros((A, K))
        B = np.zeros((A, K))
        T = np.zeros(K)
        cp = np.zeros(K)
        dg = np.empty(K)
        h = np.empty(K)
        scr = np.empty(cg_scratch_size(K, A))
        lam = np.empty(K)
        cu = np.empty(K)
        for j in range(c * n // m, (c + 1) * n // m):
            args = (Pg, Q, B, T, cp, dg, h, scr, lam, cu, no1, no2)  # the chunk's buffers
            _item_gradient(L[j], y[j], kind, inv_eta, W, Wsum, U[j], rtol, G[j], n_products, j, *args)


@njit(cache=True, error_model="numpy")
def _item_gradient(
    Lj, yj, kind, inv_eta, W, Wsum, Uj, rtol, Gj, n_products, j, Pg, Q, B, T, cp, dg, h, scr, lam, cu, no1, no2
):
    """Item ``j`` of :func:`label_gradients` in the chunk's buffers (``cu``: the prices ``exp(u)``, by
    the vectorised exp)."""
    A, K = Lj.shape
    u = Uj.copy()
    powers(Lj, kind, inv_eta, Pg)
    evaluate(Lj, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    reg = abs(Wsum) + general_diagonal(kind, inv_eta, W, Q, u, dg, h)  # as the Newton loop's
    b = scr[3 * K : 4 * K]
    big = 0.0
    exp_scaled(u, 1.0, cu)
    for k in range(K):
        ck = cu[k]
        b[k] = (1.0 if k == yj else 0.0) - ck
        big = max(big, abs(b[k]) / ck)
    n_products[j] = cg_solve(
        False, u, b, reg, rtol * big, lam, scr, no2, 0.0, T, cp, no1, no1, kind, inv_eta, W, Q, dg, h
    )[1]
    lc = 0.0
    for k in range(K):
        lc += lam[k] * cu[k]
    for i in range(A):
        if kind[i] == ISO:
            acc = 0.0
            for k in range(K):
                acc += lam[k] * Q[i, k]
            Gj[i] = acc - lc
        else:
            Gj[i] = 0.0
