"""The matrix-free Newton direction of the equilibrium potential (Newton-CG), for many goods.

The dense direction (:mod:`markets.kernels.direction`) forms and factors a K x K matrix: O(K^2 A +
K^3) per step, 3 s for 50 items at K = 512 and no answer in 100 s at K = 2,048. The matrix is a
diagonal plus A rank-one terms (seed 000 Eq. 2.34-2.36; ``docs/markets.md``):

    -S = diag(c) (-Hess_c Phi) diag(c) = sum_iso W_i [g_i diag(Q_i) + (1 - g_i) Q_i Q_i^T] + n_exp diag(c)

(one order ``g``: ``g diag(T) + (1-g) diag(cp) G diag(cp)`` with the Gram matrix ``G`` of
:mod:`markets.kernels.isoelastic`), so a product ``-S v`` costs two passes over the agents' beliefs,
O(K A), and never needs ``G``. The u-space system of the dense direction,

    M = -S - c h^T - h c^T + (reg + 1^T h) c c^T,    h = -S 1,

(the projection of ``-S`` onto prices that sum to one plus ``reg c c^T`` for the shift, exactly the
matrix :func:`markets.kernels.direction.direction_from_S` factors) is solved by conjugate gradients
on its diagonal scaling ``diag(c)^(-1/2) M diag(c)^(-1/2)``, which is ``g Wsum I`` plus a term of
rank at most A + 2 at the equilibrium (``T = Wsum c`` there): CG needs at most A + 3 products in
exact arithmetic and far fewer when the agents' spectrum is clustered. On the general path (agents
of several orders) the scaling is ``diag(D)^(-1/2) M diag(D)^(-1/2)`` with ``D = sum_iso W_i g_i Q_i +
n_exp c``, the diagonal part of ``-S``: ``D / c`` is the wealth-averaged order of the agents who buy a
good, which spreads over 1/30-1 in a market of eta = 2, 10, 30 and log agents, so the ``c`` scaling
leaves that spread to CG (session 36, mixed markets of the grid's three families, K 256-4,096, A 10-1,000,
products per equilibrium: 15 against 28, 10 against 15, 34 against 346 (Dirichlet, K = 1,024, A = 10),
12 against 38, with one Newton step fewer in two of eight; one order: ``D = g c``, the same as ``c``).
Inexact Newton: CG stops when
its residual, in the norm of the clearing residual ``res = max_k |T_k - Wsum c_k| / c_k``, is below
``min(0.1, res) res`` (a quadratic local rate) but never asks for more than ``0.1 tol`` (enough to
reach ``tol`` in that step).

The logarithmic right-hand side (``log_rhs``; markets without exponential agents). Far from the
answer the clearing residual is relative: a good priced 100 times below its demand has
``(T_k - Wsum c_k) / c_k`` near 100. The u-space curvature of that good is about its demand times
the agents' order (``-S_kk`` is about ``g T_k``), so Newton moves its log-price by
``(1 - Wsum c_k / T_k) / g``, at most ``1/g`` per step, while the step that clears it is
``log(T_k / (Wsum c_k)) / g`` (exact for one order, where ``T_k`` is proportional to
``c_k^(1-g)``): one good mispriced by ``e^m`` costs about ``m g`` Newton steps (measured: the
grid's Dirichlet mixed markets start at a residual of 107-113 at K = 256 and 20-26 at K >= 1,024,
and took 7-10 steps; one pass of the seed's fixed point from there gives 0.8-1.6, and so does the
first step with ``log_rhs``). With ``log_rhs`` the
direction solves ``M d = b'`` with
``b'_k = T_k log(T_k / (Wsum c_k))`` (``b_k`` where ``T_k <= 0``): ``b' - b = O((T_k - Wsum
c_k)^2 / T_k)``, so near the answer it is an inexact Newton step of the same quadratic rate, and far
from it each badly priced good moves by its log-mispricing. Measured (mean Newton steps per item,
``tol = 1e-10``, the K >= 256 cells of ``benchmarks/bench_markets_grid.py``: three families, K in
{256, 1,024, 4,096}, A in {2, 10, 100, 1,000}): mixed markets (36 cells) 5.9 to 4.8, the worst cell
9.7 to 6.6 (Dirichlet K = 256, A = 1,000: 9.7 to 5.0); one order eta = 10 (36 cells) 2.8 to 2.6;
eta = 2 where auto takes Newton-CG (A = 10, 9 cells) 3.8 to 3.5; no cell more than 0.3 step worse
(``benchmarks/results/core-at-scale-markets-session9.md``).

Over-priced goods (session 46). On a good priced far above its demand the logarithmic entry
``T_k log(T_k / (Wsum c_k))`` vanishes with the demand while the linear one stays ``-Wsum c_k``; the
exact solve then couples such a good to the under-priced ones, and it can come out with the wrong
sign: from a random start on Dirichlet beliefs without a floor (3 agents, eta 2/10/30, 64 goods; a
good priced ``e^-7.6`` with demand ``1e-14``, equilibrium log-price -385) the direction was ``+4,660``
on that good (linear: ``-1,940``; dense solve of ``M``), each step was capped at a log-step of 10
there and halved six times, and Newton-CG stayed at a clearing error of 2.03 for 99 steps on 48 of
300 items. After a step that barely lowers the residual
(:data:`markets.kernels.equilibrium.RHS_SWITCH`) the loop takes the logarithmic entry on the
under-priced goods only (:data:`UNDER_PRICED_LOG_RHS`), where the docstring's argument holds, and
the linear one elsewhere: 0 of those 300 items at the cap, at most 78 steps (dense Newton's count).
Not from the first step: with the floor on the grid's cells that costs 2 % more steps in all
(logit eta = 10, 256 goods x 10 agents: 2.38 -> 2.94), while the switch leaves them the same to
0.06 of a step (``benchmarks/results/session46.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.fastlog import log_into
from solvers.kernels.vmax import vmax_abs_scaled

from .potential import ISO

_FM = {"reassoc", "contract"}
UNDER_PRICED_LOG_RHS = 2
"""``log_rhs`` of :func:`newton_rhs` taking the logarithmic form on under-priced goods only (``T_k > Wsum
c_k``), the linear one on the others: what :func:`markets.kernels.equilibrium._newton_loop` goes on with
after a step with the full logarithmic form contracted the residual by less than
:data:`markets.kernels.equilibrium.RHS_SWITCH`."""
CG_MAX_ITER = 500
"""Cap on CG products per Newton step (the last iterate is used: every CG iterate from zero is an
ascent direction of Phi)."""


@njit(cache=True, error_model="numpy")
def cg_scratch_size(K, A):
    return 8 * K + A


@njit(cache=True, fastmath=_FM, error_model="numpy")
def iso_apply(PgT, g, T, cp, z, s, v, out, a):
    """``out = -S v`` on the one-order path from the last :func:`markets.kernels.isoelastic.iso_pass`
    (its ``T, cp, z`` and ``s = W / z``): ``g T v + (1-g) cp G (cp v)``; ``a`` (A,) is scratch."""
    K, A = PgT.shape
    for i in range(A):
        a[i] = 0.0
    for k in range(K):
        w = cp[k] * v[k]
        row = PgT[k]
        for i in range(A):
            a[i] += w * row[i]
    for i in range(A):
        a[i] *= s[i] / z[i]
    dl = 1.0 - g
    for k in range(K):
        row = PgT[k]
        acc = 0.0
        for i in range(A):
            acc += row[i] * a[i]
        out[k] = g * T[k] * v[k] + dl * cp[k] * acc


@njit(cache=True, fastmath=_FM, error_model="numpy")
def general_apply(kind, inv_eta, W, Q, dg, v, out):
    """``out = -S v`` on the general path: ``dg v + sum_iso W_i (1-g_i) Q_i (Q_i . v)`` with the
    diagonal ``dg`` of :func:`general_diagonal` and the effective beliefs ``Q`` of
    :func:`markets.kernels.potential.evaluate`."""
    A, K = Q.shape
    for k in range(K):
        out[k] = dg[k] * v[k]
    for i in range(A):
        if kind[i] == ISO:
            wq = W[i] * (1.0 - inv_eta[i])
            if wq != 0.0:
                q = Q[i]
                acc = 0.0
                for k in range(K):
                    acc += q[k] * v[k]
                acc *= wq
                for k in range(K):
                    out[k] += acc * q[k]


@njit(cache=True, fastmath=_FM, error_model="numpy")
def general_diagonal(kind, inv_eta, W, Q, u, dg, h):
    """The diagonal part of ``-S`` on the general path, ``dg = sum_iso W_i g_i Q_i + n_exp c``, and
    in the same pass ``h = -S 1 = sum_iso W_i Q_i + n_exp c`` (each ``Q_i`` sums to one, so
    ``(Q_i Q_i^T) 1 = Q_i``: the product of :func:`cg_solve`'s projection needs no pass of its own);
    returns ``n_exp`` (it adds to the shift regularisation, as in
    :func:`markets.kernels.potential.newton_direction`)."""
    A, K = Q.shape
    n_exp = 0
    for k in range(K):
        dg[k] = 0.0
        h[k] = 0.0
    for i in range(A):
        if kind[i] == ISO:
            w = W[i]
            wg = w * inv_eta[i]
            q = Q[i]
            for k in range(K):
                dg[k] += wg * q[k]
                h[k] += w * q[k]
        else:
            n_exp += 1
    if n_exp > 0:
        for k in range(K):
            ck = n_exp * np.exp(u[k])
            dg[k] += ck
            h[k] += ck
    return n_exp


@njit(cache=True, error_model="numpy")
def _apply(lean, v, out, PgT, g, T, cp, z, s, a, kind, inv_eta, W, Q, dg):
    if lean:
        iso_apply(PgT, g, T, cp, z, s, v, out, a)
    else:
        general_apply(kind, inv_eta, W, Q, dg, v, out)


@njit(cache=True, error_model="numpy")
def _rel(r, wt):
    """The CG residual in the clearing residual's norm: ``max_k |r_k| wt_k`` of the residual ``r`` of
    the system scaled by ``diag(D)^(-1/2)`` is ``max_k |(grad - M d)_k| / c_k`` with
    ``wt = sqrt(D) / c``. (Its 2-norm would ignore goods with tiny prices, whose relative clearing
    error the stopping rule of the equilibrium counts.)"""
    return vmax_abs_scaled(r, wt)  # vectorised (solvers.kernels.vmax); the serial loop's number


@njit(cache=True, error_model="numpy")
def newton_rhs(u, T, Wsum, log_rhs, b, c, x):
    """The Newton right-hand side ``b = T - Wsum c`` at ``u`` (``c = exp(u)`` is filled), or with
    ``log_rhs`` the logarithmic one (module docstring), ``b_k = T_k log(T_k / (Wsum c_k))`` where
    ``T_k > 0``, and where ``log_rhs`` is :data:`UNDER_PRICED_LOG_RHS` only where also
    ``T_k > Wsum c_k``; ``x`` a scratch of K floats."""
    K = u.shape[0]
    exp_scaled(u, 1.0, c)
    for k in range(K):
        b[k] = T[k] - Wsum * c[k]
    if log_rhs:
        log_into(T, x)
        lw = np.log(Wsum)
        under = log_rhs == UNDER_PRICED_LOG_RHS
        for k in range(K):
            t = T[k]
            if t > 0.0 and not (under and b[k] <= 0.0):
                b[k] = t * (x[k] - lw - u[k])  # t log(t / (Wsum c_k))


@njit(cache=True, error_model="numpy")
def cg_direction(lean, u, T, Wsum, reg, res, tol, d, scr, PgT, g, cp, z, s, kind, inv_eta, W, Q, dg, h, log_rhs=False):
    """Newton direction ``d = M^(-1) (T - Wsum c)`` by CG (module docstring) from the spending ``T``
    and the pass (lean: ``PgT, g, cp, z, s``) or evaluation (general: ``Q``, the diagonal ``dg`` and
    ``h = -S 1`` of :func:`general_diagonal`) at ``u`` (lean: ``h`` is ``T``, see :func:`cg_solve`); ``log_rhs``: the logarithmic right-hand side (module docstring; only where every
    agent's demand is positive: no exponential agents). ``scr`` is scratch of :func:`cg_scratch_size`
    floats. Returns ``(ok, n_products)``;
    ``ok`` False (a non-positive curvature, from rounding) sends the caller to the mirror step."""
    K = u.shape[0]
    b = scr[3 * K : 4 * K]  # the right-hand side goes where cg_solve keeps its residual
    newton_rhs(u, T, Wsum, log_rhs, b, scr[:K], scr[5 * K : 6 * K])  # the prices where cg_solve keeps them
    stop = cg_stop(res, tol)
    return cg_solve(lean, u, b, reg, stop, d, scr, PgT, g, T, cp, z, s, kind, inv_eta, W, Q, dg, h, True)


@njit(cache=True, error_model="numpy")
def cg_stop(res, tol):
    """The inexact Newton step's CG stopping residual at clearing residual ``res`` (module docstring):
    ``min(0.1, res) res`` for a quadratic local rate, but never below ``0.1 tol`` (enough to reach ``tol``
    in that step)."""
    forcing = min(0.1, res)
    floor = 0.1 * tol / max(res, 1e-300)
    if forcing < floor:
        forcing = min(0.1, floor)
    return forcing * res


@njit(cache=True, fastmath=_FM, error_model="numpy")
def cg_solve(lean, u, b, reg, stop, d, scr, PgT, g, T, cp, z, s, kind, inv_eta, W, Q, dg, h, have_c=False):
    """``d = M^(-1) b`` by CG on the scaled system (module docstring) until the residual, in the
    clearing residual's norm ``max_k |(b - M d)_k| / c_k``, is at most ``stop`` (or
    :data:`CG_MAX_ITER` products). ``b`` may be ``scr[3K:4K]``; ``have_c``: ``scr[:K]`` holds
    ``exp(u)`` already (:func:`cg_direction` computes it). ``h = -S 1``, the projection's
    vector: every effective belief sums to one, so it is the isoelastic agents' spending plus
    ``n_exp c`` (from :func:`general_diagonal`; on the lean path it is the spending ``T`` itself),
    one product fewer per call than forming it as ``-S 1`` (session 37). The Newton direction
    (:func:`cg_direction`) and the adjoint of the weight gradient
    (:mod:`markets.kernels.adjoint`) both solve with it. Returns ``(ok, n_products)``."""
    K = u.shape[0]
    c = scr[:K]
    rc = scr[K : 2 * K]  # scr[2K:3K] is spare (it held h before h came from the caller)
    r = scr[3 * K : 4 * K]
    p = scr[4 * K : 5 * K]
    q = scr[5 * K : 6 * K]
    v = scr[6 * K : 7 * K]
    wt = scr[7 * K : 8 * K]
    a = scr[8 * K :]
    jac = not lean and dg.shape[0] == K  # the general path's diagonal scaling (module docstring)
    if not have_c:
        exp_scaled(u, 1.0, c)
    for k in range(K):
        ck = c[k]
        dk = dg[k] if jac and dg[k] > 0.0 else ck
        rk = 1.0 / np.sqrt(dk)
        rc[k] = rk
        wt[k] = 1.0 / (rk * ck)
    sh = 0.0
    for k in range(K):
        sh += h[k]
    beta_cc = reg + sh
    rr = 0.0
    for k in range(K):
        r[k] = b[k] * rc[k]  # right-hand side, scaled; CG starts from y = 0
        p[k] = r[k]
        d[k] = 0.0
        rr += r[k] * r[k]
    n = 0
    while _rel(r, wt) > stop and n < CG_MAX_ITER:
        n += 1
        for k in range(K):
            v[k] = p[k] * rc[k]
        _apply(lean, v, q, PgT, g, T, cp, z, s, a, kind, inv_eta, W, Q, dg)
        hv = 0.0
        cv = 0.0
        for k in range(K):
            hv += h[k] * v[k]
            cv += c[k] * v[k]
        pq = 0.0
        for k in range(K):
            q[k] = (q[k] - c[k] * hv - h[k] * cv + beta_cc * c[k] * cv) * rc[k]
            pq += p[k] * q[k]
        if not (pq > 0.0):
            if n == 1:
                return False, n
            break
        alpha = rr / pq
        rr_new = 0.0
        for k in range(K):
            d[k] += alpha * p[k]
            r[k] -= alpha * q[k]
            rr_new += r[k] * r[k]
        beta = rr_new / rr
        rr = rr_new
        for k in range(K):
            p[k] = r[k] + beta * p[k]
    for k in range(K):
        d[k] *= rc[k]
    return True, n
