"""A lower bound on every equilibrium price of an isoelastic market, and warm starts lifted to it.

Derivation (seed 003, Eq. 2.35 and the clearing condition of Table 2.4). Agent ``i`` of order
``g_i = 1/eta_i`` (``g = 1``: the log agent) spends ``W_i Q_ik`` on good ``k``, with
``Q_ik = P_ik^g c_k^(1-g) / z_i`` and ``z_i = sum_k P_ik^g c_k^(1-g)``. By Hölder,
``z_i <= (sum_k P_ik)^g (sum_k c_k)^(1-g) = 1``. Clearing, ``(sum_j W_j) c_k = sum_j W_j Q_jk``, with
every term non-negative, gives for each agent ``i``

    (sum_j W_j) c_k >= W_i P_ik^g c_k^(1-g),   so   log c_k >= log P_ik + log(W_i / sum_j W_j) / g_i.

The bound is the largest of these over the agents. It fails with exponential agents in the
market (their spending ``c_k (W + a_k - sum c a)`` may be negative): there a start is only raised to
:data:`START_FLOOR`, where prices are still normal doubles.

Why: Newton on the potential recovers a log-price started far below its equilibrium only a few
units per step (about ``log(1 + 1/g)`` from the step in ``c``; measured session 44: 2 units a step
at ``eta = 2``, 1 with a log agent, 9 at ``eta = 10``), so a start 400 units low took 200-400 Newton
steps where the seed's fixed point took 50-300; and a log-price below ``-745`` is a price of exactly
zero in double precision, where every method stopped after one step, unconverged, with an infinite
clearing error. A start is only a start: raising a coordinate to the bound moves it towards the
equilibrium, which lies above it (``tests/markets/test_start_bound.py`` checks the bound at solved
equilibria). The bound needs ``z_i <= 1``, which holds for orders up to one only: an agent of order above
one (``eta < 1``) gives no term (session 46).

Starts too high (session 46): :func:`price_box` adds upper bounds (and tightens the lower ones) by the same
clearing condition with ``z_i`` bounded through the bounds themselves; :func:`box_start` moves a warm start
into that box where :func:`overpriced` finds a good more than :data:`BOX_GATE` log-units too dear, which the
start check of :mod:`markets.kernels.equilibrium` cannot see."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.simplex_log import normalise_log

from .potential import ISO

START_FLOOR = -700.0
"""The least normalised log-price of a warm start in a market without the bound (an exponential agent
in it): ``exp(-700)`` is a normal double (the vectorised exp flushes below ``-708``, libm's reaches zero
below ``-745``). Such a start still costs Newton steps in proportion to its distance (session 44:
a start 400 units low, eta = 2 with an exponential agent, 208 steps; tâtonnement 167)."""


@njit(cache=True, error_model="numpy")
def bound_coefficients(kind, inv_eta, W):
    """``log(W_i / sum W) / g_i`` per agent (``-inf`` for a bankrupt agent and for an order ``g_i`` above one,
    ``eta < 1``, where Hölder's ``z_i <= 1`` fails: session 46), or an empty array when the bound does not
    hold (an exponential agent, a non-positive total wealth)."""
    A = W.shape[0]
    Wsum = 0.0
    for i in range(A):
        if kind[i] != ISO or not W[i] >= 0.0:
            return np.empty(0)
        Wsum += W[i]
    if not Wsum > 0.0:
        return np.empty(0)
    coef = np.empty(A)
    for i in range(A):  # an order above one (eta < 1) has no ``z_i <= 1``: its term is no bound
        coef[i] = np.log(W[i] / Wsum) / inv_eta[i] if W[i] > 0.0 and inv_eta[i] <= 1.0 else -np.inf
    return coef


@njit(cache=True, fastmath={"nnan", "nsz"}, error_model="numpy")
def _max_into(b, x, c):
    """``b = max(b, x + c)`` entry by entry (a compare and select LLVM vectorises; beliefs are never
    NaN here: the validator refused them)."""
    for k in range(b.shape[0]):
        v = x[k] + c
        b[k] = v if v > b[k] else b[k]


@njit(cache=True, error_model="numpy")
def lift_start(L, coef, u, b):
    """Raise the normalised log-prices ``u`` (K,) to the bound ``b_k = max_i L_ik + coef_i`` of
    beliefs ``L`` (A, K) where they lie below it, then normalise again (``logsumexp(u) = 0``);
    ``b`` (K,) is scratch. NaN entries are left alone. Returns the number of goods lifted."""
    A, K = L.shape
    for k in range(K):
        b[k] = -np.inf
    for i in range(A):
        ci = coef[i]
        if ci == -np.inf:
            continue
        _max_into(b, L[i], ci)
    lifted = 0
    for k in range(K):
        if u[k] < b[k]:
            u[k] = b[k]
            lifted += 1
    if lifted:
        normalise_log(u)
    return lifted


@njit(cache=True, error_model="numpy", parallel=True)
def lift_starts(L, kind, inv_eta, W, U):
    """:func:`lift_start` for every item of ``L`` (n, A, K) and warm starts ``U`` (n, K), items in
    parallel; without the bound (an exponential agent) to :data:`START_FLOOR` only. An item whose
    start lies above ``max_i coef_i`` everywhere is not read (the bound is below that: ``P <= 1``).
    Measured (session 44, one thread): one pass over the beliefs, 0.45 ns an entry at 100 x 1,024
    (memory-bound), 2-6 % of a warm-started call where the items are read. Returns the goods lifted."""
    coef = bound_coefficients(kind, inv_eta, W)
    n, A, K = L.shape
    counts = np.zeros(n, np.int64)
    if coef.shape[0] != A:  # no bound: only out of the range where a price is zero or subnormal
        for j in prange(n):
            counts[j] = _raise_to(U[j], START_FLOOR)
        return counts.sum()
    cmax = -np.inf  # beliefs are at most 1: the bound is at most max_i coef_i, and a start whose
    for i in range(A):  # log-prices are all above that needs no pass over the item's beliefs
        cmax = max(cmax, coef[i])
    for j in prange(n):
        u = U[j]
        low = np.inf
        for k in range(K):
            low = min(low, u[k])
        if not low >= cmax:
            counts[j] = lift_start(L[j], coef, u, np.empty(K))
    return counts.sum()


@njit(cache=True, error_model="numpy")
def _raise_to(u, lo):
    """``u = max(u, lo)`` entry by entry, normalised again if anything moved; the count moved."""
    moved = 0
    for k in range(u.shape[0]):
        if u[k] < lo:
            u[k] = lo
            moved += 1
    if moved:
        normalise_log(u)
    return moved


BOX_ROUNDS = 2
"""Rounds of :func:`price_box` (each: an upper bound from the lower one, then a lower bound from the upper
one). Measured (session 46, Dirichlet beliefs without a floor, 200 items, random far starts): the median
gap of the upper bound above the equilibrium after 1 / 2 / 4 rounds: 8.9 / 6.6 / 6.6 log-units (eta 2/10/30,
3 agents, 64 goods), 13.9 / 13.9 / 13.9 (eta 30, 2 agents), 4.7 / 1.1 / 1.1 (mix, 43 goods); no bound violated
at the equilibrium in any round."""
ROOT_TOL = 1e-3
""":func:`_order_root` stops once ``f(x) <= ROOT_TOL`` (its upper bound is then within ``ROOT_TOL / g_min`` of
the lower one)."""
ROOT_MAX_ITER = 60


@njit(cache=True, error_model="numpy")
def _order_root(a, g, gmin, upper):
    """Bounds on the root ``x`` of ``f(x) = log sum_i exp(a_i - g_i x) = 0`` (``g_i > 0``; terms ``a_i =
    -inf`` drop out): ``f`` is convex and decreasing with slope in ``[-g_max, -g_min]``, so Newton from
    ``x_0 = max_i a_i / g_i`` (where ``f >= 0``) rises monotonically to the root and every iterate is a lower
    bound; ``x + f(x) / g_min`` is an upper bound. Returns the upper bound if ``upper``, else the lower
    one; ``-inf`` if every term is ``-inf``."""
    A = a.shape[0]
    x = -np.inf
    for i in range(A):
        if a[i] > -np.inf:
            x = max(x, a[i] / g[i])
    if x == -np.inf:
        return x
    f = 0.0
    for it in range(ROOT_MAX_ITER):
        m = -np.inf
        for i in range(A):
            m = max(m, a[i] - g[i] * x)
        s = 0.0
        sg = 0.0
        for i in range(A):
            e = np.exp(a[i] - g[i] * x - m)
            s += e
            sg += g[i] * e
        f = m + np.log(s)
        if f <= ROOT_TOL or it == ROOT_MAX_ITER - 1:
            break
        x += f * s / sg  # x - f / f', f' = -sum_i g_i p_i
    return x + max(f, 0.0) / gmin if upper else x


@njit(cache=True, error_model="numpy")
def _weighted_lse(GL, g, x, i):
    """``log sum_k exp(GL_ik + (1 - g_i) x_k)``."""
    K = GL.shape[1]
    m = -np.inf
    for k in range(K):
        m = max(m, GL[i, k] + (1.0 - g[i]) * x[k])
    if m == -np.inf:
        return m
    s = 0.0
    for k in range(K):
        s += np.exp(GL[i, k] + (1.0 - g[i]) * x[k] - m)
    return m + np.log(s)


@njit(cache=True, error_model="numpy")
def price_box(GL, g, W, lo, hi):
    """Lower and upper bounds ``lo, hi`` (K,) on the normalised log-prices of an isoelastic/log market's
    equilibrium, from ``GL = g_i log P_ik`` (A, K; ``log`` of the effective beliefs ``P^g``), the orders
    ``g`` (A,; 1 for a log agent) and the wealth ``W`` (A,). Returns False (``lo, hi`` undefined) where the
    bounds do not apply (a negative wealth, none in all, an order that is not positive) or come out not
    finite (a good nobody believes in).

    Derivation (seed 003, Eq. 2.35 and the clearing condition of Table 2.4; as the lower bound of the module
    docstring). Clearing divided by ``Wsum c_k`` reads ``1 = sum_i w_i P_ik^(g_i) c_k^(-g_i) / z_i``
    (``w = W / Wsum``), decreasing in ``c_k``. With ``zeta_i <= z_i <= xi_i``, the equilibrium ``c_k`` lies
    between the roots of the same sum with ``xi_i`` (lower) and ``zeta_i`` (upper) in place of ``z_i``
    (:func:`_order_root`). ``z_i = sum_k P_ik^g c_k^(1-g)`` is bounded through the price bounds themselves
    (``c^(1-g)`` grows with ``c`` for ``g < 1``, falls for ``g > 1``; ``z_i <= 1`` by Hölder for
    ``g <= 1``), starting from the lower bound ``max_i log P_ik + log(w_i) / g_i`` and ``hi = 0``; each of
    :data:`BOX_ROUNDS` rounds tightens ``hi`` then ``lo``. Checked at solved equilibria in
    ``tests/markets/test_start_bound.py``. Cost: about ``2 (2 + n_root) A K`` exponentials a round: only for
    bad warm starts (:func:`box_start`)."""
    A, K = GL.shape
    Wsum = 0.0
    for i in range(A):
        if not W[i] >= 0.0 or not g[i] > 0.0:
            return False
        Wsum += W[i]
    if not Wsum > 0.0:
        return False
    lw = np.empty(A)
    gmin = np.inf
    for i in range(A):
        lw[i] = np.log(W[i] / Wsum) if W[i] > 0.0 else -np.inf
        if W[i] > 0.0:
            gmin = min(gmin, g[i])
    for k in range(K):
        b = -np.inf
        for i in range(A):  # z_i <= 1 (Hölder) for orders up to one only
            if lw[i] > -np.inf and g[i] <= 1.0:
                b = max(b, (lw[i] + GL[i, k]) / g[i])
        lo[k] = b
        hi[k] = 0.0
    a = np.empty(A)
    lz = np.empty(A)
    for _ in range(BOX_ROUNDS):
        for i in range(A):  # z_i >= zeta_i: each c^(1-g) at its least
            lz[i] = _weighted_lse(GL, g, lo if g[i] <= 1.0 else hi, i)
        for k in range(K):
            for i in range(A):
                a[i] = lw[i] + GL[i, k] - lz[i]
            hi[k] = min(hi[k], _order_root(a, g, gmin, True))
        for i in range(A):  # z_i <= xi_i: each c^(1-g) at its largest
            lz[i] = _weighted_lse(GL, g, hi if g[i] <= 1.0 else lo, i)
            if g[i] <= 1.0:
                lz[i] = min(lz[i], 0.0)
        for k in range(K):
            for i in range(A):
                a[i] = lw[i] + GL[i, k] - lz[i]
            lo[k] = max(lo[k], _order_root(a, g, gmin, False))
    for k in range(K):
        if not (np.isfinite(lo[k]) and np.isfinite(hi[k])):
            return False
        if lo[k] > hi[k]:  # met (one agent, log agents only: the box is a point), apart by rounding
            if lo[k] - hi[k] > 1e-9 * (1.0 + abs(lo[k])):
                return False
            hi[k] = lo[k]
    return True


@njit(cache=True, error_model="numpy")
def project_into(u, lo, hi):
    """``u <- clip(u + s, lo, hi)`` with the shift ``s`` that makes ``logsumexp(u) = 0`` (by bisection:
    the sum grows with ``s``, and the box holds a normalised point, the equilibrium). Returns the goods whose
    log-price moved by more than the shift."""
    K = u.shape[0]
    s_lo = np.inf
    s_hi = -np.inf
    for k in range(K):
        s_lo = min(s_lo, lo[k] - u[k])
        s_hi = max(s_hi, hi[k] - u[k])
    for _ in range(100):
        s = 0.5 * (s_lo + s_hi)
        m = -np.inf
        for k in range(K):
            m = max(m, min(max(u[k] + s, lo[k]), hi[k]))
        t = 0.0
        for k in range(K):
            t += np.exp(min(max(u[k] + s, lo[k]), hi[k]) - m)
        if m + np.log(t) > 0.0:
            s_hi = s
        else:
            s_lo = s
        if s_hi - s_lo <= 1e-13 * max(1.0, abs(s)):
            break
    moved = 0
    for k in range(K):
        v = u[k] + s_hi
        w = min(max(v, lo[k]), hi[k])
        if w != v:
            moved += 1
        u[k] = w
    normalise_log(u)  # the bisection's last rounding
    return moved


@njit(cache=True, error_model="numpy")
def box_start(GL, g, W, u):
    """A bad warm start ``u`` kept over the default start (:data:`markets.kernels.equilibrium.START_CHECK`)
    moved into the :func:`price_box` of the market (normalised by a common shift, :func:`project_into`).
    Returns the goods moved, or -1 where the box does not apply (``u`` unchanged)."""
    K = u.shape[0]
    lo = np.empty(K)
    hi = np.empty(K)
    if not price_box(GL, g, W, lo, hi):
        return -1
    return project_into(u, lo, hi)


@njit(cache=True, error_model="numpy")
def box_general(L, kind, inv_eta, W, u):
    """:func:`box_start` on the general path (log beliefs ``L`` (A, K)); -1 with an exponential agent."""
    A, K = L.shape
    for i in range(A):
        if kind[i] != ISO:
            return -1
    GL = np.empty((A, K))
    for i in range(A):
        for k in range(K):
            GL[i, k] = inv_eta[i] * L[i, k]
    return box_start(GL, inv_eta, W, u)


@njit(cache=True, error_model="numpy")
def box_iso(PgT, g, W, u):
    """:func:`box_start` on the one-order path (``PgT = P^g`` goods-major, (K, A))."""
    K, A = PgT.shape
    GL = np.empty((A, K))
    for k in range(K):
        for i in range(A):
            GL[i, k] = np.log(PgT[k, i])
    return box_start(GL, np.full(A, g), W, u)


BOX_GATE = 10.0
"""A warm start goes into the :func:`price_box` (:func:`box_start`) where some good looks more than
``BOX_GATE`` log-units too dear (:func:`overpriced`): Newton moves a log-price at most
:data:`markets.kernels.line_search.MAX_LOG_STEP` (10) a step. The clearing residual ``|T_k - Wsum c_k| / c_k``
of an over-priced good is at most ``Wsum``, so the test of :data:`markets.kernels.equilibrium.START_CHECK`
cannot see it (session 46: random starts on Dirichlet beliefs without a floor, eta 30, 2 agents, 64 goods: 20
of 200 items kept their start and took 39 steps on average, up to 73, where the default start took 2.4)."""


@njit(cache=True, error_model="numpy")
def overpriced(T, u, Wsum, g):
    """Whether some good with spending ``0 < T_k`` is dearer than it clears by more than ``BOX_GATE``
    log-units in a market of one order ``g``: the step that clears it alone is ``log(T_k / (Wsum c_k)) / g``
    (``c = exp(u)``; :mod:`markets.kernels.newton_cg`). A good nobody buys (``T_k = 0``) is not one: its
    price is zero at the equilibrium (:mod:`markets.kernels.zero_beliefs`). One exponential per good until
    the first such good."""
    if not Wsum > 0.0:
        return False
    lw = np.log(Wsum) - BOX_GATE * g
    for k in range(u.shape[0]):
        t = T[k]
        if t > 0.0 and t < np.exp(lw + u[k]):
            return True
    return False


@njit(cache=True, error_model="numpy")
def overpriced_general(T, u, Wsum, kind, inv_eta, W, Q):
    """:func:`overpriced` on the general path (isoelastic and log agents only, else False): a good passes
    the test at the least order first, and then at its buyers' spending-weighted order
    ``sum_i W_i g_i Q_ik / T_k`` (``Q``: the evaluation's effective beliefs)."""
    A = kind.shape[0]
    gmin = np.inf
    for i in range(A):
        if kind[i] != ISO:
            return False
        if W[i] > 0.0:
            gmin = min(gmin, inv_eta[i])
    if not (Wsum > 0.0 and gmin > 0.0):
        return False
    lw = np.log(Wsum)
    for k in range(u.shape[0]):
        t = T[k]
        if t > 0.0 and t < np.exp(lw + u[k] - BOX_GATE * gmin):
            d = 0.0
            for i in range(A):
                d += W[i] * inv_eta[i] * Q[i, k]
            if lw + u[k] - np.log(t) > BOX_GATE * d / t:
                return True
    return False
