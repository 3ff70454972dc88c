"""The row terms of the scale-free prior: ordered weighted l1 (OWL/SLOPE) norms and their prox.

A row term of Ω (seed 001 Prop 7.2) is ``sum_k c_k |x|_(k)``, ``|x|_(0) >= |x|_(1) >= ...`` over the
row's off-diagonal entries, with ``c_k = h(k+1) - h(k)`` non-negative and non-increasing for a
tractable ``h``: an OWL (SLOPE) norm. Its prox is Alg 7.2 (``solveSubproblem``, l.2757-2789) with the
fixes of the notes (pitfall 7): the quadratic carries its ½ (``min_x t sum_k c_k |x|_(k) + ½|x - w|^2``,
which is what the threshold ``(α/ρ) c_k`` assumes), and the merging runs while the rank ``r >= 1``
(0-based; the printed ``r > 1`` never merges the first two elements). The disjoint-set merging of
Alg 7.2 is the pool-adjacent-violators algorithm for a non-increasing fit, kept here as a stack of
blocks (start, sum, count).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _owl_prox_sorted(a: np.ndarray, thr: np.ndarray, out: np.ndarray) -> None:
    """``out = max(PAVA_nonincreasing(a - thr), 0)`` for ``a`` sorted descending (Alg 7.2's loop)."""
    n = a.shape[0]
    start = np.empty(n, np.int64)
    total = np.empty(n)
    count = np.empty(n, np.int64)
    top = -1
    for k in range(n):
        top += 1
        start[top] = k
        total[top] = a[k] - thr[k]
        count[top] = 1
        # merge while the later block's mean >= the previous one's (rank r >= 1, the fix)
        while top >= 1 and total[top] * count[top - 1] >= total[top - 1] * count[top]:
            total[top - 1] += total[top]
            count[top - 1] += count[top]
            top -= 1
    for b in range(top + 1):
        v = total[b] / count[b]
        if v < 0.0:
            v = 0.0
        for k in range(start[b], start[b] + count[b]):
            out[k] = v


@numba.njit(cache=True)
def owl_prox_rows(W: np.ndarray, c: np.ndarray, t: float) -> np.ndarray:
    """Row by row: ``X_i = argmin_x t sum_k c_k |x|_(k) + ½|x - W_i|^2`` over the off-diagonal entries.

    ``c`` (length ``p - 1``) non-negative and non-increasing; the diagonal is copied (``X_ii = W_ii``,
    seed 001 l.2733: it is not in the sort order).
    """
    p = W.shape[0]
    X = np.empty_like(W)
    idx = np.empty(p - 1, np.int64)
    a = np.empty(p - 1)
    thr = t * c
    out = np.empty(p - 1)
    for i in range(p):
        m = 0
        for j in range(p):
            if j != i:
                idx[m] = j
                a[m] = -abs(W[i, j])
                m += 1
        order = np.argsort(a)  # ascending of -|w|: descending |w|
        for k in range(p - 1):
            a[k] = abs(W[i, idx[order[k]]])
        _owl_prox_sorted(a, thr, out)
        for k in range(p - 1):
            j = idx[order[k]]
            X[i, j] = out[k] if W[i, j] >= 0 else -out[k]
        X[i, i] = W[i, i]
    return X


def owl_norm_rows(X: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``sum_k c_k |X_i|_(k)`` for each row over its off-diagonal entries (the row terms of Prop 7.2)."""
    p = X.shape[0]
    off = np.abs(X[~np.eye(p, dtype=bool)].reshape(p, p - 1))
    return -np.sort(-off, axis=1) @ c
