"""Compiled SAGA epoch for the conditional log-linear problem (the log pool's weights).

Term ``i``: ``f_i(w) = log sum_k exp(<w, F_i[:, k]>) - <w, F_i[:, y_i]> + (l2/2)|w|^2`` with features
``F`` stored ``(n_items, dim, n_classes)`` (:class:`solvers.problems.loglinear.ConditionalLogLinear`).
Its gradient is ``F_i (p_i - e_{y_i}) + l2 w``, ``p_i = softmax(F_i^T w)``, so the SAGA table keeps one
K-vector per term (the class probabilities; seed 001 L1514-1518's "p - 1 values for p classes", with K
kept) and the update is SAGA's explicit-L2 form (L1522) followed by the Euclidean projection onto the
simplex when the problem is constrained (the prox of its indicator).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .losses import sgd_step_size


@njit(cache=True)
def project_simplex_inplace(v, work):
    d = v.shape[0]
    for a in range(d):
        work[a] = v[a]
    work.sort()
    css = 0.0
    theta = 0.0
    for r in range(d):
        u = work[d - 1 - r]
        css += u
        t = (css - 1.0) / (r + 1)
        if u - t > 0:
            theta = t
    for a in range(d):
        v[a] = max(v[a] - theta, 0.0)


@njit(cache=True)
def _probs(F, j, x, p):
    d, K = F.shape[1], F.shape[2]
    for k in range(K):
        p[k] = 0.0
    for a in range(d):
        xa = x[a]
        for k in range(K):
            p[k] += xa * F[j, a, k]
    m = p[0]
    for k in range(K):
        if p[k] > m:
            m = p[k]
    s = 0.0
    for k in range(K):
        p[k] = math.exp(p[k] - m)
        s += p[k]
    for k in range(K):
        p[k] /= s


@njit(cache=True)
def loglinear_init_table(F, labels, x, P, gbar):
    """P[i] = softmax(F_i^T x); gbar = (1/n) sum_i F_i (P_i - e_{y_i}) (data part)."""
    n, d, K = F.shape
    for a in range(d):
        gbar[a] = 0.0
    p = np.empty(K)
    for i in range(n):
        _probs(F, i, x, p)
        for k in range(K):
            P[i, k] = p[k]
        p[labels[i]] -= 1.0
        for a in range(d):
            acc = 0.0
            for k in range(K):
                acc += F[i, a, k] * p[k]
            gbar[a] += acc / n


@njit(cache=True)
def loglinear_saga_epoch(F, labels, idx, x, P, gbar, step, l2, simplex, theta):
    """One epoch of SAGA (``theta = 1``) or SAG in the form of Eq. 4.4 (``theta = 1/n``):
    ``x <- proj(rho x - step (theta (g_j - g_j^old) + gbar))`` with ``rho = 1 - step l2``."""
    n, d, K = F.shape
    p = np.empty(K)
    dlt = np.empty(K)
    work = np.empty(d)
    rho = 1.0 - step * l2
    for j in idx:
        _probs(F, j, x, p)
        for k in range(K):
            dlt[k] = p[k] - P[j, k]
            P[j, k] = p[k]
        for a in range(d):
            acc = 0.0
            for k in range(K):
                acc += F[j, a, k] * dlt[k]
            x[a] = rho * x[a] - step * (theta * acc + gbar[a])
            gbar[a] += acc / n
        if simplex:
            project_simplex_inplace(x, work)


@njit(cache=True)
def loglinear_svrg_inner(F, labels, idx, x, P_snap, gdata, step, l2, simplex, xsum):
    """SVRG's inner loop (seed 001 Alg 2.3) on the conditional log-linear problem:
    ``x <- proj(x - step (F_j (p_j(x) - P_snap_j) + gdata + l2 x))``, where ``P_snap`` (n, K) are the
    snapshot's class probabilities and ``gdata`` the data part of its full gradient (the labels
    cancel in ``f'_j(x) - f'_j(x_snap)``). ``xsum`` (length 0 to skip) accumulates the iterates."""
    n, d, K = F.shape
    p = np.empty(K)
    work = np.empty(d)
    avg = xsum.shape[0] > 0
    for j in idx:
        _probs(F, j, x, p)
        for k in range(K):
            p[k] -= P_snap[j, k]
        for a in range(d):
            acc = 0.0
            for k in range(K):
                acc += F[j, a, k] * p[k]
            x[a] -= step * (acc + gdata[a] + l2 * x[a])
        if simplex:
            project_simplex_inplace(x, work)
        if avg:
            for a in range(d):
                xsum[a] += x[a]


@njit(cache=True)
def loglinear_sgd_epoch(F, labels, idx, x, k0, schedule, g0, mu, l2, simplex, xavg, avg_from):
    """SGD (seed 001 L392-404) on the conditional log-linear problem:
    ``x <- proj(x - g_k (F_j (p_j(x) - e_{y_j}) + l2 x))`` with ``g_k`` = ``g0`` (schedule 0),
    ``g0 / (1 + g0 mu k)`` (1) or ``g0 / sqrt(1 + k)`` (2); ``xavg`` (length 0 to skip) is the running
    average of the iterates after step ``avg_from``. Returns the new step count."""
    n, d, K = F.shape
    p = np.empty(K)
    work = np.empty(d)
    avg = xavg.shape[0] > 0
    k = k0
    for j in idx:
        st = sgd_step_size(schedule, g0, mu, k)
        _probs(F, j, x, p)
        p[labels[j]] -= 1.0
        for a in range(d):
            acc = 0.0
            for c in range(K):
                acc += F[j, a, c] * p[c]
            work[a] = x[a] - st * (acc + l2 * x[a])
        for a in range(d):
            x[a] = work[a]
        if simplex:
            project_simplex_inplace(x, work)
        k += 1
        if avg and k > avg_from:
            for a in range(d):
                xavg[a] += (x[a] - xavg[a]) / (k - avg_from)
    return k
