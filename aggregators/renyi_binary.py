"""The Rényi fixed point with two classes: a scalar Newton iteration on the log-odds (seed 000, Eq. 2.8).

With ``K = 2`` write ``ℓ_i = log P_i(1) - log P_i(0)`` (the agents' log-odds) and ``t`` the aggregate's
log-odds. The tilted agents ``Q_i ∝ P_i^{γ_i} Q^{1-γ_i}`` of Eq. (2.8) have log-odds
``u_i = γ_i ℓ_i + (1 - γ_i) t``, so the fixed point is the root of the scalar equation

    φ(t) = log m(t) - log m0(t) - t = 0,   m = Σ_i w'_i σ(u_i),   m0 = Σ_i w'_i σ(-u_i) = 1 - m,

with ``φ'(t) = m'/(m m0) - 1``, ``m' = Σ_i w'_i (1 - γ_i) σ(u_i) σ(-u_i)``: ``φ'`` lies in
``[-1, -min γ]`` (the map's derivative is in ``[0, 1 - min γ]``), so Newton converges
quadratically near the root; the root lies in ``[min ℓ, max ℓ]`` (beyond ``max ℓ`` every
``u_i < t`` so ``φ < 0``, and symmetrically), which brackets the safeguard: a step leaving the
bracket, or following a step that did not halve ``|φ|``, is replaced by bisection.

One evaluation costs ``A`` exponentials and no ``(A, K)`` array, where the general kernels
(:mod:`aggregators.renyi_kernels`) pay a per-item set-up, two matrix-vector passes and a 2 x 2
Cholesky. Same start (the power mean ``(1/γ̄) log Σ_i w'_i P_i^{γ_i}``), same residual
(``max_y |F(r)(y) - r(y)|`` of the normalised log-probabilities ``r = (log σ(-t), log σ(t))``)
and the same final free Newton step once it is below ``tol``. ``sweeps`` counts the set-up pass
(the log-odds) and every evaluation. Used for the fast form (``min γ >= STABLE_BELOW``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.kernels.refcount import NO_REFCOUNT


@njit(cache=True, inline="always")
def _softplus(x):
    """``log(1 + exp(x))`` without overflow."""
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@njit(cache=True)
def _evaluate(lo, wp, gam, t):
    """``(g1, g0, dphi)``: the residual's two components ``log m + softplus(-t)`` and
    ``log m0 + softplus(t)`` (so ``φ = g1 - g0``) and ``φ'(t)``."""
    m = 0.0
    m0 = 0.0
    dm = 0.0
    for i in range(lo.shape[0]):
        u = gam[i] * lo[i] + (1.0 - gam[i]) * t
        e = math.exp(-abs(u))
        inv = 1.0 / (1.0 + e)
        s_big = inv  # σ(|u|)
        s_small = e * inv  # σ(-|u|)
        if u >= 0.0:
            m += wp[i] * s_big
            m0 += wp[i] * s_small
        else:
            m += wp[i] * s_small
            m0 += wp[i] * s_big
        dm += wp[i] * (1.0 - gam[i]) * s_big * s_small
    g1 = math.log(m) + _softplus(-t)
    g0 = math.log(m0) + _softplus(t)
    return g1, g0, dm / (m * m0) - 1.0


@njit(cache=True, **NO_REFCOUNT)
def _solve_item(L, wp, gam, gbar, r, use_init, tol, max_sweeps, lo):
    """One item: ``r`` (2,) holds the start (if ``use_init``) and receives the answer. Returns
    ``(sweeps, residual, converged)``; ``lo`` (A,) is scratch."""
    A = L.shape[0]
    a = np.inf
    b = -np.inf
    for i in range(A):
        lo[i] = L[i, 1] - L[i, 0]
        a = min(a, lo[i])
        b = max(b, lo[i])
    if use_init:
        t = r[1] - r[0]
    else:
        # the power mean's log-odds: (1/γ̄) (log Σ w'_i P_i(1)^γ_i - log Σ w'_i P_i(0)^γ_i), max-shifted
        c1 = -np.inf
        c0 = -np.inf
        for i in range(A):
            c1 = max(c1, gam[i] * L[i, 1])
            c0 = max(c0, gam[i] * L[i, 0])
        s1 = 0.0
        s0 = 0.0
        for i in range(A):
            s1 += wp[i] * math.exp(gam[i] * L[i, 1] - c1)
            s0 += wp[i] * math.exp(gam[i] * L[i, 0] - c0)
        t = (c1 + math.log(s1) - c0 - math.log(s0)) / gbar
    t = min(max(t, a), b)
    sweeps = 1
    converged = False
    res = np.inf
    last = np.inf
    while sweeps < max_sweeps:
        g1, g0, dphi = _evaluate(lo, wp, gam, t)
        sweeps += 1
        res = max(abs(g1), abs(g0))
        if not np.isfinite(res):
            break
        phi = g1 - g0
        if phi > 0.0:  # φ decreases: the root is above t
            a = t
        else:
            b = t
        tn = t - phi / dphi
        if res <= tol:
            converged = True
            t = tn  # the final Newton step costs no evaluation
            break
        if not (a < tn < b) or abs(phi) > 0.5 * last:
            tn = 0.5 * (a + b)  # out of the bracket, or the last step did not halve |φ|: bisect
        last = abs(phi)
        t = tn
    r[0] = -_softplus(t)
    r[1] = -_softplus(-t)
    return sweeps, res, converged


@njit(cache=True)
def solve_items(L, wp, gam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv):
    """Every item of ``L`` (n, A, 2); ``R`` (n, 2) holds starts (if ``use_init``) and answers."""
    lo = np.empty(L.shape[1])
    for j in range(L.shape[0]):
        s, e, c = _solve_item(L[j], wp, gam, gbar, R[j], use_init, tol, max_sweeps, lo)
        sweeps[j] = s
        res[j] = e
        conv[j] = c
