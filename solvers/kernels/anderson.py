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
from .simplex_log import log_image_with, normalise_log, normalise_log_with

RIDGE = 1e-12
"""Relative ridge of the least-squares normal equations (times their mean diagonal)."""


@njit(cache=True, error_model="numpy")
def anderson_size(K, m):
    """Floats of the scratch :func:`anderson_step` uses."""
    return (2 * m + 4) * K + m * m + m * m + 2 * m


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
    x = scr[o + 2 * m : o + 2 * m + K]
    return dF, dG, fprev, gprev, gu, gram, lc, scr[o : o + m], scr[o + m : o + 2 * m], x


@njit(cache=True, error_model="numpy")
def plain_image(u, T, Wsum, gu):
    """``gu <- G(u) = log(T / Wsum)`` normalised (the seed's update, without touching ``u``)."""
    for k in range(u.shape[0]):
        gu[k] = np.log(T[k] / Wsum)
    normalise_log(gu)


@njit(cache=True, fastmath={"nsz", "contract", "reassoc"})
def _dot(a, b):
    """``a · b`` (re-associated, so LLVM vectorises it: the step's ``2 m`` products of length ``K`` were
    latency-bound scalar sums)."""
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s


@njit(cache=True, fastmath={"nsz", "contract", "reassoc"})
def _far(u, v, bound):
    """How many entries have ``|u - v| > bound`` or are not finite (branch-free, so vectorised)."""
    c = 0
    for k in range(u.shape[0]):
        c += 0 if abs(u[k] - v[k]) <= bound else 1
    return c


@njit(cache=True, error_model="numpy")
def anderson_step(u, T, Wsum, n_hist, pos, m, scr, max_step):
    """One accelerated update of ``u`` (in place) from the spending ``T`` at ``u``. ``n_hist`` is
    the number of stored differences (-1: no previous step either), ``pos`` the ring slot the next
    one goes to; an extrapolation moving an entry more than ``max_step`` from the plain step (or not
    finite) is replaced by the plain step and the history cleared. Returns the new ``(n_hist, pos)``;
    :func:`plain_fallback` reads ``G(u)`` from ``scr`` if the caller rejects the step."""
    K = u.shape[0]
    views = _views(scr, K, m)
    # G(u) = log(T / Wsum) normalised: Wsum cancels in the normalisation; vectorised log and exp
    # (three scalar libm calls an entry were 13 % of a Rényi aggregate at K = 4,096, A = 100)
    log_image_with(T, views[4], views[9])
    return anderson_update(u, n_hist, pos, m, scr, max_step)


@njit(cache=True, error_model="numpy")
def image_slot(scr, K, m):
    """The view of ``scr`` that :func:`anderson_update` reads the plain image ``G(u)`` from."""
    return _views(scr, K, m)[4]


@njit(cache=True, error_model="numpy")
def anderson_update(u, n_hist, pos, m, scr, max_step):
    """:func:`anderson_step` once the caller has written the plain image ``G(u)`` (normalised) into
    :func:`image_slot` (a caller that has it already, as the Rényi map's ``r + (log mix - r)``, saves
    the ``log`` and the normalisation)."""
    K = u.shape[0]
    dF, dG, fprev, gprev, gu, gram, lc, rhs, gam, x = _views(scr, K, m)
    if n_hist >= 0:
        for k in range(K):
            dF[pos, k] = gu[k] - u[k] - fprev[k]
            dG[pos, k] = gu[k] - gprev[k]
        if n_hist < m:
            n_hist += 1
        for j in range(n_hist):
            s = _dot(dF[pos], dF[j])
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
            rhs[j] = _dot(dF[j], fprev)
            for i in range(n):
                H[j, i] = gram[j, i]
            H[j, j] += ridge
        if tr > 0.0 and cho_factor(H, H, 1e-14, False):
            cho_solve(H, rhs[:n], gam[:n])
            solved = True
            for k in range(K):
                u[k] = gu[k]
            for j in range(n):  # row by row: each a vectorised update of u
                c = gam[j]
                row = dG[j]
                for k in range(K):
                    u[k] -= c * row[k]
    if solved and _far(u, gu, max_step) > 0:  # an extrapolation far from the plain step (or not finite)
        solved = False  # is not trusted
        n_hist = 0
    if not solved:
        for k in range(K):
            u[k] = gu[k]
    normalise_log_with(u, x)
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
