"""One pass of SPDC / AdaSPDC with one dual coordinate per iteration (m = 1), compiled.

The iteration of :mod:`solvers.methods.spdc` (seed 000 Eq. 3.33-3.39; Zhang & Xiao 2015) for a dense ``A``,
the three losses of :class:`solvers.prox.Loss` and an elastic-net regulariser ``l1 |x|_1 + (l2/2)|x|^2``
(ridge: ``l1 = 0``), with the per-coordinate constants precomputed by the caller: the dual step
``sigma_k``, the x-step weight ``w_k`` (``1/(p_k N)``, 1 when uniform), ``tau_k`` and ``theta_k`` (AdaSPDC's
``tau^t``, ``theta^t`` for ``S_t = {k}``; constants for SPDC). For ``k`` in ``draws``:

    y_k+ = prox_{sigma_k phi_k*}(y_k + sigma_k <x_bar, a_k>)
    x+   = prox_{tau_k r}(x - tau_k (r_bar + w_k (y_k+ - y_k) a_k))
    x_bar = x+ + theta_k (x+ - x),    r_bar += (y_k+ - y_k) a_k / N

Loss ids: 0 squared, 1 smooth hinge (smoothing ``g``), 2 logistic (Newton in a bisection bracket, as
:func:`solvers.prox.prox_logistic_conj`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernels_incremental.losses import soft

__all__ = ["LOSS_IDS", "spdc_pass"]

LOSS_IDS = {"squared": 0, "smooth_hinge": 1, "logistic": 2}


@njit(cache=True)
def _logistic_conj_prox(w, s):
    """``prox_{s psi*}(w)``, ``psi*(u) = -u log(-u) + (1+u) log(1+u)`` on (-1, 0)."""
    lo = np.nextafter(-1.0, 0.0)
    hi = -2.2250738585072014e-308
    u = -0.5
    for _ in range(60):
        h = math.log1p(u) - math.log(-u) + (u - w) / s
        if h == 0.0:
            break
        if h < 0:
            lo = u
        else:
            hi = u
        dh = 1.0 / (1.0 + u) - 1.0 / u + 1.0 / s
        un = u - h / dh
        if not (lo < un < hi) or not math.isfinite(un):
            un = 0.5 * (lo + hi)
        done = abs(un - u) <= 1e-12 * max(1e-300, abs(u))
        u = un
        if done:
            break
    return u


@njit(cache=True)
def _conj_prox(kind, b, v, s, g):
    if kind == 0:
        return (v - s * b) / (1.0 + s)
    w = b * v
    if kind == 1:
        u = min(0.0, max(-1.0, (w - s) / (1.0 + s * g)))
    else:
        u = _logistic_conj_prox(w, s)
    return b * u


@njit(cache=True)
def spdc_pass(A, b, kind, g, draws, sigma, w, tau, theta, l1, l2, x, x_bar, y, r):
    """Run the iterations of ``draws`` in place on ``x, x_bar, y, r``; see the module docstring."""
    N, D = A.shape
    for k in draws:
        c = 0.0
        for j in range(D):
            c += A[k, j] * x_bar[j]
        y_new = _conj_prox(kind, b[k], y[k] + sigma[k] * c, sigma[k], g)
        dy = y_new - y[k]
        t, th, wd, dn = tau[k], theta[k], w[k] * dy, dy / N
        for j in range(D):
            a = A[k, j]
            v = x[j] - t * (r[j] + wd * a)
            if l1 > 0.0:
                v = soft(v, t * l1)
            xn = v / (1.0 + t * l2)
            x_bar[j] = xn + th * (xn - x[j])
            x[j] = xn
            r[j] += dn * a
        y[k] = y_new
