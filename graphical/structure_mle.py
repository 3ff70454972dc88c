"""Maximum likelihood of a Gaussian with a given graph (covariance selection; seed 001 §8.3.2, l.3037).

The seed scores a structure by fitting the maximum-likelihood precision with that support and
evaluating ``-(⟨C_test, Θ⟩ - log det Θ)`` (the negated Eq 6.4) on held-out data. The fit minimises
``⟨S, Θ⟩ - log det Θ`` subject to ``Θ_ij = 0`` off the graph; its solution has ``W = Θ^{-1}`` equal to
``S`` on the diagonal and the edges. Solved by the block coordinate algorithm of Hastie, Tibshirani &
Friedman (ESL 2nd ed., Alg 17.1): per node ``j``, ``β = W_{nn}^{-1} s_{nj}`` over its neighbours ``n``,
``w_{-j,j} = W_{-j,-j} β``, until ``W`` stops moving; then ``θ_jj = 1/(s_jj - w_{-j,j}ᵀβ)``,
``θ_{-j,j} = -β θ_jj``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphical.checks import as_adjacency, as_covariance
from solvers.checks import check_count, check_tol


def fit_on_graph(S: Any, graph: Any, *, tol: float = 1e-10, max_iter: int = 500) -> np.ndarray:
    """The maximum-likelihood precision of covariance ``S`` with support ``graph`` (plus the diagonal).

    ``S`` must make the problem bounded (e.g. positive definite, or the graph a forest).
    """
    C = as_covariance(S, field="S", nonzero_variance=True)
    A = as_adjacency(graph, field="graph", p=C.shape[0])
    check_tol(tol)
    check_count(max_iter, field="max_iter", minimum=1)
    p = C.shape[0]
    W = C.copy()
    betas: list[np.ndarray] = [np.zeros(p - 1) for _ in range(p)]
    for _ in range(max_iter):
        moved = 0.0
        for j in range(p):
            rest = np.delete(np.arange(p), j)
            nb = np.flatnonzero(A[j, rest])
            beta = np.zeros(p - 1)
            if nb.size:
                W11 = W[np.ix_(rest, rest)]
                beta[nb] = np.linalg.solve(W11[np.ix_(nb, nb)], C[rest[nb], j])
                w12 = W11 @ beta
            else:
                w12 = np.zeros(p - 1)
            moved = max(moved, float(np.max(np.abs(W[rest, j] - w12))))
            W[rest, j] = W[j, rest] = w12
            betas[j] = beta
        if moved <= tol * float(np.max(np.diag(C))):
            break
    Theta = np.zeros((p, p))
    for j in range(p):
        rest = np.delete(np.arange(p), j)
        t = 1.0 / (C[j, j] - W[rest, j] @ betas[j])
        Theta[j, j] = t
        Theta[rest, j] = -betas[j] * t
    return 0.5 * (Theta + Theta.T)


def heldout_objective(C_test: Any, Theta: np.ndarray) -> float:
    """``-(⟨C_test, Θ⟩ - log det Θ)``: the negated Eq 6.4 on held-out data (higher is better)."""
    sign, logdet = np.linalg.slogdet(Theta)
    return float(-(np.sum(np.asarray(C_test) * Theta) - logdet)) if sign > 0 else -np.inf
