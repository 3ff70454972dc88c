"""Equilibrium drivers: safeguarded Newton and the seed's fixed point per item, and the parallel
loops over items (the one-order block and the general path)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.anderson import anderson_size
from solvers.kernels.fastexp import exp_scaled_inplace
from solvers.kernels.simplex_log import log_image_with

from .anderson import MEMORY, anderson_loop
from .corrector import DEFAULT_CONSTANT, corrector_rhs, small_correction, use_corrector
from .direction import CHORD_RATIO, REFRESH_RATIO, chord_direction, direction_from_S, refreshes_gram
from .floor import floor_item, floor_powers_item
from .gram import gram_item, gram_size, rows_pass
from .isoelastic import (
    iso_gram,
    iso_pass,
    iso_powers,
    iso_S,
    iso_start,
    iso_views,
    iso_workspace_size,
    one_order,
    transpose_rows,
)
from .jacobi import JACOBI_RATE, JACOBI_UNTIL, jacobi_log_step
from .line_search import first_step, safeguarded_step, trial
from .newton_cg import UNDER_PRICED_LOG_RHS, cg_direction, cg_scratch_size, cg_solve, general_diagonal, newton_rhs
from .normaliser import PROBE_RATE, frozen_normaliser_step, frozen_usable, order_groups, take_frozen_step
from .normaliser import scratch_size as frozen_scratch_size
from .order_pcg import MIN_AGENTS as PCG_MIN_AGENTS
from .order_pcg import order_direction, order_rows, pcg_solve
from .potential import (
    ISO,
    evaluate,
    evaluate_into,
    evaluate_into_spending,
    evaluate_spending,
    has_near_log,
    init_prices,
    newton_direction,
    powers,
    tracks_diagonal,
)
from .start_bound import box_general, box_iso, overpriced, overpriced_general
from .woodbury import WOODBURY_MAX_ROWS, woodbury_direction, woodbury_resolve, woodbury_rows, woodbury_scratch_size


@njit(cache=True, error_model="numpy")
def fixed_point_prices(u, T, x):
    """The seed's update (Storkey et al. 2012) in log space: ``u <- log(T / sum_i W_i)``,
    normalised, where ``T`` is the total spending on each good at the current prices (the factor
    cancels in the normalisation); by the vectorised log and exp (:func:`log_image_with`, scratch
    ``x`` of K floats) from 16 goods. (Until session 36 by the scalar libm calls: 5-8 ns a good
    against ~1, which at few agents and many goods was most of the fixed point's pass.)"""
    log_image_with(T, u, x)


START_CHECK = 1.0
"""A warm start whose clearing residual exceeds ``START_CHECK * sum_i W_i`` (some good's spending off its
value by the whole wealth) is compared with the default start, and the one with the smaller residual is
kept (:func:`_iso_begin`, :func:`general_item`). Session 44: from random starts N(0, 2) on Dirichlet
beliefs without a floor (equilibrium log-prices down to -570, so starts hundreds of units too high),
Newton hit its 100-step cap on 92-96 % of the items at 256 goods x 10 agents (eta = 10), and was 20x
slower than the fixed point; the lower bound (:mod:`markets.kernels.start_bound`) only raises starts.
Starts near the equilibrium (training's) never pay for this: their residual is far below the test."""


RHS_SWITCH = 0.9
"""Without exponential agents, after a Newton step that lowers the clearing residual by less than this factor
:func:`_newton_loop` and Newton-CG in :func:`_iso_newton_pg` take the logarithmic right-hand side on
under-priced goods only (:data:`markets.kernels.newton_cg.UNDER_PRICED_LOG_RHS`). Session 46: from random starts on
Dirichlet beliefs without a floor (eta 2/10/30 mixes, 3 agents, 16-128 goods) the full logarithmic form drove
goods priced 10^-5 above a demand of 10^-14 *up* (its entry ``T_k log(T_k / (Wsum c_k))`` vanishes with the
demand, and the exact solve couples them to the under-priced goods): every step was capped at a log-step of
10 on that good and halved six times, and Newton-CG ground to its cap on 48 of 300 items (64 goods)."""


@njit(cache=True, error_model="numpy")
def _iso_begin(Pg, g, W, Wsum, u, warm, z, s, T, cp):
    """The power-mean start (unless ``warm``) and the first pass at it: the clearing residual, or
    ``inf`` if the lean path cannot take this item (a start that is not finite). A warm start with a
    residual above :data:`START_CHECK` ``* Wsum`` gives way to the power mean if that clears better."""
    if not warm and not iso_start(Pg, g, W, u, T):  # T: scratch, filled by the pass
        return np.inf
    res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)[1]
    if warm and not res <= START_CHECK * abs(Wsum):
        keep = u.copy()
        if iso_start(Pg, g, W, u, T):
            res2 = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)[1]
            if res2 < res or not res <= res:
                return res2
        u[:] = keep
        res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)[1]
    if warm and overpriced(T, u, Wsum, g) and box_iso(Pg, g, W, u) > 0:  # into the bounds: BOX_GATE
        res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)[1]
    return res


@njit(cache=True, error_model="numpy")
def _iso_newton_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws, cg):
    """Safeguarded Newton on the lean path, from ``Pg = P^g`` (K, A, goods-major). Returns
    ``(ok, n_iter, converged, residual)``; ``ok`` False means: use the general path. ``ws`` is
    scratch of at least :func:`iso_workspace_size` floats (no allocation per item; ``dense`` False
    when ``cg``). ``cg``: the direction comes from :func:`markets.kernels.newton_cg.cg_direction`
    (matrix-free, O(K A) per product; no chord steps) instead of the dense factorisation.

    Two phases. (1) While full Newton steps at least halve the clearing residual they are taken
    without the potential: an iteration is then one pass over the agents plus, if the residual is
    still above ``tol``, the Gram matrix and factorisation for the next step. Once a step has cut
    the residual by more than ``1/CHORD_RATIO`` (the quadratic regime), the next step reuses the
    last factorisation with the new gradient (a chord step: one pass and two triangular solves,
    no Gram matrix); a chord step that does not halve the residual is discarded for a fresh
    Newton step. Where a factorisation costs no more than a Gram matrix (``3 A >= K``:
    :func:`refreshes_gram`), the step right after a Newton step that halved the residual is instead a
    *refreshed* chord (:data:`markets.kernels.direction.REFRESH_RATIO`): that Newton step's Gram matrix
    ``G`` with the diagonal ``diag(T)``, the scaling ``diag(c^(1-g))`` of ``S`` (:func:`iso_S`) and the
    price scaling rebuilt at the new prices, refactored (K^3/6 flops, no pass over the agents). At most
    one per Gram matrix: after it, the plain chord if it cut the residual by ``1/CHORD_RATIO``, else a
    Newton step (session 49: refreshed chords in a row converge only linearly, and at eta = 1.5-3 on
    Gaussian-logit agents cost more steps than they saved). (2) The first time a full Newton step
    fails that test the method switches for good to :func:`safeguarded_step` (Armijo on Phi with the
    mirror-gradient fall-back, shared
    with :func:`solve_item`), which converges from any start. Phase 1 cannot cycle: its residual
    falls geometrically, so it either reaches ``tol`` or hands over to phase 2.
    """
    K, A = Pg.shape
    z, s, T, cp, G, H, Lc, tmp, d, un, c, scr = iso_views(ws, K, A, not cg)
    refresh = refreshes_gram(K, A)
    res = _iso_begin(Pg, g, W, Wsum, u, warm, z, s, T, cp)
    if not np.isfinite(res):
        return False, 0, False, np.inf
    phi = 0.0  # the potential is evaluated only once the line search takes over
    reg = abs(Wsum)
    if reg <= 0.0:
        reg = 1.0
    fast = True
    ratio = 1.0
    after_gram = False  # the last accepted step formed its Gram matrix (then a plain chord would lag)
    gram = False
    it = 0
    rhs = 1  # CG's right-hand side: logarithmic, on the under-priced goods only after a step that
    # barely lowered the residual (RHS_SWITCH, as in _newton_loop)
    while res > tol and it < max_iter:
        it += 1
        refreshed = fast and refresh and after_gram and ratio < REFRESH_RATIO and not cg
        chord = refreshed or (fast and ratio < CHORD_RATIO and not cg)
        if cg:  # the general path's arguments, unused here
            no1 = np.empty(0)
            ok = cg_direction(
                True,
                u,
                T,
                Wsum,
                reg,
                res,
                tol,
                d,
                scr,
                Pg,
                g,
                cp,
                z,
                s,
                np.empty(0, np.int64),
                no1,
                W,
                np.empty((0, 0)),
                no1,
                T,
                rhs,
            )[0]
        elif refreshed:  # the last G, the rest of S at u
            iso_S(g, T, cp, G, H)
            ok = direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c)
            gram = False
        elif chord:
            ok = True
            chord_direction(u, T, Wsum, d, Lc, c)
            gram = False
        else:
            iso_gram(Pg, z, s, G)
            iso_S(g, T, cp, G, H)
            ok = direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c)
            gram = True
        if fast:
            if ok:
                trial(u, d, 1.0, un, tmp)
                phin, resn = iso_pass(Pg, g, W, Wsum, un, z, s, T, cp, False)
                if resn <= 0.5 * res:
                    for k in range(K):
                        u[k] = un[k]
                    ratio = resn / res
                    res = resn
                    after_gram = gram
                    continue
            if chord:  # the old factor is not good enough here: a fresh Newton step from u
                ratio = 1.0
                phi, res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
                continue
            fast = False
            phi, res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, True)
            if not np.isfinite(phi):
                return False, it, False, np.inf
        no2 = np.empty((0, 0))  # the general evaluator's arguments, unused here
        accepted, phin, resn, _ = safeguarded_step(
            ok,
            u,
            d,
            un,
            phi,
            res,
            True,
            W,
            Wsum,
            T,
            cp,
            Pg,
            g,
            z,
            s,
            no2,
            np.empty(0, np.int64),
            np.empty(0),
            no2,
            no2,
            no2,
            tmp,
            None,
        )
        if not accepted:
            res = resn
            break
        for k in range(K):
            u[k] = un[k]
        if rhs == 1 and resn > RHS_SWITCH * res:
            rhs = UNDER_PRICED_LOG_RHS
        phi, res = phin, resn
    return True, it, res <= tol, res


@njit(cache=True, error_model="numpy")
def _iso_fixed_point_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws):
    """The seed's fixed point ``c <- sum_i r_i(c) / sum_i W_i`` from ``Pg = P^g`` (K, A; same start and
    same pass as :func:`_iso_newton_pg`, without potential or Gram matrix). Returns
    ``(ok, n_iter, converged, residual)``."""
    K, A = Pg.shape
    z, s, T, cp, G, H, Lc, x = iso_views(ws, K, A, False)[:8]  # x: the scratch of fixed_point_prices
    res = _iso_begin(Pg, g, W, Wsum, u, warm, z, s, T, cp)
    if not np.isfinite(res):
        return False, 0, False, np.inf
    it = 0
    while res > tol and it < max_iter:
        it += 1
        fixed_point_prices(u, T, x)
        phi, res = iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
    return True, it, res <= tol, res


@njit(cache=True, error_model="numpy")
def _iso_anderson_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws):
    """The Anderson-accelerated fixed point (:mod:`markets.kernels.anderson`) from ``Pg = P^g``
    (same start and pass as :func:`_iso_fixed_point_pg`). Returns ``(ok, n_iter, converged, residual)``."""
    K, A = Pg.shape
    z, s, T, cp = iso_views(ws, K, A, False)[:4]
    res = _iso_begin(Pg, g, W, Wsum, u, warm, z, s, T, cp)
    if not np.isfinite(res):
        return False, 0, False, np.inf
    no1 = np.empty(0)
    no2 = np.empty((0, 0))
    scr = iso_views(ws, K, A, False)[-1]
    it, res = anderson_loop(
        True, res, tol, max_iter, u, scr, W, Wsum, T, cp, Pg, g, z, s, no2, np.empty(0, np.int64), no1, no2, no2, no2
    )
    return True, it, res <= tol, res


@njit(cache=True, error_model="numpy")
def _iso_solve_pg(method, Pg, g, W, Wsum, tol, max_iter, u, warm, ws):
    """``method`` 0: :func:`_iso_newton_pg` (dense direction), 1: :func:`_iso_fixed_point_pg`,
    2: :func:`_iso_newton_pg` with the CG direction, 3: :func:`_iso_anderson_pg`."""
    if method == 3:
        return _iso_anderson_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws)
    if method != 1:
        ok, it, conv, res = _iso_newton_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws, method == 2)
        budget = _fallback_budget(conv, it, max_iter, res, tol) if ok else 0
        if budget > 0 and np.all(np.isfinite(u)):  # a stall: see FALLBACK_FACTOR
            ok2, it2, conv, res = _iso_fixed_point_pg(Pg, g, W, Wsum, tol, budget, u, True, ws)
            return ok2, it + it2, conv, res
        return ok, it, conv, res
    return _iso_fixed_point_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws)


GRAM = 4
"""The method code of :mod:`markets.kernels.gram` (``eta = 2`` markets, in the agents' space)."""


@njit(cache=True, error_model="numpy")
def _iso_solve_item(method, L, g, W, Wsum, tol, max_iter, u, warm, ws, gws, PgT, flat):
    """One item of a one-order market from its (floored) log-beliefs ``L`` (A, K). ``method``
    :data:`GRAM`: the powers stay row-major in ``flat`` for :func:`markets.kernels.gram.gram_item`
    (``gws``: its workspace), and where its clearing residual is still above ``tol`` (rounding in an
    extreme market) Newton-CG finishes from its prices on the transposed powers; ``PgT`` is then
    not filled unless that happened. Other methods: :func:`iso_powers` into ``PgT``, then
    :func:`_iso_solve_pg`. Returns ``(ok, n_iter, converged, residual)``."""
    A, K = L.shape
    if method != GRAM or g != 0.5:  # the scaling holds at eta = 2 only: another order takes Newton-CG
        iso_powers(L, g, PgT, flat)
        return _iso_solve_pg(2 if method == GRAM else method, PgT, g, W, Wsum, tol, max_iter, u, warm, ws)
    flat[:] = np.ascontiguousarray(L).reshape(A * K)  # a copy first: see _floored
    exp_scaled_inplace(flat, g)
    ok, it, conv, res = gram_item(flat, A, K, W, Wsum, tol, max_iter, u, warm, gws)
    if ok and not conv and it < max_iter:
        transpose_rows(flat, A, K, PgT)
        ok, it2, conv, res = _iso_solve_pg(2, PgT, g, W, Wsum, tol, max_iter - it, u, True, ws)
        it += it2
    return ok, it, conv, res


@njit(cache=True, error_model="numpy")
def _workspace_size(K, A, method):
    """Floats of one lean-path workspace for ``method`` (:func:`_iso_solve_pg`)."""
    return iso_workspace_size(K, A, method == 0, max(cg_scratch_size(K, A), anderson_size(K, MEMORY)))


@njit(cache=True, error_model="numpy")
def _n_chunks(n, floats, threads):
    """How many chunks the parallel drivers split ``n`` items into, for ``floats`` floats of buffers
    per chunk: one per thread (``threads``: Numba's thread count, passed by the caller, since a
    cached kernel cannot ask for it), at most ~2 GB of buffers in all. Buffers are allocated once
    per chunk, not per item (fresh (A, K) arrays for every item cost more in page faults than the
    start of a mixed market), and each chunk's items reuse them, so they stay in cache from one item
    to the next. (Up to session 40 there were up to 64 chunks whatever the thread count: with one
    thread and 19 items of 100 agents x 1,024 goods each item wrote 3.2 MB of buffers no other item
    had touched: the start alone took 209-218 us per item against 145-166 with one chunk.)"""
    return max(1, min(n, threads, (1 << 28) // max(floats, 1)))


@njit(cache=True, error_model="numpy")
def _chunk_floats(n_buffers, A, K, floor, extra):
    """Floats of one chunk's buffers in a parallel driver: ``n_buffers`` (A, K) arrays, one more for
    the floored beliefs if ``floor`` > 0, and ``extra`` floats (the lean path's workspace)."""
    return (n_buffers + (1 if floor > 0.0 else 0)) * A * K + extra


@njit(cache=True, error_model="numpy")
def iso_arena_size(n, A, K, method, floor, threads):
    """Floats of an arena that holds every chunk's buffers of :func:`solve_iso_block` (both layouts
    of the powers, the floored beliefs, the workspace)."""
    nws = _workspace_size(K, A, method)
    return _n_chunks(n, 3 * A * K + nws, threads) * _chunk_floats(2, A, K, floor, nws)


@njit(cache=True, error_model="numpy")
def items_arena_size(n, A, K, floor, threads):
    """Floats of an arena that holds every chunk's buffers of :func:`solve_items` (``Pg, Q, B``,
    the item floored or copied: :func:`_floored`; ``floor`` no longer changes the size)."""
    return _n_chunks(n, 4 * A * K, threads) * _chunk_floats(4, A, K, 0.0, 0)  # + the item (_floored)


@njit(cache=True, error_model="numpy")
def start_arena_size(n, A, K, floor, threads):
    """Floats of an arena that holds every chunk's buffers of :func:`start_prices` (the powers,
    the item floored or copied: :func:`_floored`; ``floor`` no longer changes the size)."""
    return _n_chunks(n, 2 * A * K, threads) * _chunk_floats(2, A, K, 0.0, 0)  # + the item (_floored)


@njit(cache=True, error_model="numpy")
def _total(W):
    Wsum = 0.0
    for i in range(W.shape[0]):
        Wsum += W[i]
    return Wsum


@njit(cache=True, parallel=True, nogil=True, error_model="numpy")
def solve_iso_block(L, g, W, tol, max_iter, method, U, warm, ok, iters, conv, res, y, pay, floor, nfl, arena, threads):
    """Equilibria of the items of a one-order isoelastic market from their log-beliefs ``L``
    (n, A, K). Each item's ``P^g`` is computed inside the parallel loop by :func:`iso_powers`
    (vectorised exp, in cache, transposed to the goods-major layout of the passes), the same for
    both methods: ``method`` as in :func:`solve_item` (:data:`GRAM` keeps the powers row-major and
    skips the transposition: :func:`_iso_solve_item`). ``ok[j]`` False leaves ``U[j]``
    untouched: solve that item on the general path (:func:`solve_items`).

    If ``y`` is not empty (batch market training, Algorithm 2.4), also each agent's payout when
    label ``y[j]`` occurs: ``pay[j, i] = r_{i,y} / sum_l r_{l,y}`` with
    ``r_{i,y} = W_i P_iy^g c_y^(1-g) / z_i`` (one more pass at the answer; as in
    :func:`batch_payouts`, the realised price makes total wealth conserved to rounding).

    ``floor`` > 0: ``L`` holds validated (normalised) beliefs not yet floored; each item is floored
    in cache just before its powers (:func:`markets.kernels.floor.floor_item`, the rule of
    :func:`aggregators.validation.apply_floor`) and ``nfl[j]`` counts its floored entries: no
    floored copy of the beliefs, no pass of its own.

    ``arena``: memory of at least :func:`iso_arena_size` floats from which every chunk takes its
    buffers (:mod:`markets.workspace`: the same memory from call to call), or shorter (then each
    chunk allocates its own); ``threads``: Numba's thread count (:func:`_n_chunks`)."""
    n, A, K = L.shape
    Wsum = _total(W)
    want_pay = y.shape[0] > 0
    dense = method == 0
    nws = _workspace_size(K, A, method)
    m = _n_chunks(n, 3 * A * K + nws, threads)
    per = _chunk_floats(2, A, K, floor, nws)
    shared = arena.shape[0] >= m * per
    for c in prange(m):
        mem = arena[c * per : (c + 1) * per] if shared else np.empty(per)
        AK = A * K
        nf = AK if floor > 0.0 else 0
        PgT = mem[:AK].reshape((K, A))
        flat = mem[AK : 2 * AK]
        Lf = mem[2 * AK : 2 * AK + nf].reshape((A if floor > 0.0 else 0, K))
        ws = mem[2 * AK + nf : 2 * AK + nf + nws]
        gws = np.empty(gram_size(A, K) if method == GRAM else 0)
        ck = np.empty(K if method == GRAM and want_pay else 0)
        u = np.empty(K)
        for j in range(c * n // m, (c + 1) * n // m):
            Lj = L[j]
            if floor > 0.0:
                nfl[j] = floor_item(Lj, Lf, floor, flat)
                Lj = Lf
            u[:] = U[j]
            a, b, cv, d = _iso_solve_item(method, Lj, g, W, Wsum, tol, max_iter, u, warm, ws, gws, PgT, flat)
            ok[j] = a
            if a:
                U[j] = u
                iters[j] = b
                conv[j] = cv
                res[j] = d
                if want_pay:
                    z, sw, T, cp = iso_views(ws, K, A, dense)[:4]
                    if method == GRAM:  # its powers are row-major in flat (intact after any fall-back)
                        rows_pass(flat, A, K, g, W, Wsum, u, z, sw, T, cp, ck)
                        for i in range(A):
                            pay[j, i] = sw[i] * flat[i * K + y[j]]
                    else:
                        iso_pass(PgT, g, W, Wsum, u, z, sw, T, cp, False)
                        row = PgT[y[j]]
                        for i in range(A):
                            pay[j, i] = sw[i] * row[i]
                    tot = 0.0
                    for i in range(A):
                        tot += pay[j, i]
                    for i in range(A):
                        pay[j, i] /= tot


@njit(cache=True, error_model="numpy")
def solve_item(L, kind, inv_eta, W, tol, max_iter, method, u, warm):
    """Equilibrium of one item: ``method`` 0 = safeguarded Newton (:func:`_newton_loop`), 1 = the
    seed's fixed point (:func:`_fixed_point_loop`), 2 = Newton with the matrix-free CG direction,
    3 = the Anderson-accelerated fixed point (:func:`markets.kernels.anderson.anderson_loop`),
    :data:`GRAM` = the eta = 2 scaling (:mod:`markets.kernels.gram`; one-order eta = 2 markets only,
    else Newton-CG on the general path).
    ``u`` (K,) is the start if ``warm`` and the answer on return. A one-order market goes through the lean path first (:func:`_iso_solve_pg`);
    if that declines (a start that is not finite), the general path (:func:`general_item`) decides. Returns
    ``(n_iter, converged, residual, n_negative)``."""
    A, K = L.shape
    Wsum = _total(W)
    if one_order(kind, inv_eta, W):
        u0 = u.copy()
        ws = np.empty(_workspace_size(K, A, method))
        gws = np.empty(gram_size(A, K) if method == GRAM else 0)
        ok, it, conv, res = _iso_solve_item(
            method, L, inv_eta[0], W, Wsum, tol, max_iter, u, warm, ws, gws, np.empty((K, A)), np.empty(A * K)
        )
        if ok:
            return it, conv, res, 0
        u[:] = u0
    bufs = _general_buffers(A, K)
    if tracked(method, kind, inv_eta, K):
        D = np.empty((3 + spending_rows(kind, inv_eta, W, K), K))
        return general_item(L, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, D, np.array([1.0, np.nan]))
    return general_item(L, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, None, np.array([1.0, np.nan]))


@njit(cache=True, error_model="numpy")
def _general_buffers(A, K):
    """The general path's buffers of one item ``(Pg, Q, B, T, cp)`` (:func:`general_item`), not
    zeroed: every kernel reads only the rows of an agent's own kind (``Pg`` and ``Q`` of isoelastic
    agents, ``B`` of exponential ones), each written for the item before it is read. Zeroing them
    touched every page: at 1,000 agents x 4,096 goods 35-50 ms of the start of a one-item market on
    this VM (its fresh pages cost 0.35 s/GiB), ``B`` among them though a market without
    exponential agents never writes it."""
    return np.empty((A, K)), np.empty((A, K)), np.empty((A, K)), np.zeros(K), np.zeros(K)


@njit(cache=True, error_model="numpy")
def spending_rows(kind, inv_eta, W, K):
    """The rows of order spending (one per order below one) that a tracked Newton-CG item's ``D``
    has beyond its three (:func:`markets.kernels.potential.evaluate_into`): for the frozen-normaliser
    steps (:mod:`markets.kernels.normaliser`; isoelastic and log agents of orders up to one) and for the
    preconditioner (:mod:`markets.kernels.order_pcg`; :data:`markets.kernels.order_pcg.MIN_AGENTS` agents
    of order below one); else 0."""
    G = order_rows(kind, inv_eta, K)
    if G == 0:
        return 0
    if frozen_usable(kind, inv_eta) or woodbury_rows(kind, inv_eta, W) - 2 >= PCG_MIN_AGENTS:
        return G
    return 0


@njit(cache=True, error_model="numpy")
def tracked(method, kind, inv_eta, K):
    """Whether Newton-CG (``method`` 2, or :data:`GRAM` on the general path) takes the diagonal
    and ``h`` of ``-S`` from its evaluations (:func:`markets.kernels.potential.tracks_diagonal`)."""
    return (method == 2 or method == GRAM) and tracks_diagonal(kind, inv_eta, K)


@njit(cache=True, error_model="numpy", inline="always")
def _eval(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D):
    """:func:`markets.kernels.potential.evaluate_into` into ``D``, or
    :func:`markets.kernels.potential.evaluate` if ``D`` is None (a compile-time branch), each called
    directly. (Every call between compiled functions here costs about 0.3 us at a dozen array
    arguments: through ``evaluate_into``'s fallback, or through this function not inlined, an item of
    two agents and two goods took 2.2-2.3 us to start against 1.7 before, session 38.)"""
    if D is None:
        return evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    return evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)


@njit(cache=True, error_model="numpy", inline="always")
def _eval_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D):
    """:func:`_eval` without the potential (:func:`markets.kernels.potential.evaluate_spending`)."""
    if D is None:
        return evaluate_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    return evaluate_into_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)


FAST_ACCEPT = 0.5
"""In markets with an agent of order within 0.1 of the log agent's (:func:`markets.kernels.potential.has_near_log`),
:func:`_newton_loop` first takes each Newton step whole (capped as the line search's first trial) from an
evaluation without the potential and keeps it if it multiplies the clearing residual by at most this;
the first step that does not ends the phase: the potential is evaluated at the current point and
every later step is :func:`markets.kernels.line_search.safeguarded_step`'s (the lean one-order path's
fast phase, ``_iso_newton_pg``, does the same). Each such agent's potential term costs a scalar ``exp``
and ``expm1`` per good in every evaluation; only the line search reads it (session 54)."""


SLOW_STEP = 0.5
"""With exponential agents, a Newton step that lowers the clearing residual by less than this factor triggers
the test of :func:`at_rounding_floor` (an extra pass over the exponential agents' rows, on slow steps only)."""


@njit(cache=True, error_model="numpy")
def gross_units(kind, W, B, T, u):
    """``max_k sum_i |x_ik|``: the largest gross volume of units traded in one good, from the general
    evaluation's buffers at ``u`` (``T`` the total spending per good, ``B`` the exponential agents'
    ``log(P/c) - S_i``, so their units are ``x_ik = W_i + B_ik``; isoelastic and log agents never hold
    negative units). ``sum_i |x_ik| = T_k / c_k + 2 sum_exp max(0, -x_ik)``."""
    A, K = B.shape
    G = 0.0
    for k in range(K):
        short = 0.0
        for i in range(A):
            if kind[i] != ISO:
                x = W[i] + B[i, k]
                if x < 0.0:
                    short -= x
        g = T[k] / np.exp(u[k]) + 2.0 * short
        if g > G:
            G = g
    return G


@njit(cache=True, error_model="numpy")
def at_rounding_floor(res, tol, kind, W, B, T, u):
    """Whether the clearing residual ``res`` (``max_k |sum_i x_ik - Wsum|``, in units) is within ``tol``
    of the gross volume: ``res <= tol max(1, G)`` with ``G`` :func:`gross_units`; the convergence test of
    the general path. Only markets with exponential agents can differ from ``res <= tol`` (with no short
    sales ``G`` is the net volume ``sum_i W_i``, 1 for the library's normalised wealth), and
    :func:`gross_units` runs only for them and only where ``res > tol``. The residual is a difference of
    sums of units of size ``G``, each accurate to a relative ``eps`` times the size of its exponent; below
    that no method can go. Session 45: Dirichlet beliefs without a floor (log-beliefs down to -694),
    exponential agents with isoelastic ones of eta = 10, 256 goods x 100 agents: the exponential agents
    short up to 631 units and the isoelastic ones hold up to 16,414 of the cheapest goods (gross volume
    35,000 against wealth 1); dense Newton, Newton-CG and tatonnement all stopped at a clearing error of
    2-4e-10 (the same prices), and 10 of 11 items were reported unconverged at the default
    ``tol = 1e-10``, dense Newton after its 100-step cap."""
    if res <= tol:
        return True
    if not res < np.inf:
        return False
    for i in range(kind.shape[0]):
        if kind[i] != ISO:
            return res <= tol * max(1.0, gross_units(kind, W, B, T, u))
    return False


FALLBACK_FACTOR = 20
"""Newton that stops unconverged before its cap (its line search can make no more progress) at a residual
above ``FALLBACK_MIN_RATIO * tol`` hands the item to the seed's fixed point from where it stopped, for at
most ``min(FALLBACK_FACTOR * max_iter, FALLBACK_MAX)`` passes (isoelastic and log agents only: the fixed
point is theirs); ``n_iter`` counts both. (A stall just above ``tol`` is rounding, which the fixed point
cannot beat either: no fallback.) Session 44: from
random starts on Dirichlet beliefs without a floor, 1 item in 500 (16 goods x 2 agents, eta 2/10/30/log)
stalled at a clearing error of 1.0 after 77 Newton steps; the fixed point from the default start needs
150-660 passes on such markets. The fallback runs only on a stall, never on the common path."""


FALLBACK_MIN_RATIO = 1e4
"""See :data:`FALLBACK_FACTOR`."""
FALLBACK_MAX = 10_000
"""See :data:`FALLBACK_FACTOR`."""
FALLBACK_CAP_MIN = 100
"""Newton that reaches its cap (at least this many steps: the default; a smaller cap the caller set keeps
its meaning) still above ``FALLBACK_MIN_RATIO * tol`` falls back as a stall does. Session 45: from random
starts N(0, 2) on Dirichlet beliefs without a floor, Newton-CG ended at its 100-step cap with a clearing
error near 1 on 1-16 % of the items (mix of eta 2/10/30/log, 3 agents: 48 of 300 at 64 goods, 27 at 48,
10 at 128; eta = 10, 2 agents: 1-4 of 300 at 16-64 goods), dense Newton on 0-2 of 300."""


@njit(cache=True, error_model="numpy")
def _fallback_budget(conv, it, max_iter, res, tol):
    """Passes of the fixed point after Newton's ``(it, conv, res)``: 0 unless Newton stalled (see
    :data:`FALLBACK_FACTOR`)."""
    if conv or not res > FALLBACK_MIN_RATIO * tol or (it >= max_iter and max_iter < FALLBACK_CAP_MIN):
        return 0
    return min(FALLBACK_FACTOR * max_iter, FALLBACK_MAX)


@njit(cache=True, error_model="numpy")
def _general_fallback(r, L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp):
    """The general path's Newton result ``r``, or (a stall, see :data:`FALLBACK_FACTOR`) the fixed
    point's from ``u``."""
    it, conv, res, nneg = r
    budget = _fallback_budget(conv, it, max_iter, res, tol)
    if budget == 0:
        return r
    for i in range(kind.shape[0]):
        if kind[i] != ISO:
            return r
    for k in range(u.shape[0]):
        if not np.isfinite(u[k]):
            return r
    phi, res, nneg = evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    it2, conv, res, nneg = _fixed_point_loop(L, kind, inv_eta, W, Wsum, tol, budget, u, Pg, Q, B, T, cp, phi, res, nneg)
    return it + it2, conv, res, nneg


@njit(cache=True, error_model="numpy")
def general_item(L, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, D, fz, pg_ready=False):
    """The general path of :func:`solve_item` with the buffers ``bufs`` of
    :func:`_general_buffers` (reused across the items of one market by :func:`solve_items`).
    ``D``: None, or (3, K) where :func:`tracked` (the method is Newton-CG): the diagonal and ``h``
    of ``-S`` from every evaluation (:func:`markets.kernels.potential.evaluate_into`); ``fz`` (2,) the
    frozen-normaliser steps' switch and probe (:func:`_frozen_phase`).

    The choice is made by the caller, once per market, and each choice is its own compiled
    specialisation. (Session 39: with both in one function, the branch not taken still cost every
    item about 0.3 us, 64 goods x 2 agents: 1.2x, the fixed point included; likewise a sixth buffer
    in ``bufs`` in session 38.) ``pg_ready``: ``bufs``' powers ``Pg`` hold the item's already
    (:func:`_floored_powers`)."""
    K = L.shape[1]
    if method == GRAM:  # an item the eta = 2 path declined (a good nobody believes in)
        method = 2
    Pg, Q, B, T, cp = bufs
    if not pg_ready:
        powers(L, kind, inv_eta, Pg)
    if not warm:
        init_prices(L, kind, inv_eta, W, Pg, u)
    if D is not None:  # a compile-time branch: this specialisation is Newton-CG with the diagonal tracked
        phi, res, nneg = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
        own = warm  # the caller's start is in use
        if warm and not res <= START_CHECK * abs(Wsum):  # a bad warm start: the default, if better
            keep = u.copy()
            init_prices(L, kind, inv_eta, W, Pg, u)
            phi2, res2, nneg2 = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
            if res2 < res or not res <= res:
                phi, res, nneg = phi2, res2, nneg2
                own = False
            else:
                u[:] = keep
                phi, res, nneg = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
        if own and overpriced_general(T, u, Wsum, kind, inv_eta, W, Q):  # into the bounds: BOX_GATE
            if box_general(L, kind, inv_eta, W, u) > 0:
                phi, res, nneg = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
        r = _newton_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg, D, fz)
        return _general_fallback(r, L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp)
    phi, res, nneg = evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    own = warm
    if warm and not res <= START_CHECK * abs(Wsum):  # a bad warm start: the default, if better
        keep = u.copy()
        init_prices(L, kind, inv_eta, W, Pg, u)
        phi2, res2, nneg2 = evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
        if res2 < res or not res <= res:
            phi, res, nneg = phi2, res2, nneg2
            own = False
        else:
            u[:] = keep
            phi, res, nneg = evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    if own and overpriced_general(T, u, Wsum, kind, inv_eta, W, Q):  # into the bounds: BOX_GATE
        if box_general(L, kind, inv_eta, W, u) > 0:
            phi, res, nneg = evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)
    if method == 3:  # iso/log agents only: no short sales
        no1 = np.empty(0)
        it, res = anderson_loop(
            False, res, tol, max_iter, u, np.empty(anderson_size(K, MEMORY)), W, Wsum, T, cp, Pg, 0.0, no1, no1, L,
            kind, inv_eta, Pg, Q, B,
        )  # fmt: skip
        return it, res <= tol, res, 0
    if method != 1:
        if method == 0:
            r = _dense_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg)
            return _general_fallback(r, L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp)
        r = _newton_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg, None, fz)
        return _general_fallback(r, L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp)
    return _fixed_point_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg)


@njit(cache=True, error_model="numpy")
def _newton_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg, D, fz):
    """Safeguarded Newton-CG on the general path from the evaluated start ``u`` (the dense
    direction has :func:`_dense_loop`): the matrix-free direction of
    :func:`markets.kernels.newton_cg.cg_direction` (no K x K matrix), with
    the diagonal and ``h`` of ``-S`` in ``D`` (3, K) at ``u`` and refilled by every evaluation here
    (:func:`markets.kernels.potential.evaluate_into`) where :func:`tracked`, else (``D`` None, a
    compile-time choice) by :func:`markets.kernels.newton_cg.general_diagonal` once per step,
    after the diagonal steps of :mod:`markets.kernels.jacobi` while the residual is above
    :data:`markets.kernels.jacobi.JACOBI_UNTIL` (markets without exponential agents; each counts as
    an iteration), or, where the evaluation collects the orders' spending and every agent is isoelastic
    or log of order up to one, the frozen-normaliser steps of :mod:`markets.kernels.normaliser` instead
    (:func:`_frozen_phase`); with few agents of order below one (:data:`markets.kernels.woodbury.WOODBURY_MAX_ROWS`)
    the direction is the exact one of :func:`markets.kernels.woodbury.woodbury_direction`, CG where it declines;
    with :data:`markets.kernels.order_pcg.MIN_AGENTS` agents of order below one or more (``D`` then has
    the orders' rows), CG preconditioned by the orders' mean agents
    (:func:`markets.kernels.order_pcg.order_direction`). ``fz``: the frozen steps' switch and probe
    (:func:`_frozen_phase`)."""
    A, K = L.shape
    d = np.zeros(K)
    tmp = np.zeros(K)
    un = np.zeros(K)
    no1 = np.empty(0)  # the lean evaluator's arguments, unused here
    no2 = np.empty((0, 0))
    scr = np.empty(cg_scratch_size(K, A))
    if D is None:
        dg = np.empty(K)
        h = np.empty(K)
    else:
        dg = D[0]
        h = D[1]
    n_exp = 0
    for i in range(A):
        if kind[i] != ISO:
            n_exp += 1
    rows = woodbury_rows(kind, inv_eta, W)
    wb = rows <= WOODBURY_MAX_ROWS  # few agents: the exact direction by Woodbury (markets.kernels.woodbury)
    V = np.empty((rows + 2, K) if wb else (0, K))
    Ew = np.empty((rows, rows)) if wb else no2
    Sw = np.empty(woodbury_scratch_size(rows) if wb else 0)
    b = np.empty(K if wb else 0)
    c = np.empty(K if wb else 0)
    can_correct = n_exp == 0  # markets.kernels.corrector: isoelastic and log agents only
    # the right-hand side: logarithmic without exponential agents (markets.kernels.newton_cg), on the
    # under-priced goods only once a step with it barely lowered the residual (see RHS_SWITCH)
    rhs = 1 if n_exp == 0 else 0
    # the corrector's b2, d2 and 4 K of work, one allocation and none where it cannot be taken (an
    # item of two agents and two goods takes about 2 us; each allocation or view costs some 0.1 us)
    cw = np.empty(6 * K) if can_correct else tmp
    Cq = DEFAULT_CONSTANT  # the last plain step's res_new / res^2, and a corrected one's / res^3
    Cc = DEFAULT_CONSTANT
    fast = has_near_log(kind, inv_eta)  # whole steps kept by their residual, no potential (FAST_ACCEPT)
    it = 0
    frozen = False
    if D is not None:  # a compile-time branch: the order spendings come with the tracked evaluation
        frozen, it, phi, res, nneg = _frozen_phase(
            L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg, D, un, fz
        )
    if not frozen and n_exp == 0:  # the global phase: diagonal steps (markets.kernels.jacobi)
        while res > max(tol, JACOBI_UNTIL) and it < max_iter:
            if D is None:
                general_diagonal(kind, inv_eta, W, Q, u, dg, h)
            if not jacobi_log_step(u, T, Wsum, dg, un, tmp):
                break
            phin, resn, nnegn = _eval(L, kind, inv_eta, W, Wsum, un, Pg, Q, B, T, cp, D)
            if not (resn < res):  # undo it: Newton goes on from u
                phi, res, nneg = _eval(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
                break
            it += 1
            fast = resn <= JACOBI_RATE * res
            for k in range(K):
                u[k] = un[k]
            phi, res, nneg = phin, resn, nnegn
            if not fast:
                break
    while res > tol and it < max_iter:
        it += 1
        corrected = False
        if D is None:
            general_diagonal(kind, inv_eta, W, Q, u, dg, h)
        reg = abs(Wsum) + n_exp
        if reg <= 0.0:
            reg = 1.0
        corr = can_correct and use_corrector(res, Cq, Cc, tol)
        target = 0.1 * max(Cc * res * res * res, 0.1 * tol)  # the correction's accuracy
        ok = False
        by_wb = False
        if wb:
            newton_rhs(u, T, Wsum, rhs, b, c, tmp)
            ok = woodbury_direction(kind, inv_eta, W, Q, c, dg, h, reg, b, d, V, Ew, Sw)
            by_wb = ok
        pcg = False
        if D is not None:  # a compile-time branch
            # many agents of order below one: the orders' mean agents precondition CG (order_pcg)
            if not ok and D.shape[0] > 3 and rows - 2 >= PCG_MIN_AGENTS:
                ok = order_direction(
                    u, T, Wsum, reg, res, tol, d, scr, kind, inv_eta, W, Q, dg, h, D[3:], D.shape[0] - 3, rhs
                )[0]
                pcg = True
        if not ok and not pcg:
            ok = cg_direction(
                False,
                u,
                T,
                Wsum,
                reg,
                res,
                tol,
                d,
                scr,
                no2,
                0.0,
                no1,
                no1,
                no1,
                kind,
                inv_eta,
                W,
                Q,
                dg,
                h,
                rhs,
            )[0]
        if ok and corr:
            if D is not None:  # a compile-time branch; the correction preconditioned as the direction was
                Vo = D[3:] if pcg else D[3:3]
                corrected = _correct(
                    by_wb, kind, inv_eta, W, Wsum, Q, T, u, d, cw, V, Ew, Sw, reg, target, scr, dg, h, Vo
                )
            else:
                corrected = _correct(
                    by_wb, kind, inv_eta, W, Wsum, Q, T, u, d, cw, V, Ew, Sw, reg, target, scr, dg, h, no2
                )
        taken = False
        if fast:
            if ok:
                trial(u, d, first_step(d), un, tmp)
                phin, resn, nnegn = _eval_spending(L, kind, inv_eta, W, Wsum, un, Pg, Q, B, T, cp, D)
                taken = resn <= FAST_ACCEPT * res
            if not taken:  # the line search from here on: the potential (and the buffers) at u
                fast = False
                phi, res, nneg = _eval(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
        if not taken:
            accepted, phin, resn, nnegn = safeguarded_step(
                ok,
                u,
                d,
                un,
                phi,
                res,
                False,
                W,
                Wsum,
                T,
                cp,
                no2,
                0.0,
                no1,
                no1,
                L,
                kind,
                inv_eta,
                Pg,
                Q,
                B,
                tmp,
                D,
            )
            if not accepted:
                phi, res, nneg = phin, resn, nnegn
                break
        if corrected:
            Cc = max(resn / (res * res * res), 1e-6)
        elif can_correct:
            Cq = max(resn / (res * res), 1e-6)
        for k in range(K):
            u[k] = un[k]
        if rhs == 1 and resn > RHS_SWITCH * res:
            rhs = UNDER_PRICED_LOG_RHS
        slow = n_exp > 0 and resn > SLOW_STEP * res
        phi, res, nneg = phin, resn, nnegn
        if slow and at_rounding_floor(res, tol, kind, W, B, T, u):
            break
    return it, at_rounding_floor(res, tol, kind, W, B, T, u), res, nneg


@njit(cache=True, error_model="numpy")
def _frozen_phase(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg, D, un, fz):
    """The first phase of :func:`_newton_loop` where the evaluation's ``D`` has the orders' spending
    rows and the market only isoelastic and log agents of orders up to one: frozen-normaliser steps
    (:mod:`markets.kernels.normaliser`) while :func:`markets.kernels.normaliser.take_frozen_step` says
    so; a step that does not lower the residual is undone. ``fz`` (2,): the steps are taken only if
    ``fz[0]`` is not 0 (:func:`solve_items`' probe), and ``fz[1]`` receives the first one's ``res_new /
    res`` (``inf`` if it was undone or not defined). Returns
    ``(applies, steps, phi, res, n_negative)`` at the point ``u`` reached (``applies`` False: the
    market does not allow the step and the caller takes the diagonal steps instead)."""
    K = u.shape[0]
    G = D.shape[0] - 3
    gs = np.empty(G)
    fs = np.empty(G)
    if G == 0 or fz[0] == 0.0:
        return False, 0, phi, res, nneg
    ng, has_log, usable = order_groups(kind, inv_eta, W, gs, fs)
    if not (usable and ng == G):
        return False, 0, phi, res, nneg
    it = 0
    rho = 0.0
    first = True
    scr = np.empty(0)
    while res > tol and it < max_iter and take_frozen_step(res, rho, tol, first):
        if first:
            scr = np.empty(frozen_scratch_size(K, G))
        if not frozen_normaliser_step(u, T, Wsum, D[0], D[3:], gs, fs, has_log, res, un, scr):
            if first:
                fz[1] = np.inf
            break
        phin, resn, nnegn = evaluate_into(L, kind, inv_eta, W, Wsum, un, Pg, Q, B, T, cp, D)
        if not (resn < res):  # undo it: Newton goes on from u
            if first:
                fz[1] = np.inf
            phi, res, nneg = evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D)
            break
        it += 1
        rho = resn / res
        if first:
            fz[1] = rho
        first = False
        for k in range(K):
            u[k] = un[k]
        phi, res, nneg = phin, resn, nnegn
    return True, it, phi, res, nneg


@njit(cache=True, error_model="numpy")
def _dense_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg):
    """Safeguarded Newton on the general path with the dense direction
    (:func:`markets.kernels.potential.newton_direction`: a K x K Cholesky; few goods) from the
    evaluated start ``u``, apart from :func:`_newton_loop`'s matrix-free loop (none of its diagonal,
    Woodbury or corrector buffers; the line search compiled without the diagonal, ``D = None``)."""
    K = L.shape[1]
    d = np.zeros(K)
    H = np.zeros((K, K))
    Lc = np.zeros((K, K))
    tmp = np.zeros(K)
    un = np.zeros(K)
    no1 = np.empty(0)  # the lean evaluator's arguments, unused here
    no2 = np.empty((0, 0))
    has_exp = False
    for i in range(kind.shape[0]):
        if kind[i] != ISO:
            has_exp = True
    it = 0
    while res > tol and it < max_iter:
        it += 1
        ok = newton_direction(kind, inv_eta, W, u, Q, B, T, Wsum, d, H, Lc, tmp)
        accepted, phin, resn, nnegn = safeguarded_step(
            ok, u, d, un, phi, res, False, W, Wsum, T, cp, no2, 0.0, no1, no1, L, kind, inv_eta, Pg, Q, B, tmp, None
        )
        if not accepted:
            phi, res, nneg = phin, resn, nnegn
            break
        for k in range(K):
            u[k] = un[k]
        slow = has_exp and resn > SLOW_STEP * res
        phi, res, nneg = phin, resn, nnegn
        if slow and at_rounding_floor(res, tol, kind, W, B, T, u):
            break
    return it, at_rounding_floor(res, tol, kind, W, B, T, u), res, nneg


@njit(cache=True, error_model="numpy")
def _correct(by_wb, kind, inv_eta, W, Wsum, Q, T, u, d, cw, V, Ew, Sw, reg, target, scr, dg, h, Vo):
    """The corrected step of :mod:`markets.kernels.corrector` added to the Newton direction ``d``
    (by :func:`markets.kernels.woodbury.woodbury_resolve` after a Woodbury direction, else CG with
    stopping residual ``target``, preconditioned by the orders' rows ``Vo`` if it has any, as
    :func:`markets.kernels.order_pcg.order_direction` was: ``scr[:K]`` then holds its prices);
    ``cw``: 6 K floats. Returns whether it was taken."""
    K = u.shape[0]
    b2 = cw[:K]
    d2 = cw[K : 2 * K]
    if not corrector_rhs(kind, inv_eta, W, Wsum, Q, T, u, d, b2, cw[2 * K :]):
        return False
    if by_wb:
        ok2 = woodbury_resolve(V, Ew, b2, d2, Sw)
    elif Vo.shape[0] > 0:
        ok2 = pcg_solve(b2, reg, target, d2, scr, kind, inv_eta, W, Q, dg, h, Vo, Vo.shape[0])[0]
    else:
        no1 = np.empty(0)
        ok2 = cg_solve(
            False, u, b2, reg, target, d2, scr, np.empty((0, 0)), 0.0, T, no1, no1, no1, kind, inv_eta, W, Q, dg, h
        )[0]
    if not (ok2 and small_correction(d, d2)):
        return False
    for k in range(K):
        d[k] += d2[k]
    return True


@njit(cache=True, error_model="numpy")
def _fixed_point_loop(L, kind, inv_eta, W, Wsum, tol, max_iter, u, Pg, Q, B, T, cp, phi, res, nneg):
    """The seed's iteration (Storkey et al. 2012) ``c <- sum_i r_i(c) / sum_i W_i`` on the general
    path from the evaluated start ``u``. For fixed positions ``r`` the minimiser of
    ``KL(c || sum_i r_i)`` over the simplex is the normalised total spending, so this is
    alternating minimisation of that KL. Isoelastic and logarithmic agents only."""
    it = 0
    x = np.empty(L.shape[1])
    while res > tol and it < max_iter:
        it += 1
        fixed_point_prices(u, T, x)
        phi, res, nneg = evaluate_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)  # no potential
    return it, res <= tol, res, nneg


@njit(cache=True, error_model="numpy")
def _floored(L, j, floor, nfl, Lf, e):
    """Item ``j`` of ``L`` in the chunk's buffer ``Lf``: (``floor`` > 0) its beliefs floored in cache by
    :func:`markets.kernels.floor.floor_item` with the count in ``nfl[j]`` (the fused floor of the
    parallel drivers: no floored copy of the beliefs, no pass of its own), else copied there.

    The copy without a floor (session 47): the powers' vectorised exp reading the caller's array
    straight from memory ran at 2.9-3.2 ns an element on this machine, 0.9 in cache and 1.5 for a
    copy then the exp (``benchmarks/results/session47.md``); the floor's pass was that copy already."""
    if floor > 0.0:
        nfl[j] = floor_item(L[j], Lf, floor, e)
        return Lf
    Lf[:] = L[j]
    return Lf


@njit(cache=True, error_model="numpy")
def _floored_powers(L, j, floor, nfl, Lf, e, kind, inv_eta, Pg):
    """:func:`_floored` with the powers ``Pg`` of the general path taken row by row as each row is floored
    (or copied), while it is in cache (:func:`markets.kernels.floor.floor_powers_item`), for
    :func:`general_item` with ``pg_ready``. (Session 50: the floor's pass, then :func:`powers` over the
    floored item from L2 or memory, cost a second read of it.)"""
    n = floor_powers_item(L[j], Lf, floor, e, kind, inv_eta, Pg)
    if floor > 0.0:
        nfl[j] = n
    return Lf


@njit(cache=True, error_model="numpy")
def _chunk_buffers(arena, c, per, shared, A, K, d_rows):
    """Chunk ``c``'s buffers in :func:`solve_items`: ``(Lf, e, D, bufs)``, the item (floored or copied), a scratch
    of K floats, the tracked evaluation's ``D`` (``d_rows`` rows, 0 where untracked) and the
    :func:`_general_buffers`, from ``arena`` (``per`` floats a chunk) if ``shared``."""
    mem = arena[c * per : (c + 1) * per] if shared else np.empty(per)
    AK = A * K
    Lf = mem[3 * AK : 4 * AK].reshape((A, K))  # the item, floored or copied (_floored)
    bufs = (
        mem[:AK].reshape((A, K)),
        mem[AK : 2 * AK].reshape((A, K)),
        mem[2 * AK : 3 * AK].reshape((A, K)),
        np.zeros(K),
        np.zeros(K),
    )
    return Lf, np.empty(K), np.empty((d_rows, K)), bufs


@njit(cache=True, parallel=True, error_model="numpy")
def solve_items(L, kind, inv_eta, W, tol, max_iter, method, U, warm, floor, nfl, arena, threads):
    """Equilibria of all items. ``L`` (n, A, K); ``W`` (A,); ``U`` (n, K) start/answer.
    ``method`` 0 = Newton, 1 = fixed point. ``floor`` > 0: ``L`` holds validated beliefs not yet
    floored, each item is floored in cache (:func:`_floored`) and ``nfl`` (n,) receives the counts.
    ``arena``: memory of at least :func:`items_arena_size` floats for every chunk's buffers (as in
    :func:`solve_iso_block`), or shorter (each chunk allocates its own); ``threads`` as there.
    Where Newton-CG may open with frozen-normaliser steps (:mod:`markets.kernels.normaliser`), item 0
    is solved first and alone, and the others take them only if its first one contracted the residual
    by :data:`markets.kernels.normaliser.PROBE_RATE` (so an item's path depends on the call's first
    item, never on the thread count). Returns per-item (n_iter, converged, residual, n_negative)."""
    n, A, K = L.shape
    iters = np.zeros(n, np.int64)
    conv = np.zeros(n, np.bool_)
    res = np.zeros(n)
    nneg = np.zeros(n, np.int64)
    Wsum = _total(W)
    lean = one_order(kind, inv_eta, W)
    track = not lean and tracked(method, kind, inv_eta, K)
    # the orders' mean-agent rows where Newton-CG will solve by CG (markets.kernels.order_pcg)
    n_rows = spending_rows(kind, inv_eta, W, K) if track else 0
    m = _n_chunks(n, 4 * A * K, threads)
    per = _chunk_floats(4, A, K, 0.0, 0)  # Pg, Q, B and the item (_floored)
    shared = arena.shape[0] >= m * per
    # the frozen-normaliser steps' probe (markets.kernels.normaliser): item 0 alone first, the others
    # take the steps only if its first one contracted (the same choice at any thread count)
    fz = np.array([1.0, np.nan])
    probe = track and n_rows > 0 and n > 1 and frozen_usable(kind, inv_eta)
    if probe:
        Lf, e, D, bufs = _chunk_buffers(arena, 0, per, shared, A, K, 3 + n_rows)
        Lj = _floored_powers(L, 0, floor, nfl, Lf, e, kind, inv_eta, bufs[0])
        u = U[0].copy()
        iters[0], conv[0], res[0], nneg[0] = general_item(
            Lj, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, D, fz, True
        )
        U[0] = u
        fz[0] = 1.0 if not (fz[1] > PROBE_RATE) else 0.0  # NaN (no step taken): keep them
        if fz[0] == 0.0 and woodbury_rows(kind, inv_eta, W) - 2 < PCG_MIN_AGENTS:
            n_rows = 0  # no reader of the order rows left: the evaluations skip them
    for c in prange(m):
        Lf, e, D, bufs = _chunk_buffers(arena, c, per, shared, A, K, 3 + n_rows if track else 0)
        fzc = fz.copy()  # each chunk its own (the steps write their outcome into it)
        for j in range(c * n // m, (c + 1) * n // m):
            if probe and j == 0:
                continue
            u = U[j].copy()
            if lean:  # the items the one-order driver declined: solve_item decides
                Lj = _floored(L, j, floor, nfl, Lf, e)
                r = solve_item(Lj, kind, inv_eta, W, tol, max_iter, method, u, warm)
            else:
                Lj = _floored_powers(L, j, floor, nfl, Lf, e, kind, inv_eta, bufs[0])
                if track:
                    r = general_item(Lj, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, D, fzc, True)
                else:
                    r = general_item(Lj, kind, inv_eta, W, Wsum, tol, max_iter, method, u, warm, bufs, None, fzc, True)
            iters[j], conv[j], res[j], nneg[j] = r
            U[j] = u
    return iters, conv, res, nneg


@njit(cache=True, parallel=True, error_model="numpy")
def start_prices(L, kind, inv_eta, W, U, floor, nfl, arena, threads):
    """``U[j]``: the start of every item (:func:`markets.kernels.potential.init_prices`), in parallel.
    For an all-logarithmic market it is the answer (the wealth-weighted linear pool, Table 2.4).
    ``floor``, ``nfl``: the fused floor, as in :func:`solve_items`; ``arena``: at least
    :func:`start_arena_size` floats for the chunks' buffers, or shorter (each chunk allocates its own);
    ``threads``: Numba's thread count (:func:`_n_chunks`)."""
    n, A, K = L.shape
    m = _n_chunks(n, 2 * A * K, threads)
    per = _chunk_floats(2, A, K, 0.0, 0)  # the powers and the item (_floored)
    shared = arena.shape[0] >= m * per
    for c in prange(m):
        mem = arena[c * per : (c + 1) * per] if shared else np.empty(per)
        AK = A * K
        Lf = mem[AK : 2 * AK].reshape((A, K))
        e = np.empty(K)
        Pg = mem[:AK].reshape((A, K))
        for i in range(A):  # rows of other kinds stay zero from item to item
            if kind[i] != ISO:
                Pg[i, :] = 0.0
        u = np.empty(K)
        for j in range(c * n // m, (c + 1) * n // m):
            Lj = _floored(L, j, floor, nfl, Lf, e)
            powers(Lj, kind, inv_eta, Pg)
            init_prices(Lj, kind, inv_eta, W, Pg, u)
            U[j] = u
