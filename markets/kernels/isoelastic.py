"""The lean path of one-order isoelastic markets: every agent isoelastic with the same ``eta``.

With ``g = 1/eta`` (the one exponent) the effective beliefs are ``Q_ik = P_ik^g c_k^(1-g) / z_i``
with ``z_i = sum_k P_ik^g c_k^(1-g)``, so the spending is ``T_k = c_k^(1-g) sum_i (W_i / z_i)
P_ik^g`` and the Hessian's rank-A part is ``diag(c^(1-g)) G diag(c^(1-g))`` with the Gram matrix
``G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T``. Everything reads ``P^g`` once per pass, agent by
agent (row ``i`` gives ``z_i``, its share of ``T`` and its rank-one term of ``G``), and ``Q`` is
never formed. ``P^g`` comes from :func:`iso_powers` (a vectorised exp, computed per item inside the
parallel loop of :func:`markets.kernels.equilibrium.solve_iso_block`). Newton and the seed's fixed
point use the same pass, so the benchmark's comparison stays like for like.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.fastexp import exp_scaled, exp_scaled_inplace, subnormal_exps
from solvers.kernels.fastlog import log_into
from solvers.kernels.simplex_log import normalise_log_with

from .potential import ISO

_FM = {"reassoc", "contract"}


@njit(cache=True, error_model="numpy")
def one_order(kind, inv_eta, W):
    """True if all agents are isoelastic with one eta, and 1/eta not within 0.1 of 1 (the log agent)
    and positive wealth: the case the lean path handles."""
    A = kind.shape[0]
    g = inv_eta[0]
    if abs(1.0 - g) < 0.1:
        return False
    for i in range(A):
        if kind[i] != ISO or inv_eta[i] != g or not (W[i] > 0.0):
            return False
    return True


@njit(cache=True, error_model="numpy")
def iso_powers(L, g, PgT, flat):
    """``PgT[k, i] = P_ik^g`` (goods-major) from log-beliefs ``L`` (A, K); 0 where ``P_ik = 0``.
    The log-beliefs are first transposed into ``PgT`` (:func:`transpose_rows`), then exponentiated
    there in place by the vectorised :func:`solvers.kernels.fastexp.exp_scaled_inplace` (within 2
    ulp of ``exp``; the same numbers bit for bit as exponentiating first). ``flat`` (scratch of
    ``A * K`` floats) is unused since session 47.

    Session 47: the order matters where ``L`` is not in cache (an equilibrium without a floor reads
    each item from the caller's array): the vectorised exp reading straight from memory ran at
    2.9-3.2 ns an element on this machine, against 0.9 in cache and 1.5 for a copy then the exp
    (``benchmarks/results/session47.md``); the transposition is that copy. ns an element, streamed
    items, two runs, before -> after: 3.8-3.9 -> 2.0-2.1 (100 agents x 10 goods), 4.1 -> 2.3-2.4 (10 x
    100), 3.3-3.7 -> 2.0-2.3 (1,000 x 16), 3.9-4.0 -> 2.5-2.7 (100 x 256), 4.0 -> 2.2 (2 x 4,096),
    5.2-5.3 -> 3.2-4.3 (1,000 x 1,024), 3.9-4.4 -> 2.3-2.5 (10 x 4,096)."""
    A, K = L.shape
    transpose_rows(np.ascontiguousarray(L).reshape(A * K), A, K, PgT)
    exp_scaled_inplace(PgT.reshape(A * K), g)


@njit(cache=True, error_model="numpy")
def transpose_rows(flat, A, K, PgT):
    """``PgT[k, i] = flat[i K + k]``: row-major (A, K) values to the goods-major layout
    (:func:`iso_powers`), agent by agent: contiguous reads, writes a stride of ``A`` apart. Session 47,
    ns an element reading a streamed array, against the 32 x 32 tiles used until then: 1.0 against 1.6
    (100 agents x 10 goods), 1.0 / 1.7 (1,000 x 16), 1.2 / 1.9 (100 x 256), 1.0 / 3.0 (10 x 100),
    0.9 / 2.9 (2 x 4,096), 2.2 / 2.9 (1,000 x 1,024), 2.5 / 2.7 (100 x 4,096); slower only at 10 x
    4,096 (1.6 / 1.3)."""
    for i in range(A):
        base = i * K
        for k in range(K):
            PgT[k, i] = flat[base + k]


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True, error_model="numpy")
def iso_start(PgT, g, W, u, x):
    """The power-mean start ``u_k = log(sum_i W_i P_ik^g) / g`` (Eq. 2.32 with ``Z_i = 1``),
    normalised; ``x`` a scratch of K floats (not ``u``). False if it is not finite (a good no agent
    believes in). By the vectorised log and the normalisation of :func:`normalise_log_with` (session
    40: the scalar ``np.log`` and ``np.exp`` per good took ~16 ns a good, 65 us of a one-item start at
    4,096 goods)."""
    K = PgT.shape[0]
    for k in range(K):
        x[k] = _dot(PgT[k], W)
    log_into(x, u)
    ok = True
    for k in range(K):
        u[k] /= g
        ok &= np.isfinite(u[k])
    if not ok:
        return False
    normalise_log_with(u, x)
    return True


@njit(cache=True, fastmath=_FM, error_model="numpy")
def iso_pass(PgT, g, W, Wsum, u, z, s, T, cp, want_phi):
    """One pass over ``PgT = P^g`` (K, A, goods-major: every loop below runs over the agents,
    contiguous and vectorisable) at normalised log-prices ``u`` (one order ``g``).

    Fills ``z`` (A,) (``z_i = sum_k P_ik^g c_k^(1-g)``), ``s = W / z`` (A,), the spending ``T``
    (K,) and ``cp = c^(1-g)``; with ``want_phi`` the potential
    ``Phi = sum_i W_i log z_i / (1-g)`` (A logarithms: the dearest part of a pass, so only the line
    search asks for it). Returns ``(phi, residual)``, ``residual = max_k |T_k - Wsum c_k| / c_k``,
    ``inf`` at a price of zero (session 44: a full Newton step to a log-price of -78,704 had that
    good's ``0 / 0`` dropped from the max, the step was accepted, and the item ended with a NaN
    clearing error; a NaN test in the loop did not survive compilation, the flag does).

    The 2 K exponentials (``c^(1-g)`` and ``c``) go through the vectorised
    :func:`solvers.kernels.fastexp.exp_scaled` (2 ulp); until session 43 they were libm calls, about
    5 ns a good each, which made the seed's fixed point (a pass per iteration) 1.6-2.3x slower at 10
    agents (256-4,096 goods, eta = 10) and 1.2-1.3x at 100 agents x 10 goods, Newton-CG 1.1-1.4x slower
    at 10 agents (session 43, ``benchmarks/results/session43.md``)."""
    K, A = PgT.shape
    dl = 1.0 - g
    exp_scaled(u, dl, cp)  # vectorised (was a libm exp per good, ~5 ns each)
    subnormal_exps(u, dl, cp)
    for i in range(A):
        z[i] = 0.0
    for k in range(K):
        ck = cp[k]
        row = PgT[k]
        for i in range(A):
            z[i] += ck * row[i]
    for i in range(A):
        s[i] = W[i] / z[i]
    phi = 0.0
    if want_phi:
        for i in range(A):
            phi += W[i] * np.log(z[i])
        phi /= dl
    exp_scaled(u, 1.0, T)  # the prices, in T until each good's spending replaces its price
    subnormal_exps(u, 1.0, T)
    res = 0.0
    zero = False
    for k in range(K):
        ck = T[k]
        t = cp[k] * _dot(PgT[k], s)
        T[k] = t
        e = abs(t - Wsum * ck) / ck
        zero |= not ck > 0.0
        if e > res:
            res = e
    if zero:  # a price of zero (0 / 0 would drop the good from the max): not a point to accept
        return phi, np.inf
    return phi, res


@njit(cache=True, fastmath=_FM, error_model="numpy")
def iso_gram(PgT, z, s, G):
    """``G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T`` (K, K) from the last :func:`iso_pass` (its
    ``z`` and ``s``; both are overwritten): K(K+1)/2 dot products over the agents, four at a time
    (one load of the scaled row serves four). About 1.6 passes' worth of work for K = 10, so
    Newton forms it only when another step is needed."""
    K, A = PgT.shape
    for i in range(A):
        s[i] /= z[i]
    for k in range(K):
        row = PgT[k]
        for i in range(A):
            z[i] = s[i] * row[i]
        l = 0
        while l + 3 <= k:
            r0 = PgT[l]
            r1 = PgT[l + 1]
            r2 = PgT[l + 2]
            r3 = PgT[l + 3]
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            for i in range(A):
                zi = z[i]
                a0 += zi * r0[i]
                a1 += zi * r1[i]
                a2 += zi * r2[i]
                a3 += zi * r3[i]
            G[k, l] = a0
            G[l, k] = a0
            G[k, l + 1] = a1
            G[l + 1, k] = a1
            G[k, l + 2] = a2
            G[l + 2, k] = a2
            G[k, l + 3] = a3
            G[l + 3, k] = a3
            l += 4
        while l <= k:
            v = _dot(z, PgT[l])
            G[k, l] = v
            G[l, k] = v
            l += 1


@njit(cache=True, error_model="numpy")
def iso_S(g, T, cp, G, H):
    """``S = diag(c) Hess_c(Phi) diag(c) = -g diag(T) - (1-g) diag(cp) G diag(cp)``."""
    K = T.shape[0]
    dl = 1.0 - g
    for k in range(K):
        for l in range(K):
            H[k, l] = -dl * cp[k] * cp[l] * G[k, l]
        H[k, k] -= g * T[k]


@njit(cache=True, error_model="numpy")
def iso_workspace_size(K, A, dense=True, scratch=0):
    """Floats of one workspace: the dense direction's three K x K blocks, or (``dense`` False:
    Newton-CG and the fixed points) ``scratch`` floats instead (the caller's: CG's and Anderson's)."""
    if dense:
        return 2 * A + 7 * K + 3 * K * K
    return 2 * A + 7 * K + scratch


@njit(cache=True, error_model="numpy")
def iso_views(ws, K, A, dense=True):
    """Views of one workspace: ``z, s`` (A,), ``T, cp`` (K,), ``G, H, Lc`` (K, K; (0, 0) unless
    ``dense``), ``tmp, d, un`` (K,), ``c`` (2K,); the rest (Newton-CG's scratch) is ``ws[iso_used:]``
    with ``iso_used = 2A + 7K + 3 K^2`` (dense) or ``2A + 7K``."""
    nK = K if dense else 0
    z = ws[:A]
    s = ws[A : 2 * A]
    o = 2 * A
    T = ws[o : o + K]
    cp = ws[o + K : o + 2 * K]
    o += 2 * K
    G = ws[o : o + nK * nK].reshape((nK, nK))
    H = ws[o + nK * nK : o + 2 * nK * nK].reshape((nK, nK))
    Lc = ws[o + 2 * nK * nK : o + 3 * nK * nK].reshape((nK, nK))
    o += 3 * nK * nK
    tmp = ws[o : o + K]
    d = ws[o + K : o + 2 * K]
    un = ws[o + 2 * K : o + 3 * K]
    c = ws[o + 3 * K : o + 5 * K]
    return z, s, T, cp, G, H, Lc, tmp, d, un, c, ws[o + 5 * K :]
