"""Compiled (numba) per-sample loops for multinomial (softmax) logistic regression.

Problem (:class:`solvers.problems.linear_models.MultinomialLogistic`)::

    F(W) = (1/n) sum_i [ logsumexp(W^T a_i) - (W^T a_i)_{y_i} ] + (l2/2)|W|^2 + l1 |W|_1,

``W`` of shape (d, K) stored as ``x`` flattened row-major (``W[c, k] = x[c K + k]``). Term ``i``'s
gradient is ``a_i s_i^T + l2 W`` with ``s_i = softmax(W^T a_i) - e_{y_i}``, the gradient of the term
w.r.t. its K logits. The seed's storage argument (seed 001 section 4.4, L1514-1518: "p - 1 values
for p classes") generalised: the table methods store ONE K-vector ``s_i`` per term (K kept, not
K - 1), never a (d K)-vector.

Kernels (the same updates as the binary kernels of :mod:`.variance_reduced` and
:mod:`.table_methods`, with the scalar ``phi'`` replaced by the K-vector ``s`` and a row of ``x``
replaced by a row of ``W``):

- SAGA / SAG, seed 001 Alg 4.1 / Eq. 4.1 in the explicit-L2 form of L1522-1525
  (``theta = 1`` SAGA, ``theta = 1/n`` SAG in the form of Eq. 4.4)::

      W <- prox_{step l1}( (1 - step l2) W - step [ theta a_j (s_new - s_old)^T + Gbar ] ),
      Gbar = (1/n) sum_i a_i s_i^T  (read before the table update);

- SVRG / S2GD (Alg 2.3, L560-580): the same with the snapshot vectors ``s_snap`` and a fixed ``G``;
- SGD (section 2.1, L392-404): ``W <- prox( (1 - g_k l2) W - g_k a_j s_j(W)^T )``;
- Finito / MISO (Alg 3.1, Eqs. 3.1-3.2): ``w = c_phi Sphi - c_g Sg``, ``Sg = sum_i a_i s_i^T``.

Sparse (CSR) rows use the just-in-time updates of the binary kernels: the K entries of a feature
row of ``W`` are touched together, so ``last`` is kept per feature (d entries) and a feature
untouched for ``s`` steps is caught up in closed form ``W_c <- rho^s W_c - step Gbar_c geo[s]``
(``l1 = 0``) or one missed prox step at a time (``l1 > 0``); everything is flushed at the epoch end.

SDCA and Prox-Finito need the prox of one term, a K-dimensional inner solve for the softmax loss:
not implemented (those solvers do not apply to ``MultinomialLogistic``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..kernels.simplex_log import softmax_into
from .losses import l1_step_and_average, sgd_step_size, soft


@njit(cache=True, inline="always")
def _softmax_minus_onehot(z, y):
    """z <- softmax(z) - e_y in place (stable); returns logsumexp(z) - z_y (the term's loss)."""
    zy = z[y]
    lse = softmax_into(z, z)
    z[y] -= 1.0
    return lse - zy


@njit(cache=True, inline="always")
def _logits_dense(X, j, x, z):
    d = X.shape[1]
    K = z.shape[0]
    for k in range(K):
        z[k] = 0.0
    for c in range(d):
        a = X[j, c]
        if a != 0.0:
            base = c * K
            for k in range(K):
                z[k] += a * x[base + k]


@njit(cache=True, inline="always")
def _logits_sparse(data, indices, indptr, j, x, z):
    K = z.shape[0]
    for k in range(K):
        z[k] = 0.0
    for p in range(indptr[j], indptr[j + 1]):
        a = data[p]
        base = indices[p] * K
        for k in range(K):
            z[k] += a * x[base + k]


@njit(cache=True)
def multinomial_scores(X, data, indices, indptr, sparse, labels, x, S):
    """S[i] = softmax(W^T a_i) - e_{y_i} for every term; returns sum_i of the term losses (one pass)."""
    n, K = S.shape
    z = np.empty(K)
    total = 0.0
    for i in range(n):
        if sparse:
            _logits_sparse(data, indices, indptr, i, x, z)
        else:
            _logits_dense(X, i, x, z)
        total += _softmax_minus_onehot(z, labels[i])
        for k in range(K):
            S[i, k] = z[k]
    return total


# ---- SAGA / SAG -----------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _to_kd(x, K, out):
    """out[k, c] = x[c K + k]: the dense kernels work on W^T (K x d) so both inner loops run over d."""
    d = out.shape[1]
    for c in range(d):
        for k in range(K):
            out[k, c] = x[c * K + k]


@njit(cache=True, inline="always")
def _from_kd(src, K, x):
    d = src.shape[1]
    for c in range(d):
        for k in range(K):
            x[c * K + k] = src[k, c]


@njit(cache=True, inline="always")
def _logits_kd(X, j, xt, z):
    K, d = xt.shape
    for k in range(K):
        acc = 0.0
        for c in range(d):
            acc += X[j, c] * xt[k, c]
        z[k] = acc


@njit(cache=True, fastmath=True)
def mn_saga_dense_epoch(X, labels, idx, x, table, gbar, step, l2, l1, theta):
    """One SAGA (theta = 1) / SAG (theta = 1/n) epoch over ``idx`` on dense rows (module docstring).

    ``x`` and ``gbar`` are copied to (K x d) working arrays for the epoch (unit-stride loops over
    the d features; about 2x faster than looping over the K classes innermost) and copied back.
    """
    n, d = X.shape
    K = table.shape[1]
    rho = 1.0 - step * l2
    tl1 = step * l1
    inv_n = 1.0 / n
    z = np.empty(K)
    xt = np.empty((K, d))
    gt = np.empty((K, d))
    _to_kd(x, K, xt)
    _to_kd(gbar, K, gt)
    for j in idx:
        _logits_kd(X, j, xt, z)
        _softmax_minus_onehot(z, labels[j])
        for k in range(K):
            dk = z[k] - table[j, k]
            table[j, k] = z[k]
            ck = step * theta * dk
            nk = dk * inv_n
            if tl1 > 0.0:
                for c in range(d):
                    a = X[j, c]
                    xt[k, c] = soft(rho * xt[k, c] - ck * a - step * gt[k, c], tl1)
                    gt[k, c] += nk * a
            else:
                for c in range(d):
                    a = X[j, c]
                    xt[k, c] = rho * xt[k, c] - ck * a - step * gt[k, c]
                    gt[k, c] += nk * a
    _from_kd(xt, K, x)
    _from_kd(gt, K, gbar)


@njit(cache=True, inline="always")
def _packed(x, g, K):
    """w2[c] = (W[c, :], G[c, :]): a feature's weights and its mean-gradient row side by side, so a
    nonzero of a sparse row touches one contiguous 2K block (the sparse kernels are memory-bound)."""
    d = x.shape[0] // K
    w2 = np.empty((d, 2 * K))
    for c in range(d):
        for k in range(K):
            w2[c, k] = x[c * K + k]
            w2[c, K + k] = g[c * K + k]
    return w2


@njit(cache=True, inline="always")
def _unpack(w2, K, x, g):
    d = w2.shape[0]
    for c in range(d):
        for k in range(K):
            x[c * K + k] = w2[c, k]
            g[c * K + k] = w2[c, K + k]


@njit(cache=True, inline="always")
def _catch_up_w2(w2, c, K, s, rho, step, tl1, pw, geo):
    """Apply the ``s`` missed steps to feature ``c`` (its G row constant meanwhile)."""
    if s <= 0:
        return
    if tl1 <= 0.0:
        ps = pw[s]
        gs = step * geo[s]
        for k in range(K):
            w2[c, k] = ps * w2[c, k] - gs * w2[c, K + k]
        return
    for k in range(K):
        v = w2[c, k]
        gk = step * w2[c, K + k]
        for _ in range(s):
            if v == 0.0 and abs(gk) <= tl1:
                break
            v = soft(rho * v - gk, tl1)
        w2[c, k] = v


@njit(cache=True, inline="always")
def _residual_jit(data, indices, indptr, j, label, w2, K, last, t, rho, step, tl1, pw, geo, z):
    """``z = softmax(W^T a_j) - e_label`` over row ``j``'s non-zeros, bringing each feature it reads up
    to step ``t`` first (just-in-time updates); returns the row's span ``(p0, p1)`` in ``data``."""
    p0 = indptr[j]
    p1 = indptr[j + 1]
    for k in range(K):
        z[k] = 0.0
    for p in range(p0, p1):
        c = indices[p]
        _catch_up_w2(w2, c, K, t - last[c], rho, step, tl1, pw, geo)
        last[c] = t
        a = data[p]
        for k in range(K):
            z[k] += a * w2[c, k]
    _softmax_minus_onehot(z, label)
    return p0, p1


@njit(cache=True, inline="always")
def _flush_w2(w2, K, last, m, rho, step, tl1, pw, geo):
    """Bring every feature up to the end of the epoch (step ``m``) and reset ``last``."""
    for c in range(w2.shape[0]):
        _catch_up_w2(w2, c, K, m - last[c], rho, step, tl1, pw, geo)
        last[c] = 0


@njit(cache=True)
def mn_saga_sparse_epoch(data, indices, indptr, labels, idx, x, table, gbar, step, l2, l1, theta, last, pw, geo):
    """SAGA / SAG epoch on CSR rows with just-in-time updates (``last`` per feature, zero on entry).
    ``x`` and ``gbar`` are interleaved per feature for the epoch (:func:`_packed`)."""
    n, K = table.shape
    rho = 1.0 - step * l2
    tl1 = step * l1
    inv_n = 1.0 / n
    z = np.empty(K)
    delta = np.empty(K)
    w2 = _packed(x, gbar, K)
    m = idx.shape[0]
    for t, j in enumerate(idx):
        p0, p1 = _residual_jit(data, indices, indptr, j, labels[j], w2, K, last, t, rho, step, tl1, pw, geo, z)
        for k in range(K):
            delta[k] = z[k] - table[j, k]
            table[j, k] = z[k]
        for p in range(p0, p1):
            c = indices[p]
            a = data[p]
            ca = step * theta * a
            na = a * inv_n
            for k in range(K):
                v = rho * w2[c, k] - ca * delta[k] - step * w2[c, K + k]
                if tl1 > 0.0:
                    v = soft(v, tl1)
                w2[c, k] = v
                w2[c, K + k] += na * delta[k]
            last[c] = t + 1
    _flush_w2(w2, K, last, m, rho, step, tl1, pw, geo)
    _unpack(w2, K, x, gbar)


# ---- SVRG / S2GD ----------------------------------------------------------------------------------
@njit(cache=True, fastmath=True)
def mn_svrg_dense_inner(X, labels, idx, x, s_snap, g, step, l2, l1, xsum):
    """One SVRG inner loop on dense rows; ``xsum`` (length 0 to skip) accumulates the iterates.
    Works on (K x d) copies of ``x``, ``g`` and ``xsum`` (see :func:`mn_saga_dense_epoch`)."""
    n, d = X.shape
    K = s_snap.shape[1]
    rho = 1.0 - step * l2
    tl1 = step * l1
    acc = xsum.shape[0] > 0
    z = np.empty(K)
    xt = np.empty((K, d))
    gt = np.empty((K, d))
    st = np.empty((K, d) if acc else (0, 0))
    _to_kd(x, K, xt)
    _to_kd(g, K, gt)
    if acc:
        _to_kd(xsum, K, st)
    for j in idx:
        _logits_kd(X, j, xt, z)
        _softmax_minus_onehot(z, labels[j])
        for k in range(K):
            zk = step * (z[k] - s_snap[j, k])
            if tl1 > 0.0:
                for c in range(d):
                    xt[k, c] = soft(rho * xt[k, c] - zk * X[j, c] - step * gt[k, c], tl1)
            else:
                for c in range(d):
                    xt[k, c] = rho * xt[k, c] - zk * X[j, c] - step * gt[k, c]
            if acc:
                for c in range(d):
                    st[k, c] += xt[k, c]
    _from_kd(xt, K, x)
    if acc:
        _from_kd(st, K, xsum)


@njit(cache=True)
def mn_svrg_sparse_inner(data, indices, indptr, labels, idx, x, s_snap, g, step, l2, l1, last, pw, geo):
    """One SVRG inner loop on CSR rows with just-in-time updates (``x``, ``g`` interleaved per feature)."""
    K = s_snap.shape[1]
    d = x.shape[0] // K
    rho = 1.0 - step * l2
    tl1 = step * l1
    z = np.empty(K)
    w2 = _packed(x, g, K)
    m = idx.shape[0]
    for t, j in enumerate(idx):
        p0, p1 = _residual_jit(data, indices, indptr, j, labels[j], w2, K, last, t, rho, step, tl1, pw, geo, z)
        for k in range(K):
            z[k] = step * (z[k] - s_snap[j, k])
        for p in range(p0, p1):
            c = indices[p]
            a = data[p]
            for k in range(K):
                v = rho * w2[c, k] - a * z[k] - step * w2[c, K + k]
                if tl1 > 0.0:
                    v = soft(v, tl1)
                w2[c, k] = v
            last[c] = t + 1
    _flush_w2(w2, K, last, m, rho, step, tl1, pw, geo)
    gd = np.empty(d * K)
    _unpack(w2, K, x, gd)


# ---- SGD ------------------------------------------------------------------------------------------
@njit(cache=True)
def mn_sgd_epoch(X, data, indices, indptr, sparse, labels, K, idx, x, k0, schedule, g0, l2, l1, xavg, avg_from):
    """SGD epoch (schedules as :func:`.table_methods.sgd_epoch`: 0 constant, 1 ``g0/(1 + g0 l2 k)``,
    2 ``g0/sqrt(1 + k)``); ``xavg`` (length 0 to skip) averages the iterates from step ``avg_from``.
    Returns the new step count k. Dense rows run on (K x d) copies (:func:`_mn_sgd_dense`)."""
    if not sparse:
        return _mn_sgd_dense(X, labels, K, idx, x, k0, schedule, g0, l2, l1, xavg, avg_from)
    D = x.shape[0]
    z = np.empty(K)
    k = k0
    acc = xavg.shape[0] > 0
    for j in idx:
        st = sgd_step_size(schedule, g0, l2, k)
        if sparse:
            _logits_sparse(data, indices, indptr, j, x, z)
        else:
            _logits_dense(X, j, x, z)
        _softmax_minus_onehot(z, labels[j])
        r = 1.0 - st * l2
        for c in range(D):
            x[c] *= r
        if sparse:
            for p in range(indptr[j], indptr[j + 1]):
                a = st * data[p]
                base = indices[p] * K
                for q in range(K):
                    x[base + q] -= a * z[q]
        else:
            for c in range(X.shape[1]):
                a = st * X[j, c]
                base = c * K
                for q in range(K):
                    x[base + q] -= a * z[q]
        k = l1_step_and_average(x, st * l1, k, acc, avg_from, xavg)
    return k


@njit(cache=True, fastmath=True)
def _mn_sgd_dense(X, labels, K, idx, x, k0, schedule, g0, l2, l1, xavg, avg_from):
    d = X.shape[1]
    z = np.empty(K)
    acc = xavg.shape[0] > 0
    xt = np.empty((K, d))
    at = np.empty((K, d) if acc else (0, 0))
    _to_kd(x, K, xt)
    if acc:
        _to_kd(xavg, K, at)
    k = k0
    for j in idx:
        st = sgd_step_size(schedule, g0, l2, k)
        _logits_kd(X, j, xt, z)
        _softmax_minus_onehot(z, labels[j])
        r = 1.0 - st * l2
        for q in range(K):
            zq = st * z[q]
            if l1 > 0.0:
                for c in range(d):
                    xt[q, c] = soft(r * xt[q, c] - zq * X[j, c], st * l1)
            else:
                for c in range(d):
                    xt[q, c] = r * xt[q, c] - zq * X[j, c]
        k += 1
        if acc and k > avg_from:
            mm = k - avg_from
            for q in range(K):
                for c in range(d):
                    at[q, c] += (xt[q, c] - at[q, c]) / mm
    _from_kd(xt, K, x)
    if acc:
        _from_kd(at, K, xavg)
    return k


# ---- Finito / MISO --------------------------------------------------------------------------------
@njit(cache=True)
def mn_finito_epoch(X, data, indices, indptr, sparse, labels, idx, phi, s, Sphi, Sg, w, alpha, mu, l2):
    """Finito (seed 001 Alg 3.1, Eq. 3.1; MISO when ``alpha = L/mu``, Eq. 3.2).

    ``w = phibar - (1/(alpha mu n)) sum_i f'_i(phi_i)`` with ``f'_i(phi_i) = a_i s_i^T + l2 phi_i``;
    ``phi_j <- w``; ``s_j <- softmax(w^T a_j) - e_{y_j}``. ``w`` holds the point of the final state on exit.
    """
    n, K = s.shape
    D = w.shape[0]
    c_g = 1.0 / (alpha * mu * n)
    c_phi = 1.0 / n - l2 * c_g
    z = np.empty(K)
    for j in idx:
        for c in range(D):
            w[c] = c_phi * Sphi[c] - c_g * Sg[c]
        if sparse:
            _logits_sparse(data, indices, indptr, j, w, z)
        else:
            _logits_dense(X, j, w, z)
        _softmax_minus_onehot(z, labels[j])
        for c in range(D):
            Sphi[c] += w[c] - phi[j, c]
            phi[j, c] = w[c]
        for q in range(K):
            dq = z[q] - s[j, q]
            s[j, q] = z[q]
            z[q] = dq
        if sparse:
            for p in range(indptr[j], indptr[j + 1]):
                a = data[p]
                base = indices[p] * K
                for q in range(K):
                    Sg[base + q] += a * z[q]
        else:
            for c in range(X.shape[1]):
                a = X[j, c]
                base = c * K
                for q in range(K):
                    Sg[base + q] += a * z[q]
    for c in range(D):
        w[c] = c_phi * Sphi[c] - c_g * Sg[c]


def full_pass(problem, x):
    """``(F(x), S, G)`` at ``x`` in one BLAS pass: ``S[i] = softmax(W^T a_i) - e_{y_i}`` (n, K) and the
    data part of the gradient ``G = A^T S / n`` flattened like ``x`` (the ridge excluded)."""
    n, K = problem.n_terms, problem.multinomial_terms.K
    W = x.reshape(problem.dim // K, K)
    Z = np.asarray(problem.A @ W)
    m = Z.max(axis=1, keepdims=True)
    E = np.exp(Z - m)
    ssum = E.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    labels = problem.multinomial_terms.labels
    loss = float(np.sum(m[:, 0] + np.log(ssum[:, 0]) - Z[rows, labels])) / n
    S = E / ssum
    S[rows, labels] -= 1.0
    G = np.asarray(problem.A.T @ S).ravel() / n
    fx = loss + 0.5 * problem.l2 * float(x @ x) + problem.l1 * float(np.abs(x).sum())
    return fx, np.ascontiguousarray(S), G
