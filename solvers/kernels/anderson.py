"""Anderson acceleration (type II; Walker & Ni 2011) of a fixed point on log-probabilities.

The maps it serves have the form ``u <- G(u) = log(T(u) / s)`` normalised (``logsumexp = 0``): the
seed's market update (spending ``T``, wealth ``s``; :mod:`markets.kernels.anderson`) and the Rényi
aggregate's map (``T`` the mixture ``Σ_i w'_i Q_i``, ``s = 1``; seed 000 Eq. 2.8,
:mod:`aggregators.renyi_anderson`). Both have the Jacobian ``(1 - g)(I - D⁻¹ Σ_i c_i Q_i Q_iᵀ)``:
eigenvalue ``1 - g`` on all but at most ``A`` directions, the rest spread in ``[0, 1 - g]``. The plain
iteration contracts by ``1 - g`` per pass; Anderson's least-squares combination of the last ``m``
steps (a GMRES-like method on the fixed point) removes the clustered eigenvalue in one step and the
spread ones at a Krylov rate, at one pass plus ``O(K m)`` per iteration, never a ``K x K`` matrix.

Each step: ``f = G(u) - u``; with the last ``m`` differences ``dF`` of ``f`` and ``dG`` of ``G(u)``,
``gamma = argmin |f - dF gamma|`` (normal equations with a relative ridge of :data:`RIDGE`, Cholesky
of :mod:`solvers.kernels.cholesky_factor`), and ``u <- G(u) - dG gamma``. The callers' loops hold
their own safeguards (rejected steps, stalls, the plain fixed point as a last resort).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .cholesky import cho_solve
from .cholesky_factor import cho_factor
from .simplex_log import normalise_log

RIDGE = 1e-12
"""Relative ridge of the least-squares normal equations (times their mean diagonal)."""


@njit(cache=True, error_model="numpy")
def anderson_size(K, m):
    """Floats of the scratch :func:`anderson_step` uses."""
    return (2 * m + 3) * K + m * m + m * m + 2 * m


@njit(cache=True, error_model="numpy")
def _views(scr, K, m):
    dF = scr[: m * K].reshape((m, K))
    dG = scr[m * K : 2 * m * K].reshape((m, K))
    o = 2 * m * K
    fprev = scr[o : o + K]
    gprev = scr[o + K : o + 2 * K]
    gu = scr[o + 2 * K : o + 3 * K]
    o += 3 * K
    gram = scr[o : o + m * m].reshape((m, m))
    lc = scr[o + m * m : o + 2 * m * m].reshape((m, m))
    o += 2 * m * m
    return dF, dG, fprev, gprev, gu, gram, lc, scr[o : o + m], scr[o + m : o + 2 * m]


@njit(cache=True, error_model="numpy")
def plain_image(u, T, Wsum, gu):
    """``gu <- G(u) = log(T / Wsum)`` normalised (the seed's update, without touching ``u``)."""
    for k in range(u.shape[0]):
        gu[k] = np.log(T[k] / Wsum)
    normalise_log(gu)


@njit(cache=True, error_model="numpy")
def anderson_step(u, T, Wsum, n_hist, pos, m, scr, max_step):
    """One accelerated update of ``u`` (in place) from the spending ``T`` at ``u``. ``n_hist`` is
    the number of stored differences (-1: no previous step either), ``pos`` the ring slot the next
    one goes to; an extrapolation moving an entry more than ``max_step`` from the plain step (or not
    finite) is replaced by the plain step and the history cleared. Returns the new ``(n_hist, pos)``;
    :func:`plain_fallback` reads ``G(u)`` from ``scr`` if the caller rejects the step."""
    K = u.shape[0]
    dF, dG, fprev, gprev, gu, gram, lc, rhs, gam = _views(scr, K, m)
    plain_image(u, T, Wsum, gu)
    if n_hist >= 0:
        for k in range(K):
            dF[pos, k] = gu[k] - u[k] - fprev[k]
            dG[pos, k] = gu[k] - gprev[k]
        if n_hist < m:
            n_hist += 1
        for j in range(n_hist):
            s = 0.0
            for k in range(K):
                s += dF[pos, k] * dF[j, k]
            gram[pos, j] = s
            gram[j, pos] = s
        pos = (pos + 1) % m
    else:
        n_hist = 0
    for k in range(K):
        fprev[k] = gu[k] - u[k]
        gprev[k] = gu[k]
    solved = False
    if n_hist > 0:
        n = n_hist
        tr = 0.0
        for j in range(n):
            tr += gram[j, j]
        ridge = RIDGE * tr / n
        H = lc[:n, :n]  # factorised in place (cho_factor reads each entry before writing it)
        for j in range(n):
            s = 0.0
            for k in range(K):
                s += dF[j, k] * fprev[k]
            rhs[j] = s
            for i in range(n):
                H[j, i] = gram[j, i]
            H[j, j] += ridge
        if tr > 0.0 and cho_factor(H, H, 1e-14, False):
            cho_solve(H, rhs[:n], gam[:n])
            solved = True
            for k in range(K):
                v = gu[k]
                for j in range(n):
                    v -= gam[j] * dG[j, k]
                u[k] = v
    if solved:  # an extrapolation far from the plain step (or not finite) is not trusted
        for k in range(K):
            if not (abs(u[k] - gu[k]) <= max_step):
                solved = False
                n_hist = 0
                break
    if not solved:
        for k in range(K):
            u[k] = gu[k]
    normalise_log(u)
    return n_hist, pos


@njit(cache=True, error_model="numpy")
def plain_fallback(u, K, m, scr):
    """Replace a rejected accelerated ``u`` by the plain step ``G`` of the previous iterate (kept
    in ``scr`` by :func:`anderson_step`)."""
    gu = _views(scr, K, m)[4]
    for k in range(K):
        u[k] = gu[k]


@njit(cache=True, error_model="numpy")
def track_best(res, best, stalled, rejected, n_hist, m):
    """The stall safeguard of the callers' loops after a step of residual ``res``: a new lowest
    residual resets the count; no new best in ``m + 1`` steps counts as a rejection and clears the
    history (``n_hist = -1``: the next step is a plain one). Returns ``(best, stalled, rejected, n_hist)``."""
    if res < best:
        return res, 0, rejected, n_hist
    stalled += 1
    if stalled > m:
        return best, 0, rejected + 1, -1
    return best, stalled, rejected, n_hist
