"""Markets of isoelastic agents with eta = 2: the equilibrium as a scaling of the agents' A x A Gram matrix.

For one order ``g = 1/eta`` the effective beliefs are ``Q_ik = p_ik c_k^(1-g) / z_i`` with
``p = P^g`` and ``z_i = sum_k p_ik c_k^(1-g)`` (seed 000, Eq. 2.35), and the market clears
(Eq. 2.27-2.29, prices summing to one, total wealth ``Wsum``) when
``T_k = c_k^(1-g) sum_i s_i p_ik = Wsum c_k`` with ``s_i = W_i / z_i``, i.e.

    ``c_k^g = v_k / Wsum``,  ``v = p^T s``.

The prices are a function of the A numbers ``s``. At ``eta = 2`` (``g = 1 - g = 1/2``) the agents'
normalisers close on themselves: ``z_i = sum_k p_ik v_k / Wsum = (G s)_i / Wsum`` with the Gram
matrix ``G = p p^T`` (A x A, ``G_ii = sum_k P_ik = 1``), so the equilibrium is the positive solution of

    ``s * (G s) = Wsum W``        (A equations: a symmetric scaling of ``G``),

then ``c_k = (v_k / Wsum)^2``. With ``x = log s`` these are the stationarity conditions of the strictly
convex ``f(x) = 1/2 e^x' G e^x - Wsum W'x`` (a sum of exponentials of affine functions of ``x`` with
positive weights, minus a linear term; coercive because ``W > 0`` and ``G_ii > 0``), whose Hessian
``diag(s * G s) + diag(s) G diag(s)`` is positive definite at every ``x``: Newton with an Armijo
search on ``f`` converges from any start, quadratically near the answer, and each step costs O(A^3)
with no pass over the goods. The goods are read three times in all: the Gram matrix
(``K A (A + 1) / 2`` multiply-adds), the prices, and one pass at those prices that measures the
clearing residual with the same rule as every other method (:func:`rows_pass`, the row-major
twin of :func:`markets.kernels.isoelastic.iso_pass`). Where that residual is above ``tol`` (rounding
in an extreme market) the caller finishes with Newton-CG from these prices.

The seed's fixed point contracts by ``1 - g = 1/2`` per pass at ``eta = 2`` (about 25-30 passes to
1e-10); the start below is the seed's power-mean start (Eq. 2.32: ``s`` proportional to ``W``).
Other ``eta`` do not close this way (``z`` needs ``v^(eta - 1)``: a pass over the goods per
evaluation), so the method is for ``eta = 2`` only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.cholesky import cho_solve
from solvers.kernels.cholesky_factor import cho_factor
from solvers.kernels.fastexp import exp_scaled
from solvers.kernels.simplex_log import log_image_with

_FM = {"reassoc", "contract"}
ARMIJO = 1e-4
"""Sufficient decrease of ``f`` for a Newton step (or the step halves the gradient residual)."""
MAX_HALVINGS = 40
INNER_TOL = 1e-15
"""The scaling equations are solved to this relative residual ``max_i |s_i (G s)_i - b_i| / b_i``
(or until rounding stops Newton's progress); the clearing residual is then measured by a pass."""


@njit(cache=True, error_model="numpy")
def gram_size(A, K):
    """Floats of one workspace of :func:`gram_item`."""
    return 3 * A * A + 8 * A + 4 * K


@njit(cache=True, fastmath=_FM, error_model="numpy")
def gram_rows(p, A, K, G):
    """``G = p p^T`` (A x A, both triangles) from ``p`` (A K,) holding the rows ``p_i`` one after the
    other (row-major): dot products over the goods, contiguous, four rows against one at a time."""
    for i in range(A):
        oi = i * K
        j = 0
        while j + 3 <= i:
            o0, o1, o2, o3 = j * K, (j + 1) * K, (j + 2) * K, (j + 3) * K
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            for k in range(K):
                pk = p[oi + k]
                a0 += pk * p[o0 + k]
                a1 += pk * p[o1 + k]
                a2 += pk * p[o2 + k]
                a3 += pk * p[o3 + k]
            G[i, j] = a0
            G[i, j + 1] = a1
            G[i, j + 2] = a2
            G[i, j + 3] = a3
            j += 4
        while j <= i:
            oj = j * K
            a = 0.0
            for k in range(K):
                a += p[oi + k] * p[oj + k]
            G[i, j] = a
            j += 1
    for i in range(A):
        for j in range(i + 1, A):
            G[i, j] = G[j, i]


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _combine(p, A, K, w, out):
    """``out = sum_i w_i p_i`` (K,) over the row-major rows of ``p``."""
    for k in range(K):
        out[k] = 0.0
    for i in range(A):
        wi = w[i]
        o = i * K
        for k in range(K):
            out[k] += wi * p[o + k]


@njit(cache=True, fastmath=_FM, error_model="numpy")
def _row_dot(p, i, K, v):
    s = 0.0
    o = i * K
    for k in range(K):
        s += p[o + k] * v[k]
    return s


@njit(cache=True, error_model="numpy")
def rows_pass(p, A, K, g, W, Wsum, u, z, s, T, cp, c):
    """One pass at normalised log-prices ``u`` over the row-major powers ``p = P^g`` (A K,): fills
    ``cp = c^(1-g)``, ``z_i = p_i . cp``, ``s = W / z``, the spending ``T = cp * (p^T s)`` and
    ``c = exp(u)``; returns the clearing residual ``max_k |T_k - Wsum c_k| / c_k`` (the rule of
    :func:`markets.kernels.isoelastic.iso_pass`)."""
    exp_scaled(u, 1.0 - g, cp)
    for i in range(A):
        z[i] = _row_dot(p, i, K, cp)
        s[i] = W[i] / z[i]
    _combine(p, A, K, s, T)
    exp_scaled(u, 1.0, c)
    res = 0.0
    for k in range(K):
        T[k] *= cp[k]
        e = abs(T[k] - Wsum * c[k]) / c[k]
        if not (e <= res):  # a NaN residual is kept (it fails every test)
            res = e
    return res


@njit(cache=True, error_model="numpy")
def _state(G, b, x, s, Gs, gr):
    """``s = e^x``, ``Gs = G s``, the gradient ``gr = s * Gs - b``; returns ``(f, max_i |gr_i| / b_i)``."""
    A = x.shape[0]
    for i in range(A):
        s[i] = np.exp(x[i])
    f = 0.0
    rel = 0.0
    for i in range(A):
        a = 0.0
        for j in range(A):
            a += G[i, j] * s[j]
        Gs[i] = a
        gr[i] = s[i] * a - b[i]
        f += 0.5 * s[i] * a - b[i] * x[i]
        e = abs(gr[i]) / b[i]
        if not (e <= rel):
            rel = e
    return f, rel


@njit(cache=True, error_model="numpy")
def scaling_newton(G, b, x, max_iter, ws):
    """Newton with an Armijo search on ``f(x) = 1/2 e^x' G e^x - b'x`` (module docstring) from ``x``
    (A,), in place; ``ws`` holds ``2 A^2 + 6 A`` floats. A step is accepted when it decreases ``f``
    sufficiently or halves the relative gradient residual (near the answer ``f`` no longer resolves the
    decrease). Stops at :data:`INNER_TOL`, at ``max_iter`` steps, or when rounding stops the
    progress. Returns ``(n_steps, relative residual)``."""
    A = x.shape[0]
    H = ws[: A * A].reshape((A, A))
    C = ws[A * A : 2 * A * A].reshape((A, A))
    o = 2 * A * A
    s, Gs, gr, d, xn, sn = ws[o : o + A], ws[o + A : o + 2 * A], ws[o + 2 * A : o + 3 * A], ws[o + 3 * A : o + 4 * A], ws[o + 4 * A : o + 5 * A], ws[o + 5 * A : o + 6 * A]  # fmt: skip
    f, rel = _state(G, b, x, s, Gs, gr)
    fn, reln = f, rel
    it = 0
    while rel > INNER_TOL and it < max_iter:
        for i in range(A):
            for j in range(i + 1):
                H[i, j] = s[i] * G[i, j] * s[j]
            H[i, i] += s[i] * Gs[i]
        if not cho_factor(H, C, 1e-14, False):
            break
        for i in range(A):
            d[i] = -gr[i]
        cho_solve(C, d, d)
        slope = 0.0
        for i in range(A):
            slope += gr[i] * d[i]
        if not (slope < 0.0):
            break
        t = 1.0
        done = False
        for _ in range(MAX_HALVINGS):
            for i in range(A):
                xn[i] = x[i] + t * d[i]
            # sn, Gs, gr are overwritten by the trial; on rejection they are recomputed at x
            fn, reln = _state(G, b, xn, sn, Gs, gr)
            if fn <= f + ARMIJO * t * slope or reln <= 0.5 * rel:
                done = True
                break
            t *= 0.5
        if not done:
            _state(G, b, x, s, Gs, gr)
            break
        it += 1
        small = rel < 1e-12
        for i in range(A):
            x[i] = xn[i]
            s[i] = sn[i]
        if small and not (reln <= 0.5 * rel):  # rounding: Newton no longer gains
            rel = min(rel, reln)
            break
        f, rel = fn, reln
    return it, rel


@njit(cache=True, error_model="numpy")
def gram_item(p, A, K, W, Wsum, tol, max_iter, u, warm, ws):
    """Equilibrium of one item of an ``eta = 2`` market from its row-major powers ``p = P^(1/2)``
    (A K,): the Gram matrix, the scaling by :func:`scaling_newton` (at most ``max_iter`` steps;
    ``max_iter = 0`` prices the start), the prices ``c = (p^T s / Wsum)^2`` into ``u`` (normalised
    log-prices) and one :func:`rows_pass` for the clearing residual. Start: the power mean
    (``s`` proportional to ``W``) or, if ``warm``, the scaling ``W / z`` at the prices ``u``.
    ``ws`` holds :func:`gram_size` floats. Returns ``(ok, n_steps, converged, residual)``;
    ``ok`` False (a good no agent believes in: a price of zero) leaves ``u`` to the caller."""
    G = ws[: A * A].reshape((A, A))
    o = A * A
    nws = ws[o : o + 2 * A * A + 6 * A]
    o += 2 * A * A + 6 * A
    x, b = ws[o : o + A], ws[o + A : o + 2 * A]
    o += 2 * A
    v, cp, T, c = ws[o : o + K], ws[o + K : o + 2 * K], ws[o + 2 * K : o + 3 * K], ws[o + 3 * K : o + 4 * K]
    z, s = nws[:A], nws[A : 2 * A]  # the pass's agent vectors: scratch of the Newton workspace
    gram_rows(p, A, K, G)
    for i in range(A):
        b[i] = Wsum * W[i]
    if warm:
        rows_pass(p, A, K, 0.5, W, Wsum, u, z, s, T, cp, c)
        for i in range(A):
            x[i] = np.log(s[i])
    else:
        q = 0.0
        for i in range(A):
            for j in range(A):
                q += W[i] * G[i, j] * W[j]
        a = Wsum / np.sqrt(q)  # s = a W makes sum_i s_i (G s)_i = Wsum^2 (prices summing to one)
        for i in range(A):
            x[i] = np.log(a * W[i])
    for i in range(A):
        if not np.isfinite(x[i]):
            return False, 0, False, np.inf
    it = scaling_newton(G, b, x, max_iter, nws)[0]
    for i in range(A):
        x[i] = np.exp(x[i])
    _combine(p, A, K, x, v)
    for k in range(K):
        if not (v[k] > 0.0):
            return False, it, False, np.inf
        v[k] *= v[k]
    log_image_with(v, u, c)
    res = rows_pass(p, A, K, 0.5, W, Wsum, u, z, s, T, cp, c)
    return True, it, res <= tol, res
