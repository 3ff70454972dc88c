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

from ..kernels.simplex_log import softmax_into
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
    for j in idx:
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


# ---- Prox-Finito (seed 001 Alg 3.3) on multinomial terms --------------------------------------------


@njit(cache=True)
def softmax_loss_prox(v, t, y, u):
    """``u = prox_{t phi}(v) = argmin_u phi(u) + |u - v|^2 / (2t)`` for ``phi(u) = logsumexp(u) - u_y``
    (the K-dimensional prox of one term), by Newton on ``u + t (softmax(u) - e_y) = v`` with the
    Jacobian ``diag(1 + t p) - t p p^T`` inverted by Sherman-Morrison, step halving on
    ``psi(u) = t phi(u) + |u - v|^2 / 2`` (strongly convex, so Newton with backtracking converges).
    Returns the number of Newton steps."""
    K = v.shape[0]
    p = np.empty(K)
    r = np.empty(K)
    dlt = np.empty(K)
    un = np.empty(K)
    for k in range(K):
        u[k] = v[k]
    psi = _psi(u, v, t, y, p)
    for it in range(100):
        # residual r = u + t (p - e_y) - v (p = softmax(u), left by _psi)
        rmax = 0.0
        for k in range(K):
            r[k] = u[k] + t * (p[k] - (1.0 if k == y else 0.0)) - v[k]
            if abs(r[k]) > rmax:
                rmax = abs(r[k])
        if rmax <= 1e-15 * (1.0 + t):
            return it
        # (diag(D) - t p p^T)^{-1} r, D = 1 + t p
        a = 0.0
        b = 0.0
        for k in range(K):
            dk = 1.0 + t * p[k]
            a += p[k] * r[k] / dk
            b += p[k] * p[k] / dk
        c = t * a / (1.0 - t * b)
        for k in range(K):
            dlt[k] = (r[k] + p[k] * c) / (1.0 + t * p[k])
        step = 1.0
        for _ in range(60):
            for k in range(K):
                un[k] = u[k] - step * dlt[k]
            psin = _psi(un, v, t, y, r)  # r is scratch here
            if psin <= psi + 1e-15 * (1.0 + abs(psi)):
                break
            step *= 0.5
        for k in range(K):
            u[k] = un[k]
        psi = _psi(u, v, t, y, p)
    return 100


@njit(cache=True, inline="always")
def _psi(u, v, t, y, p):
    """``t phi(u) + |u - v|^2 / 2``; leaves ``softmax(u)`` in ``p``."""
    lse = softmax_into(u, p)
    q = 0.0
    for k in range(u.shape[0]):
        q += (u[k] - v[k]) ** 2
    return t * (lse - u[y]) + 0.5 * q


@njit(cache=True)
def mn_prox_finito_epoch(X, data, indices, indptr, sparse, labels, idx, phi, s, Sphi, Sg, sqn, z, mu):
    """Prox-Finito (seed 001 Alg 3.3, Eq. 3.11) with ``eta = mu (n - 1)`` on multinomial terms
    ``f_j(W) = phi(W^T a_j) + (mu/2)|W|^2``; points ``phi`` (n, dK), term gradients stored as the
    K-vectors ``s`` (n, K) (``f'_j = a_j s_j^T + mu W``), ``Sphi = sum phi``, ``Sg = sum a_i s_i^T``.

    The prox ``argmin_W f_j(W) + (eta/2)|W - Z|^2`` is ``W = (eta Z - a_j beta^T) / (mu + eta)`` with
    ``beta = grad phi(u)`` and ``u = W^T a_j = prox_{t phi}(v)``, ``v = eta Z^T a_j / (mu + eta)``,
    ``t = |a_j|^2 / (mu + eta)`` (:func:`softmax_loss_prox`)."""
    n, K = s.shape
    dK = z.shape[0]
    eta = mu * (n - 1)
    v = np.empty(K)
    u = np.empty(K)
    beta = np.empty(K)
    for j in idx:
        for c in range(dK):
            rest = Sphi[c] - phi[j, c]
            z[c] = rest / (n - 1) - (mu * rest + Sg[c]) / eta
        # the data part of sum_{i != j} f'_i is Sg - a_j s_j^T
        for k in range(K):
            v[k] = 0.0
        if sparse:
            for p in range(indptr[j], indptr[j + 1]):
                a = data[p]
                base = indices[p] * K
                for k in range(K):
                    z[base + k] += a * s[j, k] / eta
                    v[k] += a * z[base + k]
        else:
            for col in range(X.shape[1]):
                a = X[j, col]
                if a != 0.0:
                    base = col * K
                    for k in range(K):
                        z[base + k] += a * s[j, k] / eta
                        v[k] += a * z[base + k]
        f = eta / (mu + eta)
        for k in range(K):
            v[k] *= f
        tt = sqn[j] / (mu + eta)
        if tt > 0.0:
            softmax_loss_prox(v, tt, labels[j], u)
            for k in range(K):
                beta[k] = (v[k] - u[k]) / tt
        else:
            for k in range(K):
                beta[k] = v[k]
            _softmax_minus_onehot(beta, labels[j])
        for c in range(dK):
            newp = f * z[c]
            Sphi[c] += newp - phi[j, c]
            phi[j, c] = newp
        g = 1.0 / (mu + eta)
        if sparse:
            for p in range(indptr[j], indptr[j + 1]):
                a = data[p]
                base = indices[p] * K
                for k in range(K):
                    phi[j, base + k] -= a * beta[k] * g
                    Sphi[base + k] -= a * beta[k] * g
                    Sg[base + k] += a * (beta[k] - s[j, k])
        else:
            for col in range(X.shape[1]):
                a = X[j, col]
                if a != 0.0:
                    base = col * K
                    for k in range(K):
                        phi[j, base + k] -= a * beta[k] * g
                        Sphi[base + k] -= a * beta[k] * g
                        Sg[base + k] += a * (beta[k] - s[j, k])
        for k in range(K):
            s[j, k] = beta[k]
