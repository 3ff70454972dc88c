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

from .newton_cg import cg_scratch_size, cg_solve, general_diagonal
from .potential import ISO, evaluate, powers


@njit(cache=True, parallel=True, error_model="numpy")
def label_gradients(L, y, kind, inv_eta, W, U, rtol, G, n_products):
    """``G[j, i] = d u_{j, y_j} / d W_i`` at the equilibria ``U`` (n, K) of the items ``L`` (n, A, K)
    (module docstring). CG stops when its residual, in the clearing residual's norm, is ``rtol``
    times the right-hand side's; ``n_products[j]`` receives its products (:data:`CG_MAX_ITER` at most)."""
    n, A, K = L.shape
    Wsum = 0.0
    for i in range(A):
        Wsum += W[i]
    no1 = np.empty(0)
    no2 = np.empty((0, 0))
    for j in prange(n):
        Pg = np.zeros((A, K))
        Q = np.zeros((A, K))
        B = np.zeros((A, K))
        T = np.zeros(K)
        cp = np.zeros(K)
        u = U[j].copy()
        powers(L[j], kind, inv_eta, Pg)
        evaluate(L[j], kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
        dg = np.empty(K)
        h = np.empty(K)
        reg = abs(Wsum) + general_diagonal(kind, inv_eta, W, Q, u, dg, h)  # as the Newton loop's
        scr = np.empty(cg_scratch_size(K, A))
        b = scr[3 * K : 4 * K]
        big = 0.0
        for k in range(K):
            ck = np.exp(u[k])
            b[k] = (1.0 if k == y[j] else 0.0) - ck
            big = max(big, abs(b[k]) / ck)
        lam = np.empty(K)
        n_products[j] = cg_solve(
            False, u, b, reg, rtol * big, lam, scr, no2, 0.0, T, cp, no1, no1, kind, inv_eta, W, Q, dg, h
        )[1]
        lc = 0.0
        for k in range(K):
            lc += lam[k] * np.exp(u[k])
        for i in range(A):
            if kind[i] == ISO:
                acc = 0.0
                for k in range(K):
                    acc += lam[k] * Q[i, k]
                G[j, i] = acc - lc
            else:
                G[j, i] = 0.0
