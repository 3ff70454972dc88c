"""The Newton direction of the equilibrium potential from its scaled price-space Hessian.

Shared by the general path (:func:`markets.kernels.potential.newton_direction`) and the one-order
path (:mod:`markets.kernels.isoelastic`), with the chord step that reuses the last factor.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from solvers.kernels.cholesky import cho_solve
from solvers.kernels.cholesky_factor import cho_factor

CHORD_RATIO = 1e-2
"""Residual reduction of the last step below which Newton's next step reuses its factorisation."""


@njit(cache=True, error_model="numpy")
def direction_from_S(u, T, Wsum, reg, d, H, Lc, tmp, c):
    """Newton direction from the full symmetric ``S`` in ``H`` (see :func:`markets.kernels.potential.newton_direction`);
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
    if not cho_factor(H, Lc, 1e-14, False):
        return False
    chord_direction(u, T, Wsum, d, Lc, c)  # the two triangular solves with the new factor
    return True


@njit(cache=True, error_model="numpy")
def chord_direction(u, T, Wsum, d, Lc, c):
    """Newton direction with the factor ``Lc`` and the scaling ``c[K:]`` (reciprocal square roots
    of the prices) left by the last :func:`direction_from_S`, and the gradient at ``u``."""
    K = u.shape[0]
    for k in range(K):
        d[k] = (T[k] - Wsum * np.exp(u[k])) * c[K + k]
    cho_solve(Lc, d, d)
    for k in range(K):
        d[k] *= c[K + k]
