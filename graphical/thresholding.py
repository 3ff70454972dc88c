"""Structure by thresholding a covariance: correlation, mutual information and conditional covariance.

Seed 001 §6.3.3-6.3.4 (l.2521-2555). Every function takes a covariance ``C`` (``(p, p)``, checked by
:func:`graphical.checks.as_covariance`) and returns a symmetric ``(p, p)`` weight matrix ``W`` with a
zero diagonal; an edge ``(i, j)`` is kept when ``W_ij >= t`` (:func:`threshold`) or when it is among
the ``m`` largest weights (:func:`top_edges`). The seed's experiments pass the correlation matrix
(l.3001: "covariance variants ... performed worse"); :func:`correlation` gives it.

* correlation thresholding: ``W_ij = |C̄_ij|`` with ``C̄_ij = C_ij / sqrt(C_ii C_jj)``;
* mutual information (l.2529): ``I(x_i; x_j) = ½ log(C_ii C_jj / (C_ii C_jj - C_ij²))``;
* conditional covariance thresholding, CCT (Anandkumar et al. 2011; l.2549, l.2900):
  ``W_ij = min_{S ⊂ V∖{i,j}, |S| <= η} |C_ij - C_iS C_SS^{-1} C_Sj|``, for η ∈ {1, 2}. The empty set
  is one of the candidates, so ``W_ij <= |C_ij|``. Cost ``O(p^{2+η})``.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numba as nb
import numpy as np

from graphical.checks import as_covariance
from solvers.checks import check_choice, check_count
from solvers.errors import InputError


def correlation(C: Any, *, field: str = "covariance") -> np.ndarray:
    """The Pearson correlation matrix ``C̄_ij = C_ij / sqrt(C_ii C_jj)`` of a covariance (seed l.2918)."""
    A = as_covariance(C, field=field, nonzero_variance=True)
    s = 1.0 / np.sqrt(np.diag(A))
    R = A * s[:, None] * s[None, :]
    np.fill_diagonal(R, 1.0)
    return R


def correlation_weights(C: Any, *, field: str = "covariance") -> np.ndarray:
    """Correlation thresholding's weights ``|C̄_ij|`` (Bickel & Levina; seed l.2523), zero diagonal."""
    W = np.abs(correlation(C, field=field))
    np.fill_diagonal(W, 0.0)
    return W


def mutual_information(C: Any, *, field: str = "covariance") -> np.ndarray:
    """Pairwise Gaussian mutual information ``½ log(C_ii C_jj / (C_ii C_jj - C_ij²))`` (seed l.2529).

    Equal to ``-½ log(1 - C̄_ij²)``, a monotone function of ``|C̄_ij|``: thresholding it selects the same
    edges as correlation thresholding at the matching threshold. A perfectly correlated pair gets ``inf``.
    """
    R = correlation(C, field=field)
    with np.errstate(divide="ignore"):
        W = -0.5 * np.log(np.clip(1.0 - R * R, 0.0, None))
    np.fill_diagonal(W, 0.0)
    return W


@nb.njit(cache=True, fastmath=False)
def _cct1_kernel(C: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """Naive CCT η = 1: for each pair, the minimum over k of ``|C_ij - C_ik C_jk / C_kk|`` and ``|C_ij|``."""
    p = C.shape[0]
    inv = np.empty(p)
    for k in range(p):
        inv[k] = 1.0 / C[k, k]
    W = np.zeros((p, p))
    for i in range(p):
        ci = C[i]
        for j in range(i):
            cj = C[j]
            c = ci[j]
            best = abs(c)
            for k in range(p):
                if k == i or k == j:
                    continue
                v = abs(c - ci[k] * cj[k] * inv[k])
                if v < best:
                    best = v
            W[i, j] = best
            W[j, i] = best
    return W


def _cct2(C: np.ndarray) -> np.ndarray:
    """CCT η = 2: the η = 1 weights, then the minimum over every pair ``S = {k, l}`` (``O(p^4)``)."""
    p = C.shape[0]
    W = _cct1_kernel(C)
    for k, l in combinations(range(p), 2):
        det = C[k, k] * C[l, l] - C[k, l] ** 2
        if det <= 1e-12 * C[k, k] * C[l, l]:
            continue  # C_SS singular: conditioning on S is undefined
        Minv = np.array([[C[l, l], -C[k, l]], [-C[k, l], C[k, k]]]) / det
        A = C[:, (k, l)]
        R = np.abs(C - A @ Minv @ A.T)
        R[(k, l), :] = np.inf
        R[:, (k, l)] = np.inf
        np.minimum(W, R, out=W)
    np.fill_diagonal(W, 0.0)
    return W


def cct_weights(C: Any, eta: int = 1, *, field: str = "covariance") -> np.ndarray:
    """Conditional covariance thresholding's weights ``min_{|S| <= η} |Cov[x_i, x_j | x_S]|`` (seed l.2900).

    ``eta`` is 1 (``O(p³)``, a compiled triple loop: the "naive CCT" SHORTCUT is measured against) or
    2 (``O(p⁴)``). Pass the correlation matrix to get the seed's correlation variant (the weights of a
    covariance are those of its correlation times ``sqrt(C_ii C_jj)``).
    """
    check_choice(eta, (1, 2), field="eta")
    A = as_covariance(C, field=field, nonzero_variance=True)
    return _cct1_kernel(A) if eta == 1 else _cct2(A)


def threshold(W: Any, t: float, *, field: str = "weights") -> np.ndarray:
    """The graph ``|W_ij| >= t`` (off the diagonal) as a boolean adjacency (Alg 8.1's last step, l.2953)."""
    A = _as_weights(W, field)
    if not np.isfinite(t):
        raise InputError("t", f"must be a finite threshold; got {t!r}")
    E = np.abs(A) >= t
    np.fill_diagonal(E, False)
    return E


def top_edges(W: Any, n_edges: int, *, field: str = "weights") -> np.ndarray:
    """The ``n_edges`` pairs of largest ``|W_ij|`` as a boolean adjacency (ties broken by index order)."""
    A = _as_weights(W, field)
    p = A.shape[0]
    m = check_count(n_edges, field="n_edges")
    iu, ju = np.triu_indices(p, 1)
    if m > iu.size:
        raise InputError("n_edges", f"must be <= p(p-1)/2 = {iu.size}; got {m}")
    order = np.argsort(-np.abs(A[iu, ju]), kind="stable")[:m]
    E = np.zeros((p, p), dtype=bool)
    E[iu[order], ju[order]] = True
    return E | E.T


def _as_weights(W: Any, field: str) -> np.ndarray:
    A = np.asarray(W, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
        raise InputError(field, f"must be a square (p, p) array with p >= 2; got shape {A.shape}", code="bad_shape")
    if np.isnan(A).any():
        raise InputError(field, "has a NaN entry", code="nan")
    return A
