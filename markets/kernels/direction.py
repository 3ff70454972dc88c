"""The Newton direction of the equilibrium potential from its scaled price-space Hessian.

Shared by the general path (:func:`markets.kernels.potential.newton_direction`) and the one-order
path (:mod:`markets.kernels.isoelastic`), with the chord step that reuses the last factor.
"""

from __future__ import annotations

from numba import njit

from solvers.kernels.cholesky import cho_solve
from solvers.kernels.cholesky_factor import cho_factor
from solvers.kernels.fastexp import exp_scaled, subnormal_exps

CHORD_RATIO = 1e-2
"""Residual reduction of the last step below which Newton's next step reuses its factorisation."""

REFRESH_RATIO = 0.5
"""... and below which the one-order path's step after a Newton step reuses its Gram matrix only (a
*refreshed* chord: :func:`markets.kernels.equilibrium._iso_newton_pg` where :func:`refreshes_gram`). Every
accepted step of the fast phase halves the residual, so this means: after each accepted Newton step
(gates of 0.03 and 0.1 gave the same step counts within 0.2 on 18 cells). Session 49: the Gram matrix
``G = sum_i (W_i / z_i^2) P_i^g (P_i^g)^T`` depends on the prices through the ``z_i`` alone, while the
diagonal ``diag(T)`` and the scaling ``diag(c^(1-g))`` of ``S`` move with every log-price; rebuilding
those exactly and refactoring took the step after the first Newton step from a residual ratio of 0.063 (the
plain chord) to 1.6e-5 (median of 300 items, 100 agents x 10 goods, eta = 10; a NumPy model of the loop,
``benchmarks/results/session49.md``), so Newton needs one Gram matrix where it needed two."""


@njit(cache=True, error_model="numpy")
def refreshes_gram(K, A):
    """True if the refreshed chord pays: its factorisation (``K^3 / 6`` flops) costs no more than the Gram
    matrix it saves (``A K^2 / 2``), i.e. ``3 A >= K``."""
    return 3 * A >= K


@njit(cache=True, error_model="numpy")
def _prices_and_scale(u, c):
    """``c[:K] = exp(u)`` and ``c[K:] = exp(-u / 2)`` (the reciprocal square roots of the prices) by the
    vectorised :func:`solvers.kernels.fastexp.exp_scaled` (2 ulp), with libm's ``exp`` where a price
    flushed to zero below ``exp(-708)`` (:func:`solvers.kernels.fastexp.subnormal_exps`: a subnormal price
    stays one, as before). Until session 49
    these were 2 K libm calls (``exp`` and ``1 / sqrt``); at 10 goods the direction took 951 -> 895 ns
    and the chord step 335 -> 277 (``benchmarks/probe_market_direction.py``; the factorisation is the
    rest)."""
    K = u.shape[0]
    exp_scaled(u, 1.0, c[:K])
    subnormal_exps(u, 1.0, c[:K])
    exp_scaled(u, -0.5, c[K:])


@njit(cache=True, error_model="numpy")
def direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c):
    """Newton direction from the full symmetric ``S`` in ``H`` (see :func:`markets.kernels.potential.newton_direction`);
    ``c`` (2K,) is scratch: the prices and their reciprocal square roots."""
    K = u.shape[0]
    _prices_and_scale(u, c)
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
    if not cho_factor(H, Lc, 1e-14, False):
        return False
    chord_direction(u, T, Wsum, d, Lc, c)  # the two triangular solves with the new factor
    return True


@njit(cache=True, error_model="numpy")
def chord_direction(u, T, Wsum, d, Lc, c):
    """Newton direction with the factor ``Lc`` and the scaling ``c[K:]`` (reciprocal square roots
    of the prices) left by the last :func:`direction_from_S`, and the gradient at ``u``."""
    K = u.shape[0]
    exp_scaled(u, 1.0, d)  # the prices (vectorised; see _prices_and_scale)
    subnormal_exps(u, 1.0, d)
    for k in range(K):
        d[k] = (T[k] - Wsum * d[k]) * c[K + k]
    cho_solve(Lc, d, d)
    for k in range(K):
        d[k] *= c[K + k]
