"""Fused one-pass kernels of the conditional log-linear model (the log opinion pool).

Layout: features ``F`` of shape ``(n_items, dim, n_classes)`` ("agent-major": the natural layout of
``log_probs[n, i, k]``), float32 or float64; labels ``y`` int64; weights ``w`` float64. Scores
``s_n = F_nᵀ w`` (length K), ``p_n = softmax(s_n)``. All accumulation is float64.

For each item the ``dim x K`` block (69 KB at 269 x 64 in float32) is read from memory once: the
scores loop touches only the rows with ``w_i != 0`` (sparse weights make it cheap) and the gradient
loop re-reads the block while it is still in cache.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FM = {"nsz", "arcp", "contract", "afn", "reassoc"}  # fastmath without nnan/ninf


@njit(cache=True, fastmath=_FM)
def _scores(F, n, w, nz, s):
    K = s.shape[0]
    for k in range(K):
        s[k] = 0.0
    for t in range(nz.shape[0]):
        i = nz[t]
        wi = w[i]
        for k in range(K):
            s[k] += wi * F[n, i, k]


@njit(cache=True, fastmath=_FM)
def _softmax_inplace(s, y_n):
    """Turn scores into probabilities; return (logsumexp - s[y_n])."""
    K = s.shape[0]
    m = s[0]
    for k in range(1, K):
        if s[k] > m:
            m = s[k]
    z = 0.0
    sy = s[y_n]
    for k in range(K):
        s[k] = np.exp(s[k] - m)
        z += s[k]
    inv = 1.0 / z
    for k in range(K):
        s[k] *= inv
    return m + np.log(z) - sy


@njit(cache=True, fastmath=_FM)
def value_sum(F, y, w, nz):
    """Sum over items of ``logsumexp(s_n) - s_n[y_n]`` (reads only the rows in ``nz``)."""
    N, d, K = F.shape
    s = np.empty(K)
    f = 0.0
    for n in range(N):
        _scores(F, n, w, nz, s)
        f += _softmax_inplace(s, y[n])
    return f


@njit(cache=True, fastmath=_FM)
def value_grad_sum(F, y, w, nz, g):
    """Fused pass: returns the summed NLL and writes the summed gradient into ``g``.

    Per item: ``g += F_n p_n - F_n[:, y_n]`` (seed 000 §2.2.2.2: the exact gradient of the log pool).
    """
    N, d, K = F.shape
    s = np.empty(K)
    for i in range(d):
        g[i] = 0.0
    f = 0.0
    for n in range(N):
        _scores(F, n, w, nz, s)
        yn = y[n]
        f += _softmax_inplace(s, yn)
        for i in range(d):
            acc = 0.0
            for k in range(K):
                acc += s[k] * F[n, i, k]
            g[i] += acc - F[n, i, yn]
    return f


@njit(cache=True, fastmath=_FM)
def hvp_sum(F, y, w, nz, v, out):
    """Summed Hessian-vector product ``sum_n F_n (p ⊙ (u - <p,u>))`` with ``u = F_nᵀ v``."""
    N, d, K = F.shape
    s = np.empty(K)
    u = np.empty(K)
    for i in range(d):
        out[i] = 0.0
    for n in range(N):
        _scores(F, n, w, nz, s)
        _softmax_inplace(s, y[n])
        for k in range(K):
            u[k] = 0.0
        for i in range(d):
            vi = v[i]
            if vi != 0.0:
                for k in range(K):
                    u[k] += vi * F[n, i, k]
        pu = 0.0
        for k in range(K):
            pu += s[k] * u[k]
        for k in range(K):
            u[k] = s[k] * (u[k] - pu)
        for i in range(d):
            acc = 0.0
            for k in range(K):
                acc += u[k] * F[n, i, k]
            out[i] += acc


@njit(cache=True, fastmath=_FM)
def probs_chunk(F, y, w, nz, start, stop, P):
    """Write ``p_n`` for items ``start..stop-1`` into ``P[n - start]``; return the summed NLL."""
    K = F.shape[2]
    s = np.empty(K)
    f = 0.0
    for n in range(start, stop):
        _scores(F, n, w, nz, s)
        f += _softmax_inplace(s, y[n])
        for k in range(K):
            P[n - start, k] = s[k]
    return f


@njit(cache=True, fastmath=_FM)
def hessian_chunk(F, y, w, nz, start, stop, G, M):
    """For items ``start..stop-1``: ``G[i, c*K + k] = F[n, i, k] sqrt(p_nk)`` and ``M[c, i] = (F_n p_n)_i``.

    The chunk's Hessian contribution is then ``G Gᵀ - Mᵀ M`` (two BLAS calls).
    """
    N, d, K = F.shape
    s = np.empty(K)
    r = np.empty(K)
    for n in range(start, stop):
        c = n - start
        _scores(F, n, w, nz, s)
        _softmax_inplace(s, y[n])
        for k in range(K):
            r[k] = np.sqrt(s[k])
        base = c * K
        for i in range(d):
            acc = 0.0
            for k in range(K):
                v = F[n, i, k]
                G[i, base + k] = v * r[k]
                acc += v * s[k]
            M[c, i] = acc


@njit(cache=True)
def gather_rows(src, idx, out):
    """``out[n, j, :] = src[n, idx[j], :]`` (a fast middle-axis take, cast to ``out``'s dtype)."""
    N = src.shape[0]
    K = src.shape[2]
    for n in range(N):
        for j in range(idx.shape[0]):
            i = idx[j]
            for k in range(K):
                out[n, j, k] = src[n, i, k]
