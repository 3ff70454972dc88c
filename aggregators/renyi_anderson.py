"""The Rényi aggregate by the Anderson-accelerated fixed point (seed 000, Eq. 2.8), for many agents.

The map ``r <- F(r) = log Σ_i w'_i Q_i`` (notation of :mod:`aggregators.renyi_kernels`) has the
Jacobian ``I - D_Q⁻¹ H``: for a shared γ it is ``(1 - γ)(I - D_Q⁻¹ Σ_i w'_i Q_i Q_iᵀ)``, the eigenvalue
``1 - γ`` on all but at most ``A`` directions and the rest spread below it. The plain iteration
contracts by ``1 - γ`` per pass (23-30 passes to 1e-10 at γ = 0.5); Newton removes every direction
but pays, per step, a solve with ``H`` (at ``A >= 50`` and ``K >= 64`` matrix-free CG: several
``2 A K`` products) and a rebuild of the tilted agents. Anderson (memory 5,
:func:`solvers.kernels.anderson.anderson_step`) removes the clustered eigenvalue in one step and
the spread ones at a Krylov rate, and each of its steps is one evaluation of ``F`` (one read of the
item's powers ``E_i``, no ``Q_i`` stored) plus ``O(5 K)``.

Measured (session 23, ``benchmarks/bench_renyi_grid.py`` families, one thread, to 1e-10; median of 5
process times, ``benchmarks/results/session23.md`` §1): Anderson takes 6-15 evaluations where Newton
takes 4-7 steps. Its time over Newton's, one shared γ = 0.5: 0.40-0.74 at ``A = 1,000`` (K 16-4,096),
0.63-1.00 at ``A = 100`` with ``K >= 64``, 0.96-1.23 at ``A = 100`` with ``K = 16``, 0.99-1.50 at
``A = 30-50``; γ = 0.1: 0.38-0.89 at ``A = 1,000``, 0.76-1.15 at ``A = 100``; one γ per agent
(uniform in [0.1, 0.5]): 0.89-2.82 everywhere. :func:`prefer` holds the resulting rule;
``solve_fixed_point(method="auto")`` applies it. Session 31 made each step cheaper (the image ``r + G``
taken as it is, the normalisations and the step's sums vectorised: 5.35-5.56 → 4.31-4.45 ms at
``(K, A) = (4,096, 100)``, γ = 0.5), so the ratios above over-state Anderson's time; the rule was not
re-derived (a warm solve at 8,000 × 269 × 64, γ = 0.5, now takes Anderson 0.46-0.52 s CPU against
Newton's 0.51-0.55 s; the weight fits' fused pass (each item's solve, then its adjoint) was measured no faster
with Anderson; ``benchmarks/results/session31.md`` §7).

Safeguards (as the market's loop, :mod:`markets.kernels.anderson`): an extrapolation more than
:data:`MAX_LOG_STEP` from the plain step is replaced by it; a step whose residual grows by more than
:data:`GROWTH` is replaced by the plain step (history cleared), and so is a stall (no new lowest
residual in ``m + 1`` steps); after :data:`MAX_REJECTIONS` of those the plain iteration runs to the end,
which converges (majorise-minimise) wherever the plain method does.

Stopping: the plain step from the last point has error at most ``res (1/γ_min - 1)`` (the contraction
bound), so the loop runs until that is below ``tol`` (``res <= tol`` when ``γ_min >= 1/2``) and ends
with that step: the answer's error is below ``tol`` like Newton's, not ``tol/γ`` like the plain method's.
Only the fast form (``γ_min >= STABLE_BELOW``, more than two classes) is served.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.anderson import anderson_size, anderson_update, image_slot, plain_fallback, track_best
from solvers.kernels.simplex_log import normalise_log_with

from .renyi_kernels import _absmax, _eval_fast, _reused, _setup, item_rows, threaded

MEMORY = 5
"""Steps kept. Counted on one item of each grid family at γ = 0.5 (K 16-4,096, A 10-1,000, a NumPy
prototype): memory 3, 5, 10 took 3-14, 3-12 and 3-15 evaluations (5 never worse than 3 by more than one)."""
GROWTH = 4.0
"""An accelerated step may raise the residual by at most this factor."""
MAX_REJECTIONS = 3
"""Rejected accelerated steps after which the plain iteration takes over for good."""
MAX_LOG_STEP = 10.0
"""Largest move of a log-probability away from the plain step an extrapolation may make."""
MIN_AGENTS = 100
"""Anderson is preferred, for one shared γ, from this many pooled agents with at least
:data:`MIN_CLASSES` classes and γ of at least :data:`MIN_GAMMA` ..."""
MIN_CLASSES = 64
MIN_GAMMA = 0.25
MANY_AGENTS = 1000
"""... and from this many agents with at least 16 classes at any γ."""


def prefer(n_agents: int, n_classes: int, n_gammas: int = 1, gamma_min: float = 0.5) -> bool:
    """Whether Anderson is the faster solve for items of this shape (measured; see the module).

    One γ per agent (``n_gammas > 1``) keeps Newton: the map then costs a ``K``-vector of
    exponentials per distinct γ (``A K`` for random per-agent γ), and Anderson's 10-30 evaluations
    took 1.0-2.8x Newton's time on every shape measured (A 30-1,000, K 16-4,096, γ in [0.1, 0.5])."""
    if n_gammas > 1 or n_classes < 16 or n_agents < MIN_AGENTS:
        return False
    return n_agents >= MANY_AGENTS or (n_classes >= MIN_CLASSES and gamma_min >= MIN_GAMMA)


@njit(cache=True)
def _workspace(A, K, ng):
    return (
        np.empty((A, K)),
        np.empty((0, K)),  # the tilted agents: never stored (``_eval_fast`` with ``store=False``)
        np.empty((ng, K)),
        np.empty((2, A)),
        np.empty((3, K)),
        np.empty(anderson_size(K, MEMORY)),
        np.empty((A, K)),
    )


@njit(cache=True)
def _solve_item(L, wp, gam, gidx, ugam, gbar, r, use_init, tol, max_sweeps, ws):
    """One item; ``r`` (K,) is the start (if ``use_init``) and the answer. Returns ``(sweeps,
    residual, converged)`` with ``sweeps`` the setup pass plus every evaluation of ``F``."""
    K = L.shape[1]
    E, Qi, qg, av, vecs, scr = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5]
    mix, G, acc = vecs[0], vecs[1], vecs[2]
    gmin = gam.min()
    stop = tol if gmin >= 0.5 else tol * gmin / (1.0 - gmin)
    _setup(L, wp, gam, gbar, E, r, use_init, False, acc, av[0])
    normalise_log_with(r, acc)
    _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, av[1], False)
    sweeps = 2
    res = _absmax(G)
    n_hist, pos, rejected, stalled = -1, 0, 0, 0
    best = res
    while res > stop and sweeps < max_sweeps and np.isfinite(res):
        if rejected >= MAX_REJECTIONS:
            for y in range(K):
                r[y] += G[y]
            normalise_log_with(r, acc)
        else:
            # the plain image F(r) = log mix is r + G, already normalised (Σ_i w'_i = 1, each Q_i normalised)
            gu = image_slot(scr, K, MEMORY)
            for y in range(K):
                gu[y] = r[y] + G[y]
            n_hist, pos = anderson_update(r, n_hist, pos, MEMORY, scr, MAX_LOG_STEP)
        _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, av[1], False)
        sweeps += 1
        new = _absmax(G)
        if rejected < MAX_REJECTIONS and not (new <= GROWTH * res):
            rejected += 1
            n_hist = -1
            plain_fallback(r, K, MEMORY, scr)
            _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, av[1], False)
            sweeps += 1
            new = _absmax(G)
        res = new
        best, stalled, rejected, n_hist = track_best(res, best, stalled, rejected, n_hist, MEMORY)
    converged = res <= stop
    if np.isfinite(res):
        for y in range(K):
            r[y] += G[y]
        normalise_log_with(r, acc)
    return sweeps, res, converged


@njit(cache=True)
def _solve_range(lo, hi, L, agents, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, ws):
    every = agents.shape[0] == L.shape[1]
    for j in range(lo, hi):
        Ln = item_rows(L, j, agents, every, ws[6])
        s, e, c = _solve_item(Ln, wp, gam, gidx, ugam, gbar, R[j], use_init, tol, max_sweeps, ws)
        sweeps[j] = s
        res[j] = e
        conv[j] = c


@njit(cache=True, parallel=True)
def _solve_par(L, agents, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv):
    n = L.shape[0]
    nch = min(n, 64)
    for c in prange(nch):
        lo = c * n // nch
        hi = (c + 1) * n // nch
        ws = _workspace(agents.shape[0], L.shape[2], ugam.shape[0])
        _solve_range(lo, hi, L, agents, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, ws)


def solve_items(L, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, agents=None):
    """Every item of ``L`` (n, A, K) by the accelerated fixed point, fast form; the arguments as
    :func:`aggregators.renyi_kernels.solve_items` (``agents``: pool only these, read in place)."""
    if agents is None:
        agents = np.arange(L.shape[1], dtype=np.int64)
    a, K, ng = agents.shape[0], L.shape[2], ugam.shape[0]
    args = (L, agents, wp, gam, gidx, ugam, gbar, R, use_init, float(tol), int(max_sweeps), sweeps, res, conv)
    if threaded(L.shape[0], L.shape[0] * a * K):
        _solve_par(*args)
        return
    ws = _reused("anderson", (a, K, ng), lambda: _workspace(a, K, ng), 8 * a * K * 3)
    _solve_range(0, L.shape[0], *args, ws)
