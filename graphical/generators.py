"""The scale-free Gaussian graphical models of seed 001 §7.5.1 (notes §5, recipe 3).

A graph on ``p`` nodes, either Barabási-Albert (scale 3.0) or a fixed power-law degree sequence of
exponent 2.0 (the seed samples it with Bayati et al.'s sequential sampler; here the configuration
model, see :func:`scale_free_graph`); precision ``Θ_ij = -0.2`` on the edges and
``Θ_ii = 0.5 + 0.2 deg(i)`` (diagonally dominant, so positive definite); ``n`` samples; their
covariance rescaled to unit diagonal (l.2794-2796).
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from solvers.checks import check_choice, check_count

from .checks import as_adjacency


def scale_free_graph(kind: str, p: int, rng: np.random.Generator, *, m: int = 2) -> np.ndarray:
    """A boolean adjacency: ``"ba"`` (Barabási-Albert, ``m`` edges per new node) or ``"powerlaw"``
    (a power-law degree sequence of exponent 2 capped at ``p - 1``, configuration model)."""
    check_choice(kind, ("ba", "powerlaw"), field="kind")
    check_count(p, field="p", minimum=3)
    seed = int(rng.integers(2**31 - 1))
    if kind == "ba":
        G = nx.barabasi_albert_graph(p, m, seed=seed)
        return as_adjacency(G)
    # a discrete power law p(d) ∝ d^-2 on 1..p-1 (a Lomax(1) draw + 1, floored), realised by the
    # configuration model with its self-loops and repeated edges dropped: NetworkX's Bayati et al.
    # sampler (random_degree_sequence_graph) did not return within minutes on these heavy-tailed
    # sequences (its guarantee needs max degree O(m^(1/4)))
    d = np.minimum(np.floor(rng.pareto(1.0, size=p) + 1.0).astype(int), p - 1)
    if d.sum() % 2:
        d[int(np.argmin(d))] += 1
    G = nx.Graph(nx.configuration_model(d.tolist(), seed=int(rng.integers(2**31 - 1))))
    G.remove_edges_from(list(nx.selfloop_edges(G)))
    return as_adjacency(G)


def precision_from_graph(A: np.ndarray, *, edge: float = -0.2, base: float = 0.5) -> np.ndarray:
    """``Θ_ij = edge`` on the edges, ``Θ_ii = base + |edge| deg(i)`` (§7.5.1: diagonally dominant)."""
    A = as_adjacency(A)
    Theta = edge * A.astype(float)
    np.fill_diagonal(Theta, base + abs(edge) * A.sum(axis=1))
    return Theta


def sample_correlation(Theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The sample covariance of ``n`` draws from ``N(0, Θ^{-1})``, rescaled to unit diagonal."""
    check_count(n, field="n", minimum=2)
    L = np.linalg.cholesky(Theta)
    # x = L^{-T} e has covariance (L L^T)^{-1} = Θ^{-1}
    Xs = np.linalg.solve(L.T, rng.standard_normal((Theta.shape[0], n))).T
    C = np.cov(Xs, rowvar=False, bias=True)
    d = np.sqrt(np.diag(C))
    return C / np.outer(d, d)
