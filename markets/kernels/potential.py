"""The general per-item kernels of a market: spending, the potential and its Newton direction.

Any mix of exponential and isoelastic (incl. logarithmic) agents. Agent ``i`` is ``kind[i]``
(:data:`EXP` or :data:`ISO`), ``inv_eta[i]`` (``1/eta_i``, the exponent of its effective belief;
the Rényi order of Eq. 2.36, 1 for the log agent, unused for exponential agents) and ``W[i]``.
Prices are normalised log-prices ``u`` (``c = exp(u)``, ``logsumexp(u) = 0``). The equilibrium
maximises the concave potential (``docs/markets.md``; seed 000 Eq. 2.34-2.36)

    Phi(c) = - sum_{iso i} W_i D_{1/eta_i}(P_i || c)  -  sum_{exp i} KL(c || P_i)

whose gradient in ``u`` is the excess spending ``sum_i r_i(c) - (sum_i W_i) c``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace
from solvers.kernels.fastlog import log_into
from solvers.kernels.simplex_log import VECTOR_MIN, normalise_log, normalise_log_with
from solvers.kernels.vmax import vmax_gap_ratio

from .direction import direction_from_S

EXP = 0
"""Kind code of exponential agents (equal to :data:`markets.utilities.EXPONENTIAL`)."""
ISO = 1
"""Kind code of isoelastic and logarithmic agents (equal to :data:`markets.utilities.ISOELASTIC`)."""


@njit(cache=True, error_model="numpy")
def powers(L, kind, inv_eta, Pg):
    """Pg[i, k] = P_ik^{1/eta_i} for isoelastic agents (0 where P_ik = 0), row by row by the
    vectorised :func:`solvers.kernels.fastexp.exp_scaled` (within 2 ulp of ``exp``)."""
    A, K = L.shape
    for i in range(A):
        if kind[i] == ISO:
            exp_scaled(np.ascontiguousarray(L[i]), inv_eta[i], Pg[i])


_FM = {"reassoc", "contract"}
"""Fast-math flags of the evaluation: reassociation lets LLVM vectorise its sums (the normaliser of
each effective belief, the potential); no flag that assumes finite values. (Session 39: without
them the evaluation of 100 agents x 1,024-4,096 goods took 1.8-2.2x as long, a serial chain of adds
per agent.)"""
GROUP_MIN_GOODS = 16
"""From this many goods :func:`evaluate` takes the agents of one order together (one ``c^(1-g)``
per distinct order); below it, agent by agent (an array of flags costs more than it saves)."""


@njit(cache=True, error_model="numpy", inline="always")
def _iso_agent(L, i, g, w, u, Pg, Q, T, cp, want_phi):
    """Agent ``i`` (isoelastic of order ``g`` < 1, ``cp = c^(1-g)``): its effective belief ``Q_i``
    (Eq. 2.35), its spending added to ``T``; returns its term of the potential (``want_phi``), else 0."""
    K = L.shape[1]
    z = 0.0
    for k in range(K):
        v = Pg[i, k] * cp[k]
        Q[i, k] = v
        z += v
    iz = 1.0 / z
    for k in range(K):
        q = Q[i, k] * iz
        Q[i, k] = q
        T[k] += w * q
    if not want_phi:
        return 0.0
    dl = 1.0 - g
    if abs(dl) < 0.1:
        # near the log agent, 1/(1-g) amplifies rounding: log z = log1p(sum P expm1(dl a))
        acc = 0.0
        for k in range(K):
            if L[i, k] > -np.inf:
                acc += np.exp(L[i, k]) * np.expm1(dl * (u[k] - L[i, k]))
        return w * np.log1p(acc) / dl
    return w / dl * np.log(z)


@njit(cache=True, error_model="numpy", inline="always")
def _added(T, D, f):
    """``D[0] += f (T - D[2])``: the spending one block of agents added to ``T`` since it was
    ``D[2]``, weighted into the diagonal's correction (:func:`_evaluate`)."""
    for k in range(T.shape[0]):
        D[0, k] += f * (T[k] - D[2, k])


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _order_row(T, D, row, f):
    """``D[row] = f (T - D[2])``: the spending of the block of agents just added, scaled (the rows
    ``v_g`` of :mod:`markets.kernels.order_pcg`)."""
    for k in range(T.shape[0]):
        D[row, k] = f * (T[k] - D[2, k])


@njit(cache=True, error_model="numpy", inline="always")
def order_row_scale(g, wg):
    """The scale ``sqrt((1 - g) / W_g)`` of the row of order ``g`` < 1 with wealth ``W_g`` (0 if it
    has none): the row is its agents' spending so scaled (:func:`_evaluate`; the rows ``v_g`` of
    :mod:`markets.kernels.order_pcg`, unscaled again by :mod:`markets.kernels.normaliser`)."""
    return np.sqrt((1.0 - g) / wg) if wg > 0.0 else 0.0


@njit(cache=True, error_model="numpy")
def tracks_diagonal(kind, inv_eta, K):
    """Whether Newton-CG should take the diagonal and ``h`` of ``-S`` from every evaluation
    (:func:`evaluate_into`) rather than from a pass over ``Q`` once per step
    (:func:`markets.kernels.newton_cg.general_diagonal`). Per evaluation the first costs about
    ``4 + 4 n_orders + 4 n_exp`` K-long vector operations (orders below one; a copy and a
    weighted difference per order, two more streams per exponential agent), the pass about three
    per isoelastic agent; below :data:`GROUP_MIN_GOODS` goods every agent is its own block.
    (Session 38: tracking at two agents made the mixed grid's A = 2 cells 4-15 % slower.)"""
    if K < GROUP_MIN_GOODS:
        return False
    n_iso = 0
    n_exp = 0
    n_ord = 0
    link = order_links(kind, inv_eta)
    for i in range(kind.shape[0]):
        if kind[i] != ISO:
            n_exp += 1
            continue
        n_iso += 1
        if inv_eta[i] != 1.0 and link_head(link, i):
            n_ord += 1
    return 4 + 4 * n_ord + 4 * n_exp < 3 * n_iso


CHAIN_SCAN_MAX = 64
"""Up to this many agents :func:`order_links` finds each agent's predecessor of the same order by a
scan back (at most ``A^2 / 2`` comparisons where every order differs); above it, in a list of the
orders met (:data:`FEW_ORDERS`), then a hash table."""
FEW_ORDERS = 16
"""Above :data:`CHAIN_SCAN_MAX` agents, :func:`order_links` keeps the first this many distinct orders
in a list searched in turn (at most that many comparisons an agent), the rest in a hash table."""
_GOLDEN = np.uint64(11400714819323198485)  # 2^64 / golden ratio: Fibonacci hashing


@njit(cache=True, error_model="numpy", inline="always")
def link_next(link, i):
    """The next isoelastic agent after ``i`` with ``i``'s order in :func:`order_links`' ``link``, -1 if none."""
    return link[i] // 2 - 1


@njit(cache=True, error_model="numpy", inline="always")
def link_head(link, i):
    """Whether ``i`` is the first isoelastic agent of its order in :func:`order_links`' ``link``."""
    return link[i] % 2 == 1


@njit(cache=True, error_model="numpy")
def order_links(kind, inv_eta):
    """The agents of each order as chains, in O(A): ``link`` (A,) int64 with ``link[i] = 2 (n + 1) +
    h`` for an isoelastic agent ``i`` (log agents, order 1, included): ``n`` the next isoelastic agent
    after ``i`` with the same order (-1 if none; :func:`link_next`) and ``h`` 1 if no earlier one has it
    (:func:`link_head`); 0 for other agents. A group is walked from its head along ``n``, in the
    order of the agents (so sums over a group add in the same order as a scan would).

    The loops that took an order's agents together used to scan all later agents for every first
    agent of an order: ``A^2 / 2`` comparisons where every agent has its own order (e.g. ``eta_i``
    learnt per agent), per evaluation: at 1,000 agents x 16 goods an evaluation took 0.58-1.07 ms, 0.066-0.079
    ms with the chains (session 48)."""
    A = kind.shape[0]
    link = np.zeros(A, np.int64)
    if A <= CHAIN_SCAN_MAX:
        for i in range(A):
            if kind[i] != ISO:
                continue
            g = inv_eta[i]
            link[i] = 1  # a head without a next until an earlier agent of its order is found
            for j in range(i - 1, -1, -1):
                if kind[j] == ISO and inv_eta[j] == g:
                    link[j] += 2 * (i + 1)  # j had no next: link[j] was 2 * 0 + h
                    link[i] = 0
                    break
        return link
    # few distinct orders (the usual case): a short list of each order's last agent, searched in turn
    vals = np.empty(FEW_ORDERS)
    tails = np.empty(FEW_ORDERS, np.int64)
    nd = 0
    for i in range(A):
        if kind[i] != ISO:
            continue
        g = inv_eta[i]
        t = 0
        while t < nd and vals[t] != g:
            t += 1
        if t < nd:
            link[tails[t]] += 2 * (i + 1)
            tails[t] = i
        elif nd < FEW_ORDERS:
            vals[nd] = g
            tails[nd] = i
            nd += 1
            link[i] = 1
        else:  # many orders: a hash table from here on
            _links_by_hash(kind, inv_eta, link, vals, tails, i)
            break
    return link


@njit(cache=True, error_model="numpy")
def _links_by_hash(kind, inv_eta, link, vals, tails, start):
    """:func:`order_links` from agent ``start`` on, by open addressing (Fibonacci hashing of the
    order's mantissa and exponent), the orders met before ``start`` and their last agents being
    ``vals`` and ``tails``."""
    A = kind.shape[0]
    size = 1
    while size < 2 * A:
        size *= 2
    shift = np.uint64(64 - int(np.log2(size)))
    mask = size - 1
    keys = np.empty(size)
    tail = np.full(size, -1, np.int64)
    for t in range(vals.shape[0] + A - start):
        if t < vals.shape[0]:
            i = -1
            g = vals[t]
        else:
            i = start + t - vals.shape[0]
            if kind[i] != ISO:
                continue
            g = inv_eta[i]
        m, e = math.frexp(g)
        bits = np.uint64(np.int64(m * 9007199254740992.0)) ^ np.uint64(e & 0xFFFF)
        h = np.int64((bits * _GOLDEN) >> shift)
        while tail[h] >= 0 and keys[h] != g:
            h = (h + 1) & mask
        if i < 0:  # an order met before start
            keys[h] = g
            tail[h] = tails[t]
            continue
        j = tail[h]
        if j < 0:
            keys[h] = g
            link[i] = 1
        else:
            link[j] += 2 * (i + 1)
        tail[h] = i


@njit(cache=True, fastmath=_FM, error_model="numpy")
def evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp):
    """Spending, potential and residual at normalised log-prices ``u``: :func:`_evaluate` without
    the diagonal (the fixed point, Anderson and the dense Newton need none; compiled with the
    diagonal's code left out, so they pay nothing for it)."""
    return _evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, Q, False, True)  # D unused: any 2-d array


@njit(cache=True, fastmath=_FM, error_model="numpy")
def evaluate_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp):
    """:func:`evaluate` without the potential (returned as 0): for the fixed point and Anderson, which
    read only the spending and the residual (the lean path's ``iso_pass`` skips it likewise). The
    potential of an agent within 0.1 of the log agent's order costs a scalar ``exp`` and ``expm1`` per
    good (``_iso_agent``'s accurate form), so before session 54 the seed's fixed point paid that in
    every pass where some agent's eta is in (1, 1.11): 6 of the grid's 100 ``spread-low`` agents and
    88 of its 1,000 (``benchmarks/results/session54.md``)."""
    return _evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, Q, False, False)


@njit(cache=True, fastmath=_FM, error_model="numpy")
def evaluate_into(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D):
    """:func:`_evaluate` that also fills ``D`` (3, K) with the diagonal and ``h`` of ``-S`` (its
    docstring) and, if ``D`` has more rows, rows ``3 ..`` with the rows ``v_g`` of the orders below
    one (:mod:`markets.kernels.order_pcg`, :func:`markets.kernels.order_pcg.order_rows` of them), or,
    for ``D`` of any other shape, :func:`evaluate`."""
    if D.shape[0] >= 3 and D.shape[1] == L.shape[1]:
        return _evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D, True, True)
    return evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)


@njit(cache=True, fastmath=_FM, error_model="numpy")
def evaluate_into_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D):
    """:func:`evaluate_into` without the potential (returned as 0), as :func:`evaluate_spending`."""
    if D.shape[0] >= 3 and D.shape[1] == L.shape[1]:
        return _evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D, True, False)
    return evaluate_spending(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp)


@njit(cache=True, error_model="numpy")
def has_near_log(kind, inv_eta):
    """Whether some isoelastic agent's order is within 0.1 of the log agent's (and not 1): its term
    of the potential then takes the accurate form of ``_iso_agent``, a scalar ``exp`` and ``expm1``
    per good, the dearest part of an evaluation where such agents are many."""
    for i in range(kind.shape[0]):
        if kind[i] == ISO and inv_eta[i] != 1.0 and abs(1.0 - inv_eta[i]) < 0.1:
            return True
    return False


@njit(cache=True, error_model="numpy", inline="always")
def _evaluate(L, kind, inv_eta, W, Wsum, u, Pg, Q, B, T, cp, D, track, want_phi):
    """Spending, potential and residual at normalised log-prices ``u``.

    Fills ``Q`` (effective beliefs of isoelastic agents, Eq. 2.35), ``B`` (``log(P/c) - S_i`` of
    exponential agents), ``T`` (total spending per good). Returns ``(phi, residual, n_negative)``
    with ``residual = max_k |T_k - Wsum c_k| / c_k``.

    ``c^(1-g)`` (by the vectorised exp into ``cp``) is computed once per distinct order ``g``: from
    :data:`GROUP_MIN_GOODS` goods the agents of an order are taken together wherever they stand in
    the list, below it whenever the order changes from one agent to the next. (Recomputing it per
    agent, as before session 36, made a market whose orders alternate, e.g. eta = 2, 10, 30, log,
    2, ..., pay A x K scalar exps per evaluation: 3.1x the time of the same market with its agents
    sorted by order, for the fixed point and every method on this path.) The agents of an order are
    found by :func:`order_links` in O(A) (until session 48 by a scan of the later agents from each
    order's first: ``A^2 / 2`` comparisons per evaluation where every agent has its own order).

    ``track`` (a constant of each caller, :func:`evaluate` and :func:`evaluate_into`): ``D`` (3, K)
    receives in ``D[0]`` the diagonal part of ``-S``, ``sum_iso W_i g_i Q_i + n_exp c``, and ``D[1]`` the projection vector ``h = -S 1 =
    sum_iso W_i Q_i + n_exp c`` (both as :func:`markets.kernels.newton_cg.general_diagonal` forms
    them by a pass over ``Q``), here without one: ``T`` is copied into ``D[2]`` before the agents of
    one order ``g`` < 1 add their spending ``T_g`` to it, and ``D[0] = T - sum_g (1 - g) T_g``
    (log agents, ``g = 1``, count fully; exponential agents' spending is taken out again and ``n_exp
    c`` put in). K work per order instead of a pass over ``A x K`` beliefs (session 38: the pass
    cost 0.18-0.25 of an evaluation at 256-1,024 goods and 0.72 at 1,000 x 4,096, once per Newton
    step). ``D[0]`` is a difference; its relative rounding is at most about ``eps / min g``, and it
    only scales CG and the diagonal step (:mod:`markets.kernels.jacobi`).
    """
    A, K = L.shape
    # D[0] collects sum_g (1 - g) T_g over the orders g < 1 and the exponential agents' spending,
    # D[1] that spending alone, D[2] a copy of T before each order's agents add theirs
    n_exp = 0
    for k in range(K):
        T[k] = 0.0
    if track:
        for k in range(K):
            D[0, k] = 0.0
            D[1, k] = 0.0
    phi = 0.0
    prev = -1.0
    nneg = 0
    grouped = K >= GROUP_MIN_GOODS
    link = order_links(kind, inv_eta) if grouped else np.zeros(0, np.int64)
    io = 0  # orders g < 1 met so far (grouped): their rows 3 + io of D, where D has them
    c = np.empty(0)  # the prices, once: for exponential agents and the residual (vectorised exp)
    if K >= VECTOR_MIN:
        c = np.empty(K)
        exp_scaled(u, 1.0, c)
    for i in range(A):
        w = W[i]
        if kind[i] == ISO:
            g = inv_eta[i]
            if g == 1.0:
                if want_phi:
                    for k in range(K):
                        p = Pg[i, k]
                        Q[i, k] = p
                        T[k] += w * p
                        if p > 0.0:
                            phi += w * p * u[k]
                else:
                    for k in range(K):
                        p = Pg[i, k]
                        Q[i, k] = p
                        T[k] += w * p
            elif grouped:
                if not link_head(link, i):
                    continue
                exp_scaled(u, 1.0 - g, cp)
                if track:
                    D[2, :] = T
                wg = 0.0
                j = i
                while j >= 0:  # the agents of order g (order_links)
                    wg += W[j]
                    phi += _iso_agent(L, j, g, W[j], u, Pg, Q, T, cp, want_phi)
                    j = link_next(link, j)
                if track:
                    if g < 1.0 and 3 + io < D.shape[0]:  # the order's mean-agent row (order_pcg)
                        _order_row(T, D, 3 + io, order_row_scale(g, wg))
                    _added(T, D, 1.0 - g)
                if g < 1.0:
                    io += 1
            else:
                if g != prev:
                    exp_scaled(u, 1.0 - g, cp)
                    prev = g
                if track:
                    D[2, :] = T
                phi += _iso_agent(L, i, g, w, u, Pg, Q, T, cp, want_phi)
                if track:
                    _added(T, D, 1.0 - g)
        else:
            n_exp += 1
            if c.shape[0] == 0:
                c = np.empty(K)
                exp_scaled(u, 1.0, c)
            s = 0.0
            for k in range(K):
                a = L[i, k] - u[k]
                B[i, k] = a
                s += c[k] * a
            phi += s
            for k in range(K):
                B[i, k] -= s
                r = c[k] * (w + B[i, k])
                if r < 0.0:
                    nneg += 1
                T[k] += r
            if track:
                for k in range(K):
                    r = c[k] * (w + B[i, k])
                    D[0, k] += r
                    D[1, k] += r
    if c.shape[0] == K:
        res = vmax_gap_ratio(T, Wsum, c)  # vectorised; the same number as the loop below
    else:
        res = 0.0
        for k in range(K):
            ck = np.exp(u[k])
            e = abs(T[k] - Wsum * ck) / ck
            if e > res or not ck > 0.0:  # a zero price counts (inf), as in vmax_gap_ratio (NaN)
                res = e if ck > 0.0 else np.inf
    if track:
        for k in range(K):
            t = T[k] + n_exp * (c[k] if c.shape[0] == K else np.exp(u[k]))
            D[0, k] = t - D[0, k]
            D[1, k] = t - D[1, k]
    return (phi if want_phi else 0.0), res, nneg


@njit(cache=True, error_model="numpy")
def newton_direction(kind, inv_eta, W, u, Q, B, T, Wsum, d, H, Lc, tmp):
    """Newton direction for maximising Phi in ``u``, with the Hessian of Phi in the price
    coordinates ``c`` (negative definite everywhere: Phi is strictly concave in c) pulled back by
    the Jacobian of ``c = softmax(u)``. The dropped curvature term is proportional to the gradient,
    so it vanishes at the equilibrium and the local rate stays quadratic; away from it the matrix
    stays positive definite, so the direction is always an ascent direction.

    With ``S = diag(c) Hess_c(Phi) diag(c)``:
    ``S = -sum_iso W_i [g_i diag(Q_i) + (1-g_i) Q_i Q_i^T] - sum_exp diag(c)`` and the
    u-space matrix is ``M = -(I - c 1^T) S (I - 1 c^T) + Wsum' c c^T`` (the last term fixes the
    shift direction, which does not change prices). Returns False if the Cholesky factorisation
    fails (rounding); the caller then falls back to a mirror-gradient step.
    """
    A, K = Q.shape
    c = np.exp(u)
    for k in range(K):
        for l in range(K):
            H[k, l] = 0.0
    n_exp = 0
    for i in range(A):
        if kind[i] == ISO:
            g = inv_eta[i]
            w = W[i]
            wq = w * (1.0 - g)
            for k in range(K):
                qk = Q[i, k]
                H[k, k] -= w * g * qk
                if wq != 0.0:
                    a = wq * qk
                    for l in range(k + 1):
                        H[k, l] -= a * Q[i, l]
        else:
            n_exp += 1
    for k in range(K):
        H[k, k] -= n_exp * c[k]
    # symmetric fill; the rest (projection, Cholesky, solve) is shared with the lean path
    for k in range(K):
        for l in range(k + 1, K):
            H[k, l] = H[l, k]
    reg = abs(Wsum) + n_exp
    if reg <= 0.0:
        reg = 1.0
    return direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, np.empty(2 * K))


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _order_means(L, kind, inv_eta, W, Pg, wtot, gsum, u):
    """The start of a market of isoelastic and log agents of several orders (:func:`init_prices`):
    for each order ``g`` the power mean of its agents' beliefs, ``M_g = (sum_{i: g_i = g} w_i P_i^g /
    W_g)^(1/g)`` (the one-order start, Eq. 2.32 with ``Z_i = 1``; from the powers ``Pg`` already
    computed, no exponential per belief; log agents, ``g = 1``: their linear pool), then the power mean
    of the ``M_g`` at the wealth-averaged order ``gbar = gsum / wtot`` with weights ``W_g / wtot``.
    Returns False (``u`` undefined) if a price is not finite (beliefs that underflow in ``Pg``).

    Against the power mean of all beliefs at ``gbar`` (the start until session 39, still the fall-back):
    Newton-CG iterations to 1e-10 on the grid's mixed markets (eta 2, 10, 30, log) near-duplicates
    1,024 x 100 3.37 -> 3.26, 256 x 1,000 3.43 -> 3.00, 1,024 x 10 4.85 -> 4.12; logit 1,024 x 10 5.01 ->
    4.72, 256 x 100 4.05 -> 3.10; Dirichlet 1,024 x 100 6.11 -> 4.26, 64 x 10 5.18 -> 5.07; the same at
    two agents (each order its own agent); the fixed point's passes the same or fewer (Dirichlet 1,024
    x 100 198 -> 171); and one exponential per belief less (``benchmarks/results/session39.md`` §4).
    An order of one agent (every agent its own ``eta``) takes ``M_g^gbar = exp(gbar L_i)`` by one
    exponential of its beliefs rather than a logarithm and an exponential of its powers (session 48)."""
    A, K = Pg.shape
    gbar = min(gsum / wtot, 1.0)
    link = order_links(kind, inv_eta)
    S = np.empty(K)
    e = np.empty(K)
    for k in range(K):
        u[k] = 0.0
    for i in range(A):
        if kind[i] != ISO or not link_head(link, i):
            continue
        g = inv_eta[i]
        if link_next(link, i) < 0:  # an order of one agent: M_g = P_i, M_g^gbar = exp(gbar L_i), one exp
            wg = abs(W[i])
            if wg <= 0.0:
                continue
            exp_scaled(np.ascontiguousarray(L[i]), gbar, e)
        else:
            wg = 0.0
            for k in range(K):
                S[k] = 0.0
            j = i
            while j >= 0:  # the agents of order g (order_links)
                wj = abs(W[j])
                wg += wj
                for k in range(K):
                    S[k] += wj * Pg[j, k]
                j = link_next(link, j)
            if wg <= 0.0:
                continue
            # (W_g / wtot) M_g^gbar = (W_g / wtot) (S / W_g)^(gbar / g)
            log_into(S, e)
            a = gbar / g
            lw = np.log(wg)
            for k in range(K):
                e[k] = a * (e[k] - lw)
            exp_scaled_inplace(e, 1.0)
        f = wg / wtot
        for k in range(K):
            u[k] += f * e[k]
    log_into(u, e)  # vectorised (a scalar np.log per good was 33 us of the start at 4,096 goods)
    ok = True
    for k in range(K):
        u[k] = e[k] / gbar
        ok &= np.isfinite(u[k])
    if not ok:
        return False
    normalise_log_with(u, e)
    return True


@njit(cache=True, error_model="numpy")
def init_prices(L, kind, inv_eta, W, Pg, u):
    """Starting prices. Isoelastic/log markets of one order ``g``: the power mean ``(sum_i W_i
    P_i^g)^{1/g}`` (Eq. 2.32 with ``Z_i = 1``); of several orders: the power mean of each order's power
    means at the wealth-averaged order (:func:`_order_means`; session 39), or, if that is not finite,
    the power mean of all beliefs at the wealth-averaged order; with exponential agents: the mixture of
    beliefs with weights ``|W_i| + 1/A`` (positive wherever some belief is)."""
    A, K = L.shape
    has_exp = False
    same = True
    gbar = 0.0
    wtot = 0.0
    for i in range(A):
        if kind[i] != ISO:
            has_exp = True
        else:
            gbar += abs(W[i]) * inv_eta[i]
            wtot += abs(W[i])
            if inv_eta[i] != inv_eta[0]:
                same = False
    if not has_exp and same and wtot > 0.0:
        # one order for all: reuse P^(1/eta) (no transcendental per entry)
        g = inv_eta[0]
        x = np.empty(K)
        for k in range(K):
            x[k] = 0.0
        for i in range(A):
            wi = abs(W[i])
            for k in range(K):
                x[k] += wi * Pg[i, k]
        log_into(x, u)  # vectorised, as the normalisation (session 40)
        ok = True
        for k in range(K):
            u[k] /= g
            ok &= np.isfinite(u[k])
        if ok:
            normalise_log_with(u, x)
            return
    if not has_exp and wtot > 0.0 and _order_means(L, kind, inv_eta, W, Pg, wtot, gbar, u):
        return
    if not has_exp and wtot > 0.0:
        g = gbar / wtot
        if g > 1.0:
            g = 1.0
        # the power mean by one vectorised exp per belief (beliefs are <= 1: no overflow); a good
        # whose sum underflows to 0 takes the max-shifted form below
        e = np.empty(K)
        for k in range(K):
            u[k] = 0.0
        for i in range(A):
            exp_scaled(np.ascontiguousarray(L[i]), g, e)
            wi = abs(W[i]) / wtot
            for k in range(K):
                u[k] += wi * e[k]
        for k in range(K):
            if u[k] > 1e-290:
                u[k] = np.log(u[k]) / g
                continue
            m = -np.inf
            for i in range(A):
                v = np.log(abs(W[i]) / wtot) + g * L[i, k]
                if v > m:
                    m = v
            s = 0.0
            for i in range(A):
                s += np.exp(np.log(abs(W[i]) / wtot) + g * L[i, k] - m)
            u[k] = (m + np.log(s)) / g
        normalise_log(u)
        ok = True
        for k in range(K):
            if not np.isfinite(u[k]):
                ok = False
        if ok:
            return
    tot = 0.0
    for i in range(A):
        tot += abs(W[i]) + 1.0 / A
    for k in range(K):
        s = 0.0
        for i in range(A):
            s += (abs(W[i]) + 1.0 / A) / tot * np.exp(L[i, k])
        u[k] = np.log(s)
    normalise_log(u)


@njit(cache=True, error_model="numpy")
def item_spending(L, kind, inv_eta, W, u, r):
    """Investments ``r[i, k]`` of every agent at normalised log-prices ``u`` (Table 2.4 / Eq. 2.31)."""
    A, K = L.shape
    for i in range(A):
        if kind[i] == ISO:
            g = inv_eta[i]
            m = -np.inf
            for k in range(K):
                z = g * L[i, k] + (1.0 - g) * u[k]
                r[i, k] = z
                if z > m:
                    m = z
            s = 0.0
            for k in range(K):
                r[i, k] = np.exp(r[i, k] - m)
                s += r[i, k]
            for k in range(K):
                r[i, k] *= W[i] / s
        else:
            s = 0.0
            for k in range(K):
                s += np.exp(u[k]) * (L[i, k] - u[k])
            for k in range(K):
                r[i, k] = np.exp(u[k]) * (W[i] + L[i, k] - u[k] - s)
