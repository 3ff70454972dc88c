"""Bad-input checks of the thresholding, SHORTCUT and item-field modules: a covariance, a graph.

Each raises :class:`solvers.errors.InputError` naming the argument as the caller wrote it (the
service turns it into a 422 ``application/problem+json``). The names and signatures are those of
``graphical.checks`` (written on the [graphical-models] core branch); the two are one at merge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import InputError


def _square(A: Any, field: str, what: str) -> np.ndarray:
    try:
        M = np.array(A, dtype=float)
    except (TypeError, ValueError):
        raise InputError(field, f"must be {what}", code="bad_shape") from None
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise InputError(field, f"must be a square 2-D array; got shape {M.shape}", code="bad_shape")
    bad = ~np.isfinite(M)
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise InputError(field, "has a non-finite entry", code="nan", row=i, column=j)
    return M


def as_covariance(C: Any, *, field: str = "covariance", psd_tol: float = 1e-8) -> np.ndarray:
    """A covariance: finite, square, symmetric, positive semi-definite ``(p, p)``, ``p >= 2``, positive diagonal.

    Symmetry is checked to ``1e-8`` of the largest entry, then the matrix is symmetrised; positive
    semi-definiteness to ``-psd_tol`` times the largest entry. A zero variance is rejected too: the
    correlations every method here works with (seed 001 l.2918) divide by ``sqrt(C_ii C_jj)``.
    """
    A = _square(C, field, "a square array of numbers")
    p = A.shape[0]
    if p < 2:
        raise InputError(
            field, f"must have at least 2 variables (a graph needs an edge); got p = {p}", code="bad_shape"
        )
    scale = max(float(np.max(np.abs(A))), 1e-300)
    asym = np.abs(A - A.T)
    if float(asym.max()) > 1e-8 * scale:
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(asym)), A.shape))
        raise InputError(field, "must be symmetric", code="not_symmetric", row=i, column=j)
    A = 0.5 * (A + A.T)
    lo = float(np.linalg.eigvalsh(A)[0])
    if lo < -psd_tol * scale:
        raise InputError(field, f"must be positive semi-definite; smallest eigenvalue {lo:.3g}", code="not_psd")
    d = np.diag(A)
    if (d <= 0).any():
        i = int(np.flatnonzero(d <= 0)[0])
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
        M = np.zeros((len(nodes), len(nodes)))
        for u, v in G.edges():
            M[u, v] = M[v, u] = 1.0
    else:
        M = _square(G, field, "an adjacency array or a NetworkX graph")
    A = M != 0
    loops = np.flatnonzero(np.diag(A))
    if loops.size:
        raise InputError(field, f"has a self-loop at node {int(loops[0])}", code="self_loop", node=int(loops[0]))
    if (A != A.T).any():
        raise InputError(field, "must be symmetric (an undirected graph)", code="not_symmetric")
    if p is not None and A.shape[0] != p:
        raise InputError(field, f"has {A.shape[0]} nodes; expected {p}", code="shape_mismatch")
    return A
