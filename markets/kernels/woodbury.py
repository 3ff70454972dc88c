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


@njit(cache=True)
def woodbury_scratch_size(rows):
    """Floats of the scratch ``S`` of :func:`woodbury_direction` and :func:`woodbury_resolve` for
    ``rows`` (:func:`woodbury_rows`): the bordered ``E`` and the small solve's right-hand side, so that
    a step allocates nothing (until session 54 it allocated six small arrays; their share of the
    direction's time was not measured apart from the Gram pass's change,
    ``benchmarks/results/session54.md`` §2)."""
    return (rows + 1) * (rows + 1) + rows


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
    """``E += V[:n] V[:n]^T`` in blocks of two rows by two: each pass over the goods loads four rows
    for four products (session 40's two rows against one: three loads for two; ten rows and the
    right-hand side's, 1,024 goods, 8.9 -> 6.9 us, 4,096 goods 48.8 -> 36.9, 256 goods 1.5 -> 1.1;
    session 54), the diagonal blocks' three products in one pass, a last odd row alone."""
    a = 0
    while a + 1 < n:
        va = V[a]
        va2 = V[a + 1]
        b = 0
        while b + 1 < a:
            vb = V[b]
            vb2 = V[b + 1]
            s11 = 0.0
            s12 = 0.0
            s21 = 0.0
            s22 = 0.0
            for k in range(K):
                x = va[k]
                y = va2[k]
                p = vb[k]
                q = vb2[k]
                s11 += x * p
                s12 += x * q
                s21 += y * p
                s22 += y * q
            E[a, b] += s11
            E[b, a] += s11
            E[a, b + 1] += s12
            E[b + 1, a] += s12
            E[a + 1, b] += s21
            E[b, a + 1] += s21
            E[a + 1, b + 1] += s22
            E[b + 1, a + 1] += s22
            b += 2
        s11 = 0.0
        s12 = 0.0
        s22 = 0.0
        for k in range(K):
            x = va[k]
            y = va2[k]
            s11 += x * x
            s12 += x * y
            s22 += y * y
        E[a, a] += s11
        E[a + 1, a] += s12
        E[a, a + 1] += s12
        E[a + 1, a + 1] += s22
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
def woodbury_direction(kind, inv_eta, W, Q, c, dg, h, reg, b, d, V, Ew, S):
    """``d = M^(-1) b`` (module docstring) from the effective beliefs ``Q``, the prices ``c``, the
    diagonal ``dg`` and ``h`` of :func:`markets.kernels.newton_cg.general_diagonal` and the shift
    regularisation ``reg``. ``V`` is scratch of ``(woodbury_rows(...) + 2, K)`` floats; ``Ew``
    (``woodbury_rows(...)`` square, else (0, 0)) receives ``E`` for :func:`woodbury_resolve`; ``S``
    is scratch of :func:`woodbury_scratch_size` floats.
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
    E = S[: (n + 1) * (n + 1)].reshape((n + 1, n + 1))
    for a in range(n + 1):
        for k in range(n + 1):
            E[a, k] = 0.0
    j = 0
    for i in range(A):
        if kind[i] == ISO and inv_eta[i] != 1.0:
            w = W[i] * (1.0 - inv_eta[i])
            if w != 0.0:
                row = V[j]
                q = Q[i]
                for k in range(K):
                    row[k] = q[k] * s[k]
                E[j, j] = 1.0 / w
                j += 1
    sh = 0.0
    bs = V[n]  # D^(-1/2) b, the last row: the Gram pass gives V D^(-1/2) b with E
    for k in range(K):
        sk = s[k]
        V[m, k] = c[k] * sk
        V[m + 1, k] = h[k] * sk
        bs[k] = b[k] * sk
        sh += h[k]
    E[m + 1, m] = -1.0
    E[m, m + 1] = -1.0
    E[m + 1, m + 1] = -(reg + sh)
    _gram(V, n + 1, K, E)
    if Ew.shape[0] == n:
        for a in range(n):
            for k in range(n):
                Ew[a, k] = E[a, k]
    y = S[(n + 1) * (n + 1) : (n + 1) * (n + 1) + n]
    for a in range(n):
        y[a] = E[n, a]
    if not _lu_solve(E, y, n):  # E[:n, :n] is factored in place (the caller's copy is Ew)
        return False
    for k in range(K):
        d[k] = bs[k]
    return _finish(V, y, n, s, d)


@njit(cache=True, fastmath=_FM, error_model="numpy")
def woodbury_resolve(V, Ew, b, d, S):
    """``d = M^(-1) b`` for another right-hand side ``b`` with the matrix of the last
    :func:`woodbury_direction` call (its ``V`` and ``Ew``): ``m + 2`` dot products, the small solve
    and ``m + 2`` updates, no Gram pass (:mod:`markets.kernels.corrector` solves twice per step).
    ``S``: scratch of :func:`woodbury_scratch_size` floats. Returns False if the small solve fails
    or ``d`` is not finite."""
    n = Ew.shape[0]
    K = V.shape[1]
    s = V[n + 1]
    E = S[: n * n].reshape((n, n))
    t = S[n * n : n * n + n]
    for a in range(n):
        va = V[a]
        acc = 0.0
        for k in range(K):
            acc += va[k] * (b[k] * s[k])
        t[a] = acc
        for k in range(n):
            E[a, k] = Ew[a, k]
    if not _lu_solve(E, t, n):
        return False
    for k in range(K):
        d[k] = b[k] * s[k]
    return _finish(V, t, n, s, d)


@njit(cache=True, error_model="numpy")
def _lu_solve(E, x, n):
    """``x = E[:n, :n]^(-1) x`` in place by Gaussian elimination with partial pivoting (``E`` is
    overwritten); False if a pivot is zero or not finite."""
    for col in range(n):
        p = col
        big = abs(E[col, col])
        for r in range(col + 1, n):
            if abs(E[r, col]) > big:
                big = abs(E[r, col])
                p = r
        if not (big > 0.0) or not np.isfinite(big):
            return False
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
    return True
