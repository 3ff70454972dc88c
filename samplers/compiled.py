"""Compiled (numba) mini-batch gradients and step loops of SGLD, SGHMC and SGNHT.

The state machines of :mod:`samplers.sgmcmc` take one step per Python call; for the models with a
compiled mini-batch gradient (:func:`compiled_terms`: Bayesian logistic regression, the conjugate
Gaussian) the driver instead runs a block of ``K`` steps in one call of the loops below, which are
the same updates line for line (seed 000 Eq. 4.31, Alg. 4.2 as a heavy-ball step, Alg. 4.3) on
randomness drawn beforehand with the run's NumPy generator (the mini-batch indices ``(K, n)`` and the
standard normals ``(K, D)``). Tests feed the per-step and the compiled forms the same draws and
compare their paths.

The mini-batch potential gradient is Eq. (4.27), ``grad U~ = -grad log p(theta) - (N/n) sum_batch
grad log p(x_i | theta)``; each ``*_grad(data, theta, idx, out)`` writes it into ``out``. Both models
have a Gaussian prior ``N(0, prior_var I)`` and support all of R^D.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from .models.gaussian import Gaussian
from .models.logistic import LogisticRegression

#: reassociation lets the dot products vectorise (SIMD); NaN and inf keep their IEEE meaning, so a
#: non-finite gradient still stops the run
FAST = {"reassoc", "contract"}


@njit(cache=True, error_model="numpy", fastmath=FAST)
def logistic_grad(data, theta, idx, out):  # pragma: no cover - compiled
    """``theta/prior_var - (N/n) sum_i y_i x_i sigma(-y_i x_i^T theta)`` (the seed's BLR, l.2289)."""
    yX, prior_var, N = data
    D = theta.size
    for d in range(D):
        out[d] = theta[d] / prior_var
    c = N / idx.size
    for j in range(idx.size):
        i = idx[j]  # rows read in place (no array views: their reference counting costs per row)
        s = 0.0
        for d in range(D):
            s += yX[i, d] * theta[d]
        coef = c / (1.0 + np.exp(s))
        for d in range(D):
            out[d] -= coef * yX[i, d]


@njit(cache=True, error_model="numpy", fastmath=FAST)
def gaussian_grad(data, theta, idx, out):  # pragma: no cover - compiled
    """``theta/tau^2 - (N/n) sum_i (x_i - theta)/s^2`` (the conjugate Gaussian mean)."""
    x, s2, prior_var, N = data
    D = theta.size
    for d in range(D):
        out[d] = theta[d] / prior_var
    c = N / (idx.size * s2)
    for j in range(idx.size):
        i = idx[j]
        for d in range(D):
            out[d] -= c * (x[i, d] - theta[d])


def compiled_terms(model: Any) -> tuple[Any, tuple] | None:
    """``(gradient function, data)`` of a model with a compiled mini-batch gradient, else None."""
    if type(model) is LogisticRegression:
        yX = np.ascontiguousarray(model.y[:, None] * model.X)
        return logistic_grad, (yX, float(model.prior_var), float(model.n_data))
    if type(model) is Gaussian:
        return gaussian_grad, (np.ascontiguousarray(model.x), model.s2, model.prior_var, float(model.n_data))
    return None


@njit(cache=True, error_model="numpy")
def sgld_loop(grad, data, x, k0, h, b, decay, idx, noise, out):  # pragma: no cover - compiled
    """``K`` SGLD steps (Eq. 4.31): ``x <- x - h_t grad U~(x) + sqrt(2 h_t) n_t``,
    ``h_t = h ((b + t)/b)^-decay``; positions into ``out`` ``(K, D)``."""
    K, D = noise.shape
    g = np.empty(D)
    for t in range(K):
        ht = h * ((b + k0 + t) / b) ** (-decay)
        grad(data, x, idx[t], g)
        sq = np.sqrt(2.0 * ht)
        for d in range(D):
            x[d] = (x[d] - ht * g[d]) + sq * noise[t, d]
            out[t, d] = x[d]


@njit(cache=True, error_model="numpy")
def sghmc_loop(
    grad, data, x, xp, g, k0, h, b, every, resample, noise, rows, which, gather, out_x, out_p
):  # pragma: no cover
    """``K`` SGHMC steps in heavy-ball form (Alg. 4.2): ``x+ = x - h^2 g + b (x - x_prev')`` with
    ``b = 1 - hA`` and ``x_prev' = x_prev - h c_t/b``, ``c_t`` the step's velocity noise (``noise[t]``,
    ``C n_t``); every ``every`` steps (``every > 0``) the momentum is first redrawn (``x_prev = x - h
    r_t``). ``g`` is the gradient at ``x`` (updated in place), the one after step ``t`` on the
    mini-batch ``rows[which[t]]``. ``gather`` (a batch reused by consecutive steps): the batch's items
    (``data[0]``'s rows) are copied once into a contiguous buffer, which the gradients then read."""
    K, D = noise.shape
    n = rows.shape[1]
    items = data[0]
    buf = np.empty((n if gather else 0, items.shape[1]))
    local = (buf,) + data[1:]  # the model's data with the batch's items in place of all N
    ar = np.arange(n)
    cur = -1
    for t in range(K):
        k = k0 + t
        if every > 0 and k % every == 0 and k > 0:
            for d in range(D):
                xp[d] = x[d] - h * resample[t, d]
        for d in range(D):
            xpn = xp[d] - h * noise[t, d] / b
            xn = (x[d] - (h * h) * g[d]) + b * (x[d] - xpn)
            xp[d] = x[d]
            x[d] = xn
            out_x[t, d] = xn
            out_p[t, d] = (xn - xp[d]) / h
        r = which[t]
        if gather:
            if r != cur:
                for j in range(n):
                    i = rows[r, j]
                    for e in range(items.shape[1]):
                        buf[j, e] = items[i, e]
                cur = r
            grad(local, x, ar, g)
        else:
            grad(data, x, rows[r], g)


@njit(cache=True, error_model="numpy")
def sgnht_loop(grad, data, theta, p, xi, h, A, idx, noise, out_x, out_p, out_xi):  # pragma: no cover
    """``K`` SGNHT steps (Alg. 4.3): ``p <- p - h g - h xi p + sqrt(2Ah) n_t``,
    ``xi <- xi + h (p^T p/D - 1)``, ``theta <- theta + h p``; returns the last ``xi``."""
    K, D = noise.shape
    g = np.empty(D)
    c = np.sqrt(2.0 * A * h)
    for t in range(K):
        grad(data, theta, idx[t], g)
        hx = h * xi
        pp = 0.0
        for d in range(D):
            p[d] = ((p[d] - h * g[d]) - hx * p[d]) + c * noise[t, d]
            pp += p[d] * p[d]
        xi = xi + h * (pp / D - 1.0)
        for d in range(D):
            theta[d] += h * p[d]
            out_x[t, d] = theta[d]
            out_p[t, d] = p[d]
        out_xi[t] = xi
    return xi
