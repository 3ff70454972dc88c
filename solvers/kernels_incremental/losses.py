"""Scalar losses phi(u, y) of the linear models, their derivatives, 1-D proxes and conjugates.

Loss ids: 0 logistic ``log(1 + exp(-y u))``, 1 squared ``(u - y)^2 / 2``, 2 smoothed hinge
(Shalev-Shwartz & Zhang's quadratic smoothing with width ``smoothing``), 3 hinge ``max(0, 1 - y u)``.
Labels of the classification losses are in {-1, +1}.

Conjugates are written for the dual variable ``beta`` of SDCA in the seed's sign convention
(seed 001 Alg 2.1, L436-459: ``x = -(1/(mu n)) sum_i beta_i a_i``); for the classification losses
``beta = -y p`` with ``p`` in [0, 1].
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

LOGISTIC, SQUARED, SMOOTH_HINGE, HINGE = 0, 1, 2, 3

#: fastmath flags of the newer kernels: reassociation (vectorised dot products) and FMA contraction, but
#: no finite-math assumptions, so a diverging run still produces inf/NaN that the drivers detect
SAFE_FASTMATH = {"reassoc", "contract", "nsz"}


@njit(cache=True, inline="always")
def loss_value(loss: int, u: float, y: float, smoothing: float) -> float:
    if loss == LOGISTIC:
        z = -y * u
        if z > 0:
            return z + math.log1p(math.exp(-z))
        return math.log1p(math.exp(z))
    if loss == SQUARED:
        return 0.5 * (u - y) * (u - y)
    z = y * u
    if loss == SMOOTH_HINGE:
        if z >= 1.0:
            return 0.0
        if z <= 1.0 - smoothing:
            return 1.0 - z - 0.5 * smoothing
        return (1.0 - z) * (1.0 - z) / (2.0 * smoothing)
    return max(0.0, 1.0 - z)


@njit(cache=True, inline="always")
def loss_deriv(loss: int, u: float, y: float, smoothing: float) -> float:
    """phi'(u) (for the hinge: the subgradient -y on z < 1, 0 otherwise)."""
    if loss == LOGISTIC:
        z = y * u
        if z > 0:
            e = math.exp(-z)
            return -y * e / (1.0 + e)
        return -y / (1.0 + math.exp(z))
    if loss == SQUARED:
        return u - y
    z = y * u
    if loss == SMOOTH_HINGE:
        if z >= 1.0:
            return 0.0
        if z <= 1.0 - smoothing:
            return -y
        return -y * (1.0 - z) / smoothing
    if z < 1.0:
        return -y
    return 0.0


@njit(cache=True)
def loss_prox(loss: int, v: float, y: float, t: float, smoothing: float) -> float:
    """argmin_u phi(u) + (u - v)^2 / (2 t)."""
    if loss == SQUARED:
        return (v + t * y) / (1.0 + t)
    if loss == LOGISTIC:
        # safeguarded Newton on h(u) = phi'(u) + (u - v)/t, increasing in u; the root lies in
        # [v, v + t] when y = +1 and in [v - t, v] when y = -1 (|phi'| <= 1).
        lo = min(v, v + y * t)
        hi = max(v, v + y * t)
        u = v
        for _ in range(60):
            z = y * u
            if z > 0:
                e = math.exp(-z)
                sig = e / (1.0 + e)  # sigma(-z)
            else:
                sig = 1.0 / (1.0 + math.exp(z))
            h = -y * sig + (u - v) / t
            if h > 0:
                hi = u
            else:
                lo = u
            dh = sig * (1.0 - sig) + 1.0 / t
            un = u - h / dh
            if un <= lo or un >= hi:
                un = 0.5 * (lo + hi)
            if abs(un - u) <= 1e-15 * (1.0 + abs(u)):
                u = un
                break
            u = un
        return u
    # (smoothed) hinge, in z = y u with w = y v (y^2 = 1)
    w = y * v
    if w >= 1.0:
        z = w
    elif loss == SMOOTH_HINGE:
        if w <= 1.0 - smoothing - t:
            z = w + t
        else:
            z = (t + smoothing * w) / (t + smoothing)
    else:
        if w <= 1.0 - t:
            z = w + t
        else:
            z = 1.0
    return y * z


@njit(cache=True, inline="always")
def loss_conj(loss: int, beta: float, y: float, smoothing: float) -> float:
    """phi*(beta) (+inf outside the domain, returned as a large number)."""
    if loss == SQUARED:
        return 0.5 * beta * beta + beta * y
    p = -y * beta
    if p < -1e-12 or p > 1.0 + 1e-12:
        return 1e300
    p = min(1.0, max(0.0, p))
    if loss == LOGISTIC:
        r = 0.0
        if p > 0.0:
            r += p * math.log(p)
        if p < 1.0:
            r += (1.0 - p) * math.log(1.0 - p)
        return r
    if loss == SMOOTH_HINGE:
        return -p + 0.5 * smoothing * p * p
    return -p


@njit(cache=True, inline="always")
def loss_conj_deriv(loss: int, beta: float, y: float, smoothing: float) -> float:
    """d phi*/d beta, clipped at the boundary of the domain."""
    if loss == SQUARED:
        return beta + y
    p = -y * beta
    if loss == LOGISTIC:
        p = min(1.0 - 1e-16, max(1e-16, p))
        return -y * math.log(p / (1.0 - p))
    if loss == SMOOTH_HINGE:
        return y * (1.0 - smoothing * p)
    return y


@njit(cache=True, inline="always")
def soft(v: float, t: float) -> float:
    """Soft threshold: the prox of t |.|."""
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


@njit(cache=True, inline="always")
def l1_step_and_average(x, tl1, k, acc, avg_from, xavg):
    """The tail of one SGD step: ``x <- soft(x, tl1)`` when ``tl1 > 0``, count the step, and fold ``x``
    into the running average ``xavg`` once past step ``avg_from`` (when ``acc``); returns the count."""
    if tl1 > 0.0:
        for c in range(x.shape[0]):
            x[c] = soft(x[c], tl1)
    k += 1
    if acc and k > avg_from:
        m = k - avg_from
        for c in range(x.shape[0]):
            xavg[c] += (x[c] - xavg[c]) / m
    return k


@njit(cache=True)
def row_dot(X, data, indices, indptr, sparse: bool, i: int, w) -> float:
    s = 0.0
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * w[indices[p]]
    else:
        for c in range(X.shape[1]):
            s += X[i, c] * w[c]
    return s


@njit(cache=True)
def row_axpy(X, data, indices, indptr, sparse: bool, i: int, alpha: float, w) -> None:
    """w += alpha * a_i."""
    if sparse:
        for p in range(indptr[i], indptr[i + 1]):
            w[indices[p]] += alpha * data[p]
    else:
        for c in range(X.shape[1]):
            w[c] += alpha * X[i, c]


@njit(cache=True)
def all_derivs(loss, X, data, indices, indptr, sparse, y, x, smoothing, out) -> None:
    """out[i] = phi'(a_i . x, y_i) for every term (one pass)."""
    n = out.shape[0]
    for i in range(n):
        out[i] = loss_deriv(loss, row_dot(X, data, indices, indptr, sparse, i, x), y[i], smoothing)


@njit(cache=True, fastmath=True)
def all_derivs_loss(loss, X, data, indices, indptr, sparse, y, x, smoothing, out) -> float:
    """out[i] = phi'(a_i . x, y_i) for every term; returns sum_i phi(a_i . x, y_i) (one pass)."""
    n = out.shape[0]
    total = 0.0
    for i in range(n):
        u = 0.0
        if sparse:
            for p in range(indptr[i], indptr[i + 1]):
                u += data[p] * x[indices[p]]
        else:
            for c in range(X.shape[1]):
                u += X[i, c] * x[c]
        out[i] = loss_deriv(loss, u, y[i], smoothing)
        total += loss_value(loss, u, y[i], smoothing)
    return total


DUMMY2 = np.zeros((0, 0))
DUMMY_F = np.zeros(0)
DUMMY_I = np.zeros(0, dtype=np.int32)


@njit(cache=True, inline="always")
def _value_deriv(loss, u, y, smoothing):
    """``(phi(u, y), phi'(u, y))``; one ``exp`` for both with the logistic loss."""
    if loss == LOGISTIC:
        z = -y * u
        if z > 0:
            e = math.exp(-z)
            return z + math.log1p(e), -y / (1.0 + e)
        e = math.exp(z)
        return math.log1p(e), -y * e / (1.0 + e)
    return loss_value(loss, u, y, smoothing), loss_deriv(loss, u, y, smoothing)


def value_grad_csr(loss, data, indices, indptr, y, smoothing, x, g) -> float:
    """One streaming pass over CSR rows: ``g = sum_i phi'(a_i . x, y_i) a_i`` (overwritten) and the
    return value ``sum_i phi(a_i . x, y_i)``. Each row is read once: its margin (four partial sums,
    so the additions do not wait on each other), then its scatter into ``g`` while the row is still
    in cache (``A x`` and ``A^T r`` fused). Indices are passed unsigned (no wraparound test)."""
    ui = indices.view(np.uint32 if indices.dtype.itemsize == 4 else np.uint64)
    up = indptr.view(np.uint32 if indptr.dtype.itemsize == 4 else np.uint64)
    return _value_grad_csr(loss, data, ui, up, y, smoothing, x, g)


@njit(cache=True, boundscheck=False)
def _value_grad_csr(loss, data, indices, indptr, y, smoothing, x, g) -> float:
    n = indptr.shape[0] - 1
    for c in range(g.shape[0]):
        g[c] = 0.0
    total = 0.0
    for i in range(n):
        p0 = indptr[i]
        p1 = indptr[i + 1]
        u0 = 0.0
        u1 = 0.0
        u2 = 0.0
        u3 = 0.0
        p = p0
        while p + 4 <= p1:
            u0 += data[p] * x[indices[p]]
            u1 += data[p + 1] * x[indices[p + 1]]
            u2 += data[p + 2] * x[indices[p + 2]]
            u3 += data[p + 3] * x[indices[p + 3]]
            p += 4
        while p < p1:
            u0 += data[p] * x[indices[p]]
            p += 1
        u = (u0 + u1) + (u2 + u3)
        v, r = _value_deriv(loss, u, y[i], smoothing)
        total += v
        if r != 0.0:
            for p in range(p0, p1):
                g[indices[p]] += r * data[p]
    return total


@njit(cache=True, fastmath=SAFE_FASTMATH, boundscheck=False)
def value_grad_dense(loss, X, y, smoothing, x, g) -> float:
    """Dense rows, one streaming pass: ``g = sum_i phi'(a_i . x, y_i) a_i`` (overwritten), returns
    ``sum_i phi(a_i . x, y_i)``; each row is read once (``X x`` and ``X^T r`` fused: about 2.7x less
    time than the two BLAS matrix-vector products plus the NumPy loss on 1e5 x 100, single thread)."""
    n, d = X.shape
    for c in range(d):
        g[c] = 0.0
    total = 0.0
    for i in range(n):
        u = 0.0
        for c in range(d):
            u += X[i, c] * x[c]
        v, r = _value_deriv(loss, u, y[i], smoothing)
        total += v
        if r != 0.0:
            for c in range(d):
                g[c] += r * X[i, c]
    return total


@njit(cache=True, inline="always")
def sgd_step_size(schedule, g0, mu, k):
    """SGD's step at step ``k`` (seed 001 L392-404): ``g0`` (schedule 0), ``g0 / (1 + g0 mu k)``
    (1, the classical theta/k shifted so that the first step is g0) or ``g0 / sqrt(1 + k)`` (2)."""
    if schedule == 0:
        return g0
    if schedule == 1:
        return g0 / (1.0 + g0 * mu * k)
    return g0 / math.sqrt(1.0 + k)
