"""Market training kernels (seed 000, Algorithm 2.4): batch payouts and the online epoch.

Each item clears at the current wealth (:func:`markets.kernels.equilibrium.solve_item`), the label
``y`` is revealed and agent ``i`` is paid ``r_{i,y} / sum_l r_{l,y}``: its share of the realised
clearing price of the winning good (equal to ``c_y`` within ``tol``; with it the total wealth is
conserved to rounding).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .equilibrium import solve_item
from .potential import item_spending


@njit(cache=True, error_model="numpy")
def _payout_shares(r, y, out):
    """``out[i] = r[i, y] / sum_l r[l, y]``: each agent's share of the winning good."""
    A = r.shape[0]
    s = 0.0
    for i in range(A):
        s += r[i, y]
    for i in range(A):
        out[i] = r[i, y] / s


@njit(cache=True, parallel=True, error_model="numpy")
def batch_payouts(L, y, kind, inv_eta, W, tol, max_iter, method, U, warm, P):
    """Equilibrium of every item at wealth ``W``, then each agent's payout if label ``y`` occurs:
    ``P[j, i] = r_{i,y_j} / sum_l r_{l,y_j}``. Returns per-item iterations and flags."""
    n, A, K = L.shape
    iters = np.zeros(n, np.int64)
    conv = np.zeros(n, np.bool_)
    res = np.zeros(n)
    for j in prange(n):
        u = U[j].copy()
        iters[j], conv[j], res[j], _ = solve_item(L[j], kind, inv_eta, W, tol, max_iter, method, u, warm)
        U[j] = u
        r = np.zeros((A, K))
        item_spending(L[j], kind, inv_eta, W, u, r)
        _payout_shares(r, y[j], P[j])
    return iters, conv, res


@njit(cache=True, error_model="numpy")
def online_epoch(L, y, kind, inv_eta, W, tol, max_iter, method, U, warm, history):
    """One online epoch: for each item in order, clear the market at the current wealth, reveal
    ``y``, pay ``W_i <- r_{i,y} / sum_l r_{l,y}``. ``W`` is updated in place; ``history[j]``
    receives the wealth after item ``j``. Returns (total iterations, all converged)."""
    n, A, K = L.shape
    r = np.zeros((A, K))
    tot = 0
    allconv = True
    for j in range(n):
        u = U[j].copy()
        a, b, c, d = solve_item(L[j], kind, inv_eta, W, tol, max_iter, method, u, warm)
        U[j] = u
        tot += a
        allconv = allconv and b
        item_spending(L[j], kind, inv_eta, W, u, r)
        _payout_shares(r, y[j], W)
        for i in range(A):
            history[j, i] = W[i]
    return tot, allconv
