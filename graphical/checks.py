"""The bad-input checks of the graphical-model package: a covariance, a graph, a degree prior.

Each raises :class:`solvers.errors.InputError` naming the argument as the caller wrote it (the
service turns it into a 422 ``application/problem+json``). Scalar arguments (``lam``, ``rho``,
``tol``, ``max_iter``) use the checks of :mod:`solvers.checks`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import LinAlgError, cho_factor

from solvers.errors import InputError


def _square(X: Any, field: str, what: str) -> np.ndarray:
    """``X`` as a float64 square 2-D array (a copy), or an InputError naming ``field``."""
    try:
        A = np.array(X, dtype=float)
    except (TypeError, ValueError):
        raise InputError(field, f"must be {what}", code="bad_shape") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise InputError(field, f"must be {what} (square, 2-D); got shape {A.shape}", code="bad_shape")
    return A


def _shifted_cholesky_ok(A: np.ndarray, shift: float) -> bool:
    """True when ``A + shift·I`` has a Cholesky factor (then ``A``'s smallest eigenvalue is ``> -shift``)."""
    try:
        cho_factor(A + shift * np.eye(A.shape[0]), lower=True, check_finite=False)
    except LinAlgError:
        return False
    return True


def as_covariance(
    C: Any, *, field: str = "covariance", psd_tol: float = 1e-8, nonzero_variance: bool = False
) -> np.ndarray:
    """A sample covariance: a finite, square, symmetric, positive semi-definite ``(p, p)`` array, ``p >= 2``.

    Symmetry is checked to ``1e-8`` relative to the largest entry, then the matrix is symmetrised;
    positive semi-definiteness to ``-psd_tol`` times the largest eigenvalue (seed 001 l.2487: only PSD
    ``C`` is considered). ``nonzero_variance``: a zero variance is refused too (the correlations of the
    thresholding methods, SHORTCUT and the item field divide by ``sqrt(C_ii C_jj)``, seed 001 l.2918).
    Returns a fresh float64 array.
    """
    A = _square(C, field, "a square array of numbers")
    p = A.shape[0]
    if p < 2:
        raise InputError(
            field, f"must have at least 2 variables (a graph needs an edge); got p = {p}", code="bad_shape"
        )
    bad = ~np.isfinite(A)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(field, "has a non-finite entry", code="nan", row=i, column=j)
    scale = float(np.max(np.abs(A)))
    asym = np.abs(A - A.T)
    if float(asym.max()) > 1e-8 * max(scale, 1e-300):
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(asym)), A.shape))
        raise InputError(field, "must be symmetric", code="not_symmetric", row=i, column=j)
    A = 0.5 * (A + A.T)
    if not _shifted_cholesky_ok(A, psd_tol * max(scale, 1e-300)):  # a Cholesky factor is ~10x cheaper than eigvalsh
        lo = float(np.linalg.eigvalsh(A)[0])
        if lo < -psd_tol * max(scale, 1e-300):
            raise InputError(field, f"must be positive semi-definite; smallest eigenvalue {lo:.3g}", code="not_psd")
    zero = np.flatnonzero(np.diag(A) <= 0)
    if nonzero_variance and zero.size:
        i = int(zero[0])
        raise InputError(field, f"variable {i} has zero variance", code="zero_variance", row=i, column=i)
    return A


def as_adjacency(G: Any, *, field: str = "graph", p: int | None = None) -> np.ndarray:
    """A simple undirected graph as a boolean ``(p, p)`` adjacency: from an array or a NetworkX graph.

    Rejected: a non-square or non-symmetric array, non-finite entries, a self-loop, a size other
    than ``p`` (when given). A NetworkX graph's nodes must be ``0..p-1``.
    """
    if hasattr(G, "nodes") and hasattr(G, "edges"):
        nodes = sorted(G.nodes())
        if nodes != list(range(len(nodes))):
            raise InputError(field, "a NetworkX graph's nodes must be 0..p-1", code="bad_nodes")
        loops = [u for u, v in G.edges() if u == v]
        if loops:
            raise InputError(field, f"has a self-loop at node {loops[0]}", code="self_loop", node=int(loops[0]))
        A = np.zeros((len(nodes), len(nodes)), dtype=bool)
        for u, v in G.edges():
            A[u, v] = A[v, u] = True
    else:
        M = _square(G, field, "an adjacency matrix or a NetworkX graph")
        if not np.isfinite(M).all():
            raise InputError(field, "has a non-finite entry", code="nan")
        A = M != 0
        diag = np.flatnonzero(np.diag(A))
        if diag.size:
            raise InputError(field, f"has a self-loop at node {int(diag[0])}", code="self_loop", node=int(diag[0]))
        if (A != A.T).any():
            raise InputError(field, "must be symmetric (an undirected graph)", code="not_symmetric")
    if p is not None and A.shape[0] != p:
        raise InputError(field, f"has {A.shape[0]} nodes; expected {p}", code="shape_mismatch")
    return A


def as_degree_weights(h_values: Any, *, field: str = "prior", tol: float = 1e-12) -> np.ndarray:
    """The increments ``h(k+1) - h(k)``, ``k = 0..len-2``, of a tractable degree function (Prop 7.1).

    ``h_values`` are ``h(0), h(1), ..., h(m)``. Tractable: finite, non-decreasing (increments >= 0)
    and concave (increments non-increasing); ``h(0)`` need not be 0, since only differences enter
    the Lovász extension (seed 001 Prop 7.2; notes pitfall 7: shift ``log(i + eps)``).
    """
    h = np.asarray(h_values, dtype=float)
    if h.ndim != 1 or h.size < 2:
        raise InputError(field, "needs h(0..m) with m >= 1", code="bad_shape")
    if not np.isfinite(h).all():
        raise InputError(field, "h has a non-finite value", code="nan", index=int(np.flatnonzero(~np.isfinite(h))[0]))
    d = np.diff(h)
    scale = tol * max(1.0, float(np.max(np.abs(h))))
    if (d < -scale).any():
        k = int(np.flatnonzero(d < -scale)[0])
        raise InputError(field, f"h must be non-decreasing; h({k + 1}) < h({k})", code="not_tractable", index=k)
    if (np.diff(d) > scale).any():
        k = int(np.flatnonzero(np.diff(d) > scale)[0])
        raise InputError(field, f"h must be concave; its increment grows at k = {k + 1}", code="not_tractable", index=k)
    return np.maximum(d, 0.0)
