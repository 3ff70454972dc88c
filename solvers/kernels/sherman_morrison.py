"""Seed 004 Algorithm 4 (repaired) as a compiled kernel: the SBM direction ``H_B^{-1} g_B`` by
Sherman-Morrison rank-one updates, ``O(d^2)`` per (item, outcome), no factorisation. Used by
``sbm(sherman_morrison=True)`` (:mod:`solvers.methods.stochastic_bound_majorization`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..bound import _bound_step

__all__ = ["sherman_morrison_direction"]


@njit(cache=True)
def sherman_morrison_direction(theta, Fb, scores, labels, w, lam, ascending=False):
    """Seed 004 Algorithm 4 (repaired): ``phi = H_B^{-1} g_B`` without factorising ``H_B``.

    Keeps ``M = (lam I + (1/m) sum w_i beta l l^T)^{-1}`` by Sherman-Morrison rank-one updates and
    ``phi = M grad`` with ``grad = lam theta + (1/m) sum_i w_i (mu_i - f_i(y_i))`` built up term by
    term. Repairs: the update ``U`` uses the OLD ``M``; the data term ``-f_i(y_i)`` enters once per
    item (not once per outcome); ``M``, ``phi`` and ``grad`` start afresh for every mini-batch;
    ``lam`` is not divided by ``t``.
    """
    m, K, d = Fb.shape
    M = np.zeros((d, d))
    for k in range(d):
        M[k, k] = 1.0 / lam
    grad = lam * theta
    phi = theta.copy()  # M grad
    gbar = np.zeros(d)
    l = np.zeros(d)
    Ml = np.zeros(d)
    for i in range(m):
        c = w[i] / m
        logz = -np.inf
        for k in range(d):
            gbar[k] = 0.0
        order = np.argsort(scores[i]) if ascending else np.arange(K)
        for jj in range(K + 1):
            if jj < K:
                j = order[jj]
                la = scores[i, j]
                if la == -np.inf:
                    continue
                for k in range(d):
                    l[k] = Fb[i, j, k] - gbar[k]
                if logz == -np.inf:
                    b = 0.0
                    kappa = 1.0
                    logz = la
                else:
                    b, kappa, logz = _bound_step(la, logz)
                if b > 0.0:
                    # U = coef (M l)(M l)^T with the OLD M; phi <- phi - U grad_old; M <- M - U
                    lMl = 0.0
                    Mlg = 0.0
                    for r in range(d):
                        acc = 0.0
                        for q in range(d):
                            acc += M[r, q] * l[q]
                        Ml[r] = acc
                        lMl += l[r] * acc
                        Mlg += acc * grad[r]
                    s = c * b
                    coef = s / (1.0 + s * lMl)
                    for r in range(d):
                        phi[r] -= coef * Mlg * Ml[r]
                        cr = coef * Ml[r]
                        for q in range(d):
                            M[r, q] -= cr * Ml[q]
                sc = c * kappa  # delta = c kappa l
                for k in range(d):
                    gbar[k] += kappa * l[k]
            else:  # the observed outcome, once per item: delta = -c f_i(y_i)
                sc = -c
                for k in range(d):
                    l[k] = Fb[i, labels[i], k]
            # phi <- phi + M_new delta ; grad <- grad + delta
            for r in range(d):
                acc = 0.0
                for q in range(d):
                    acc += M[r, q] * l[q]
                phi[r] += sc * acc
                grad[r] += sc * l[r]
    return phi, grad, M
