"""Solves with the Rényi fixed point's Hessian ``H``, structured by shape (seed 000, Eq. 2.8).

Per item (``A`` agents, ``K`` classes), at the current point with tilted agents ``Q_i`` and
``Q = Σ_i w'_i Q_i`` (notation of :mod:`aggregators.renyi_kernels`),

    H = D + X Xᵀ,   D = diag(d),  d = Σ_i w'_i γ_i Q_i,   X = [s_1 Q_1, ..., s_A Q_A],  s_i² = w'_i (1 - γ_i),

a positive diagonal plus ``A`` rank-one terms. ``D_Q^{-1} H`` has its eigenvalues in
``[min γ, 1]`` and ``D_Q^{-1} D`` lies between ``min γ`` and ``max γ`` (it is ``γ I`` for a shared γ),
so ``D^{-1} H`` is the identity plus a positive semi-definite part of rank at most ``A`` with
eigenvalues at most ``(1 - γ)/γ``. Three ways to solve ``H x = b``:

``DENSE`` (0)
    build ``H`` (``A K²`` flops) and factor it (``K³/3``): the original step, best when ``K`` is small.
``WOODBURY`` (1)
    ``x = D⁻¹b - D⁻¹X C⁻¹ Xᵀ D⁻¹ b`` with the ``A x A`` capacitance ``C = I + Xᵀ D⁻¹ X``
    (``A² K`` flops to build, ``A³/3`` to factor; ``C``'s condition number is at most ``1/γ``).
``CG`` (2)
    conjugate gradients, matrix-free: one product costs ``2 A K`` flops. Preconditioned by ``D`` the
    spectrum lies in ``[1, about 1/γ]`` with at most ``A`` non-unit directions, so it needs at most
    ``A + 1`` and about ``sqrt(1/γ) log(1/rtol) / 2`` products; since session 26 the preconditioner is
    ``D`` plus the agents' mean rank-one term (:func:`_cg`), which removes the outlier along the mean
    (one to two products fewer measured, ``tests/aggregators/test_renyi_hessian.py``).

Which one is cheapest depends on ``(A, K)`` (CG's product count barely on γ: :data:`CG_PRODUCTS`);
:func:`choose` holds the rule, measured with ``benchmarks/bench_renyi_grid.py`` (see ``docs/renyi.md``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.cholesky import cho_solve
from solvers.kernels.cholesky_factor import cho_factor

DENSE = 0
WOODBURY = 1
CG = 2
MODES = {"dense": DENSE, "woodbury": WOODBURY, "cg": CG}
CG_PRODUCTS = 8.0
"""CG's products per Newton step as :func:`choose` counts them against the dense solve (at most ``A + 1``),
whatever γ; against Woodbury :data:`CG_PRODUCTS_WOODBURY`.

Until session 56 the count was the spectral bound ``3 sqrt(1/γ) + 5`` (14.5 at γ = 0.1, 9.2 at 0.5;
not raised below γ = 0.1 against dense). At the fixed point the tilted agents gather around ``Q`` (one
outlying eigenvalue of ``D⁻¹H``, the rest clustered near 1, the outlier removed by the preconditioner), so
the count barely depends on γ: 3-5 products to rtol 1e-3 and 6-15 to 1e-12 at γ = 0.1, 2-3 and 6-9 at
γ = 0.01 (session 20). With the bound, shapes between 12 and 99 agents, which the grid (A = 2, 10, 100,
1,000) never sampled, went to Woodbury or the dense solve where CG was faster: 1.1-1.8x at 22 agents on
every family. Timed with ``bench_renyi_grid.py --hessian all`` (three synthetic families and the real
``pixels`` predictions; K 16-256, A 10-70, γ 0.1 / 0.5 / per agent) and compared by
``benchmarks/renyi_choice_regret.py`` (each solve's time over the NumPy peer's of the same rounds), and
with Woodbury and CG alone at K 1,024-4,096 and 16-50 agents (``benchmarks/results/session56.md`` §3):

- 225 shapes (seed 0): the old rule's pick took on average 1.12x the best solve's time (pixels 1.13x),
  the new one 1.06x; its 40 changed shapes 0.56-1.01x the old pick's time (median 0.76);
- 90 shapes (seed 1, timed after the first choice of constants): 1.07x -> 1.03x; 21 changed, solves
  0.62-1.01x (median 0.84), gradients 0.71-0.98x (median 0.81);
- γ = 0.01 at 30-50 agents, where the bound had kept Woodbury: 0.31-0.87x;
- K 1,024-4,096, 16-50 agents: 4 of 24 shapes change, solves 0.78-0.98x, gradients 0.76-0.98x.

One count for both comparisons fits worse: 8 (the first choice) made 16 agents at K >= 1,024 go to CG,
1.1-1.27x slower than Woodbury there (found by the large-K check, then split); 9 sends 22 agents x 16
classes back to the dense solve, 1.1-1.4x slower than CG. Woodbury's capacitance is one Gram pass per
step, as cheap per flop as CG's products are not. No shape of the grid's (A in {2, 10, 100, 1,000})
changes."""
CG_PRODUCTS_WOODBURY = 10.0
"""CG's products per Newton step as :func:`choose` counts them against Woodbury (see :data:`CG_PRODUCTS`):
Woodbury from CG's point of view up to 18 agents at many classes."""


def choose(n_agents: int, n_classes: int, gamma_min: float) -> int:
    """The cheapest solve for this shape (flop model, constants fitted on the grid benchmark).

    Dense costs ``A K² + K³/3`` per Newton step, Woodbury ``A² K + A³/3`` (plus ``4 A K``); CG costs
    ``2 A K`` per product times ``min(A + 1, count) + 1.5`` (the products, then the diagonal and the
    preconditioner's set-up), the count measured: :data:`CG_PRODUCTS` against dense,
    :data:`CG_PRODUCTS_WOODBURY` against Woodbury. Dense is kept for ``K <= 8``, where it
    is exact and its overheads are smallest. ``gamma_min`` no longer enters (see :data:`CG_PRODUCTS`):
    the parameter stays for the callers, which pass the smallest γ.
    """
    A, K = n_agents, n_classes
    if K <= 8:
        return DENSE
    dense = A * K * K + K**3 / 3.0
    wood = A * A * K + A**3 / 3.0 + 4.0 * A * K
    product = 2.0 * A * K
    if (
        product * (min(A + 1.0, CG_PRODUCTS) + 1.5) < dense
        and product * (min(A + 1.0, CG_PRODUCTS_WOODBURY) + 1.5) < wood
    ):
        return CG
    return DENSE if dense <= wood else WOODBURY


@njit(cache=True)
def workspace(mode, A, K):
    """Scratch arrays for :func:`hsolve`: ``(M, C, V, v)`` (nothing is allocated per solve)."""
    if mode == DENSE:
        return np.empty((K, K)), np.empty((K, K)), np.empty((K, A)), np.empty(K)
    if mode == WOODBURY:
        return np.empty((A, A)), np.empty((A, A)), np.empty((A, K)), np.empty(K + A)
    return np.empty((0, 0)), np.empty((0, 0)), np.empty((7, K)), np.empty(2 * A)


@njit(cache=True, fastmath=True)
def _gram(XT, H):
    """``H = XT XTᵀ`` for ``XT`` (K, A): contiguous dot products (as fast as BLAS syrk here, and
    free of BLAS threading inside the ``prange`` loops)."""
    K, A = XT.shape
    for y in range(K):
        for z in range(y, K):
            s = 0.0
            for i in range(A):
                s += XT[y, i] * XT[z, i]
            H[y, z] = s
            H[z, y] = s


@njit(cache=True)
def _diag(Qi, wp, gam, d):
    """``d = Σ_i w'_i γ_i Q_i`` (the diagonal part of ``H``)."""
    A, K = Qi.shape
    for y in range(K):
        d[y] = 0.0
    for i in range(A):
        c = wp[i] * gam[i]
        for y in range(K):
            d[y] += c * Qi[i, y]


@njit(cache=True)
def dense_hessian(Qi, wp, gam, XT, H):
    """``H = diag(Σ_i w'_i γ_i Q_i) + Σ_i w'_i (1-γ_i) Q_i Q_iᵀ``, built densely."""
    A, K = Qi.shape
    for i in range(A):
        s = np.sqrt(wp[i] * (1.0 - gam[i]))
        for y in range(K):
            XT[y, i] = s * Qi[i, y]
    _gram(XT, H)
    for y in range(K):
        d = 0.0
        for i in range(A):
            d += wp[i] * gam[i] * Qi[i, y]
        H[y, y] += d


@njit(cache=True, fastmath=True)
def _woodbury_factor(Qi, wp, gam, M, C, V, v):
    """``1/d`` (in ``v[:K]``), ``V_i = s_i Q_i / d`` and the Cholesky factor ``C`` of the capacitance."""
    A, K = Qi.shape
    dinv = v[:K]
    s = v[K : K + A]
    _diag(Qi, wp, gam, dinv)
    for y in range(K):
        dinv[y] = 1.0 / dinv[y]
    # V_i = s_i Q_i / d, M = I + diag(s) Q D⁻¹ Qᵀ diag(s)
    for i in range(A):
        s[i] = np.sqrt(wp[i] * (1.0 - gam[i]))
        for y in range(K):
            V[i, y] = s[i] * Qi[i, y] * dinv[y]
    for i in range(A):
        si = s[i]
        for j in range(i + 1):
            t = 0.0
            for y in range(K):
                t += Qi[i, y] * V[j, y]
            M[i, j] = si * t
            M[j, i] = si * t
        M[i, i] += 1.0
    cho_factor(M, C, 0.0, True)


@njit(cache=True, fastmath=True)
def _woodbury_solve(b, x, C, V, v):
    """``x = D⁻¹ b - Σ_i z_i V_i`` with ``z = C⁻¹ Xᵀ D⁻¹ b``, from :func:`_woodbury_factor`."""
    A, K = V.shape
    dinv = v[:K]
    z = v[K : K + A]
    for i in range(A):
        acc = 0.0
        for y in range(K):
            acc += V[i, y] * b[y]
        z[i] = acc
    cho_solve(C, z, z)
    for y in range(K):
        x[y] = b[y] * dinv[y]
    for i in range(A):
        zi = z[i]
        for y in range(K):
            x[y] -= zi * V[i, y]


@njit(cache=True, fastmath=True)
def _hv(Qi, c2, d, v, out, dots):
    """``out = H v = d ⊙ v + Σ_i c2_i Q_i (Q_i · v)`` (``c2_i = w'_i (1 - γ_i)``), matrix-free."""
    A, K = Qi.shape
    for y in range(K):
        out[y] = d[y] * v[y]
    # one pass over Q, four agents at a time: their rows are still in cache for the update, and ``v`` is
    # read and ``out`` updated once for the four (session 32: the adjoint of one (4,096, 100) item
    # 3.0-3.1 -> 2.5-2.6 ms; two at a time gave 2.75-2.8)
    i0 = 0
    while i0 + 4 <= A:
        t0 = 0.0
        t1 = 0.0
        t2 = 0.0
        t3 = 0.0
        for y in range(K):
            vy = v[y]
            t0 += Qi[i0, y] * vy
            t1 += Qi[i0 + 1, y] * vy
            t2 += Qi[i0 + 2, y] * vy
            t3 += Qi[i0 + 3, y] * vy
        t0 *= c2[i0]
        t1 *= c2[i0 + 1]
        t2 *= c2[i0 + 2]
        t3 *= c2[i0 + 3]
        dots[i0] = t0
        dots[i0 + 1] = t1
        dots[i0 + 2] = t2
        dots[i0 + 3] = t3
        for y in range(K):
            out[y] += (t0 * Qi[i0, y] + t1 * Qi[i0 + 1, y]) + (t2 * Qi[i0 + 2, y] + t3 * Qi[i0 + 3, y])
        i0 += 4
    for i in range(i0, A):
        t = 0.0
        for y in range(K):
            t += Qi[i, y] * v[y]
        t *= c2[i]
        dots[i] = t
        for y in range(K):
            out[y] += t * Qi[i, y]


@njit(cache=True, fastmath=True)
def _diag_and_mean(Qi, wp, gam, d, u):
    """``d = Σ_i w'_i γ_i Q_i`` and ``u = Σ_i w'_i (1 - γ_i) Q_i`` in one pass over ``Q``; returns
    ``α = Σ_i w'_i (1 - γ_i)``."""
    A, K = Qi.shape
    for y in range(K):
        d[y] = 0.0
        u[y] = 0.0
    alpha = 0.0
    for i in range(A):
        a = wp[i] * gam[i]
        c = wp[i] * (1.0 - gam[i])
        alpha += c
        for y in range(K):
            d[y] += a * Qi[i, y]
            u[y] += c * Qi[i, y]
    return alpha


@njit(cache=True, fastmath=True)
def _precondition(r, dinv, z, s, out):
    """``out = P⁻¹ r`` for ``P = D + u uᵀ/α`` by Sherman-Morrison (``z = D⁻¹u``,
    ``s = 1/(α + u·z)``, 0 when there is no rank-one part); returns ``r·out``."""
    K = r.shape[0]
    zr = 0.0
    for y in range(K):
        zr += z[y] * r[y]
    zr *= s
    rz = 0.0
    for y in range(K):
        out[y] = dinv[y] * r[y] - zr * z[y]
        rz += r[y] * out[y]
    return rz


@njit(cache=True, fastmath=True)
def _cg(Qi, wp, gam, b, x, rtol, V, v):
    """CG on ``H x = b`` preconditioned by ``P = D + u uᵀ/α`` (``u = Σ_i c_i Q_i``, ``c_i = w'_i (1-γ_i)``,
    ``α = Σ_i c_i``), from ``x = P⁻¹ b``; returns the number of products.

    Why this ``P``: the rank-one part of ``H`` splits about the agents' mean ``m = u/α``,
    ``Σ_i c_i Q_i Q_iᵀ = α m mᵀ + Σ_i c_i (Q_i - m)(Q_i - m)ᵀ``, so ``H = P + (a positive semi-definite
    spread term)``: ``P⁻¹H`` has its eigenvalues in ``[1, λ_max(D⁻¹H)]`` like ``D⁻¹H``, but the outlier
    along the mean (about ``1/γ``: the agents' common part) is gone, and what is left is the agents'
    spread about their mean, small where agents agree. Measured (session 26, ``/tmp/s26/spec.py``,
    ``K = 512``, ``A = 1,000``, γ = 0.5, one solved item): the largest eigenvalue of ``P⁻¹H`` was 1.003
    (independent Dirichlet agents), 1.28 (Gaussian-logit agents) and 1.10 (near-duplicates), against 2.0
    with ``D`` alone; ``P⁻¹`` costs two ``K``-vector passes, and ``u`` comes in the pass that forms ``D``.
    ``P ≼ H`` also keeps ``P`` positive definite whatever the weights (``D`` is, and ``u uᵀ/α ≽ 0``).
    """
    _diag_and_mean(Qi, wp, gam, V[5], V[1])
    return cg_known(Qi, wp, gam, b, x, rtol, V, v)


@njit(cache=True, fastmath=True)
def cg_known(Qi, wp, gam, b, x, rtol, V, v):
    """:func:`_cg` when the caller has already formed ``d`` in ``V[5]`` and ``u`` in ``V[1]`` (the
    adjoint's exponential pass does, saving :func:`_cg` its pass over ``Q``)."""
    A, K = Qi.shape
    dinv = V[0]
    z = V[1]
    r = V[2]
    p = V[3]
    hp = V[4]
    d = V[5]
    pr = V[6]
    dots = v[:A]
    c2 = v[A : 2 * A]
    alpha = 0.0
    for i in range(A):
        c2[i] = wp[i] * (1.0 - gam[i])
        alpha += c2[i]
    uz = 0.0
    for y in range(K):
        dinv[y] = 1.0 / d[y]
        uz += z[y] * z[y] * dinv[y]
        z[y] *= dinv[y]
    s = 1.0 / (alpha + uz) if alpha > 0.0 else 0.0
    bn = 0.0
    for y in range(K):
        bn += b[y] * b[y]
    if bn == 0.0:
        for y in range(K):
            x[y] = 0.0
        return 0
    _precondition(b, dinv, z, s, x)
    _hv(Qi, c2, d, x, hp, dots)
    rn = 0.0
    for y in range(K):
        r[y] = b[y] - hp[y]
        rn += r[y] * r[y]
    rz = _precondition(r, dinv, z, s, p)
    thr = rtol * rtol * bn
    it = 1
    # exact in at most min(A, K) + 1 products; the bound sqrt(κ) log(2/rtol)/2 with κ <= 1/γ, doubled,
    # caps runs where rounding keeps the residual above a tiny rtol (seen at K = 4,096)
    gmin = 1.0
    for i in range(A):
        if gam[i] < gmin:
            gmin = gam[i]
    cap = 10 + int(np.sqrt(1.0 / max(gmin, 1e-8)) * np.log(2.0 / rtol))
    max_it = min(min(A + 1, K) + 3, cap)
    best = rn
    stall = 0
    while rn > thr and it < max_it and rz > 0.0:
        _hv(Qi, c2, d, p, hp, dots)
        it += 1
        php = 0.0
        for y in range(K):
            php += p[y] * hp[y]
        if not (php > 0.0):
            break
        alpha = rz / php
        rn = 0.0
        for y in range(K):
            x[y] += alpha * p[y]
            r[y] -= alpha * hp[y]
            rn += r[y] * r[y]
        if rn < 0.5 * best:
            best = rn
            stall = 0
        else:
            stall += 1
            if stall >= 10:
                break
        rz_new = _precondition(r, dinv, z, s, pr)
        beta = rz_new / rz
        rz = rz_new
        for y in range(K):
            p[y] = pr[y] + beta * p[y]
    return it


@njit(cache=True)
def hsolve(mode, Qi, wp, gam, b, x, rtol, M, C, V, v):
    """Solve ``H x = b`` (``H`` at the tilted agents ``Qi``) by ``mode``; ``x`` may not alias ``b``.

    ``rtol`` is CG's relative residual target (ignored by the direct solves). Returns the number of
    Hessian products (CG) or 0.
    """
    if mode == DENSE:
        dense_hessian(Qi, wp, gam, V, M)
        cho_factor(M, C, 0.0, True)
        cho_solve(C, b, x)
        return 0
    if mode == WOODBURY:
        _woodbury_factor(Qi, wp, gam, M, C, V, v)
        _woodbury_solve(b, x, C, V, v)
        return 0
    return _cg(Qi, wp, gam, b, x, rtol, V, v)


@njit(cache=True)
def resolve(mode, b, x, C, V, v):
    """Solve ``H' x = b`` with the factorisation the last :func:`hsolve` left in the workspace (``H'``
    is ``H`` at that solve's point: a chord step). Dense and Woodbury only; returns False for CG,
    which keeps nothing."""
    if mode == DENSE:
        cho_solve(C, b, x)
        return True
    if mode == WOODBURY:
        _woodbury_solve(b, x, C, V, v)
        return True
    return False
