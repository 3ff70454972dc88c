"""The Rényi fixed point and its weight adjoint in one pass over each item (seed 000, Eq. 2.8).

A weight fit's value-and-gradient pass used to solve every item's fixed point
(:func:`aggregators.renyi_kernels.solve_items`), then read the data a second time for the adjoint
(:func:`aggregators.renyi_kernels.adjoint_items`), which rebuilds every agent's tilted distribution
``Q_i ∝ exp(γ_i L_i + (1 - γ_i) r)`` with one exponential per class and agent. Timed on
gaussian-logit 5,000 × 269 × 64 at γ = 0.5 (120 active agents, one thread): the adjoint 0.40 s, of
which rebuilding the tilted agents 0.28 s; the fixed point 0.21 s (session 20).

Here the adjoint of item ``j`` runs right after its fixed point, while the item is in cache: the
active agents' ``Q_i`` come from the fixed point's own ``E_i = exp(γ_i (L_i - max L_i))`` (one
evaluation of the map at the solution: ``K`` exponentials per γ group instead of ``A K``); only the
agents of weight zero, whose gradient the working-set solver still needs, are exponentiated. The
quantities are those of :func:`aggregators.renyi_kernels.adjoint_items` with the weights' part alone
(``W[j, i] = λ·Q_i - λ·Q`` with ``H λ = e_y``), equal to rounding.

Not kept (session 30, ``benchmarks/results/session30.md`` §1): storing every agent's powers
``exp(γ_i L_i)`` once per weight fit (one more array of the data's size) and reading them here instead of
the set-up's and the weight-zero agents' exponentials. A pass at 20,000 × 269 × 64 (γ = 0.5, 118 active
agents) fell from 1.05-1.19 to 0.70-0.79 s, but the fits did not: building the 2.75 GB array took 0.45-0.6 s
in memory the process had used before and 1.6-5.4 s in fresh memory (slow to fault in on this project's
VMs), and a fit takes only 2-6 passes at each γ, each of them mostly Newton iterations (5-6 evaluations
of the map an item) rather than the set-up. Measured
end to end against this code, alternating runs in one process: γ = 0.5 1.29× the time at 20,000 items and
1.20× at 8,000; the 10-γ sweep 0.98× and 1.02×, the default 13-γ grid 0.93× at 20,000 (gaussian-logit).

Only the per-item fast form is fused (at least three classes, no item block of
:mod:`aggregators.renyi_block`, γ not in the stable range, no annealing gradient); the caller
(:func:`aggregators.renyi_gradient.renyi_loglik_grad`) falls back to the two passes otherwise.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.refcount import NO_REFCOUNT
from solvers.kernels.vmax import vmax

from .renyi_hessian import hsolve
from .renyi_kernels import (
    _FM,
    ADJOINT_RTOL,
    _dot,
    _dot2,
    _eval_fast,
    _exp_inplace,
    _exp_row_into,
    _range_workspace,
    _reused,
    _solve_item,
    _sum_dot,
    item_rows,
    threaded,
)

UNSHIFTED_TINY = 1e-200
"""An agent of weight zero's tilted distribution is built from its row unshifted,
``exp(γ L_i) ⊙ exp((1 - γ)(r - max r))``, when that sum is above this (and finite); below it (the row's
mass far from the aggregate's, or ``L`` with huge negative entries) or on overflow (rows far above 0),
from the max-shifted exponent. With log-probabilities (``L ≤ 0``, some class above ``-log K``) and a
floored aggregate the sum stays far above it."""


@njit(cache=True, fastmath=_FM, **NO_REFCOUNT)
def _adjoint_here(j, L, agents, inactive, gam_all, wp, gam, gidx, ugam, r, label, mode, W, ws, rtol):
    """The weights' adjoint of item ``j`` at its solved aggregate ``r``, from the solve's workspace
    ``ws`` (:func:`aggregators.renyi_kernels._item_workspace`; its ``E`` is the item's set-up)."""
    E, Qi, Qt, M, C, V, v, vecs, qg, av = ws
    K = r.shape[0]
    mix, G, lam, e, x = vecs[0], vecs[2], vecs[3], vecs[4], vecs[5]
    _eval_fast(E, wp, gidx, ugam, r, Qi, mix, G, qg, av[1], True)  # Q_i at r, mix = Σ w'_i Q_i
    for y in range(K):
        e[y] = 0.0
    e[label] = 1.0
    hsolve(mode, Qi, wp, gam, e, lam, rtol, M, C, V, v)
    lq = 0.0
    for y in range(K):
        lq += lam[y] * mix[y]
    for k in range(agents.shape[0]):  # vectorised sums (_dot2, _sum_dot too): unrolled by fast math
        W[j, agents[k]] = _dot(lam, Qi, k) - lq  # rows by index, not views (solvers.kernels.rows)
    if inactive.shape[0] == 0:
        return
    # weight zero: not in the fixed point, still in the gradient. The agents whose γ is the first's (all
    # at a shared γ): Q_i ∝ exp(γ L_i) ⊙ u with u = exp((1 - γ)(r - max r)) computed once, one exponential
    # and two products per class in one read of L_i (no max pass); the others (per-agent γ, where u would
    # be a second exponential per entry) and sums outside (UNSHIFTED_TINY, inf) take the shifted form
    u, uv = vecs[1], vecs[6]
    Lj = L[j]
    rmax = vmax(r)
    g_u = gam_all[inactive[0]]
    for y in range(K):
        u[y] = r[y] - rmax
    _exp_inplace(u, 1.0 - g_u)
    for y in range(K):
        uv[y] = u[y] * lam[y]
    for k in range(inactive.shape[0]):
        i = inactive[k]
        g = gam_all[i]
        if g == g_u:
            _exp_row_into(Lj, i, g, x, 0)
            t, a = _dot2(x, u, uv)
            if UNSHIFTED_TINY < t < np.inf:
                W[j, i] = a / t - lq
                continue
        # another γ, L_i far above 0 (overflow) or its mass where q has none: max-shifted
        for y in range(K):
            x[y] = g * L[j, i, y] + (1.0 - g) * r[y]
        _exp_inplace(x, 1.0, vmax(x))
        t, a = _sum_dot(x, lam)
        W[j, i] = a / t - lq


@njit(cache=True)
def _fused_range(
    lo, hi, L, agents, inactive, gam_all, wp, gam, gidx, ugam, gbar, R, use_init, mode, tol, max_sweeps,
    sweeps, res, conv, labels, W, ws, rtol,
):  # fmt: skip
    """Items ``lo..hi-1``: each one's fixed point (:func:`aggregators.renyi_kernels._solve_item`, the
    active agents' rows gathered as :func:`aggregators.renyi_kernels._solve_range` does), then its
    adjoint (:func:`_adjoint_here`)."""
    every = agents.shape[0] == L.shape[1]
    item_ws = ws[:-1]
    for j in range(lo, hi):
        Ln = item_rows(L, j, agents, every, ws[-1])
        s, e, c = _solve_item(
            Ln, wp, gam, gidx, ugam, gbar, R[j], use_init, True, mode, False, tol, max_sweeps, item_ws
        )
        sweeps[j] = s
        res[j] = e
        conv[j] = c
        _adjoint_here(j, L, agents, inactive, gam_all, wp, gam, gidx, ugam, R[j], labels[j], mode, W, item_ws, rtol)


@njit(cache=True, parallel=True)
def _fused_par(
    L, agents, inactive, gam_all, wp, gam, gidx, ugam, gbar, R, use_init, mode, tol, max_sweeps, sweeps, res, conv,
    labels, W, rtol,
):  # fmt: skip
    n = L.shape[0]
    nch = min(n, 64)
    for c in prange(nch):
        lo = c * n // nch
        hi = (c + 1) * n // nch
        ws = _range_workspace(agents.shape[0], L.shape[2], ugam.shape[0], mode, False)
        _fused_range(
            lo, hi, L, agents, inactive, gam_all, wp, gam, gidx, ugam, gbar, R, use_init, mode, tol, max_sweeps,
            sweeps, res, conv, labels, W, ws, rtol,
        )  # fmt: skip


def solve_items_with_adjoint(
    L, agents, gam_all, wp, gam, gidx, ugam, gbar, R, use_init, mode, tol, max_sweeps, sweeps, res, conv, labels, W,
    rtol=ADJOINT_RTOL,
):  # fmt: skip
    """Solve every item of ``L`` (n, A, K) on the agents ``agents`` (``wp``, ``gam``, ``gidx`` are
    theirs; newton, fast form) into ``R`` and fill ``W`` (n, A) with the weights' adjoint of every
    agent (``gam_all`` (A,) holds every agent's γ; CG solves the adjoint to relative residual ``rtol``);
    the other arguments as :func:`aggregators.renyi_kernels.solve_items`."""
    A, K = L.shape[1], L.shape[2]
    inactive = np.setdiff1d(np.arange(A, dtype=np.int64), agents).astype(np.int64)
    args = (L, agents, inactive, gam_all, wp, gam, gidx, ugam, gbar, R, use_init, mode, tol, max_sweeps)
    if threaded(L.shape[0], L.shape[0] * A * K):
        _fused_par(*args, sweeps, res, conv, labels, W, float(rtol))
        return
    a, ng = agents.shape[0], ugam.shape[0]
    ws = _reused("solve", (a, K, ng, mode, False), lambda: _range_workspace(a, K, ng, mode, False), 8 * a * K * 3)
    _fused_range(0, L.shape[0], *args, sweeps, res, conv, labels, W, ws, float(rtol))
