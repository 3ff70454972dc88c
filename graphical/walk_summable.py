"""Walk-summable test distributions of seed 001 §8.3.1 (l.3005-3020; notes §5, recipe 4).

A precision is pairwise normalisable (equivalently walk-summable, Malioutov et al. 2006) if it is a
sum of one positive semi-definite 2×2 precision ``A^{(i,j)}`` per edge. Per edge: ``A_12 ~ N(-0.2, 1)``,
a ratio ``β`` (its law is unstated; here ``log β ~ U(-1, 1)``), ``A_11 = β|A_12|``, ``A_22 = |A_12|/β``;
then ``Θ_ij = A_12`` and ``Θ_ii = Σ_{k ∈ ne(i)} A^{(i,k)}_ii``. Each block is singular, so the sum is
only PSD: a ridge ``δ·mean(diag Θ)·I`` (``δ = 0.1`` by default) makes it positive definite while
keeping it strictly pairwise normalisable.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from graphical.checks import as_adjacency
from solvers.checks import check_choice, check_count, check_positive


def random_graph(kind: str, p: int, n_edges: int, rng: np.random.Generator) -> np.ndarray:
    """A boolean adjacency: ``"ba"`` (Barabási-Albert with ``m = round(n_edges / p)``) or ``"er"``
    (Erdős-Rényi with edge probability ``n_edges / (p(p-1)/2)``, i.e. ``n_edges`` in expectation)."""
    check_choice(kind, ("ba", "er"), field="kind")
    check_count(p, field="p", minimum=3)
    check_count(n_edges, field="n_edges", minimum=1)
    seed = int(rng.integers(2**31 - 1))
    if kind == "ba":
        G = nx.barabasi_albert_graph(p, max(1, round(n_edges / p)), seed=seed)
    else:
        G = nx.fast_gnp_random_graph(p, min(1.0, n_edges / (p * (p - 1) / 2)), seed=seed)
    return as_adjacency(G)


def walk_summable_precision(A: np.ndarray, rng: np.random.Generator, *, ridge: float = 0.1) -> np.ndarray:
    """A pairwise-normalisable precision on graph ``A`` (l.3016-3020) plus the ridge described above."""
    E = np.argwhere(np.triu(as_adjacency(A), 1))
    check_positive(ridge, field="ridge")
    p = A.shape[0]
    a12 = rng.normal(-0.2, 1.0, len(E))
    beta = np.exp(rng.uniform(-1.0, 1.0, len(E)))
    Theta = np.zeros((p, p))
    Theta[E[:, 0], E[:, 1]] = Theta[E[:, 1], E[:, 0]] = a12
    diag = np.bincount(E[:, 0], beta * np.abs(a12), p) + np.bincount(E[:, 1], np.abs(a12) / beta, p)
    np.fill_diagonal(Theta, diag + ridge * max(float(diag.mean()), 1e-3))
    return Theta


def sample(Theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws (rows) from ``N(0, Θ^{-1})``."""
    check_count(n, field="n", minimum=2)
    L = np.linalg.cholesky(Theta)
    return np.linalg.solve(L.T, rng.standard_normal((Theta.shape[0], n))).T
