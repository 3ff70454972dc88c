"""Compiled SAGA/SAG and SVRG steps for the mixture likelihood (the linear pool's weights).

Term ``i`` of :class:`solvers.problems.mixture.MixtureLikelihood` is ``f_i(w) = -log(q_i . w)`` with
``q_i`` the agents' probabilities of item ``i``'s label: a linear model with the loss
``phi(u) = -log u``, so each term's gradient is one stored scalar times its row,
``f'_i(w) = s_i q_i`` with ``s_i = -1 / (q_i . w)`` (seed 001 section 4.4's one scalar per term). Every
step ends with the Euclidean projection onto the simplex (the prox of the constraint's indicator).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .loglinear_saga import project_simplex_inplace
from .losses import sgd_step_size


@njit(cache=True)
def _dot_row(Q, j, x):
    acc = 0.0
    for a in range(Q.shape[1]):
        acc += Q[j, a] * x[a]
    return acc


@njit(cache=True)
def mixture_init_table(Q, x, s, gbar):
    """``s_i = -1 / (q_i . x)`` for every term and ``gbar = (1/n) sum_i s_i q_i``."""
    n, A = Q.shape
    for a in range(A):
        gbar[a] = 0.0
    for i in range(n):
        s[i] = -1.0 / _dot_row(Q, i, x)
        for a in range(A):
            gbar[a] += s[i] * Q[i, a] / n


@njit(cache=True)
def mixture_saga_epoch(Q, idx, x, s, gbar, step, theta):
    """SAGA (``theta = 1``) or SAG (``theta = 1/n``, Eq. 4.4): ``x <- proj(x - step (theta
    (f'_j(x) - f'_j(phi_j)) + gbar))``, then the table and its mean are updated."""
    n, A = Q.shape
    work = np.empty(A)
    for j in idx:
        sn = -1.0 / _dot_row(Q, j, x)
        ds = sn - s[j]
        for a in range(A):
            x[a] -= step * (theta * ds * Q[j, a] + gbar[a])
            gbar[a] += ds * Q[j, a] / n
        s[j] = sn
        project_simplex_inplace(x, work)


@njit(cache=True)
def mixture_svrg_inner(Q, idx, x, s_snap, gdata, step, xsum):
    """SVRG's inner loop (seed 001 Alg 2.3): ``x <- proj(x - step ((s_j(x) - s_j(snap)) q_j + gdata))``;
    ``xsum`` (length 0 to skip) accumulates the iterates."""
    n, A = Q.shape
    work = np.empty(A)
    avg = xsum.shape[0] > 0
    for j in idx:
        ds = -1.0 / _dot_row(Q, j, x) - s_snap[j]
        for a in range(A):
            x[a] -= step * (ds * Q[j, a] + gdata[a])
        project_simplex_inplace(x, work)
        if avg:
            for a in range(A):
                xsum[a] += x[a]


@njit(cache=True)
def mixture_sgd_epoch(Q, idx, x, k0, schedule, g0, mu, xavg, avg_from):
    """SGD (seed 001 L392-404): ``x <- proj(x + g_k q_j / (q_j . x))`` with the schedules of
    :func:`solvers.kernels_incremental.loglinear_saga.loglinear_sgd_epoch`. Returns the new step count."""
    n, A = Q.shape
    work = np.empty(A)
    avg = xavg.shape[0] > 0
    k = k0
    for j in idx:
        st = sgd_step_size(schedule, g0, mu, k)
        sj = -1.0 / _dot_row(Q, j, x)
        for a in range(A):
            x[a] -= st * sj * Q[j, a]
        project_simplex_inplace(x, work)
        k += 1
        if avg and k > avg_from:
            for a in range(A):
                xavg[a] += (x[a] - xavg[a]) / (k - avg_from)
    return k
