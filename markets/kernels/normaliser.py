"""The frozen-normaliser step: every good cleared on its own with the agents' normalisers held.

Isoelastic agent ``i`` of order ``g_i = 1/eta_i`` spends ``W_i Q_ik`` on good ``k`` with
``Q_ik = P_ik^g c_k^(1-g) / z_i`` and ``z_i = sum_k P_ik^g c_k^(1-g)`` (seed 000, Eq. 2.35; the log agent
is ``g = 1``). With every ``z_i`` held at its value at the prices ``c = exp(u)``, the spending on good
``k`` moves with that good's own price only, ``W_i Q_ik (c'_k / c_k)^(1-g_i)``, and clearing it alone
is one equation in ``x_k = log(c'_k / c_k)``:

    sum_g T_gk exp(-g x_k) = Wsum c_k,

``T_gk`` the spending of the agents of order ``g`` at ``c`` (the orders' rows that
:func:`markets.kernels.potential.evaluate_into` collects). The left side is positive, decreasing and
log-convex in ``x_k``, so ``h(x) = log(sum_g T_gk e^(-g x)) - log(Wsum c_k)`` is convex and decreasing
with slope in ``[-1, -g_min]``: Newton on ``h`` from ``x = 0`` overshoots to the left once and then
rises monotonically to the root, quadratically. Its first step is the diagonal step of
:mod:`markets.kernels.jacobi`, ``x_k = log(T_k / (Wsum c_k)) T_k / D_k`` (``D_k = sum_g g T_gk``); the step
here takes :data:`INNER_STEPS` more. The prices then move by ``x`` (normalised; capped at
:data:`markets.kernels.line_search.MAX_LOG_STEP` as the diagonal step is). With one order the equation
is solved by ``c'^g = (sum_i (W_i / z_i) P_i^g) / Wsum``: the map ``s = W / z -> s'`` of the agents'
normaliser weights whose fixed point is the equilibrium (:mod:`markets.kernels.gram` solves it at
``eta = 2``); with several orders this step is that map with each good's equation solved numerically.

Why it is worth more than the diagonal step: on the grid's mixed markets (eta = 2, 10, 30, log;
``benchmarks/bench_markets_grid.py``) a Gaussian-logit market of 10 agents x 1,024 goods starts at a
clearing residual of 1.1; the diagonal step takes it to 0.63, the same step solved per good to 0.028
(then a Newton step and a corrected one to 1e-11: three steps in all where five were needed); at 100 agents 0.56 -> 0.031
(diagonal) and 0.0044 (solved), and repeated, the map contracts by 0.05 per step there (0.17 at 10
agents; 0.3-0.5 on the Dirichlet family, where it is taken once). The goods whose equation is far from
linear in ``x`` (one order's spending dominating another's across the step) are what the one-step
form leaves unsolved (session 42, ``benchmarks/results/session42.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.fastlog import log_into
from solvers.kernels.simplex_log import normalise_log_with
from solvers.kernels.vmax import vmax_abs

from .corrector import DEFAULT_CONSTANT
from .jacobi import JACOBI_RATE, JACOBI_UNTIL
from .line_search import MAX_LOG_STEP
from .potential import ISO, link_head, link_next, order_links, order_row_scale

_FM = {"reassoc", "contract"}
INNER_STEPS = 3
"""Newton steps on each good's equation after the diagonal one, at most (a step whose largest
change ``dx`` has ``dx^2 <= INNER_TOL res`` ends them). Measured on the grid's
logit market of 10 agents x 1,024 goods: the diagonal step alone leaves a residual of 0.63, one
step more 0.064, two more 0.0275, solved to convergence 0.0275."""
INNER_TOL = 0.05
"""The inner Newton steps stop once the squared largest change is at most this times the residual
(the error left is about that square: on the grid's logit market of 10 agents x 1,024 goods the first
step takes two inner steps, at 100 agents one, and the residual after it is that of the exact solve)."""
NEXT_FACTOR = 3.0
"""The next step is predicted to contract by this times the last one's ``res_new / res`` (measured: 2-8
times, the first step being the most effective: logit 10 agents 0.03-0.05 then 0.17-0.25; 100 agents
0.01 then 0.02-0.2)."""


PROBE_RATE = 0.1
"""A market's other items take the steps only if its first item's first step had ``res_new / res`` at
most this (:func:`markets.kernels.equilibrium.solve_items`). Measured (session 42, first item, 256-4,096
goods x 10-1,000 agents): 0.008-0.06 on the grid's logit and near-duplicate families, 0.001-0.008 on
symmetric Dirichlet(0.7) and Zipf-prior beliefs (Newton's first step there: 0.02-0.17); but 0.12-0.64
with Student-t logits (agents whose mass sits on a few goods: the normalisers move with the step),
0.01-0.16 on noisy copies of three experts and 0.08-0.5 on the grid's Dirichlet family, where Newton's
first step does as well or better and a step costs an evaluation or two for nothing
(``benchmarks/bench_market_families.py``, ``benchmarks/results/session42.md``)."""


@njit(cache=True, error_model="numpy")
def frozen_usable(kind, inv_eta):
    """Whether the step is defined for this market: isoelastic and log agents only, orders up to one."""
    for i in range(kind.shape[0]):
        if kind[i] != ISO or inv_eta[i] > 1.0:
            return False
    return True


@njit(cache=True, error_model="numpy")
def take_frozen_step(res, rho, tol, first):
    """Whether Newton-CG takes a(nother) frozen-normaliser step at clearing residual ``res``, ``rho`` the
    last one's ``res_new / res``. Above :data:`markets.kernels.jacobi.JACOBI_UNTIL` (the global phase):
    the first, and another while the last contracted by :data:`markets.kernels.jacobi.JACOBI_RATE`.
    Below it: none once one corrected Newton step (:mod:`markets.kernels.corrector`, to ``C res^3``,
    ``C`` = :data:`markets.kernels.corrector.DEFAULT_CONSTANT`) is predicted to reach ``tol``, i.e.
    from ``(tol / C)^(1/3)`` (5.8e-4 at ``tol = 1e-10``); else the first, and another if it is
    predicted (:data:`NEXT_FACTOR`) to bring the residual there. A step costs one evaluation and the
    per-good solve, a Newton step one evaluation and its direction (two to three of the fixed point's
    passes). Measured on the grid's mixed markets: at 100 and 1,000 agents two steps (0.5 -> 5e-3 ->
    2e-4) and one corrected Newton step; at 10 agents one (1 -> 3e-2) and Newton
    (``benchmarks/results/session42.md``)."""
    if res > JACOBI_UNTIL:
        return first or rho <= JACOBI_RATE
    finish = (tol / DEFAULT_CONSTANT) ** (1.0 / 3.0)
    if not (res > finish):
        return False
    return first or NEXT_FACTOR * rho * res <= finish


@njit(cache=True, error_model="numpy")
def order_groups(kind, inv_eta, W, gs, fs):
    """The orders of the rows ``3 ..`` of the evaluation's ``D`` (:func:`markets.kernels.potential.evaluate_into`):
    ``gs[j]`` the order of row ``j`` and ``fs[j]`` the factor that turns it into the order's spending
    ``T_g`` (the inverse of its scale, 0 for an order without wealth). Returns ``(n_rows, has_log,
    usable)``: ``usable`` as :func:`frozen_usable`."""
    n = 0
    has_log = False
    link = order_links(kind, inv_eta)
    for i in range(kind.shape[0]):
        if kind[i] != ISO:
            continue
        g = inv_eta[i]
        if g == 1.0:
            has_log = True
        elif g < 1.0 and link_head(link, i):
            wg = 0.0
            j = i
            while j >= 0:  # the agents of order g
                wg += W[j]
                j = link_next(link, j)
            if n < gs.shape[0]:
                gs[n] = g
                f = order_row_scale(g, wg)
                fs[n] = 1.0 / f if f > 0.0 else 0.0
            n += 1
    return n, has_log, frozen_usable(kind, inv_eta)


@njit(cache=True, error_model="numpy")
def scratch_size(K, G):
    """Floats of the scratch of :func:`frozen_normaliser_step` with ``G`` order rows."""
    return (5 + G) * K


@njit(cache=True, fastmath=_FM, error_model="numpy")
def frozen_normaliser_step(u, T, Wsum, dg, rows, gs, fs, has_log, res, un, scr):
    """``un``: the prices after the step (module docstring), normalised, from ``u`` with total
    spending ``T``, the diagonal ``dg`` (``D_k``) and the scaled order spendings ``rows`` (G, K) of the
    evaluation at ``u`` (orders ``gs``, factors ``fs`` of :func:`order_groups`); ``has_log``: whether
    the market has log agents (their spending is ``T - sum_g T_g``); ``res`` the clearing residual at
    ``u``. ``scr``: :func:`scratch_size` floats. Each good's equation is solved by Newton from the
    diagonal step, at most :data:`INNER_STEPS` more steps, until the last change ``dx`` has
    ``max dx^2 <= INNER_TOL res`` (quadratic convergence: the error left is about ``dx^2``). Returns
    False (``un`` undefined) where the step is not defined (a good without spending or diagonal) or
    not finite."""
    K = u.shape[0]
    G = rows.shape[0]
    if not (Wsum > 0.0):
        return False
    pos = True
    for k in range(K):  # no early exit: the loop vectorises
        pos &= T[k] > 0.0 and dg[k] > 0.0
    if not pos:
        return False
    x = un
    lt = scr[:K]
    E = scr[K : 2 * K]
    F = scr[2 * K : 3 * K]
    Fd = scr[3 * K : 4 * K]
    Tu = scr[4 * K : (5 + G) * K].reshape((G + 1, K))  # the orders' spending, unscaled; the log agents' last
    lw = np.log(Wsum)
    log_into(T, lt)
    for k in range(K):  # the diagonal step: Newton's first on each good's equation; the target
        F[k] = lw + u[k]
        x[k] = (lt[k] - F[k]) * (T[k] / dg[k])
    tgt = Fd  # log(Wsum c_k), kept apart from the sums
    for k in range(K):
        tgt[k] = F[k]
    T1 = Tu[G]
    for k in range(K):
        T1[k] = T[k]
    for j in range(G):
        f = fs[j]
        row = rows[j]
        tj = Tu[j]
        for k in range(K):
            t = f * row[k]
            tj[k] = t
            T1[k] -= t
    n_groups = G + 1 if has_log else G
    if has_log:
        for k in range(K):
            T1[k] = max(T1[k], 0.0)
    stop = INNER_TOL * res
    F = scr[2 * K : 3 * K]
    S = lt  # the slope sums (lt is free once the log of T is used)
    for _it in range(INNER_STEPS):
        for j in range(n_groups):
            g = gs[j] if j < G else 1.0
            tj = Tu[j]
            exp_scaled(x, -g, E)
            if j == 0:
                for k in range(K):
                    t = tj[k] * E[k]
                    F[k] = t
                    S[k] = g * t
            else:
                for k in range(K):
                    t = tj[k] * E[k]
                    F[k] += t
                    S[k] += g * t
        log_into(F, E)
        tot = 0.0
        for k in range(K):
            dx = (E[k] - tgt[k]) * (F[k] / S[k])
            x[k] += dx
            tot += dx
            E[k] = dx  # E is free until the next step's exp
        big = vmax_abs(E[:K])
        if not np.isfinite(tot):
            return False
        if big * big <= stop:
            break
    m = vmax_abs(x[:K])
    t = 1.0 if m <= MAX_LOG_STEP else MAX_LOG_STEP / m
    for k in range(K):
        un[k] = u[k] + t * x[k]
    normalise_log_with(un, lt)
    ok = True
    for k in range(K):
        ok &= np.isfinite(un[k])
    return ok
