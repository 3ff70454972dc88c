"""Fused one-pass kernels of the conditional log-linear model (the log opinion pool).

Layout: features ``F`` of shape ``(n_items, n_rows, n_classes)`` of which the problem's coordinates
are the rows ``cols`` (``arange(n_rows)`` for a full problem, a working set for a restricted one, so
restricting never copies data) ("agent-major": the natural layout of
``log_probs[n, i, k]``), float32 or float64; labels ``y`` int64; weights ``w`` float64. Scores
``s_n = F_nᵀ w`` (length K), ``p_n = softmax(s_n)``. All accumulation is float64. Item weights ``c``
(float64, ``sample_weight``) multiply each item's contribution to a sum; an empty ``c`` means every
item weighs 1 (no multiplication).

For each item the ``dim x K`` block (69 KB at 269 x 64 in float32) is read from memory once: the
scores loop touches only the rows with ``w_i != 0`` (sparse weights make it cheap) and the gradient
loop re-reads the block while it is still in cache.

Large passes are cut into item chunks with their own partial sums (``nchunk``), the layout a
``prange`` over chunks needs. They run serially: a ``parallel=True`` build halved a full pass with
2 threads when the second core was free (2026-11-21, 0.12 s against 0.24 s), but was 5-15 % slower
when other processes held that core, could not be benchmarked on the shared machine, and would
bring an OpenMP thread pool (not fork-safe) into the web workers; left for a measured follow-up.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .simplex_log import softmax_into

_FM = {"nsz", "arcp", "contract", "afn", "reassoc"}  # fastmath without nnan/ninf


@njit(cache=True, fastmath=_FM)
def _scores(F, cols, n, w, nz, s):
    K = s.shape[0]
    for k in range(K):
        s[k] = 0.0
    for t in range(nz.shape[0]):
        j = nz[t]
        i = cols[j]
        wi = w[j]
        for k in range(K):
            s[k] += wi * F[n, i, k]


@njit(cache=True, fastmath=_FM)
def _softmax_inplace(s, y_n):
    """Turn scores into probabilities; return (logsumexp - s[y_n])."""
    sy = s[y_n]
    return softmax_into(s, s) - sy


@njit(cache=True, fastmath=_FM)
def value_sum(F, cols, y, w, nz, c, items, nchunk=1):
    """Sum over the items ``items`` of ``logsumexp(s_n) - s_n[y_n]`` (reads only the rows in ``nz``).

    The items are cut into ``nchunk`` contiguous chunks whose sums are added in chunk order (the
    layout of a parallel pass; run serially, see the module note).
    """
    N = items.shape[0]
    K = F.shape[2]
    fs = np.zeros(nchunk)
    for ch in range(nchunk):
        lo = ch * N // nchunk
        hi = (ch + 1) * N // nchunk
        s = np.empty(K)
        f = 0.0
        for m in range(lo, hi):
            n = items[m]
            _scores(F, cols, n, w, nz, s)
            t = _softmax_inplace(s, y[n])
            f += t if c.shape[0] == 0 else c[n] * t
        fs[ch] = f
    f = 0.0
    for ch in range(nchunk):
        f += fs[ch]
    return f


@njit(cache=True, fastmath=_FM)
def _value_grad_range(F, cols, y, w, nz, c, items, lo, hi, g):
    K = F.shape[2]
    d = cols.shape[0]
    s = np.empty(K)
    for j in range(d):
        g[j] = 0.0
    f = 0.0
    for m in range(lo, hi):
        n = items[m]
        _scores(F, cols, n, w, nz, s)
        yn = y[n]
        cn = 1.0 if c.shape[0] == 0 else c[n]
        f += cn * _softmax_inplace(s, yn)
        for j in range(d):
            i = cols[j]
            acc = 0.0
            for k in range(K):
                acc += s[k] * F[n, i, k]
            g[j] += cn * (acc - F[n, i, yn])
    return f


@njit(cache=True, fastmath=_FM)
def value_grad_sum(F, cols, y, w, nz, c, items, g, nchunk=1):
    """Fused pass over the items ``items``: returns the summed NLL and writes the summed gradient into ``g``.

    Per item: ``g += F_n p_n - F_n[:, y_n]`` (seed 000 §2.2.2.2: the exact gradient of the log pool).
    Items in ``nchunk`` contiguous chunks, each with its own gradient buffer, added in chunk order
    (the layout of a parallel pass; run serially, see the module note).
    """
    N = items.shape[0]
    d = cols.shape[0]
    fs = np.zeros(nchunk)
    gs = np.zeros((nchunk, d))
    for ch in range(nchunk):
        fs[ch] = _value_grad_range(F, cols, y, w, nz, c, items, ch * N // nchunk, (ch + 1) * N // nchunk, gs[ch])
    for j in range(d):
        g[j] = 0.0
    f = 0.0
    for ch in range(nchunk):
        f += fs[ch]
        for j in range(d):
            g[j] += gs[ch, j]
    return f


@njit(cache=True, fastmath=_FM)
def hvp_sum(F, cols, y, w, nz, c, items, v, out):
    """Hessian-vector product summed over ``items``: ``sum_n F_n (p ⊙ (u - <p,u>))`` with ``u = F_nᵀ v``."""
    K = F.shape[2]
    d = cols.shape[0]
    s = np.empty(K)
    u = np.empty(K)
    for i in range(d):
        out[i] = 0.0
    for m in range(items.shape[0]):
        n = items[m]
        _scores(F, cols, n, w, nz, s)
        _softmax_inplace(s, y[n])
        for k in range(K):
            u[k] = 0.0
        for j in range(d):
            vi = v[j]
            if vi != 0.0:
                i = cols[j]
                for k in range(K):
                    u[k] += vi * F[n, i, k]
        pu = 0.0
        for k in range(K):
            pu += s[k] * u[k]
        cn = 1.0 if c.shape[0] == 0 else c[n]
        for k in range(K):
            u[k] = cn * s[k] * (u[k] - pu)
        for j in range(d):
            i = cols[j]
            acc = 0.0
            for k in range(K):
                acc += u[k] * F[n, i, k]
            out[j] += acc


@njit(cache=True, fastmath=_FM)
def probs_chunk(F, cols, y, w, nz, items, start, stop, P):
    """Write ``p_n`` for the items ``items[start..stop-1]`` into ``P[m - start]``; return the summed NLL."""
    K = F.shape[2]
    s = np.empty(K)
    f = 0.0
    for m in range(start, stop):
        n = items[m]
        _scores(F, cols, n, w, nz, s)
        f += _softmax_inplace(s, y[n])
        for k in range(K):
            P[m - start, k] = s[k]
    return f


@njit(cache=True, fastmath=_FM)
def hessian_chunk(F, cols, y, w, nz, cw, items, G):
    """For the items ``items[c]``: ``G[j, c*K + k] = (F[n, cols[j], k] - m_nj) sqrt(c_n p_nk)`` with
    ``m_n = F_n p_n`` (``c_n = cw[n]``, 1 when ``cw`` is empty). The chunk's Hessian contribution
    ``sum_n F_n (diag p_n - p_n p_nᵀ) F_nᵀ`` is ``G Gᵀ`` (one BLAS syrk on the centred features;
    ``G`` may be float32).
    """
    K = F.shape[2]
    d = cols.shape[0]
    s = np.empty(K)
    r = np.empty(K)
    for c in range(items.shape[0]):
        n = items[c]
        _scores(F, cols, n, w, nz, s)
        _softmax_inplace(s, y[n])
        cn = 1.0 if cw.shape[0] == 0 else cw[n]
        for k in range(K):
            r[k] = np.sqrt(cn * s[k])
        base = c * K
        for j in range(d):
            i = cols[j]
            acc = 0.0
            for k in range(K):
                acc += F[n, i, k] * s[k]
            for k in range(K):
                G[j, base + k] = (F[n, i, k] - acc) * r[k]


@njit(cache=True)
def label_feature_sum(F, cols, y, c, items, out):
    """``out[j] = sum_n c_n F[n, cols[j], y_n]`` over ``items`` (for the log pool: each agent's total log-likelihood)."""
    for j in range(cols.shape[0]):
        out[j] = 0.0
    for m in range(items.shape[0]):
        n = items[m]
        yn = y[n]
        cn = 1.0 if c.shape[0] == 0 else c[n]
        for j in range(cols.shape[0]):
            out[j] += cn * F[n, cols[j], yn]
