"""Compiled per-item kernels: market spending, the equilibrium potential, its Hessian, and the solvers.

Everything works on one item at a time (beliefs ``L`` of shape ``(A, K)`` in log space) and the
drivers loop over items in parallel (``prange``). Agent ``i`` is described by ``kind[i]``
(``0`` exponential, ``1`` isoelastic; logarithmic is isoelastic with ``gamma == 1``), ``gam[i]``
(``1/eta_i``) and its wealth ``W[i]``.

Prices are parametrised by normalised log-prices ``u`` (``c = exp(u)``, ``logsumexp(u) = 0``). The
equilibrium is the unique maximiser over the simplex of the concave potential (derived in
``docs/markets.md``; seed 000 Eq. 2.34-2.36)

    Phi(c) = - sum_{iso i} W_i D_{gamma_i}(P_i || c)  -  sum_{exp i} KL(c || P_i)

whose gradient in ``u`` is the excess spending ``sum_i r_i(c) - (sum_i W_i) c``. ``newton`` runs
Newton's method in ``u`` with an exact Hessian, a Cholesky solve after a diagonal scaling, a
mirror-gradient fall-back when the Hessian is not negative definite, and an Armijo line search on
``Phi`` (rounding-aware); ``fixed_point`` is the seed's iteration ``c <- sum_i r_i(c)`` (the
alternating minimisation of ``KL(c || sum_i r_i)``). Markets of isoelastic agents with one order
``gamma`` take a lean path in both methods (``_iso_*`` below: one pass over ``P^gamma`` per
iteration, no effective beliefs formed, the Hessian as a Gram matrix built in the same pass;
:func:`solve_iso_block` computes ``P^gamma`` per item with a vectorised exp); everything else
uses the general kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from solvers.kernels.cholesky import cho_solve
from solvers.kernels.fastexp import exp_scaled

EXP = 0
ISO = 1


@njit(cache=True, error_model="numpy")
def _powers(L, kind, gam, Pg):
    """Pg[i, k] = P_ik^{gamma_i} for isoelastic agents (0 where P_ik = 0)."""
    A, K = L.shape
    for i in range(A):
        if kind[i] == ISO:
            g = gam[i]
            for k in range(K):
                Pg[i, k] = np.exp(g * L[i, k])


@njit(cache=True, error_model="numpy")
def _evaluate(L, kind, gam, W, Wsum, u, Pg, Q, B, T, cp):
    """Spending, potential and residual at normalised log-prices ``u``.

    Fills ``Q`` (effective beliefs of isoelastic agents, Eq. 2.35), ``B`` (``log(P/c) - S_i`` of
    exponential agents), ``T`` (total spending per good). Returns ``(phi, residual, n_negative)``
    with ``residual = max_k |T_k - Wsum c_k| / c_k``.
    """
    A, K = L.shape
    for k in range(K):
        T[k] = 0.0
    phi = 0.0
    prev = -1.0
    nneg = 0
    for i in range(A):
        w = W[i]
        if kind[i] == ISO:
            g = gam[i]
            if g == 1.0:
                for k in range(K):
                    p = Pg[i, k]
                    Q[i, k] = p
                    T[k] += w * p
                    if p > 0.0:
                        phi += w * p * u[k]
            else:
                if g != prev:
                    for k in range(K):
                        cp[k] = np.exp((1.0 - g) * u[k])
                    prev = g
                z = 0.0
                for k in range(K):
                    v = Pg[i, k] * cp[k]
                    Q[i, k] = v
                    z += v
                for k in range(K):
                    Q[i, k] /= z
                    T[k] += w * Q[i, k]
                dl = 1.0 - g
                if abs(dl) < 0.1:
                    # near the log agent, 1/(1-g) amplifies rounding: log z = log1p(sum P expm1(dl a))
                    acc = 0.0
                    for k in range(K):
                        if L[i, k] > -np.inf:
                            acc += np.exp(L[i, k]) * np.expm1(dl * (u[k] - L[i, k]))
                    phi += w * np.log1p(acc) / dl
                else:
                    phi += w / dl * np.log(z)
        else:
            s = 0.0
            for k in range(K):
                a = L[i, k] - u[k]
                B[i, k] = a
                s += np.exp(u[k]) * a
            phi += s
            for k in range(K):
                B[i, k] -= s
                r = np.exp(u[k]) * (w + B[i, k])
                if r < 0.0:
                    nneg += 1
                T[k] += r
    res = 0.0
    for k in range(K):
        ck = np.exp(u[k])
        e = abs(T[k] - Wsum * ck) / ck
        if e > res:
            res = e
    return phi, res, nneg


@njit(cache=True, error_model="numpy")
def _newton_direction(kind, gam, W, u, Q, B, T, Wsum, d, H, Lc, tmp):
    """Newton direction for maximising Phi in ``u``, with the Hessian of Phi in the price
    coordinates ``c`` (negative definite everywhere: Phi is strictly concave in c) pulled back by
    the Jacobian of ``c = softmax(u)``. The dropped curvature term is proportional to the gradient,
    so it vanishes at the equilibrium and the local rate stays quadratic; away from it the matrix
    stays positive definite, so the direction is always an ascent direction.

    With ``S = diag(c) Hess_c(Phi) diag(c)``:
    ``S = -sum_iso W_i [gamma_i diag(Q_i) + (1-gamma_i) Q_i Q_i^T] - sum_exp diag(c)`` and the
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
            g = gam[i]
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
    return _direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, np.empty(2 * K))


@njit(cache=True, error_model="numpy")
def _normalise(u):
    m = u.max()
    s = 0.0
    for k in range(u.shape[0]):
        s += np.exp(u[k] - m)
    lse = m + np.log(s)
    for k in range(u.shape[0]):
        u[k] -= lse


@njit(cache=True, error_model="numpy")
def _init_prices(L, kind, gam, W, Pg, u):
    """Starting prices. Isoelastic/log markets: the power mean ``(sum_i W_i P_i^g)^{1/g}`` with the
    wealth-averaged order ``g`` (Eq. 2.32 with ``Z_i = 1``); with exponential agents: the mixture of
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
            gbar += abs(W[i]) * gam[i]
            wtot += abs(W[i])
            if gam[i] != gam[0]:
                same = False
    if not has_exp and same and wtot > 0.0:
        # one order for all: reuse P^gamma (no transcendental per entry)
        g = gam[0]
        for k in range(K):
            u[k] = 0.0
        for i in range(A):
            wi = abs(W[i])
            for k in range(K):
                u[k] += wi * Pg[i, k]
        ok = True
        for k in range(K):
            u[k] = np.log(u[k]) / g
            if not np.isfinite(u[k]):
                ok = False
        if ok:
            _normalise(u)
            return
    if not has_exp and wtot > 0.0:
        g = gbar / wtot
        if g > 1.0:
            g = 1.0
        for k in range(K):
            m = -np.inf
            for i in range(A):
                v = np.log(abs(W[i]) / wtot) + g * L[i, k]
                if v > m:
                    m = v
            s = 0.0
            for i in range(A):
                s += np.exp(np.log(abs(W[i]) / wtot) + g * L[i, k] - m)
            u[k] = (m + np.log(s)) / g
        _normalise(u)
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
    _normalise(u)


# --- one-order isoelastic markets: lean path ------------------------------------------------
# When every agent is isoelastic with the same gamma (gamma not within 0.1 of the log agent), the
# effective beliefs are Q_ik = P_ik^g c_k^(1-g) / z_i with z_i = sum_k P_ik^g c_k^(1-g), so the
# spending is T_k = c_k^(1-g) sum_i (W_i / z_i) P_ik^g and the Hessian's rank-A part is
# diag(c^(1-g)) G diag(c^(1-g)) with the Gram matrix G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T.
# Everything reads P^g once per pass, agent by agent (row i of ``Pg`` gives z_i, its share of T
# and its rank-one term of G), and Q is never formed. ``Pg`` comes from :func:`_iso_powers`
# (a vectorised exp, computed per item inside the parallel loop of :func:`solve_iso_block`). Newton and the seed's fixed point use the same pass, so the comparison
# stays like for like.

_FM = {"reassoc", "contract"}


@njit(cache=True, error_model="numpy")
def _one_order(kind, gam, W):
    """True if all agents are isoelastic with one order gamma (not within 0.1 of the log agent)
    and positive wealth: the case the lean path handles."""
    A = kind.shape[0]
    g = gam[0]
    if abs(1.0 - g) < 0.1:
        return False
    for i in range(A):
        if kind[i] != ISO or gam[i] != g or not (W[i] > 0.0):
            return False
    return True


@njit(cache=True, error_model="numpy")
def _iso_powers(L, g, PgT, flat, buf):
    """``PgT[k, i] = P_ik^g`` (goods-major) from log-beliefs ``L`` (A, K); 0 where ``P_ik = 0``.
    ``flat`` and ``buf`` are scratch of length ``A * K``. The powers come from the vectorised
    :func:`solvers.kernels.fastexp.exp_scaled` (within 1.5 ulp of ``exp``) over the item's
    row-major beliefs, then are transposed (about 1.4 µs for A = 100, K = 10)."""
    A, K = L.shape
    exp_scaled(np.ascontiguousarray(L).reshape(A * K), g, flat, buf)
    for k in range(K):
        row = PgT[k]
        for i in range(A):
            row[i] = flat[i * K + k]


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True, error_model="numpy")
def _iso_start(PgT, g, W, u):
    """The power-mean start ``u_k = log(sum_i W_i P_ik^g) / g`` (Eq. 2.32 with ``Z_i = 1``),
    normalised. False if it is not finite (a good no agent believes in)."""
    K = PgT.shape[0]
    for k in range(K):
        u[k] = np.log(_dot(PgT[k], W)) / g
        if not np.isfinite(u[k]):
            return False
    _normalise(u)
    return True


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _iso_pass(PgT, g, W, Wsum, u, z, s, T, cp, want_phi):
    """One pass over ``PgT = P^g`` (K, A, goods-major: every loop below runs over the agents,
    contiguous and vectorisable) at normalised log-prices ``u`` (one order ``g``).

    Fills ``z`` (A,) (``z_i = sum_k P_ik^g c_k^(1-g)``), ``s = W / z`` (A,), the spending ``T``
    (K,) and ``cp = c^(1-g)``; with ``want_phi`` the potential
    ``Phi = sum_i W_i log z_i / (1-g)`` (A logarithms: the dearest part of a pass, so only the line
    search asks for it). Returns ``(phi, residual)``, ``residual = max_k |T_k - Wsum c_k| / c_k``."""
    K, A = PgT.shape
    dl = 1.0 - g
    for k in range(K):
        cp[k] = np.exp(dl * u[k])
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
    res = 0.0
    for k in range(K):
        T[k] = cp[k] * _dot(PgT[k], s)
        ck = np.exp(u[k])
        e = abs(T[k] - Wsum * ck) / ck
        if e > res:
            res = e
    return phi, res


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _iso_gram(PgT, z, s, G):
    """``G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T`` (K, K) from the last :func:`_iso_pass` (its
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
def _iso_S(g, T, cp, G, H):
    """``S = diag(c) Hess_c(Phi) diag(c) = -g diag(T) - (1-g) diag(cp) G diag(cp)``."""
    K = T.shape[0]
    dl = 1.0 - g
    for k in range(K):
        for l in range(K):
            H[k, l] = -dl * cp[k] * cp[l] * G[k, l]
        H[k, k] -= g * T[k]


@njit(cache=True, error_model="numpy")
def _direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c):
    """Newton direction from the full symmetric ``S`` in ``H`` (see :func:`_newton_direction`);
    ``c`` (2K,) is scratch: the prices and their reciprocal square roots."""
    K = u.shape[0]
    for k in range(K):
        ck = np.exp(u[k])
        c[k] = ck
        c[K + k] = 1.0 / np.sqrt(ck)
    sig = 0.0
    for k in range(K):
        v = 0.0
        for l in range(K):
            v += H[k, l]
        tmp[k] = v
        sig += v
    for k in range(K):
        ck = c[k]
        rk = c[K + k]
        tk = tmp[k]
        for l in range(k + 1):
            cl = c[l]
            m = -H[k, l] + ck * tmp[l] + tk * cl + (reg - sig) * ck * cl
            H[k, l] = m * rk * c[K + l]
    for j in range(K):
        s = H[j, j]
        for p in range(j):
            s -= Lc[j, p] * Lc[j, p]
        if not (s > 1e-14 * abs(H[j, j])) or not (s > 0.0):
            return False
        ljj = np.sqrt(s)
        Lc[j, j] = ljj
        inv = 1.0 / ljj
        for i2 in range(j + 1, K):
            v = H[i2, j]
            for p in range(j):
                v -= Lc[i2, p] * Lc[j, p]
            Lc[i2, j] = v * inv
    _chord_direction(u, T, Wsum, d, Lc, c)  # the two triangular solves with the new factor
    return True


# --- pieces of the safeguarded line search shared by both Newton drivers ----------------------


@njit(cache=True, error_model="numpy")
def _mirror_direction(u, T, Wsum, d):
    """The mirror-gradient fall-back ``d_k = (T_k - Wsum c_k) / c_k``: always an ascent
    direction of Phi (``grad . d = sum_k (T_k - Wsum c_k)^2 / c_k``)."""
    for k in range(u.shape[0]):
        ck = np.exp(u[k])
        d[k] = (T[k] - Wsum * ck) / ck


@njit(cache=True, error_model="numpy")
def _slope(u, T, Wsum, d):
    """Directional derivative of Phi in ``u`` along ``d`` (the gradient is the excess spending)."""
    gd = 0.0
    for k in range(u.shape[0]):
        gd += (T[k] - Wsum * np.exp(u[k])) * d[k]
    return gd


MAX_LOG_STEP = 10.0
"""Largest change of any log-price in one line-search trial. In ``u`` the potential is not concave:
far from the answer a full Newton (or mirror) step can overshoot by hundreds into a region where a
good's price is negligible, the Armijo test still passes, and Newton then climbs back about one unit
per iteration (found by hypothesis: an online-training step with a nearly bankrupt gamma = 2 agent,
warm-started at the previous epoch's prices, stepped a log-price from -8.9 to -375 and did not
converge in 100 iterations). Scaling the direction keeps it an ascent direction, and near the
answer Newton steps are far shorter, so the local quadratic rate is unchanged."""


@njit(cache=True, error_model="numpy")
def _first_step(d):
    """The line search's first trial step: 1, or less so that no log-price moves by more than
    :data:`MAX_LOG_STEP`."""
    m = 0.0
    for k in range(d.shape[0]):
        a = abs(d[k])
        if a > m:
            m = a
    return 1.0 if m <= MAX_LOG_STEP else MAX_LOG_STEP / m


@njit(cache=True, error_model="numpy")
def _trial(u, d, t, un):
    for k in range(u.shape[0]):
        un[k] = u[k] + t * d[k]
    _normalise(un)


@njit(cache=True, error_model="numpy")
def _ascent_ok(phin, phi, resn, res, t, gd):
    """Armijo test on Phi, rounding-aware: a step whose gain is within rounding of zero is
    accepted if it lowers the clearing residual (Phi is flat to working precision near the top)."""
    gain = phin - phi
    noise = 1e-13 * (1.0 + abs(phi))
    return gain >= 1e-4 * t * gd or (abs(gain) <= noise and resn < res)


@njit(cache=True, error_model="numpy")
def _eval_at(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, gam, Pg, Q, B):
    """Potential, residual and negative-position count at ``u`` by the lean one-order pass
    (``lean``: reads ``PgT, g, z, s``) or by the general :func:`_evaluate` (reads ``L, kind, gam,
    Pg, Q, B``); both fill the spending ``T``."""
    if lean:
        phi, res = _iso_pass(PgT, g, W, Wsum, u, z, s, T, cp, True)
        return phi, res, 0
    return _evaluate(L, kind, gam, W, Wsum, u, Pg, Q, B, T, cp)


@njit(cache=True, error_model="numpy")
def _safeguarded_step(ok, u, d, un, phi, res, lean, W, Wsum, T, cp, PgT, g, z, s, L, kind, gam, Pg, Q, B):
    """One iteration of the safeguarded phase shared by both Newton drivers: the Newton direction
    ``d`` if ``ok`` (else, or if its line search fails, the mirror-gradient direction), Armijo
    backtracking on Phi from the capped first trial :func:`_first_step`. Returns
    ``(accepted, phi, res, n_negative)``: at the trial point ``un`` if accepted (the caller moves
    ``u`` there), else at ``u`` (buffers restored; no progress is possible at working precision)."""
    nneg = 0
    for attempt in range(2):
        if not ok or attempt == 1:
            _mirror_direction(u, T, Wsum, d)
        gd = _slope(u, T, Wsum, d)
        if not (gd > 0.0):
            if attempt == 0:
                continue
            break
        t = _first_step(d)
        for ls in range(60):
            _trial(u, d, t, un)
            phin, resn, nn = _eval_at(lean, un, W, Wsum, T, cp, PgT, g, z, s, L, kind, gam, Pg, Q, B)
            if _ascent_ok(phin, phi, resn, res, t, gd):
                return True, phin, resn, nn
            t *= 0.5
        # restore the buffers at u (the line search overwrote them) before the fall-back
        phi, res, nneg = _eval_at(lean, u, W, Wsum, T, cp, PgT, g, z, s, L, kind, gam, Pg, Q, B)
        if not ok:
            break
    return False, phi, res, nneg


CHORD_RATIO = 1e-2
"""Residual reduction of the last step below which Newton's next step reuses its factorisation."""


@njit(cache=True, error_model="numpy")
def _chord_direction(u, T, Wsum, d, Lc, c):
    """Newton direction with the factor ``Lc`` and the scaling ``c[K:]`` (reciprocal square roots
    of the prices) left by the last :func:`_direction_from_S`, and the gradient at ``u``."""
    K = u.shape[0]
    for k in range(K):
        d[k] = (T[k] - Wsum * np.exp(u[k])) * c[K + k]
    cho_solve(Lc, d, d)
    for k in range(K):
        d[k] *= c[K + k]


@njit(cache=True, error_model="numpy")
def iso_workspace_size(K, A):
    return 2 * A + 7 * K + 3 * K * K


@njit(cache=True, error_model="numpy")
def _iso_views(ws, K, A):
    """Views of one workspace: ``z, s`` (A,), ``T, cp`` (K,), ``G, H, Lc`` (K, K), ``tmp, d, un``
    (K,), ``c`` (2K,)."""
    z = ws[:A]
    s = ws[A : 2 * A]
    o = 2 * A
    T = ws[o : o + K]
    cp = ws[o + K : o + 2 * K]
    o += 2 * K
    G = ws[o : o + K * K].reshape((K, K))
    H = ws[o + K * K : o + 2 * K * K].reshape((K, K))
    Lc = ws[o + 2 * K * K : o + 3 * K * K].reshape((K, K))
    o += 3 * K * K
    tmp = ws[o : o + K]
    d = ws[o + K : o + 2 * K]
    un = ws[o + 2 * K : o + 3 * K]
    c = ws[o + 3 * K : o + 5 * K]
    return z, s, T, cp, G, H, Lc, tmp, d, un, c


@njit(cache=True, error_model="numpy")
def _iso_newton_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws):
    """Safeguarded Newton on the lean path, from ``Pg = P^g`` (K, A, goods-major). Returns
    ``(ok, n_iter, converged, residual)``; ``ok`` False means: use the general path. ``ws`` is
    scratch of at least :func:`iso_workspace_size` floats (no allocation per item).

    Two phases. (1) While full Newton steps at least halve the clearing residual they are taken
    without the potential: an iteration is then one pass over the agents plus, if the residual is
    still above ``tol``, the Gram matrix and factorisation for the next step. Once a step has cut
    the residual by more than ``1/CHORD_RATIO`` (the quadratic regime), the next step reuses the
    last factorisation with the new gradient (a chord step: one pass and two triangular solves,
    no Gram matrix); a chord step that does not halve the residual is discarded for a fresh
    Newton step. (2) The first time a full Newton step fails that test the method switches for
    good to :func:`_safeguarded_step` (Armijo on Phi with the mirror-gradient fall-back, shared
    with :func:`item_newton`), which converges from any start. Phase 1 cannot cycle: its residual
    falls geometrically, so it either reaches ``tol`` or hands over to phase 2.
    """
    K, A = Pg.shape
    z, s, T, cp, G, H, Lc, tmp, d, un, c = _iso_views(ws, K, A)
    if not warm and not _iso_start(Pg, g, W, u):
        return False, 0, False, np.inf
    phi, res = _iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
    if not np.isfinite(res):
        return False, 0, False, np.inf
    reg = abs(Wsum)
    if reg <= 0.0:
        reg = 1.0
    fast = True
    ratio = 1.0
    it = 0
    while res > tol and it < max_iter:
        it += 1
        chord = fast and ratio < CHORD_RATIO
        if chord:
            ok = True
            _chord_direction(u, T, Wsum, d, Lc, c)
        else:
            _iso_gram(Pg, z, s, G)
            _iso_S(g, T, cp, G, H)
            ok = _direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c)
        if fast:
            if ok:
                _trial(u, d, 1.0, un)
                phin, resn = _iso_pass(Pg, g, W, Wsum, un, z, s, T, cp, False)
                if resn <= 0.5 * res:
                    for k in range(K):
                        u[k] = un[k]
                    ratio = resn / res
                    res = resn
                    continue
            if chord:  # the old factor is not good enough here: a fresh Newton step from u
                ratio = 1.0
                phi, res = _iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
                continue
            fast = False
            phi, res = _iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, True)
            if not np.isfinite(phi):
                return False, it, False, np.inf
        no2 = np.empty((0, 0))  # the general evaluator's arguments, unused here
        accepted, phin, resn, _ = _safeguarded_step(
            ok, u, d, un, phi, res, True, W, Wsum, T, cp, Pg, g, z, s, no2, np.empty(0, np.int64),
            np.empty(0), no2, no2, no2,
        )
        if not accepted:
            res = resn
            break
        for k in range(K):
            u[k] = un[k]
        phi, res = phin, resn
    return True, it, res <= tol, res


@njit(cache=True, error_model="numpy")
def _iso_fixed_point_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, ws):
    """The seed's fixed point ``c <- sum_i r_i(c) / sum_i W_i`` from ``Pg = P^g`` (K, A; same start and
    same pass as :func:`_iso_newton_pg`, without potential or Gram matrix). Returns
    ``(ok, n_iter, converged, residual)``."""
    K, A = Pg.shape
    z, s, T, cp, G, H, Lc, tmp, d, un, c = _iso_views(ws, K, A)
    if not warm and not _iso_start(Pg, g, W, u):
        return False, 0, False, np.inf
    phi, res = _iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
    if not np.isfinite(res):
        return False, 0, False, np.inf
    it = 0
    while res > tol and it < max_iter:
        it += 1
        for k in range(K):
            u[k] = np.log(T[k] / Wsum)
        _normalise(u)
        phi, res = _iso_pass(Pg, g, W, Wsum, u, z, s, T, cp, False)
    return True, it, res <= tol, res


@njit(cache=True, error_model="numpy")
def _iso_newton(L, g, W, Wsum, tol, max_iter, u, warm):
    A, K = L.shape
    Pg = np.empty((K, A))
    _iso_powers(L, g, Pg, np.empty(A * K), np.empty(A * K))
    return _iso_newton_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, np.empty(iso_workspace_size(K, A)))


@njit(cache=True, error_model="numpy")
def _iso_fixed_point(L, g, W, Wsum, tol, max_iter, u, warm):
    A, K = L.shape
    Pg = np.empty((K, A))
    _iso_powers(L, g, Pg, np.empty(A * K), np.empty(A * K))
    return _iso_fixed_point_pg(Pg, g, W, Wsum, tol, max_iter, u, warm, np.empty(iso_workspace_size(K, A)))


@njit(cache=True, parallel=True, nogil=True, error_model="numpy")
def solve_iso_block(L, g, W, tol, max_iter, method, U, warm, ok, iters, conv, res, y, pay):
    """Equilibria of the items of a one-order isoelastic market from their log-beliefs ``L``
    (n, A, K). Each item's ``P^g`` is computed inside the parallel loop by :func:`_iso_powers`
    (vectorised exp, in cache, transposed to the goods-major layout of the passes), the same for
    both methods: ``method`` 0 = Newton, 1 = fixed point. ``ok[j]`` False leaves ``U[j]``
    untouched: solve that item on the general path (:func:`solve_items`).

    If ``y`` is not empty (batch market training, Algorithm 2.4), also each agent's payout when
    label ``y[j]`` occurs: ``pay[j, i] = r_{i,y} / sum_l r_{l,y}`` with
    ``r_{i,y} = W_i P_iy^g c_y^(1-g) / z_i`` (one more pass at the answer; as in
    :func:`batch_payouts`, the realised price makes total wealth conserved to rounding)."""
    n, A, K = L.shape
    Wsum = 0.0
    for i in range(A):
        Wsum += W[i]
    want_pay = y.shape[0] > 0
    m = min(n, 64)  # chunks: buffers are allocated once per chunk, not per item
    for c in prange(m):
        ws = np.empty(iso_workspace_size(K, A))
        PgT = np.empty((K, A))
        flat = np.empty(A * K)
        buf = np.empty(A * K)
        u = np.empty(K)
        for j in range(c * n // m, (c + 1) * n // m):
            _iso_powers(L[j], g, PgT, flat, buf)
            u[:] = U[j]
            if method == 0:
                a, b, cv, d = _iso_newton_pg(PgT, g, W, Wsum, tol, max_iter, u, warm, ws)
            else:
                a, b, cv, d = _iso_fixed_point_pg(PgT, g, W, Wsum, tol, max_iter, u, warm, ws)
            ok[j] = a
            if a:
                U[j] = u
                iters[j] = b
                conv[j] = cv
                res[j] = d
                if want_pay:
                    z, sw, T, cp, G, H, Lc, tmp, dd, un, cc = _iso_views(ws, K, A)
                    _iso_pass(PgT, g, W, Wsum, u, z, sw, T, cp, False)
                    row = PgT[y[j]]
                    tot = 0.0
                    for i in range(A):
                        v = sw[i] * row[i]
                        pay[j, i] = v
                        tot += v
                    for i in range(A):
                        pay[j, i] /= tot


@njit(cache=True, error_model="numpy")
def item_newton(L, kind, gam, W, tol, max_iter, u, warm):
    """Equilibrium of one item by safeguarded Newton. ``u`` (K,) is the start if ``warm`` and the
    answer on return. Returns ``(n_iter, converged, residual, n_negative)``."""
    A, K = L.shape
    Wsum = 0.0
    for i in range(A):
        Wsum += W[i]
    if _one_order(kind, gam, W):
        u0 = u.copy()
        ok, it, conv, res = _iso_newton(L, gam[0], W, Wsum, tol, max_iter, u, warm)
        if ok:
            return it, conv, res, 0
        u[:] = u0
    Pg = np.zeros((A, K))
    Q = np.zeros((A, K))
    B = np.zeros((A, K))
    T = np.zeros(K)
    cp = np.zeros(K)
    d = np.zeros(K)
    H = np.zeros((K, K))
    Lc = np.zeros((K, K))
    tmp = np.zeros(K)
    un = np.zeros(K)
    no1 = np.empty(0)  # the lean evaluator's arguments, unused here
    no2 = np.empty((0, 0))
    _powers(L, kind, gam, Pg)
    if not warm:
        _init_prices(L, kind, gam, W, Pg, u)
    phi, res, nneg = _evaluate(L, kind, gam, W, Wsum, u, Pg, Q, B, T, cp)
    it = 0
    while res > tol and it < max_iter:
        it += 1
        ok = _newton_direction(kind, gam, W, u, Q, B, T, Wsum, d, H, Lc, tmp)
        accepted, phin, resn, nnegn = _safeguarded_step(
            ok, u, d, un, phi, res, False, W, Wsum, T, cp, no2, 0.0, no1, no1, L, kind, gam, Pg, Q, B,
        )
        if not accepted:
            phi, res, nneg = phin, resn, nnegn
            break
        for k in range(K):
            u[k] = un[k]
        phi, res, nneg = phin, resn, nnegn
    return it, res <= tol, res, nneg


@njit(cache=True, error_model="numpy")
def item_fixed_point(L, kind, gam, W, tol, max_iter, u, warm):
    """The seed's iteration (Storkey et al. 2012): ``c <- sum_i r_i(c) / sum_i W_i``.

    For fixed positions ``r`` the minimiser of ``KL(c || sum_i r_i)`` over the simplex is the
    normalised total spending, so this is alternating minimisation of that KL. Isoelastic and
    logarithmic agents only. Returns ``(n_iter, converged, residual, n_negative)``.
    """
    A, K = L.shape
    Wsum = 0.0
    for i in range(A):
        Wsum += W[i]
    if _one_order(kind, gam, W):
        u0 = u.copy()
        ok, it, conv, res = _iso_fixed_point(L, gam[0], W, Wsum, tol, max_iter, u, warm)
        if ok:
            return it, conv, res, 0
        u[:] = u0
    Pg = np.zeros((A, K))
    Q = np.zeros((A, K))
    B = np.zeros((A, K))
    T = np.zeros(K)
    cp = np.zeros(K)
    _powers(L, kind, gam, Pg)
    if not warm:
        _init_prices(L, kind, gam, W, Pg, u)
    phi, res, nneg = _evaluate(L, kind, gam, W, Wsum, u, Pg, Q, B, T, cp)
    it = 0
    while res > tol and it < max_iter:
        it += 1
        for k in range(K):
            u[k] = np.log(T[k] / Wsum)
        _normalise(u)
        phi, res, nneg = _evaluate(L, kind, gam, W, Wsum, u, Pg, Q, B, T, cp)
    return it, res <= tol, res, nneg


@njit(cache=True, error_model="numpy")
def item_spending(L, kind, gam, W, u, r):
    """Investments ``r[i, k]`` of every agent at normalised log-prices ``u`` (Table 2.4 / Eq. 2.31)."""
    A, K = L.shape
    for i in range(A):
        if kind[i] == ISO:
            g = gam[i]
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


@njit(cache=True, parallel=True, error_model="numpy")
def solve_items(L, kind, gam, W, tol, max_iter, method, U, warm):
    """Equilibria of all items. ``L`` (n, A, K); ``W`` (A,); ``U`` (n, K) start/answer.
    ``method`` 0 = Newton, 1 = fixed point. Returns per-item (n_iter, converged, residual, n_negative)."""
    n = L.shape[0]
    iters = np.zeros(n, np.int64)
    conv = np.zeros(n, np.bool_)
    res = np.zeros(n)
    nneg = np.zeros(n, np.int64)
    for j in prange(n):
        u = U[j].copy()
        if method == 0:
            a, b, c, d = item_newton(L[j], kind, gam, W, tol, max_iter, u, warm)
        else:
            a, b, c, d = item_fixed_point(L[j], kind, gam, W, tol, max_iter, u, warm)
        U[j] = u
        iters[j] = a
        conv[j] = b
        res[j] = c
        nneg[j] = d
    return iters, conv, res, nneg


@njit(cache=True, parallel=True, error_model="numpy")
def batch_payouts(L, y, kind, gam, W, tol, max_iter, method, U, warm, P):
    """Equilibrium of every item at wealth ``W``, then each agent's payout if label ``y`` occurs:
    ``P[j, i] = r_{i,y_j} / sum_l r_{l,y_j}`` (the realised clearing price, equal to ``c_y`` within
    ``tol``; it makes total wealth conserved to rounding). Returns per-item iterations and flags."""
    n, A, K = L.shape
    iters = np.zeros(n, np.int64)
    conv = np.zeros(n, np.bool_)
    res = np.zeros(n)
    for j in prange(n):
        u = U[j].copy()
        if method == 0:
            a, b, c, d = item_newton(L[j], kind, gam, W, tol, max_iter, u, warm)
        else:
            a, b, c, d = item_fixed_point(L[j], kind, gam, W, tol, max_iter, u, warm)
        U[j] = u
        iters[j] = a
        conv[j] = b
        res[j] = c
        r = np.zeros((A, K))
        item_spending(L[j], kind, gam, W, u, r)
        yj = y[j]
        s = 0.0
        for i in range(A):
            s += r[i, yj]
        for i in range(A):
            P[j, i] = r[i, yj] / s
    return iters, conv, res


@njit(cache=True, error_model="numpy")
def online_epoch(L, y, kind, gam, W, tol, max_iter, method, U, warm, history):
    """One online epoch (Algorithm 2.4): for each item in order, clear the market at the current
    wealth, reveal ``y``, pay ``W_i <- r_{i,y} / sum_l r_{l,y}``. ``W`` is updated in place;
    ``history[j]`` receives the wealth after item ``j``. Returns (total iterations, all converged)."""
    n, A, K = L.shape
    r = np.zeros((A, K))
    tot = 0
    allconv = True
    for j in range(n):
        u = U[j].copy()
        if method == 0:
            a, b, c, d = item_newton(L[j], kind, gam, W, tol, max_iter, u, warm)
        else:
            a, b, c, d = item_fixed_point(L[j], kind, gam, W, tol, max_iter, u, warm)
        U[j] = u
        tot += a
        allconv = allconv and b
        item_spending(L[j], kind, gam, W, u, r)
        yj = y[j]
        s = 0.0
        for i in range(A):
            s += r[i, yj]
        for i in range(A):
            W[i] = r[i, yj] / s
        for i in range(A):
            history[j, i] = W[i]
    return tot, allconv


@njit(cache=True, parallel=True, error_model="numpy")
def count_neginf(x):
    """Number of ``-inf`` entries of the 1-D array ``x`` (zero beliefs), without a temporary."""
    c = 0
    for i in prange(x.shape[0]):
        if x[i] == -np.inf:
            c += 1
    return c
