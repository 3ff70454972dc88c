"""SDCA for multinomial (softmax) logistic regression: one K-dimensional dual per term.

Seed 001 section 2.3.2 (L493-503): for a linear classifier the dual variables live in the
r-dimensional space of the loss (here ``K``), with ``W = -(1/(mu n)) sum_i a_i beta_i^T`` in the
seed's sign convention (``beta_i -> grad phi_i(W^T a_i) = softmax(W^T a_i) - e_{y_i}`` at the
optimum). The loss ``phi(z) = logsumexp(z) - z_y`` has the conjugate
``phi*(beta) = sum_k p_k log p_k`` with ``p = beta + e_y`` on the probability simplex (negative
entropy; ``+inf`` off it), so every iterate below keeps ``beta_j + e_{y_j}`` on the simplex: both
ends of each step are on it. The exact coordinate step has no usable closed form for this loss
(the seed, L472: "the subproblem solve is not fast enough"); the two other steps of L479-491 are
here: the interval line search (bisection on the derivative) and the constant step
``s = mu n / (mu n + L)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .multinomial import _logits_dense, _logits_sparse, _softmax_minus_onehot


@njit(cache=True)
def mn_sdca_epoch(X, data, indices, indptr, sparse, labels, idx, beta, x, sqn, mu, variant, sconst):
    """One SDCA pass over ``idx``. ``beta`` (n, K) duals, ``x`` the flattened W (d x K, row-major).

    variant 1: interval line search over ``s in [0, 1]`` of
    ``phi*(beta_j + s d) + (mu n / 2) |W - (s / (mu n)) a_j d^T|^2`` with
    ``d = softmax(W^T a_j) - e_y - beta_j`` (its derivative
    ``sum_k d_k (log p_k(s) - z_k) + s |a_j|^2 |d|^2 / (mu n)`` is monotone; 50 halvings);
    variant 2: constant ``s = sconst``.
    """
    n, K = beta.shape
    mun = mu * n
    z = np.empty(K)
    dd = np.empty(K)
    for t in range(idx.shape[0]):
        j = idx[t]
        q = sqn[j]
        if q == 0.0:
            continue
        if sparse:
            _logits_sparse(data, indices, indptr, j, x, z)
        else:
            _logits_dense(X, j, x, z)
        for k in range(K):
            dd[k] = z[k]
        _softmax_minus_onehot(dd, labels[j])  # dd = u = grad phi_j
        nd2 = 0.0
        for k in range(K):
            dd[k] -= beta[j, k]
            nd2 += dd[k] * dd[k]
        if nd2 == 0.0:
            continue
        y = labels[j]
        if variant == 2:
            s = sconst
        else:
            k2 = q * nd2 / mun
            g0 = _slope(beta, j, y, dd, z, 0.0, 0.0)
            g1 = _slope(beta, j, y, dd, z, 1.0, k2)
            if g0 >= 0.0:
                s = 0.0
            elif g1 <= 0.0:
                s = 1.0
            else:
                lo = 0.0
                hi = 1.0
                for _ in range(50):
                    mid = 0.5 * (lo + hi)
                    if _slope(beta, j, y, dd, z, mid, k2 * mid) > 0.0:
                        hi = mid
                    else:
                        lo = mid
                s = 0.5 * (lo + hi)
        if s == 0.0:
            continue
        c = -s / mun
        for k in range(K):
            beta[j, k] += s * dd[k]
        if sparse:
            for p in range(indptr[j], indptr[j + 1]):
                a = c * data[p]
                base = indices[p] * K
                for k in range(K):
                    x[base + k] += a * dd[k]
        else:
            for col in range(X.shape[1]):
                a = c * X[j, col]
                if a != 0.0:
                    base = col * K
                    for k in range(K):
                        x[base + k] += a * dd[k]


@njit(cache=True, inline="always")
def _slope(beta, j, y, dd, z, s, quad):
    """Derivative in ``s`` of the line-search objective (``quad = s |a_j|^2 |d|^2 / (mu n)``)."""
    K = dd.shape[0]
    g = quad
    for k in range(K):
        p = beta[j, k] + s * dd[k] + (1.0 if k == y else 0.0)
        if dd[k] != 0.0:
            if p <= 0.0:
                g += -np.inf if dd[k] > 0.0 else np.inf
            else:
                g += dd[k] * (math.log(p) - z[k])
    return g


@njit(cache=True)
def mn_sdca_dual_terms(beta, labels):
    """``sum_i phi*(beta_i)`` (negative entropies of ``beta_i + e_{y_i}``); ``inf`` off the simplex."""
    n, K = beta.shape
    r = 0.0
    for i in range(n):
        y = labels[i]
        for k in range(K):
            p = beta[i, k] + (1.0 if k == y else 0.0)
            if p < -1e-12:
                return np.inf
            if p > 0.0:
                r += p * math.log(p)
    return r
