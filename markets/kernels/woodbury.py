"""The exact Newton direction of the general path by the Woodbury identity, for few agents.

The u-space matrix of the Newton direction (:mod:`markets.kernels.newton_cg`; seed 000 Eq. 2.34-2.36) is

    M = D + sum_j w_j q_j q_j^T + beta c c^T - c h^T - h c^T
      = D + V^T C V,   V = [q_1; ...; q_m; c; h],   C = diag(w_1, ..., w_m, [[beta, -1], [-1, 0]]),

with ``D`` the diagonal of :func:`markets.kernels.newton_cg.general_diagonal`, ``h = -S 1``,
``beta = reg + 1^T h``, and one row ``q_j = Q_j`` per isoelastic agent of order ``g_j < 1``
(``w_j = W_j (1 - g_j)``; logarithmic agents add only to ``D``). With ``m`` such agents,

    M^(-1) b = D^(-1) b - D^(-1) V^T E^(-1) V D^(-1) b,   E = C^(-1) + V D^(-1) V^T  ((m+2) x (m+2)),

``C^(-1) = diag(1/w_1, ..., 1/w_m, [[0, -1], [-1, -beta]])``. Forming ``E`` costs ``(m+2)(m+3)/2`` dot
products of K goods, in cache for few agents, against CG's two passes over the agents and about
eight K-long vector operations per product, two to six products a step (session 37: logit mixed
markets of 10 agents at K = 1,024 spent about two thirds of Newton-CG's time in CG). So the
direction is exact (no forcing term) and costs one Gram-like pass; :data:`WOODBURY_MAX_ROWS` bounds
``m + 2`` (above it the ``m^2 K`` of ``E`` outgrows CG's ``m K`` per product). ``E`` is
indefinite (the ``c, h`` block), so it is solved by LU with partial pivoting; a singular or
non-finite solve returns False and the caller falls back to CG.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .potential import ISO

_FM = {"reassoc", "contract"}
WOODBURY_MAX_ROWS = 12
"""The largest ``m + 2`` (agents of order < 1 plus two) for which the direction comes from here."""


@njit(cache=True, error_model="numpy")
def woodbury_rows(kind, inv_eta, W):
    """``m + 2``: the rows of ``V`` (module docstring) of this market."""
    m = 0
    for i in range(kind.shape[0]):
        if kind[i] == ISO and inv_eta[i] != 1.0 and W[i] * (1.0 - inv_eta[i]) != 0.0:
            m += 1
    return m + 2


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _gram(V, n, K, E):
    """``E += V[:n] V[:n]^T``: two rows ``a`` at a time against each row ``b`` (one load of ``b``
    for two products; 11 rows of 4,096 goods 19 -> 16 us, session 40; four at a time was slower)."""
    a = 0
    while a + 1 < n:
        va = V[a]
        va2 = V[a + 1]
        for b in range(a + 1):
            vb = V[b]
            acc = 0.0
            acc2 = 0.0
            for k in range(K):
                acc += va[k] * vb[k]
                acc2 += va2[k] * vb[k]
            E[a, b] += acc
            E[a + 1, b] += acc2
            if b != a:
                E[b, a] += acc
            E[b, a + 1] += acc2
        acc = 0.0
        for k in range(K):
            acc += va2[k] * va2[k]
        E[a + 1, a + 1] += acc
        a += 2
    if a < n:
        va = V[a]
        for b in range(a + 1):
            vb = V[b]
            acc = 0.0
            for k in range(K):
                acc += va[k] * vb[k]
            E[a, b] += acc
            if b != a:
                E[b, a] += acc


@njit(cache=True, fastmath=_FM, error_model="numpy", inline="always")
def _finish(V, y, n, s, d):
    """``d = (d - sum_a y_a V_a) s``, ``d`` holding ``D^(-1/2) b`` on entry (module docstring);
    False if an entry is not finite."""
    K = d.shape[0]
    for a in range(n):
        ya = y[a]
        va = V[a]
        for k in range(K):
            d[k] -= ya * va[k]
    ok = True
    for k in range(K):
        d[k] *= s[k]
        if not np.isfinite(d[k]):
            ok = False
    return ok


@njit(cache=True, fastmath=_FM, error_model="numpy")
def woodbury_direction(kind, inv_eta, W, Q, c, dg, h, reg, b, d, V, Ew):
    """``d = M^(-1) b`` (module docstring) from the effective beliefs ``Q``, the prices ``c``, the
    diagonal ``dg`` and ``h`` of :func:`markets.kernels.newton_cg.general_diagonal` and the shift
    regularisation ``reg``. ``V`` is scratch of ``(woodbury_rows(...) + 2, K)`` floats; ``Ew``
    (``woodbury_rows(...)`` square, else (0, 0)) receives ``E`` for :func:`woodbury_resolve`.
    Returns False (``d`` undefined) if ``D`` has a non-positive entry or the small solve fails."""
    A, K = Q.shape
    n = V.shape[0] - 2
    m = n - 2
    s = V[n + 1]  # D^(-1/2)
    pos = True
    for k in range(K):  # no early exit: the loop vectorises (session 40)
        pos &= dg[k] > 0.0
    if not pos:
        return False
    for k in range(K):
        s[k] = 1.0 / np.sqrt(dg[k])
    wi = np.empty(m)
    j = 0
    for i in range(A):
        if kind[i] == ISO and inv_eta[i] != 1.0:
            w = W[i] * (1.0 - inv_eta[i])
            if w != 0.0:
                row = V[j]
                q = Q[i]
                for k in range(K):
                    row[k] = q[k] * s[k]
                wi[j] = 1.0 / w
                j += 1
    sh = 0.0
    bs = V[n]  # D^(-1/2) b, the last row: the Gram pass gives V D^(-1/2) b with E
    for k in range(K):
        sk = s[k]
        V[m, k] = c[k] * sk
        V[m + 1, k] = h[k] * sk
        bs[k] = b[k] * sk
        sh += h[k]
    E = np.zeros((n + 1, n + 1))
    for a in range(m):
        E[a, a] = wi[a]
    E[m + 1, m] = -1.0
    E[m, m + 1] = -1.0
    E[m + 1, m + 1] = -(reg + sh)
    _gram(V, n + 1, K, E)
    if Ew.shape[0] == n:
        for a in range(n):
            for k in range(n):
                Ew[a, k] = E[a, k]
    t = E[n, :n].copy()
    y = _lu_solve(E[:n, :n].copy(), t)
    if y.shape[0] == 0:
        return False
    for k in range(K):
        d[k] = bs[k]
    return _finish(V, y, n, s, d)


@njit(cache=True, fastmath=_FM, error_model="numpy")
def woodbury_resolve(V, Ew, b, d):
    """``d = M^(-1) b`` for another right-hand side ``b`` with the matrix of the last
    :func:`woodbury_direction` call (its ``V`` and ``Ew``): ``m + 2`` dot products, the small solve
    and ``m + 2`` updates, no Gram pass (:mod:`markets.kernels.corrector` solves twice per step).
    Returns False if the small solve fails or ``d`` is not finite."""
    n = Ew.shape[0]
    K = V.shape[1]
    s = V[n + 1]
    t = np.empty(n)
    for a in range(n):
        va = V[a]
        acc = 0.0
        for k in range(K):
            acc += va[k] * (b[k] * s[k])
        t[a] = acc
    y = _lu_solve(Ew.copy(), t)
    if y.shape[0] == 0:
        return False
    for k in range(K):
        d[k] = b[k] * s[k]
    return _finish(V, y, n, s, d)


@njit(cache=True, error_model="numpy")
def _lu_solve(E, t):
    """``E^(-1) t`` by Gaussian elimination with partial pivoting (``E`` is overwritten); an empty
    array if a pivot is zero or not finite."""
    n = E.shape[0]
    x = t.copy()
    for col in range(n):
        p = col
        big = abs(E[col, col])
        for r in range(col + 1, n):
            if abs(E[r, col]) > big:
                big = abs(E[r, col])
                p = r
        if not (big > 0.0) or not np.isfinite(big):
            return np.empty(0)
        if p != col:
            for k in range(n):
                tmp = E[col, k]
                E[col, k] = E[p, k]
                E[p, k] = tmp
            tmp = x[col]
            x[col] = x[p]
            x[p] = tmp
        piv = E[col, col]
        for r in range(col + 1, n):
            f = E[r, col] / piv
            if f != 0.0:
                for k in range(col, n):
                    E[r, k] -= f * E[col, k]
                x[r] -= f * x[col]
    for r in range(n - 1, -1, -1):
        acc = x[r]
        for k in range(r + 1, n):
            acc -= E[r, k] * x[k]
        x[r] = acc / E[r, r]
    return x
