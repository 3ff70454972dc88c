"""Preconditioned CG for the Newton direction of a market of many agents of a few orders.

Newton-CG (:mod:`markets.kernels.newton_cg`) solves ``M d = b`` with

    M = -S - c h^T - h c^T + (reg + 1^T h) c c^T,
    -S = diag(D) + sum_iso W_i (1 - g_i) Q_i Q_i^T,

(``D`` the diagonal part of ``-S``, ``h = -S 1``; seed 000 Eq. 2.34-2.36, ``docs/markets.md``) and
scales it by ``diag(D)^(-1/2)`` only. Here each order ``g < 1`` of the market contributes the
rank-one term of its mean agent instead of its agents' own,

    -S' = diag(D) + sum_g v_g v_g^T,   v_g = sqrt((1 - g) / W_g) T_g,

with ``T_g = sum_{i: g_i = g} W_i Q_i`` the order's spending and ``W_g`` its wealth, and the
preconditioner is ``P = M`` with ``-S'`` for ``-S`` (the same ``h``: every ``Q_i`` sums to one, so
``-S' 1 = -S 1``). ``P`` is the Newton matrix of a market with one agent per order, positive definite
as ``M`` is, and ``M - P = Pi (sum_g (1 - g) W_g Cov_g) Pi^T`` is positive semi-definite (``Cov_g``
the wealth-weighted covariance of the order's effective beliefs, ``Pi`` the projection), so the
preconditioned spectrum lies in ``[1, oo)`` and clusters at 1 when the agents of an order agree.
``P^(-1)`` is applied by Woodbury with ``U = [v_1 .. v_G, c, h]``: ``P = diag(D) + U C U^T``,
``C = I_G (+) [[reg + 1^T h, -1], [-1, 0]]``, one (G + 2)-square inverse per solve and about
``2 (G + 2)`` K-long vector operations per application, against ``2 A`` for a product.

Used by Newton-CG from :data:`MIN_AGENTS` agents of order below one (below it the setup costs
more than the product it saves). The order spendings come free from the evaluation (:func:`markets.kernels.potential.evaluate_into`
fills rows ``3 ..`` of its ``D`` buffer). Measured before it was built (session 40,
``benchmarks/probe_market_cg_preconditioner.py``): about one product fewer per solve.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.vmax import vmax_abs_ratio

from .isoelastic import _dot
from .newton_cg import _FM, CG_MAX_ITER, cg_direction, cg_stop, general_apply, newton_rhs
from .potential import GROUP_MIN_GOODS, ISO, link_head, order_links

MIN_AGENTS = 64
"""Newton-CG preconditions its CG this way from this many agents of order below one (the rows ``m``
of :func:`markets.kernels.woodbury.woodbury_rows`, less two); below it, and down to the Woodbury
direction's :data:`markets.kernels.woodbury.WOODBURY_MAX_ROWS`, CG is scaled by the diagonal alone.
Measured (session 41, one thread, the grid's mixed Gaussian-logit markets, µs per item, plain ->
preconditioned): 64 goods x 16 agents 15.2 -> 18.2, x 32 20.2 -> 23.1, x 50 27.3 -> 27.0, x 100 44.5
-> 42.7; 256 x 16 39.8 -> 44.0, x 50 71.5 -> 67.0; 1,024 x 16 140 -> 152, x 50 254 -> 255; and the
image-pixel agents (64 classes, 16 and 22 agents) 15-20 % slower preconditioned. The setup (a (G +
2)-square inverse, G more rows per evaluation) and the Woodbury application per product cost more
than the product they save while a product is cheap."""


@njit(cache=True, error_model="numpy")
def order_rows(kind, inv_eta, K):
    """The rows ``v_g`` (module docstring) the evaluation fills for this market: the number of
    distinct orders ``g < 1`` among its isoelastic agents (in the order of their first agent; an
    order without wealth gets a zero row), 0 below :data:`markets.kernels.potential.GROUP_MIN_GOODS`
    goods (the evaluation then takes agents one by one and does not collect orders)."""
    if K < GROUP_MIN_GOODS:
        return 0
    n = 0
    link = order_links(kind, inv_eta)
    for i in range(kind.shape[0]):
        if kind[i] == ISO and inv_eta[i] < 1.0 and link_head(link, i):
            n += 1
    return n


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _apply_pinv(r, z, dg, Vo, G, c, h, Einv, t, s):
    """``z = P^(-1) r`` by Woodbury (module docstring); ``t, s`` scratch of G + 2."""
    K = r.shape[0]
    for k in range(K):
        z[k] = r[k] / dg[k]
    for j in range(G + 2):
        row = Vo[j] if j < G else (c if j == G else h)
        acc = 0.0
        for k in range(K):
            acc += row[k] * z[k]
        t[j] = acc
    for j in range(G + 2):
        acc = 0.0
        for m in range(G + 2):
            acc += Einv[j, m] * t[m]
        s[j] = acc
    for j in range(G + 2):
        row = Vo[j] if j < G else (c if j == G else h)
        sj = s[j]
        for k in range(K):
            z[k] -= sj * row[k] / dg[k]


@njit(cache=True, error_model="numpy")
def _setup(dg, Vo, G, c, h, beta):
    """``E^(-1)`` with ``E = C^(-1) + U^T diag(dg)^(-1) U`` (module docstring), or an empty array if
    ``dg`` has a non-positive entry or ``E`` is singular to working precision."""
    K = dg.shape[0]
    for k in range(K):
        if not (dg[k] > 0.0):
            return np.empty((0, 0))
    n = G + 2
    E = np.zeros((n, n))
    for j in range(n):
        a = Vo[j] if j < G else (c if j == G else h)
        for m in range(j + 1):
            b = Vo[m] if m < G else (c if m == G else h)
            acc = 0.0
            for k in range(K):
                acc += a[k] * b[k] / dg[k]
            E[j, m] = acc
            E[m, j] = acc
    for j in range(G):
        E[j, j] += 1.0
    # C^(-1) of [[beta, -1], [-1, 0]] is [[0, -1], [-1, -beta]]
    E[G, G + 1] -= 1.0
    E[G + 1, G] -= 1.0
    E[G + 1, G + 1] -= beta
    Einv = np.linalg.inv(E)
    for j in range(n):
        for m in range(n):
            if not np.isfinite(Einv[j, m]):
                return np.empty((0, 0))
    return Einv


@njit(cache=True, fastmath=_FM, error_model="numpy")
def pcg_solve(b, reg, stop, d, scr, kind, inv_eta, W, Q, dg, h, Vo, G):
    """``d = M^(-1) b`` by CG preconditioned with ``P`` (module docstring) until ``max_k |(b - M d)_k|
    / c_k <= stop`` (the stopping rule of :func:`markets.kernels.newton_cg.cg_solve`) or
    :data:`markets.kernels.newton_cg.CG_MAX_ITER` products; ``scr[:K]`` holds ``c = exp(u)``, ``b``
    may be ``scr[3K:4K]``. Returns ``(ok, n_products)``: ``ok`` False with no product made if ``P``
    could not be set up (the caller then solves unpreconditioned), False after a product on a
    non-positive curvature at the first product (the caller's mirror step)."""
    K = b.shape[0]
    c = scr[:K]
    z = scr[K : 2 * K]
    r = scr[3 * K : 4 * K]
    p = scr[4 * K : 5 * K]
    q = scr[5 * K : 6 * K]
    sh = 0.0
    for k in range(K):
        sh += h[k]
    beta = reg + sh
    Einv = _setup(dg, Vo, G, c, h, beta)
    if Einv.shape[0] == 0:
        return False, 0
    t = np.empty(G + 2)
    s = np.empty(G + 2)
    for k in range(K):
        r[k] = b[k]
        d[k] = 0.0
    _apply_pinv(r, z, dg, Vo, G, c, h, Einv, t, s)
    rz = _dot(r, z)
    if not (rz > 0.0):  # P not positive definite in rounding (or b = 0): the caller's plain CG decides
        return False, 0
    for k in range(K):
        p[k] = z[k]
    n = 0
    while n < CG_MAX_ITER:
        rel = vmax_abs_ratio(r[:K], c[:K])
        if rel <= stop:
            break
        n += 1
        general_apply(kind, inv_eta, W, Q, dg, p, q)
        hv = _dot(h, p)
        cv = _dot(c, p)
        for k in range(K):
            q[k] += -c[k] * hv - h[k] * cv + beta * c[k] * cv
        pq = _dot(p, q)
        if not (pq > 0.0):
            if n == 1:
                return False, n
            break
        alpha = rz / pq
        for k in range(K):
            d[k] += alpha * p[k]
            r[k] -= alpha * q[k]
        _apply_pinv(r, z, dg, Vo, G, c, h, Einv, t, s)
        rz_new = _dot(r, z)
        if not (rz_new > 0.0):  # converged to rounding, or P lost definiteness: keep d
            break
        beta_cg = rz_new / rz
        rz = rz_new
        for k in range(K):
            p[k] = z[k] + beta_cg * p[k]
    return True, n


@njit(cache=True, error_model="numpy")
def order_direction(u, T, Wsum, reg, res, tol, d, scr, kind, inv_eta, W, Q, dg, h, Vo, G, log_rhs):
    """The Newton direction of :func:`markets.kernels.newton_cg.cg_direction` (the same right-hand
    side and forcing) by :func:`pcg_solve`; where ``P`` cannot be set up, by ``cg_direction`` itself.
    Returns ``(ok, n_products)``."""
    K = u.shape[0]
    b = scr[3 * K : 4 * K]
    newton_rhs(u, T, Wsum, log_rhs, b, scr[:K], scr[5 * K : 6 * K])
    ok, n = pcg_solve(b, reg, cg_stop(res, tol), d, scr, kind, inv_eta, W, Q, dg, h, Vo, G)
    if ok or n > 0:
        return ok, n
    no1 = np.empty(0)
    no2 = np.empty((0, 0))
    return cg_direction(
        False, u, T, Wsum, reg, res, tol, d, scr, no2, 0.0, no1, no1, no1, kind, inv_eta, W, Q, dg, h, log_rhs
    )
