"""The Rényi fixed point on small items, vectorised across items (seed 000, Eq. 2.8).

:mod:`aggregators.renyi_kernels` solves one item at a time and vectorises over its ``K`` classes.
On small items (``K`` of 16-64 classes, a few agents) that leaves the vector units idle and the
per-item fixed costs (loop set-up, calls of the vectorised exp on 16 numbers) dominate: about
1.5 µs an item for one sweep of the map at ``(K, A) = (16, 2)``, where NumPy's sweep vectorised over
items costs 0.15-0.2 µs. This kernel runs the same Newton iteration on a block of :data:`LANES`
items at once, in a structure-of-arrays layout (``(A, K, LANES)``, the item innermost), so every
loop body is vectorised across the block's items and each exponential call covers ``K x LANES``
numbers.

Per item it is the fast form of :func:`aggregators.renyi_kernels._solve_item` (same start, the power
mean ``(1/γ̄) log Σ_i w'_i P_i^{γ_i}`` read off ``E_i = exp(γ_i (L_i - max L_i))``; same residual
``max_y |F(r)(y) - r(y)|``; same Newton step ``H δ = Q ⊙ G`` with ``H`` of the module docstring there,
solved by Woodbury with the ``A x A`` capacitance; the same proven and predicted stops after an exact
step; the same free final step once the residual is below ``tol``, by the previous point's factor (a chord
step, as the per-item kernel's) when every running item of the block is below it), in lock step: every iteration
evaluates the map once for the block and takes one full Newton step in each item still running. An
item whose full step does not decrease ``||G||_2`` (the general kernel would damp it), whose residual
is not finite, or that runs out of sweeps is flagged and solved again by the general kernel, so the
block kernel changes the cost, never the answer.

Every loop indexes its arrays in full (``M[i, j, b]``), never through a row view or a reshape inside a
loop: each view is a new array whose reference count numba increments and decrements atomically, and at
``(K, A) = (16, 10)`` those counts were 30 % of the solve (``perf``, session 32; a block of 16 items went
from 74 to 52 µs without them). The exponential and logarithm kernels take 1-D arrays: their reshapes remain,
one per exponential or logarithm pass (per agent in the set-up, per γ group in an evaluation).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace
from solvers.kernels.fastlog import log_into
from solvers.kernels.refcount import NO_REFCOUNT

from .renyi_kernels import CERTIFY_FRACTION, PREDICT_FRACTION

LANES = 16
"""Items per block (16 was faster than 8 and 4 at (K, A) = (16, 2) to (64, 10))."""

MAX_AGENTS = 16
"""The block kernel is used up to this many agents (its Woodbury capacitance is ``A x A`` per item)..."""

MAX_SIZE = 256
"""... and up to this many numbers ``A K`` an item (measured with ``benchmarks/bench_renyi_grid.py``: at
``(K, A) = (64, 10)`` and ``(256, 2)`` the per-item kernel, vectorised over classes, is as fast)."""

_FM = {"nsz", "contract", "reassoc"}

_RUN, _DONE, _FAIL = 0, 1, 2


def fits(n_agents: int, n_classes: int) -> bool:
    """Whether items of this shape go to the block kernel (at least 3 classes, at most :data:`MAX_AGENTS`
    agents and :data:`MAX_SIZE` numbers; two classes have the scalar Newton of :mod:`aggregators.renyi_binary`)."""
    return n_classes >= 3 and n_agents <= MAX_AGENTS and n_agents * n_classes <= MAX_SIZE


@njit(cache=True, fastmath=_FM)
def _lane_max(x, out):
    """``out[b] = max_y x[y, b]`` for ``x`` (K, LANES)."""
    nl = x.shape[1]
    for b in range(nl):
        out[b] = x[0, b]
    for y in range(1, x.shape[0]):
        for b in range(nl):
            out[b] = max(out[b], x[y, b])


@njit(cache=True, fastmath=_FM, inline="always")
def _lane_substitute(M, z, i, lo, hi, lower):
    """One row of a triangular solve in every lane: ``z_i <- (z_i - Σ_{lo <= k < hi} M_ik z_k) / M_ii``
    with ``M_ik = M[i, k]`` (``lower``: forward substitution) or ``M[k, i]`` (the transpose: backward).
    Indexed in full, as every loop of this module: a row view costs a reference count in and out."""
    nl = z.shape[1]
    for k in range(lo, hi):
        if lower:
            for b in range(nl):
                z[i, b] -= M[i, k, b] * z[k, b]
        else:
            for b in range(nl):
                z[i, b] -= M[k, i, b] * z[k, b]
    for b in range(nl):
        z[i, b] /= M[i, i, b]


@njit(cache=True, fastmath=_FM)
def _gather(L, j0, nb, Lb):
    """``Lb[i, y, b] = L[j0 + b, i, y]`` (the last item repeated to fill a partial block)."""
    nl = Lb.shape[2]
    A, K = L.shape[1], L.shape[2]
    for b in range(nl):
        j = j0 + min(b, nb - 1)
        for i in range(A):
            for y in range(K):
                Lb[i, y, b] = L[j, i, y]


@njit(cache=True, fastmath=_FM)
def _setup(Lb, wp, gam, gbar, E, r, x, am, lane):
    """``E_i = exp(γ_i (L_i - max L_i))`` and the power-mean start ``r`` (not normalised: the map is
    shift-invariant and Newton's first step removes the offset, as in the per-item kernel)."""
    nl = Lb.shape[2]
    A, K = Lb.shape[0], Lb.shape[1]
    flat = K * nl
    for i in range(A):
        _lane_max(Lb[i], am[i])
        for y in range(K):
            for b in range(nl):
                x[y, b] = Lb[i, y, b] - am[i, b]
        exp_scaled(x.reshape(flat), gam[i], E[i].reshape(flat))
    for b in range(nl):
        lane[b] = -np.inf
    for i in range(A):
        for b in range(nl):
            am[i, b] *= gam[i]
            lane[b] = max(lane[b], am[i, b])
    for i in range(A):
        for b in range(nl):
            am[i, b] = wp[i] * np.exp(am[i, b] - lane[b])
    for y in range(K):
        for b in range(nl):
            x[y, b] = 0.0
    for i in range(A):
        for y in range(K):
            for b in range(nl):
                x[y, b] += am[i, b] * E[i, y, b]
    log_into(x.reshape(flat), r.reshape(flat))
    for y in range(K):
        for b in range(nl):
            r[y, b] = (r[y, b] + lane[b]) / gbar


@njit(cache=True, fastmath=_FM)
def _evaluate(E, wp, gidx, ugam, r, Qi, mix, G, qg, x, lane, s):
    """One evaluation of the map for the block: ``Q_i`` (stored), ``mix = Σ_i w'_i Q_i`` and
    ``G = log mix - r`` (the fast form of :func:`aggregators.renyi_kernels._eval_fast`). The inner loops
    run over the lanes (unit stride), which the compiler vectorises."""
    A, K, nl = E.shape
    flat = K * nl
    _lane_max(r, lane)
    for y in range(K):
        for b in range(nl):
            x[y, b] = r[y, b] - lane[b]
    for g in range(ugam.shape[0]):
        exp_scaled(x.reshape(flat), 1.0 - ugam[g], qg[g].reshape(flat))
    for y in range(K):
        for b in range(nl):
            mix[y, b] = 0.0
    for i in range(A):
        gi = gidx[i]
        for y in range(K):
            for b in range(nl):
                Qi[i, y, b] = E[i, y, b] * qg[gi, y, b]
        for b in range(nl):
            s[b] = 0.0
        for y in range(K):
            for b in range(nl):
                s[b] += Qi[i, y, b]
        c = wp[i]
        for b in range(nl):
            s[b] = 1.0 / s[b]
        for y in range(K):
            for b in range(nl):
                t = Qi[i, y, b] * s[b]
                Qi[i, y, b] = t
                mix[y, b] += c * t
    log_into(mix.reshape(flat), G.reshape(flat))
    for y in range(K):
        for b in range(nl):
            G[y, b] -= r[y, b]


@njit(cache=True, fastmath=_FM)
def _direction(Qi, wp, gam, mix, G, delta, rhs, dinv, V, M, z):
    """Newton's step ``δ = H⁻¹ (Q ⊙ G)`` in every lane by Woodbury (``H = D + X Xᵀ``, ``D = diag(Σ_i
    w'_i γ_i Q_i)``, ``X_i = s_i Q_i``, ``s_i² = w'_i (1 - γ_i)``; :mod:`aggregators.renyi_hessian`):
    ``δ = D⁻¹ b - Σ_i z_i V_i`` with ``V_i = s_i Q_i / d`` and ``(I + Xᵀ D⁻¹ X) z = Xᵀ D⁻¹ b``."""
    _factor(Qi, wp, gam, dinv, V, M)
    _chord(mix, G, delta, rhs, dinv, V, M, z)


@njit(cache=True, fastmath=_FM)
def _factor(Qi, wp, gam, dinv, V, M):
    """The Woodbury factor of :func:`_direction` (``D⁻¹``, ``V`` and the capacitance's Cholesky factor in
    ``M``) at the tilted agents ``Qi``."""
    A, K, nl = Qi.shape
    for y in range(K):
        for b in range(nl):
            dinv[y, b] = 0.0
    for i in range(A):
        c = wp[i] * gam[i]
        for y in range(K):
            for b in range(nl):
                dinv[y, b] += c * Qi[i, y, b]
    for y in range(K):
        for b in range(nl):
            dinv[y, b] = 1.0 / dinv[y, b]
    for i in range(A):
        si = np.sqrt(wp[i] * (1.0 - gam[i]))
        for y in range(K):
            for b in range(nl):
                V[i, y, b] = si * Qi[i, y, b] * dinv[y, b]
    # the capacitance I + Xᵀ D⁻¹ X, lower triangle
    for i in range(A):
        for j in range(i + 1):
            for b in range(nl):
                M[i, j, b] = 0.0
            for y in range(K):
                for b in range(nl):
                    M[i, j, b] += Qi[i, y, b] * V[j, y, b]
    for i in range(A):
        si = np.sqrt(wp[i] * (1.0 - gam[i]))
        for j in range(i + 1):
            for b in range(nl):
                M[i, j, b] *= si
        for b in range(nl):
            M[i, i, b] += 1.0
    # its Cholesky factor, lower triangle, in place, lane by lane (its eigenvalues are >= 1)
    for j in range(A):
        for k in range(j):
            for b in range(nl):
                M[j, j, b] -= M[j, k, b] * M[j, k, b]
        for b in range(nl):
            M[j, j, b] = np.sqrt(M[j, j, b])
        for i in range(j + 1, A):
            for k in range(j):
                for b in range(nl):
                    M[i, j, b] -= M[i, k, b] * M[j, k, b]
            for b in range(nl):
                M[i, j, b] /= M[j, j, b]


@njit(cache=True, fastmath=_FM)
def _chord(mix, G, delta, rhs, dinv, V, M, z):
    """``δ = H⁻¹ (Q ⊙ G)`` with the factor :func:`_factor` left (``dinv``, ``V``, ``M``): the Newton step
    when it was formed at this point, a chord step when at the previous one."""
    A, K, nl = V.shape
    for y in range(K):
        for b in range(nl):
            rhs[y, b] = mix[y, b] * G[y, b]
    for i in range(A):  # z_i = V_iᵀ rhs
        for b in range(nl):
            z[i, b] = 0.0
        for y in range(K):
            for b in range(nl):
                z[i, b] += V[i, y, b] * rhs[y, b]
    for i in range(A):  # forward, then backward substitution
        _lane_substitute(M, z, i, 0, i, True)
    for i in range(A - 1, -1, -1):
        _lane_substitute(M, z, i, i + 1, A, False)
    for y in range(K):
        for b in range(nl):
            delta[y, b] = rhs[y, b] * dinv[y, b]
    for i in range(A):
        for y in range(K):
            for b in range(nl):
                delta[y, b] -= z[i, b] * V[i, y, b]


@njit(cache=True)
def _all_below(G, state, tol):
    """Whether every running lane's residual ``max_y |G[y, b]|`` is at most ``tol`` (NaN is not)."""
    K, nl = G.shape
    for b in range(nl):
        if state[b] != _RUN:
            continue
        for y in range(K):
            if not (abs(G[y, b]) <= tol):
                return False
    return True


@njit(cache=True)
def _lane_stats(G, delta, b):
    """``(max|G|, ||G||_2, max δ - min δ)`` in lane ``b``."""
    K = G.shape[0]
    amax = 0.0
    ss = 0.0
    lo = delta[0, b]
    hi = delta[0, b]
    for y in range(K):
        a = abs(G[y, b])
        amax = max(amax, a)
        ss += a * a
        lo = min(lo, delta[y, b])
        hi = max(hi, delta[y, b])
    return amax, np.sqrt(ss), hi - lo


@njit(cache=True)
def _norm2(G, b):
    ss = 0.0
    for y in range(G.shape[0]):
        ss += G[y, b] * G[y, b]
    return np.sqrt(ss)


@njit(cache=True, fastmath=_FM)
def _exp_lane_sums(x, lane, s):
    """``x <- exp(x - max_y x)`` in every lane, with the maxima in ``lane`` and the sums ``Σ_y x`` in ``s``."""
    K, nl = x.shape
    _lane_max(x, lane)
    for y in range(K):
        for b in range(nl):
            x[y, b] -= lane[b]
    exp_scaled_inplace(x.reshape(K * nl), 1.0)
    for b in range(nl):
        s[b] = 0.0
    for y in range(K):
        for b in range(nl):
            s[b] += x[y, b]


@njit(cache=True, fastmath=_FM)
def _normalise(r, x, lane, s):
    """``r -= logsumexp(r)`` in every lane."""
    K, nl = r.shape
    for y in range(K):
        for b in range(nl):
            x[y, b] = r[y, b]
    _exp_lane_sums(x, lane, s)
    for b in range(nl):
        s[b] = lane[b] + np.log(s[b])
    for y in range(K):
        for b in range(nl):
            r[y, b] -= s[b]


@njit(cache=True)
def _workspace(A, K, ng):
    """Scratch arrays of :func:`_solve_block` (allocated once per run of blocks)."""
    return (
        np.empty((5, A, K, LANES)),  # Lb, E, Qi, Qt, V
        np.empty((10, K, LANES)),  # r, rt, mix, mixt, G, Gt, delta, rhs, dinv, x
        np.empty((ng, K, LANES)),
        np.empty((A, A, LANES)),
        np.empty((2, A, LANES)),
        np.empty((5, LANES)),
        np.empty(LANES, dtype=np.int64),
        np.empty(LANES, dtype=np.int64),
    )


@njit(cache=True, **NO_REFCOUNT)
def _solve_block(L, j0, nb, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, fail, ws):
    """Items ``j0 .. j0 + nb - 1`` (``nb <= LANES``) of ``L`` (n, A, K); answers into ``R``, ``sweeps``,
    ``res``, ``conv``; ``fail[j]`` is set for an item the block could not finish (see the module)."""
    K = L.shape[2]
    big, vecs, qg, M, av, lv, state, nsw = ws
    Lb, E, Qi, Qt, V = big[0], big[1], big[2], big[3], big[4]
    r, rt, mix, mixt, G, Gt, delta, rhs, dinv, x = (
        vecs[0],
        vecs[1],
        vecs[2],
        vecs[3],
        vecs[4],
        vecs[5],
        vecs[6],
        vecs[7],
        vecs[8],
        vecs[9],
    )
    am, z = av[0], av[1]
    lane, s, prev, g0, bnd = lv[0], lv[1], lv[2], lv[3], lv[4]
    gmin = gam[0]
    for i in range(1, gam.shape[0]):
        gmin = min(gmin, gam[i])
    omc = 1.0 - gmin
    _gather(L, j0, nb, Lb)
    _setup(Lb, wp, gam, gbar, E, r, x, am, lane)
    if use_init:
        for b in range(LANES):
            j = j0 + min(b, nb - 1)
            for y in range(K):
                r[y, b] = R[j, y]
        _normalise(r, x, lane, s)
    _evaluate(E, wp, gidx, ugam, r, Qi, mix, G, qg, x, lane, s)
    for b in range(LANES):
        state[b] = _RUN
        nsw[b] = 2
        prev[b] = np.inf
        bnd[b] = 0.0
    chord = False
    while True:
        if chord and _all_below(G, state, tol):
            # every running lane converged after a full step: its free final step by the previous point's
            # factor (a chord step, error O(res^1.5), as the per-item kernel's ``resolve``), not a new one
            _chord(mix, G, delta, rhs, dinv, V, M, z)
        else:
            _direction(Qi, wp, gam, mix, G, delta, rhs, dinv, V, M, z)
        trial = False
        for b in range(LANES):
            if state[b] != _RUN:
                continue
            rb, g2, rho = _lane_stats(G, delta, b)
            if not np.isfinite(rb) or not np.isfinite(rho):
                state[b] = _FAIL
            elif rb <= tol:
                # converged: one more Newton step costs no pass, unless the plain step is exact to rounding
                state[b] = _DONE
                bnd[b] = rb
                exact = rb * (1.0 / gmin - 1.0) <= 1e-14
                for y in range(K):
                    r[y, b] += G[y, b] if exact else delta[y, b]
            elif nsw[b] >= max_sweeps:
                state[b] = _FAIL
            else:
                bound = 1.25 * omc * omc * rho * rho + 1e-15
                predicted = rb * rb * (rb / (prev[b] * prev[b])) if chord else np.inf
                if bound <= CERTIFY_FRACTION * tol or predicted <= PREDICT_FRACTION * tol:
                    state[b] = _DONE
                    bnd[b] = min(bound, predicted)
                    for y in range(K):
                        r[y, b] += delta[y, b]
                else:
                    trial = True
                    prev[b] = rb
                    g0[b] = g2
        if not trial:
            break
        for y in range(K):
            for b in range(LANES):
                rt[y, b] = r[y, b] + delta[y, b] if state[b] == _RUN else r[y, b]
        _evaluate(E, wp, gidx, ugam, rt, Qt, mixt, Gt, qg, x, lane, s)
        for b in range(LANES):
            if state[b] != _RUN:
                continue
            nsw[b] += 1
            if not _norm2(Gt, b) <= (1.0 - 1e-4) * g0[b]:
                state[b] = _FAIL  # the per-item kernel damps this step
        # the trial becomes the current point (finished lanes kept theirs: their trial is the current r)
        r, rt = rt, r
        Qi, Qt = Qt, Qi
        mix, mixt = mixt, mix
        G, Gt = Gt, G
        chord = True
    _normalise(r, x, lane, s)
    for b in range(nb):
        j = j0 + b
        sweeps[j] = nsw[b]
        if state[b] == _DONE:
            for y in range(K):
                R[j, y] = r[y, b]
            res[j] = bnd[b]
            conv[j] = True
        else:
            fail[j] = True


@njit(cache=True)
def _solve_blocks(L, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, fail):
    ws = _workspace(L.shape[1], L.shape[2], ugam.shape[0])
    n = L.shape[0]
    for j0 in range(0, n, LANES):
        nb = min(LANES, n - j0)
        _solve_block(L, j0, nb, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, fail, ws)


def solve_items(L, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, solve_rest):
    """Every item of ``L`` (n, A, K) in blocks of :data:`LANES`; ``R`` (n, K) holds starts (if
    ``use_init``) and answers. Items the block could not finish are solved again by
    ``solve_rest(idx, R_idx, sweeps_idx, res_idx, conv_idx)`` (the per-item kernel, from the same start);
    their sweeps count both attempts."""
    n = L.shape[0]
    fail = np.zeros(n, dtype=np.bool_)
    start = R.copy() if use_init else R
    _solve_blocks(L, wp, gam, gidx, ugam, gbar, R, use_init, tol, max_sweeps, sweeps, res, conv, fail)
    if fail.any():
        idx = np.flatnonzero(fail)
        Rf = np.ascontiguousarray(start[idx])
        sf = np.zeros(idx.size, dtype=np.int64)
        ef = np.zeros(idx.size)
        cf = np.zeros(idx.size, dtype=np.bool_)
        solve_rest(idx, Rf, sf, ef, cf)
        R[idx] = Rf
        sweeps[idx] += sf
        res[idx] = ef
        conv[idx] = cf


@njit(cache=True, fastmath=_FM)
def _tilted_at(Lb, gam, r, Qi, x, lane, s):
    """``Q_i ∝ exp(γ_i L_i + (1-γ_i) r)`` at a solved point ``r`` in every lane (one exponential pass,
    as :func:`aggregators.renyi_kernels._tilted_at`)."""
    A, K, nl = Lb.shape
    for i in range(A):
        g = gam[i]
        for y in range(K):
            for b in range(nl):
                x[y, b] = g * Lb[i, y, b] + (1.0 - g) * r[y, b]
        _exp_lane_sums(x, lane, s)
        for b in range(nl):
            s[b] = 1.0 / s[b]
        for y in range(K):
            for b in range(nl):
                Qi[i, y, b] = x[y, b] * s[b]


@njit(cache=True, fastmath=_FM, **NO_REFCOUNT)
def _adjoint_block(L, R, labels, j0, nb, wp, gam, W, GG, ws):
    """Items ``j0 .. j0 + nb - 1``: ``H λ = e_y`` by Woodbury (:func:`_direction` with ``Q ⊙ G = e_y``)
    and the per-agent sums ``W = λ·Q_j - λ·Q``, ``GG = Σ_y λ Q_j (d_j - Q_j·d_j)``, ``d_j = L_j - r``."""
    A, K = L.shape[1], L.shape[2]
    big, vecs, qg, M, av, lv, state, nsw = ws
    Lb, Qi, V = big[0], big[2], big[4]
    r, e, one, lam, rhs, dinv, x, mix = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4], vecs[5], vecs[6], vecs[7]
    z = av[1]
    lane, s, a, qd, lq = lv[0], lv[1], lv[2], lv[3], lv[4]
    nl = LANES
    _gather(L, j0, nb, Lb)
    for b in range(nl):
        j = j0 + min(b, nb - 1)
        for y in range(K):
            r[y, b] = R[j, y]
            e[y, b] = 1.0 if labels[j] == y else 0.0
            one[y, b] = 1.0
    _tilted_at(Lb, gam, r, Qi, x, lane, s)
    _direction(Qi, wp, gam, e, one, lam, rhs, dinv, V, M, z)
    mix[:] = 0.0
    for i in range(A):
        for y in range(K):
            for b in range(nl):
                mix[y, b] += wp[i] * Qi[i, y, b]
    lq[:] = 0.0
    for y in range(K):
        for b in range(nl):
            lq[b] += lam[y, b] * mix[y, b]
    for i in range(A):
        a[:] = 0.0
        qd[:] = 0.0
        s[:] = 0.0
        for y in range(K):
            for b in range(nl):
                q = Qi[i, y, b]
                d = Lb[i, y, b] - r[y, b]
                a[b] += lam[y, b] * q
                qd[b] += q * d
                s[b] += lam[y, b] * q * d
        for b in range(nb):
            W[j0 + b, i] = a[b] - lq[b]
            GG[j0 + b, i] = s[b] - qd[b] * a[b]


@njit(cache=True)
def _adjoint_blocks(L, R, labels, wp, gam, W, GG):
    ws = _workspace(L.shape[1], L.shape[2], 1)
    for j0 in range(0, L.shape[0], LANES):
        _adjoint_block(L, R, labels, j0, min(LANES, L.shape[0] - j0), wp, gam, W, GG, ws)


def adjoint_items(L, wp, gam, R, labels, W, GG):
    """The adjoint quantities ``W`` and ``GG`` of :func:`aggregators.renyi_kernels.adjoint_items` (fast
    form, no annealing part) at the solved points ``R`` (n, K), in blocks of :data:`LANES` items."""
    _adjoint_blocks(L, np.ascontiguousarray(R), labels, wp, gam, W, GG)
