"""SAGA / SAG and SVRG / S2GD epochs for linear models, dense and sparse (just-in-time updates).

Updates (seed 001): SAGA Alg 4.1 in the explicit-L2 form of L1522-1525,

    x <- prox_{step l1 |.|}( (1 - step l2) x - step [ theta (s_new - s_old) a_j + gbar ] ),

with ``gbar = (1/n) sum_i s_i a_i`` the mean of the stored scalars times rows, read BEFORE the table
update (Eq. 4.1). ``theta = 1`` is SAGA; ``theta = 1/n`` is SAG in the SAGA-comparable form Eq. 4.4
(L1457), whose step is ``x - step * gbar_new``. SVRG Alg 2.3 (L560-580) is the same update with
the snapshot scalars ``s_snap`` in place of the table and a fixed ``g`` (mean gradient at the
snapshot, L2 part excluded).

Sparse rows use just-in-time updates (L1524 "as for SAG"; [ext] sklearn ``lagged_update``): a
coordinate not touched for ``s`` steps sees ``gbar_c`` constant, so the missed steps are applied in
closed form ``x_c <- rho^s x_c - step gbar_c (1 - rho^s)/(1 - rho)`` (tables ``pw[s] = rho^s``,
``geo[s] = sum_{t<s} rho^t``) when ``l1 = 0``, or one missed prox step at a time when ``l1 > 0``
(stopping as soon as the coordinate is stuck at 0). Everything is flushed at the end of an epoch.

Without an l1 term the sparse epochs use the scaled form of L1525 instead (``saga_sparse_epoch_scaled``,
``svrg_sparse_inner_scaled``): ``x = beta w`` with the scalar ``beta`` carrying the L2 shrink
``beta <- rho beta`` of every step, and the missed ``-step gbar_c`` steps of an untouched coordinate
applied from a running sum ``cs = sum_t step / beta_t`` ([ext] the ``wscale`` / ``cumulative_sums`` of
scikit-learn's ``sag_fast``): ``w_c <- w_c - (cs - cs_c) gbar_c`` with ``cs_c`` the value of ``cs`` when
``c`` was last brought up to date. The per-coordinate state ``(w_c, gbar_c, cs_c)`` lives in one row
of a work array, so a nonzero touches one cache line; one pass computes the margin, one applies the
step. ``beta`` is reset to 1 (everything flushed) when it falls below 1e-9 and at the end of the epoch.
Same iterates as the closed-form catch-up up to rounding.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .losses import SAFE_FASTMATH, loss_deriv, soft


@njit(cache=True, fastmath=True)
def saga_dense_epoch(loss, X, y, smoothing, idx, x, table, gbar, step, l2, l1, theta):
    n, d = X.shape
    rho = 1.0 - step * l2
    inv_n = 1.0 / n
    tl1 = step * l1
    for j in idx:
        u = 0.0
        for c in range(d):
            u += X[j, c] * x[c]
        s_new = loss_deriv(loss, u, y[j], smoothing)
        delta = s_new - table[j]
        c1 = step * theta * delta
        c2 = delta * inv_n
        if tl1 > 0.0:
            for c in range(d):
                a = X[j, c]
                x[c] = soft(rho * x[c] - c1 * a - step * gbar[c], tl1)
                gbar[c] += c2 * a
        else:
            for c in range(d):
                a = X[j, c]
                x[c] = rho * x[c] - c1 * a - step * gbar[c]
                gbar[c] += c2 * a
        table[j] = s_new


@njit(cache=True)
def _catch_up(x, c, s, rho, step, g, tl1, pw, geo):
    if s <= 0:
        return
    if tl1 <= 0.0:
        x[c] = pw[s] * x[c] - step * g * geo[s]
        return
    v = x[c]
    for _ in range(s):
        if v == 0.0 and abs(step * g) <= tl1:
            break
        v = soft(rho * v - step * g, tl1)
    x[c] = v


def geometric_tables(rho: float, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``pw[s] = rho^s`` and ``geo[s] = sum_{t<s} rho^t`` for s = 0..length."""
    s = np.arange(length + 1, dtype=np.float64)
    pw = rho**s
    geo = s.copy() if rho == 1.0 else (1.0 - pw) / (1.0 - rho)
    return pw, geo


@njit(cache=True, inline="always")
def _margin_catching_up(data, indices, p0, p1, x, g, last, k, rho, step, tl1, pw, geo):
    """``a_j . x`` over the row's non-zeros ``p0:p1``, bringing each coordinate it reads up to step
    ``k`` first (the just-in-time updates of the lazy sparse kernels)."""
    u = 0.0
    for p in range(p0, p1):
        c = indices[p]
        _catch_up(x, c, k - last[c], rho, step, g[c], tl1, pw, geo)
        last[c] = k
        u += data[p] * x[c]
    return u


@njit(cache=True, inline="always")
def _flush(x, g, last, m, rho, step, tl1, pw, geo):
    """Bring every coordinate up to the end of the epoch (step ``m``) and reset ``last``."""
    for c in range(x.shape[0]):
        _catch_up(x, c, m - last[c], rho, step, g[c], tl1, pw, geo)
        last[c] = 0


@njit(cache=True)
def saga_sparse_epoch(
    loss, data, indices, indptr, y, smoothing, idx, x, table, gbar, step, l2, l1, theta, last, pw, geo
):
    n = table.shape[0]
    rho = 1.0 - step * l2
    inv_n = 1.0 / n
    tl1 = step * l1
    m = idx.shape[0]
    for k in range(m):
        j = idx[k]
        p0 = indptr[j]
        p1 = indptr[j + 1]
        u = _margin_catching_up(data, indices, p0, p1, x, gbar, last, k, rho, step, tl1, pw, geo)
        s_new = loss_deriv(loss, u, y[j], smoothing)
        delta = s_new - table[j]
        c1 = step * theta * delta
        c2 = delta * inv_n
        for p in range(p0, p1):
            c = indices[p]
            a = data[p]
            v = rho * x[c] - c1 * a - step * gbar[c]
            if tl1 > 0.0:
                v = soft(v, tl1)
            x[c] = v
            gbar[c] += c2 * a
            last[c] = k + 1
        table[j] = s_new
    _flush(x, gbar, last, m, rho, step, tl1, pw, geo)


@njit(cache=True, fastmath=True)
def svrg_dense_inner(loss, X, y, smoothing, idx, x, s_snap, g, step, l2, l1, xsum):
    """One inner loop of SVRG; ``xsum`` (length 0 to skip) accumulates the iterates."""
    n, d = X.shape
    rho = 1.0 - step * l2
    tl1 = step * l1
    acc = xsum.shape[0] > 0
    for j in idx:
        u = 0.0
        for c in range(d):
            u += X[j, c] * x[c]
        delta = loss_deriv(loss, u, y[j], smoothing) - s_snap[j]
        c1 = step * delta
        if tl1 > 0.0:
            for c in range(d):
                x[c] = soft(rho * x[c] - c1 * X[j, c] - step * g[c], tl1)
        else:
            for c in range(d):
                x[c] = rho * x[c] - c1 * X[j, c] - step * g[c]
        if acc:
            for c in range(d):
                xsum[c] += x[c]


@njit(cache=True)
def svrg_sparse_inner(loss, data, indices, indptr, y, smoothing, idx, x, s_snap, g, step, l2, l1, last, pw, geo):
    rho = 1.0 - step * l2
    tl1 = step * l1
    m = idx.shape[0]
    for k in range(m):
        j = idx[k]
        p0 = indptr[j]
        p1 = indptr[j + 1]
        u = _margin_catching_up(data, indices, p0, p1, x, g, last, k, rho, step, tl1, pw, geo)
        c1 = step * (loss_deriv(loss, u, y[j], smoothing) - s_snap[j])
        for p in range(p0, p1):
            c = indices[p]
            v = rho * x[c] - c1 * data[p] - step * g[c]
            if tl1 > 0.0:
                v = soft(v, tl1)
            x[c] = v
            last[c] = k + 1
    _flush(x, g, last, m, rho, step, tl1, pw, geo)


#: rescale (flush every coordinate, reset beta to 1) when the scale beta falls below this
SCALE_FLOOR = 1e-9


def use_scaled(step: float, l2: float, l1: float, indptr: np.ndarray, dim: int) -> bool:
    """Whether the scaled sparse kernels apply and pay off: no l1 term, ``rho = 1 - step l2 > 0``, and
    the flushes (``dim`` work each, one every ``log(1e9)/-log(rho)`` steps) cost at most the mean row
    length per step (so with the default steps and the usual shapes; ``step l2 <= 1/3`` there)."""
    rho = 1.0 - step * l2
    if l1 > 0 or not rho > 0:
        return False
    n = indptr.shape[0] - 1
    nnz_row = (indptr[-1] - indptr[0]) / max(n, 1)
    return -math.log(rho) / -math.log(SCALE_FLOOR) * dim <= max(nnz_row, 1.0)


def unsigned(a: np.ndarray) -> np.ndarray:
    """The same (non-negative) index array viewed as unsigned, so that compiled loops index with it
    without numba's negative-index wraparound test (about 10% of a sparse epoch)."""
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint64)


def saga_sparse_epoch_scaled(loss, data, indices, indptr, y, smoothing, idx, x, table, gbar, step, l2, theta, st):
    """SAGA/SAG epoch on CSR rows without l1: ``x = beta w`` (L1525) and running-sum lazy steps.

    Same update as :func:`saga_sparse_epoch` with ``l1 = 0`` (module docstring); ``st`` is a
    ``(d, 3)`` work array (contents ignored on entry). ``x`` and ``gbar`` are read at the start and
    written back, fully up to date, at the end.
    """
    _saga_sparse_epoch_scaled(
        loss, data, unsigned(indices), unsigned(indptr), y, smoothing, idx, x, table, gbar, step, l2, theta, st
    )


@njit(cache=True, fastmath=SAFE_FASTMATH, boundscheck=False)
def _saga_sparse_epoch_scaled(loss, data, indices, indptr, y, smoothing, idx, x, table, gbar, step, l2, theta, st):
    n = table.shape[0]
    d = x.shape[0]
    rho = 1.0 - step * l2
    inv_n = 1.0 / n
    for c in range(d):
        st[c, 0] = x[c]
        st[c, 1] = gbar[c]
        st[c, 2] = 0.0
    beta = 1.0
    cs = 0.0
    for k in range(idx.shape[0]):
        j = idx[k]
        p0 = indptr[j]
        p1 = indptr[j + 1]
        u = 0.0
        for p in range(p0, p1):  # catch up (steps before k) and the margin
            c = indices[p]
            w = st[c, 0] - (cs - st[c, 2]) * st[c, 1]
            st[c, 0] = w
            u += data[p] * w
        s_new = loss_deriv(loss, beta * u, y[j], smoothing)
        delta = s_new - table[j]
        table[j] = s_new
        # x+ = rho x - step theta delta a_j - step gbar  <=>  beta+ = rho beta,
        # w+ = w - (step theta delta / beta+) a_j - (step / beta+) gbar   (gbar read before the update)
        beta *= rho
        b1 = step / beta
        a1 = theta * delta * b1
        cs += b1
        c2 = delta * inv_n
        for p in range(p0, p1):
            c = indices[p]
            a = data[p]
            g = st[c, 1]
            st[c, 0] -= a1 * a + b1 * g
            st[c, 1] = g + c2 * a
            st[c, 2] = cs
        if beta < SCALE_FLOOR:
            for c in range(d):
                st[c, 0] = beta * (st[c, 0] - (cs - st[c, 2]) * st[c, 1])
                st[c, 2] = 0.0
            beta = 1.0
            cs = 0.0
    for c in range(d):
        x[c] = beta * (st[c, 0] - (cs - st[c, 2]) * st[c, 1])
        gbar[c] = st[c, 1]


def svrg_sparse_inner_scaled(loss, data, indices, indptr, y, smoothing, idx, x, s_snap, g, step, l2, st):
    """SVRG inner loop on CSR rows without l1, scaled form (module docstring); ``st``: ``(d, 2)`` work array."""
    _svrg_sparse_inner_scaled(
        loss, data, unsigned(indices), unsigned(indptr), y, smoothing, idx, x, s_snap, g, step, l2, st
    )


@njit(cache=True, fastmath=SAFE_FASTMATH, boundscheck=False)
def _svrg_sparse_inner_scaled(loss, data, indices, indptr, y, smoothing, idx, x, s_snap, g, step, l2, st):
    d = x.shape[0]
    rho = 1.0 - step * l2
    for c in range(d):
        st[c, 0] = x[c]
        st[c, 1] = 0.0
    beta = 1.0
    cs = 0.0
    for k in range(idx.shape[0]):
        j = idx[k]
        p0 = indptr[j]
        p1 = indptr[j + 1]
        u = 0.0
        for p in range(p0, p1):
            c = indices[p]
            w = st[c, 0] - (cs - st[c, 1]) * g[c]
            st[c, 0] = w
            u += data[p] * w
        delta = loss_deriv(loss, beta * u, y[j], smoothing) - s_snap[j]
        beta *= rho
        b1 = step / beta
        a1 = delta * b1
        cs += b1
        for p in range(p0, p1):
            c = indices[p]
            st[c, 0] -= a1 * data[p] + b1 * g[c]
            st[c, 1] = cs
        if beta < SCALE_FLOOR:
            for c in range(d):
                st[c, 0] = beta * (st[c, 0] - (cs - st[c, 1]) * g[c])
                st[c, 1] = 0.0
            beta = 1.0
            cs = 0.0
    for c in range(d):
        x[c] = beta * (st[c, 0] - (cs - st[c, 1]) * g[c])
