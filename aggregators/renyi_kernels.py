"""Compiled kernels of the weighted Rényi divergence aggregator (seed 000, Eq. 2.6-2.8).

Everything here works on ONE item at a time (``L`` is ``(n_agents, n_classes)`` of normalised
log-probabilities) and is looped over items with ``prange``; the Python layer
(:mod:`aggregators.renyi_fixed_point`) validates inputs and chooses the options.

Notation (per item): ``r = log Q`` the current aggregate (normalised), ``w'`` the mixture weights
``w'_i ∝ w_i / γ_i`` of Eq. (2.8), ``Q_i(y) ∝ P_i(y)^{γ_i} Q(y)^{1-γ_i}`` the tilted agents, and the
fixed-point map ``F(r) = log Σ_i w'_i Q_i`` (already normalised because ``Σ w' = 1``).
The fixed-point residual is ``G = F(r) - r``.

Two evaluations of ``F``:

``fast``
    ``E_i = exp(γ_i (L_i - max L_i))`` is computed once per item (the setup pass); then one
    evaluation costs ``n_groups * K`` exponentials (one group per distinct γ) and two
    matrix-vector products: ``Z_i = Σ_y E_i(y) Q(y)^{1-γ_i}`` and ``mix = Σ_i (w'_i/Z_i) E_i Q^{1-γ_i}``.
    ``G`` is a difference of O(1) logs, so its absolute error is ~1e-16 and the error in ``r`` is
    ~1e-16/γ; used when ``min γ_i >= STABLE_BELOW``. Its exponentials and logs are vectorised
    (:mod:`solvers.kernels.fastexp`, :mod:`solvers.kernels.fastlog`) from :data:`VECTOR_MIN`
    classes. ``F`` is shift-invariant (``F(r + c) = F(r)``), so the iterate is not normalised
    inside the Newton loop (``H 1 = Q``: Newton's step removes an offset exactly); line-search
    trials store no ``Q_i`` (rebuilt by :func:`_tilted` on acceptance).
``stable``
    ``u_i = γ_i (L_i - r)``, ``τ_i = log1p(Σ_y Q(y) expm1(u_i(y)))``,
    ``G = log1p(Σ_i w'_i expm1(u_i - τ_i))``: every term is O(γ) and computed with *relative*
    accuracy, so the fixed point stays accurate as γ → 0 (where it tends to the log pool, Prop. 2).
    Costs ``n_agents * K`` ``expm1`` per evaluation.

Newton (in log coordinates). Differentiating ``F`` gives ``I - ∂F/∂r = D_Q^{-1} H`` with the
symmetric positive-definite ``K x K`` matrix

    H = diag(Σ_i w'_i γ_i Q_i) + Σ_i w'_i (1 - γ_i) Q_i Q_iᵀ,     Q = exp(F(r)) = Σ_i w'_i Q_i,

so the Newton step for ``r = F(r)`` is ``δ = H^{-1} (Q ⊙ G)`` (a dense, Woodbury or CG solve per item,
chosen by shape: :mod:`aggregators.renyi_hessian`). Its
eigenvalues lie in ``[min γ, 1]`` relative to ``D_Q``: this is why the plain iteration ``r <- F(r)``
contracts only at rate ``1 - γ`` (about ``23/γ`` sweeps for 1e-10), and why Newton does not care.
Steps are damped by backtracking on ``||G||_2`` and fall back to the plain (majorise-minimise) step.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from numba import njit, prange

from solvers.kernels.fastexp import exp_row, exp_scaled, exp_scaled_inplace, expm1_inplace
from solvers.kernels.fastlog import log_into
from solvers.kernels.refcount import NO_REFCOUNT
from solvers.kernels.rows import at, put
from solvers.kernels.simplex_log import normalise_log, normalise_log_with
from solvers.kernels.vmax import vmax, vmax_row

from . import renyi_binary
from .renyi_hessian import CG, cg_known, hsolve, resolve, workspace

STABLE_BELOW = 1e-3
"""Use the ``stable`` evaluation when the smallest γ_i is below this."""

ADJOINT_RTOL = 1e-12
"""CG's relative residual for the adjoint ``H λ = e_y`` (the direct solves are exact); the weight fits
pass a looser one (:data:`aggregators.renyi_gradient.FIT_ADJOINT_RTOL`)."""

VECTOR_MIN = 16
"""Below this many classes the scalar ``np.exp``/``np.log`` loops are used: the vectorised kernels'
fixed cost (30-60 ns a call, measured) is more than they save on a few elements."""

CERTIFY_FRACTION = 0.5
"""An exact Newton step (dense, Woodbury) is taken without a confirming evaluation when the bound of
:func:`_step_bound` on the residual after it is at most this fraction of ``tol``, ..."""

PREDICT_FRACTION = 1e-3
"""... or when the rate of the last full step (residual ``c prev²``) predicts a residual ``c res²``
below this fraction of ``tol`` after it (a heuristic: the measured residuals stayed below ``tol / 20``
on the grid benchmark's families; ``tests/aggregators/test_renyi_binary.py`` measures them)."""

POLISH_CG_FRACTION = 1e-2
"""The closing Newton step at the accepted point (:func:`_solve_item`) reuses the last factor when the
solve is exact (dense, Woodbury), but with CG it is a fresh solve of three to five products (skipping it
where allowed below took 0.88-1.05x the time an item, median 0.94, over seven CG shapes of 22-50 agents;
``benchmarks/results/session57.md`` §4). With
CG it is skipped for the plain step when that step's error bound ``residual * (1/γ_min - 1)`` is at most
this fraction of ``tol`` (so the answer is within ``tol / 100`` of the fixed point); the exact solves keep
the bound 1e-14 (as CG does when ``tol`` is 1e-12 or finer)."""

_FM = {"nsz", "contract", "reassoc"}
"""Fast-math flags of the fast form's sums (vectorised reductions; the vectorised exp and log keep
their own flags)."""


@njit(cache=True, inline="always")
def _exp_into(x, g, out, shift=0.0):
    """``out = exp(g (x - shift))`` (``out`` may be ``x``): vectorised from :data:`VECTOR_MIN` elements."""
    if x.shape[0] >= VECTOR_MIN:
        exp_scaled(x, g, out, shift)
    else:
        for y in range(x.shape[0]):
            out[y] = np.exp(g * (x[y] - shift))


@njit(cache=True, inline="always")
def _exp_row_into(x, i, g, out, o, shift=0.0):
    """:func:`_exp_into` from row ``i`` of ``x`` into row ``o`` of ``out`` (either may be 1-D), without
    views of the rows (:mod:`solvers.kernels.rows`)."""
    K = x.shape[-1]
    if K >= VECTOR_MIN:
        exp_row(x, i, g, out, o, shift)
    else:
        for y in range(K):
            put(out, o, y, np.exp(g * (at(x, i, y) - shift)))


@njit(cache=True)
def _exp_inplace(x, g, shift=0.0):
    """``x = exp(g (x - shift))`` (:func:`_exp_into` in place, by the kernel LLVM vectorises in place)."""
    if x.shape[0] >= VECTOR_MIN:
        exp_scaled_inplace(x, g, shift)
    else:
        for y in range(x.shape[0]):
            x[y] = np.exp(g * (x[y] - shift))


@njit(cache=True)
def _expm1_inplace(x):
    """``x = expm1(x)``: the vectorised kernel from :data:`VECTOR_MIN` elements, else ``np.expm1``."""
    if x.shape[0] >= VECTOR_MIN:
        expm1_inplace(x)
    else:
        for y in range(x.shape[0]):
            x[y] = np.expm1(x[y])


@njit(cache=True, inline="always")
def _log_into(x, out):
    """``out = log(x)`` (``out`` not ``x``): vectorised from :data:`VECTOR_MIN` elements."""
    if x.shape[0] >= VECTOR_MIN:
        log_into(x, out)
    else:
        for y in range(x.shape[0]):
            out[y] = np.log(x[y])


@njit(cache=True)
def _scaled_powers(L, gam, E, top):
    """``E_i = exp(γ_i (L_i - max L_i))`` (the fast form's setup, max-shifted per agent), with the
    vectorised exp (:mod:`solvers.kernels.fastexp`), which subtracts the shift itself; ``top`` (A,)
    receives ``max L_i``. Rows are indexed, not sliced (:mod:`solvers.kernels.rows`)."""
    A, K = L.shape
    for i in range(A):
        m = vmax_row(L, i)
        top[i] = m
        _exp_row_into(L, i, gam[i], E, i, m)


@njit(cache=True)
def _setup(L, wp, gam, gbar, E, r, use_init, stable, x, sh):
    """Setup pass: ``E_i = exp(γ_i (L_i - max L_i))`` (fast form) and, unless warm-started, the start.

    The start is the power mean ``r0(y) = (1/γ̄) log Σ_i w'_i P_i(y)^γ̄`` (γ̄ = Σ w'_i γ_i): exact at
    γ = 1 (linear pool) and as γ → 0 (log pool), so Newton starts close at both ends of the family.
    With one shared γ in the fast form it is read off ``E`` (no extra exponentials).
    """
    A, K = L.shape
    if not stable:
        _scaled_powers(L, gam, E, sh)
    if use_init:
        normalise_log(r)
        return
    if not stable:
        # read off E: r0 = (1/γ̄) log Σ_i w'_i P_i^{γ_i}, the power mean for a shared γ; with one γ per
        # agent it tends to the γ → 0 limit Σ_i (w'_i γ_i / γ̄) log P_i of the fixed point as well
        M = -np.inf
        for i in range(A):
            sh[i] = gam[i] * sh[i]  # sh held max L_i (:func:`_scaled_powers`)
            if sh[i] > M:
                M = sh[i]
        for i in range(A):
            sh[i] = wp[i] * np.exp(sh[i] - M)
        for y in range(K):
            r[y] = 0.0
        for i in range(A):
            for y in range(K):
                r[y] += sh[i] * E[i, y]
        _log_into(r, x)
        for y in range(K):
            r[y] = (x[y] + M) / gbar
        return  # not normalised: the map is shift-invariant and Newton's first step removes the shift
    else:
        for y in range(K):
            c = L[0, y]
            for i in range(1, A):
                if L[i, y] > c:
                    c = L[i, y]
            acc = 0.0
            for i in range(A):
                acc += wp[i] * np.expm1(gbar * (L[i, y] - c))
            if acc <= -1.0:
                r[y] = c - 1e3
            else:
                r[y] = c + np.log1p(acc) / gbar
    normalise_log(r)


@njit(cache=True, fastmath=_FM)
def _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, inv, store):
    """One evaluation of the fixed-point map (fast form). Fills ``mix``, ``G``, ``qg`` (the powers
    ``Q^{1-γ}`` per group, max-shifted) and ``inv`` (A,) (``1 / Σ_y E_i Q^{1-γ_i}``), and ``Qi`` if
    ``store`` (else :func:`_tilted` rebuilds it from these), with the vectorised exp and log
    (:mod:`solvers.kernels.fastexp`, ``fastlog``)."""
    A, K = E.shape
    ng = ugam.shape[0]
    rmax = vmax(r)
    for g in range(ng):
        _exp_into(r, 1.0 - ugam[g], qg[g], rmax)
    for y in range(K):
        mix[y] = 0.0
    for i in range(A):
        g = gidx[i]
        s = 0.0
        for y in range(K):
            s += E[i, y] * qg[g, y]
        iv = 1.0 / s
        inv[i] = iv
        c = wp[i] * iv
        if store:
            for y in range(K):
                v = E[i, y] * qg[g, y]
                Qi[i, y] = v * iv
                mix[y] += c * v
        else:
            for y in range(K):
                mix[y] += c * (E[i, y] * qg[g, y])
    _log_into(mix, G)
    for y in range(K):
        G[y] -= r[y]


@njit(cache=True)
def _tilted(E, gidx, qg, inv, Qi):
    """``Q_i = E_i Q^{1-γ_i} / Σ_y (...)`` from what :func:`_eval_fast` kept (one pass, no exp)."""
    A, K = E.shape
    for i in range(A):
        g = gidx[i]
        iv = inv[i]
        for y in range(K):
            Qi[i, y] = E[i, y] * qg[g, y] * iv


@njit(cache=True, fastmath=_FM)
def _tilted_at(L, wp, gam, r, Qi, mix, x, d, u):
    """``Q_i ∝ exp(γ_i L_i + (1-γ_i) r)`` and ``mix = Σ_i w'_i Q_i`` at a given point ``r`` in one
    exponential pass (what the adjoint needs at a solved fixed point; no set-up of ``E``); unless
    ``d`` is empty, also the sums ``d = Σ_i w'_i γ_i Q_i`` and ``u = Σ_i w'_i (1-γ_i) Q_i`` of
    :func:`aggregators.renyi_hessian.cg_known` (each row still in cache: no pass of their own)."""
    A, K = L.shape
    du = d.shape[0] > 0
    shared = True
    for i in range(1, A):
        if gam[i] != gam[0]:
            shared = False
    # one γ: d = γ mix and u = (1 - γ) mix, formed at the end (two K-vector updates an agent fewer)
    at_end = du and shared and A > 0
    du = du and not at_end
    for y in range(K):
        mix[y] = 0.0
        if du:
            d[y] = 0.0
            u[y] = 0.0
    for i in range(A):
        g = gam[i]
        for y in range(K):
            x[y] = g * L[i, y] + (1.0 - g) * r[y]
        _exp_row_into(x, 0, 1.0, Qi, i, vmax(x))
        t = 0.0
        for y in range(K):
            t += Qi[i, y]
        iv = 1.0 / t
        c = wp[i] * iv
        if du:
            cd = c * g
            cu = c * (1.0 - g)
            for y in range(K):
                d[y] += cd * Qi[i, y]
                u[y] += cu * Qi[i, y]
        for y in range(K):
            mix[y] += c * Qi[i, y]
            Qi[i, y] *= iv
    if at_end:
        g = gam[0]
        for y in range(K):
            d[y] = g * mix[y]
            u[y] = (1.0 - g) * mix[y]


@njit(cache=True)
def _eval_stable(L, wp, gam, r, Qi, mix, G, acc):
    """One evaluation of the fixed-point map (stable form, accurate as γ → 0)."""
    A, K = L.shape
    er = mix  # exp(r), once per evaluation (was twice per agent and class); mix is written last
    for y in range(K):
        acc[y] = 0.0
        er[y] = np.exp(r[y])
    em = G  # scratch for expm1(u) until G is written, last
    for i in range(A):
        gi = gam[i]
        u = Qi[i]  # u = γ_i (L_i - r), then u - τ_i, then d (the row is overwritten last by Q_i)
        for y in range(K):
            u[y] = gi * (L[i, y] - r[y])
            em[y] = u[y]
        _expm1_inplace(em)
        t = 0.0
        for y in range(K):
            t += er[y] * em[y]
        tau = np.log1p(t)
        for y in range(K):
            u[y] -= tau
        _expm1_inplace(u)
        for y in range(K):
            d = u[y]
            Qi[i, y] = er[y] * (1.0 + d)
            acc[y] += wp[i] * d
    for y in range(K):
        G[y] = np.log1p(acc[y])
        mix[y] = np.exp(r[y] + G[y])


@njit(cache=True, inline="always")
def _newton_direction(mode, Qi, mix, G, wp, gam, rtol, M, C, V, v, delta, b):
    """Solve ``H δ = Q ⊙ G`` at the current point (``mode``: :mod:`aggregators.renyi_hessian`)."""
    K = G.shape[0]
    for y in range(K):
        b[y] = mix[y] * G[y]
    hsolve(mode, Qi, wp, gam, b, delta, rtol, M, C, V, v)


@njit(cache=True, inline="always")
def _normalise(stable, r, x):
    """``r -= logsumexp(r)``: the fast form's one normalisation per item with the vectorised exp
    (:func:`solvers.kernels.simplex_log.normalise_log_with`, scratch ``x``)."""
    if stable:
        normalise_log(r)
    else:
        normalise_log_with(r, x)


@njit(cache=True)
def _step_bound(delta, omc):
    """A bound on the log-space residual after the exact Newton step ``delta`` (``omc = 1 - min γ``).

    Along ``r + ε δ`` the second derivative of ``F(r)(y) = log Σ_i w'_i Q_i(y)`` is
    ``Var_π(a(y)) - Σ_i π_i(y) Var_{Q_i}((1-γ_i) δ)`` with ``π_i(y) = w'_i Q_i(y) / Q(y)`` and
    ``a_i(y) = (1-γ_i) (δ(y) - Q_i·δ)``: at most ``1.25 omc² ρ²`` in absolute value, ``ρ = max δ - min δ``.
    An exact step cancels the linear part, so ``G(r + δ)`` is Taylor's remainder (at most half that)
    and normalising ``r + δ`` at most doubles it: residual ``<= 1.25 omc² ρ²``, plus rounding.
    """
    lo = delta[0]
    hi = delta[0]
    for y in range(1, delta.shape[0]):
        lo = min(lo, delta[y])
        hi = max(hi, delta[y])
    rho = hi - lo
    return 1.25 * omc * omc * rho * rho + 1e-15


@njit(cache=True)
def _norm2(G):
    s = 0.0
    for y in range(G.shape[0]):
        s += G[y] * G[y]
    return np.sqrt(s)


@njit(cache=True)
def _absmax(G):
    s = 0.0
    for y in range(G.shape[0]):
        a = abs(G[y])
        if a > s:
            s = a
    return s


@njit(cache=True, inline="always")
def _evaluate(stable, L, E, wp, gam, gidx, ugam, r, Qi, mix, G, qg, acc, inv, store):
    """One evaluation of the map in the chosen form (the stable form always fills ``Qi``); ``acc``
    (K,) is the stable form's scratch."""
    if stable:
        _eval_stable(L, wp, gam, r, Qi, mix, G, acc)
    else:
        _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, inv, store)


@njit(cache=True)
def _item_workspace(A, K, ng, mode, stable):
    """Scratch arrays of :func:`_solve_item`, allocated once per run of items (not per item). The
    fast form's line-search trials keep no ``(A, K)`` array (at ``A K = 4e6`` a fresh 32 MB array
    costs 15-30 ms of page faults here, more than an evaluation): only the stable form has ``Qt``."""
    M, C, V, v = workspace(mode, A, K)
    return (
        np.empty((A, K)),
        np.empty((A, K)),
        np.empty((A, K) if stable else (0, K)),
        M,
        C,
        V,
        v,
        np.empty((8, K)),
        np.empty((ng, K)),
        np.empty((2, A)),
    )


@njit(cache=True, **NO_REFCOUNT)
def _solve_item(L, wp, gam, gidx, ugam, gbar, r, use_init, newton, mode, stable, tol, max_sweeps, ws):
    """Solve the fixed point for one item; ``r`` (K,) is the start (if ``use_init``) and the answer.

    ``ws`` is :func:`_item_workspace`. Returns ``(sweeps, residual, converged)``; ``sweeps`` counts
    passes over the item's agent data (the setup pass plus every evaluation of ``F``, line-search
    trials included).
    """
    A, K = L.shape
    E, Qi, Qt, M, C, V, v, vecs, qg, av = ws
    sh = av[0]
    inv = av[1]
    mix = vecs[0]
    mixt = vecs[1]
    G = vecs[2]
    Gt = vecs[3]
    rt = vecs[4]
    acc = vecs[5]
    delta = vecs[6]
    b = vecs[7]
    gmin = gam[0]
    for i in range(1, gam.shape[0]):
        gmin = min(gmin, gam[i])
    gmax_inv = 1.0 / gmin
    omc = 1.0 - gmin

    _setup(L, wp, gam, gbar, E, r, use_init, stable, acc, sh)
    _evaluate(stable, L, E, wp, gam, gidx, ugam, r, Qi, mix, G, qg, acc, inv, True)
    sweeps = 2
    res = _absmax(G)
    converged = False
    chord = False  # the workspace holds the factor of H at the point before a full Newton step
    prev = np.inf  # the residual where the last full Newton step started
    while True:
        if not np.isfinite(res):
            break
        if res <= tol:
            converged = True
            # one more Newton step at the accepted point costs no extra pass: take it, unless the
            # plain step is already exact to rounding (its error is at most residual * (1/γ_min - 1)).
            # After a full Newton step it reuses that step's factor (dense, Woodbury): H moved by
            # O(that step) = O(sqrt(residual)), so the chord step's error is O(residual^1.5). With CG
            # the step is a fresh solve: taken only when the plain step's bound exceeds tol / 100
            exact_below = max(1e-14, POLISH_CG_FRACTION * tol) if mode == CG else 1e-14
            if newton and res * (gmax_inv - 1.0) > exact_below:
                for y in range(K):
                    b[y] = mix[y] * G[y]
                if not (chord and resolve(mode, b, delta, C, V, v)):
                    hsolve(mode, Qi, wp, gam, b, delta, 1e-3, M, C, V, v)
                for y in range(K):
                    r[y] += delta[y]
            else:
                for y in range(K):
                    r[y] += G[y]
            _normalise(stable, r, acc)
            break
        if sweeps >= max_sweeps:
            for y in range(K):
                r[y] += G[y]
            _normalise(stable, r, acc)
            break
        if newton:
            # a fresh H every iteration: reusing the last factor (chord steps) was measured at
            # (1,000 x 269 x 64) to cost as many seconds as full Newton and up to twice the sweeps
            # inexact Newton (CG only): a relative residual of min(0.1, res) keeps the quadratic rate
            _newton_direction(mode, Qi, mix, G, wp, gam, min(0.1, res), M, C, V, v, delta, b)
            if mode != CG:  # an exact step: its residual is bounded, or predicted, without evaluating
                bound = _step_bound(delta, omc)
                predicted = res * res * (res / (prev * prev)) if chord else np.inf
                if bound <= CERTIFY_FRACTION * tol or predicted <= PREDICT_FRACTION * tol:
                    for y in range(K):
                        r[y] += delta[y]
                    _normalise(stable, r, acc)
                    res = min(bound, predicted)
                    converged = True
                    break
            prev = res
            g0 = _norm2(G)
            t = 1.0
            accepted = False
            while sweeps < max_sweeps:
                for y in range(K):
                    rt[y] = r[y] + t * delta[y]
                if stable:  # the fast form is shift-invariant: Newton's steps keep r normalised to first order
                    normalise_log(rt)
                _evaluate(stable, L, E, wp, gam, gidx, ugam, rt, Qt, mixt, Gt, qg, acc, inv, False)
                sweeps += 1
                if _norm2(Gt) <= (1.0 - 1e-4 * t) * g0:
                    accepted = True
                    break
                t *= 0.5
                if t < 1.0 / 16.0:
                    break
            chord = accepted and t == 1.0
            if accepted:
                for y in range(K):
                    r[y] = rt[y]
                if stable:
                    Qi, Qt = Qt, Qi
                else:
                    _tilted(E, gidx, qg, inv, Qi)
                mix, mixt = mixt, mix
                G, Gt = Gt, G
            else:
                # fall back to the plain (majorise-minimise) step from the current point
                if sweeps >= max_sweeps:
                    for y in range(K):
                        r[y] += G[y]
                    _normalise(stable, r, acc)
                    break
                for y in range(K):
                    r[y] += G[y]  # = log Q, normalised
                if stable:
                    normalise_log(r)
                _evaluate(stable, L, E, wp, gam, gidx, ugam, r, Qi, mix, G, qg, acc, inv, True)
                sweeps += 1
        else:
            for y in range(K):
                r[y] += G[y]
            if stable:
                normalise_log(r)
            _evaluate(stable, L, E, wp, gam, gidx, ugam, r, Qi, mix, G, qg, acc, inv, True)
            sweeps += 1
        res = _absmax(G)
    return sweeps, res, converged


@njit(cache=True)
def item_rows(L, j, agents, every, Lb):
    """Item ``j``'s rows of the agents ``agents``: ``L[j]`` itself when they are all of its agents
    (``every``), else gathered into the scratch ``Lb`` (no copy of the whole data)."""
    if every:
        return L[j]
    K = L.shape[2]
    for k in range(agents.shape[0]):
        a = agents[k]
        for y in range(K):  # element by element: a slice assignment makes two views an agent
            Lb[k, y] = L[j, a, y]
    return Lb


@njit(cache=True)
def _solve_range(
    lo,
    hi,
    L,
    agents,
    wp,
    gam,
    gidx,
    ugam,
    gbar,
    R,
    use_init,
    newton,
    mode,
    stable,
    tol,
    max_sweeps,
    sweeps,
    res,
    conv,
    ws,
):
    """Items ``lo..hi-1``; ``agents`` (the agents of ``L`` to pool, those of ``wp``): each item's rows
    are gathered into a scratch array (``ws[-1]``) when they are not all of ``L``'s (no copy of the
    whole data). ``ws`` is :func:`_range_workspace`."""
    every = agents.shape[0] == L.shape[1]
    item_ws = ws[:-1]
    for j in range(lo, hi):
        Ln = item_rows(L, j, agents, every, ws[-1])
        s, e, c = _solve_item(
            Ln, wp, gam, gidx, ugam, gbar, R[j], use_init, newton, mode, stable, tol, max_sweeps, item_ws
        )
        sweeps[j] = s
        res[j] = e
        conv[j] = c


@njit(cache=True)
def _range_workspace(A, K, ng, mode, stable):
    """:func:`_item_workspace` and the ``(A, K)`` gather buffer of :func:`_solve_range`, as one tuple."""
    return _item_workspace(A, K, ng, mode, stable) + (np.empty((A, K)),)


@njit(cache=True, parallel=True)
def _solve_items_par(
    L, agents, wp, gam, gidx, ugam, gbar, R, use_init, newton, mode, stable, tol, max_sweeps, sweeps, res, conv
):
    n = L.shape[0]
    nch = min(n, 64)
    for c in prange(nch):
        lo = c * n // nch
        hi = (c + 1) * n // nch
        ws = _range_workspace(agents.shape[0], L.shape[2], ugam.shape[0], mode, stable)
        _solve_range(
            lo,
            hi,
            L,
            agents,
            wp,
            gam,
            gidx,
            ugam,
            gbar,
            R,
            use_init,
            newton,
            mode,
            stable,
            tol,
            max_sweeps,
            sweeps,
            res,
            conv,
            ws,
        )


REUSE_MAX_BYTES = 64 * 2**20
"""Scratch arrays up to this size are kept, per thread, for the next call of the same shape (see
:func:`_reused`); larger ones are allocated afresh on every call."""

_scratch = threading.local()


def _reused(kind, key, make, nbytes):
    """``make()``, or the arrays it made for the last call of this ``kind`` and ``key`` in this thread.

    A serial call allocates its per-item workspace once (``A x K`` arrays). Fresh memory is faulted in
    page by page on its first write: on the (4,096 x 100) item of ``benchmarks/bench_renyi_grid.py``
    two fresh 3.2 MB arrays cost 1.6 ms of an 8.7 ms aggregate (this VM returns freed pages to its
    host). Keeping the last workspace of each kind, per thread and at most :data:`REUSE_MAX_BYTES`,
    lets repeated calls of one shape (a weight fit's evaluations, a service's requests) skip that.
    The kernels overwrite every scratch entry before they read it, so reuse changes no result.
    """
    if nbytes > REUSE_MAX_BYTES:
        return make()
    slot = getattr(_scratch, kind, None)
    if slot is None or slot[0] != key:
        slot = (key, make())
        setattr(_scratch, kind, slot)
    return slot[1]


def _solve_items_seq(L, agents, wp, gam, gidx, ugam, gbar, R, use_init, newton, mode, stable, *rest):
    """Every item of ``L`` in this thread (:func:`_solve_range` over all items; the arguments of
    :func:`_solve_items_par`), with a reused workspace (:func:`_reused`)."""
    a, K, ng = agents.shape[0], L.shape[2], ugam.shape[0]
    key = (a, K, ng, mode, bool(stable))
    ws = _reused("solve", key, lambda: _range_workspace(a, K, ng, mode, stable), 8 * a * K * (3 + bool(stable)))
    _solve_range(0, L.shape[0], L, agents, wp, gam, gidx, ugam, gbar, R, use_init, newton, mode, stable, *rest, ws)


PARALLEL_MIN_WORK = 4_000_000
"""Items are spread over threads only when ``n * A * K`` is at least this (thread start-up and
scheduling cost more than they save on small problems, badly so on a loaded machine)."""


def threaded(n_items: int, work: int) -> bool:
    """Whether the item loops take their threaded driver: at least :data:`PARALLEL_MIN_WORK` numbers,
    two items, and two numba threads. With one item (or one thread) nothing runs in parallel, and the
    threaded drivers allocate their workspaces afresh for every call, where the serial ones reuse
    theirs (:func:`_reused`): measured at one item of ``A = 1,000`` agents and ``K = 4,096`` classes, one
    thread, γ = 0.5, the aggregate took 0.060 s threaded and 0.035 s serial, the adjoint 0.053 and
    0.038 s (``/tmp/s26/cell.py``, session 26: the fresh pages are faulted in on every call)."""
    return work >= PARALLEL_MIN_WORK and n_items >= 2 and numba.get_num_threads() >= 2


def solve_items(
    L, wp, gam, gidx, ugam, gbar, R, use_init, newton, mode, stable, tol, max_sweeps, sweeps, res, conv, agents=None
):
    """Solve every item of ``L`` (n, A, K); ``R`` (n, K) holds starts (if ``use_init``) and answers.
    ``agents``: pool only these agents of ``L`` (``wp``, ``gam`` are theirs; default all), read in
    place. Two classes in the fast form go to the scalar Newton of :mod:`aggregators.renyi_binary`."""
    if agents is None:
        agents = np.arange(L.shape[1], dtype=np.int64)
    if L.shape[2] == 2 and newton and not stable:
        if agents.size < L.shape[1]:
            L = np.take(L, agents, axis=1)
        renyi_binary.solve_items(L, wp, gam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv)
        return
    work = L.shape[0] * agents.size * L.shape[2]
    fn = _solve_items_par if threaded(L.shape[0], work) else _solve_items_seq
    fn(L, agents, wp, gam, gidx, ugam, gbar, R, use_init, newton, mode, stable, tol, max_sweeps, sweeps, res, conv)


@njit(cache=True, fastmath=_FM, **NO_REFCOUNT)
def _adjoint_item(
    j, L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, act, ws, rtol
):
    """One item of :func:`adjoint_items`; ``ws`` holds the scratch arrays of :func:`_adjoint_range`."""
    n, A, K = L.shape
    Qi, Qa, M, C, V, v, vecs, wpa, gama = ws
    mix, G, acc, lam, e, r = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4], vecs[5]
    Ln = L[j]
    for y in range(K):  # element loops, not slice assignments: those need reference counting
        r[y] = R[j, y]
    known = mode == CG and not stable
    if stable:
        _eval_stable(Ln, wp, gam, r, Qi, mix, G, acc)
    elif known:  # CG's diagonal and mean agent formed in the exponential pass (agents at w' = 0 add 0)
        _tilted_at(Ln, wp, gam, r, Qi, mix, acc, V[5], V[1])
    else:
        _tilted_at(Ln, wp, gam, r, Qi, mix, acc, mix[:0], mix[:0])
    for y in range(K):
        e[y] = 0.0
    e[labels[j]] = 1.0
    a = act.size
    if a == A:
        if known:
            cg_known(Qi, wp, gam, e, lam, rtol, V, v)
        else:
            hsolve(mode, Qi, wp, gam, e, lam, rtol, M, C, V, v)
    else:  # H is built from the agents with a positive weight only
        for k in range(a):
            ak = act[k]
            for y in range(K):
                Qa[k, y] = Qi[ak, y]
        if known:
            cg_known(Qa, wpa, gama, e, lam, rtol, V, v)
        else:
            hsolve(mode, Qa, wpa, gama, e, lam, rtol, M, C, V, v)
    lq = 0.0
    for y in range(K):
        lq += lam[y] * mix[y]
    if not (gamma_grad or lam_grad):  # the weights' part alone: one pass over the agent's classes
        for i in range(A):
            W[j, i] = _dot(lam, Qi, i) - lq
            GG[j, i] = 0.0
            LL[j, i] = 0.0
    elif K >= ONE_PASS_MIN:
        for i in range(A):
            lqi, s1, s2 = _agent_sums_one_pass(lam, Qi, Ln, i, r, LQ[j, i] if lam_grad else r, lam_grad)
            W[j, i] = lqi - lq
            GG[j, i] = s1
            LL[j, i] = s2
    else:
        for i in range(A):
            lqi, s1, s2 = _agent_sums(lam, Qi, Ln, i, r, LQ[j, i] if lam_grad else r, lam_grad)
            W[j, i] = lqi - lq
            GG[j, i] = s1
            LL[j, i] = s2


@njit(cache=True, fastmath=_FM, inline="always")
def _dot(a, b, i=0):
    """``a·b``, or ``a·b[i]`` of a 2-D ``b`` without a view of the row (:mod:`solvers.kernels.rows`)
    (a vectorised reduction: the fast-math flags let LLVM re-associate it). Inlined, so it
    takes its caller's flags: callers are compiled with :data:`_FM` too. (Called, not inlined, the
    sums of short rows lost more to the calls than they gained: at 16 classes the adjoint went from
    3.1-3.4 to 4.0-4.6 ms; inlined into a fast-math caller, 2.5-3.0 ms; session 26.)"""
    t = 0.0
    for y in range(a.shape[0]):
        t += a[y] * at(b, i, y)
    return t


@njit(cache=True, fastmath=_FM, inline="always")
def _dot2(x, a, b):
    """``(x·a, x·b)`` in one vectorised pass."""
    s = 0.0
    t = 0.0
    for y in range(x.shape[0]):
        s += x[y] * a[y]
        t += x[y] * b[y]
    return s, t


@njit(cache=True, fastmath=_FM, inline="always")
def _sum_dot(x, a):
    """``(Σ x, x·a)`` in one vectorised pass."""
    s = 0.0
    t = 0.0
    for y in range(x.shape[0]):
        s += x[y]
        t += x[y] * a[y]
    return s, t


@njit(cache=True, fastmath=_FM, inline="always")
def _agent_sums(lam, Q, Lr, i, r, lq, lam_grad):
    """One agent's adjoint sums (:func:`adjoint_items`): with ``q = Q[i]`` and ``lrow = Lr[i]`` (read
    by index, :mod:`solvers.kernels.rows`), ``λ·q``, ``Σ_y λ q (d - q·d)`` with
    ``d = lrow - r``, and with ``lam_grad`` ``Σ_y λ q (lq - q·lq)``.

    Under the fast-math flags of :data:`_FM` the reductions are vectorised; compiled without them
    (as they were to session 25) each sum waited on the last: at one item of ``A = 1,000`` agents and
    ``K = 4,096`` classes these sums took about 11 of the adjoint's 30 ms."""
    K = Q.shape[1]
    a = 0.0
    qd = 0.0
    ql = 0.0
    for y in range(K):
        a += lam[y] * Q[i, y]
        qd += Q[i, y] * (Lr[i, y] - r[y])
    if lam_grad:
        for y in range(K):
            ql += Q[i, y] * lq[y]
    s1 = 0.0
    for y in range(K):
        s1 += lam[y] * Q[i, y] * ((Lr[i, y] - r[y]) - qd)
    s2 = 0.0
    if lam_grad:
        for y in range(K):
            s2 += lam[y] * Q[i, y] * (lq[y] - ql)
    return a, s1, s2


ONE_PASS_MIN = 1024
"""From this many classes the adjoint takes :func:`_agent_sums_one_pass` instead of :func:`_agent_sums`
(chosen once per item, outside the loop over agents; a test of ``K`` inside that loop cost the
two-pass sums 6-8 % at K = 64): inside the adjoint 2-7 % faster at K = 1,024 and 4,096, within ±2 % at
K = 256, 10-11 % slower at K = 64 (session 31, ``benchmarks/results/session31.md``)."""


@njit(cache=True, fastmath=_FM, inline="always")
def _agent_sums_one_pass(lam, Q, Lr, i, r, lq, lam_grad):
    """:func:`_agent_sums` in one pass over the row: ``Σ λ q (d - q·d) = Σ λ q d - (q·d)(λ·q)`` (and
    the same for ``lq``)."""
    K = Q.shape[1]
    a = 0.0
    qd = 0.0
    b = 0.0
    for y in range(K):
        lqy = lam[y] * Q[i, y]
        dy = Lr[i, y] - r[y]
        a += lqy
        qd += Q[i, y] * dy
        b += lqy * dy
    s2 = 0.0
    if lam_grad:
        ql = 0.0
        c = 0.0
        for y in range(K):
            ql += Q[i, y] * lq[y]
            c += lam[y] * Q[i, y] * lq[y]
        s2 = c - ql * a
    return a, b - qd * a, s2


@njit(cache=True)
def _adjoint_workspace(A, a, K, mode):
    """Scratch arrays of :func:`_adjoint_range` (``a`` agents of positive weight of ``A``)."""
    M, C, V, v = workspace(mode, a, K)
    return (np.empty((A, K)), np.empty((a, K)), M, C, V, v, np.empty((6, K)))


@njit(cache=True)
def _adjoint_range(
    lo, hi, L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, scratch, rtol
):
    """Items ``lo..hi-1`` of :func:`adjoint_items`; ``scratch`` is :func:`_adjoint_workspace`."""
    act = np.flatnonzero(wp > 0)
    ws = scratch + (wp[act], gam[act])
    for j in range(lo, hi):
        _adjoint_item(
            j, L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, act, ws, rtol
        )


@njit(cache=True, parallel=True)
def _adjoint_par(L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, rtol):
    n = L.shape[0]
    nch = min(n, 64)
    for c in prange(nch):
        lo, hi = c * n // nch, (c + 1) * n // nch
        scratch = _adjoint_workspace(L.shape[1], np.count_nonzero(wp > 0), L.shape[2], mode)
        _adjoint_range(
            lo, hi, L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, scratch, rtol
        )


def adjoint_items(
    L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, LQ, W, GG, LL, gamma_grad=True, rtol=ADJOINT_RTOL
):
    """Adjoint (implicit-differentiation) quantities at solved fixed points.

    For item ``n`` with label ``y`` solve ``H λ = e_y`` (H of the module docstring, at the fixed
    point ``R[n]``) and return, per agent ``j``:

    - ``W[n, j]  = λ·Q_j - λ·Q``                      (weights part)
    - ``GG[n, j] = Σ_y λ(y) Q_j(y) (d_j(y) - Q_j·d_j)`` with ``d_j = L_j - r``   (γ part)
    - ``LL[n, j] = Σ_y λ(y) Q_j(y) (L_j(y) - Q_j·L_j)`` with raw ``LQ`` (annealing part, if ``lam_grad``)

    (``GG`` and ``LL`` are zero unless ``gamma_grad`` or ``lam_grad``: the weights' part alone reads each
    agent's ``Q_j`` once), from which :mod:`aggregators.renyi_gradient` assembles the exact gradients.
    """
    if threaded(L.shape[0], L.size):
        _adjoint_par(L, wp, gam, gidx, ugam, R, labels, mode, stable, lam_grad, gamma_grad, LQ, W, GG, LL, float(rtol))
    else:
        n, A, K = L.shape
        a = int(np.count_nonzero(wp > 0))
        scratch = _reused("adjoint", (A, a, K, mode), lambda: _adjoint_workspace(A, a, K, mode), 8 * (A + a) * K)
        _adjoint_range(
            0,
            n,
            L,
            wp,
            gam,
            gidx,
            ugam,
            R,
            labels,
            mode,
            stable,
            lam_grad,
            gamma_grad,
            LQ,
            W,
            GG,
            LL,
            scratch,
            float(rtol),
        )
