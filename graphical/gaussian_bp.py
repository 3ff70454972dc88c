"""Gaussian belief propagation (GaBP) and the Bethe approximation of ``log det Θ``.

Seed 001 §9.3 (l.3288-3300): for a Gaussian ``p(x) ∝ exp(-½ xᵀ J x + hᵀ x)`` with sparse precision
``J``, belief propagation passes along each directed edge ``i → j`` a message with precision
``α_ij = -J_ij² / J_{i∖j}`` and potential ``β_ij = -J_ij h_{i∖j} / J_{i∖j}``, where the cavity
``J_{i∖j} = J_ii + Σ_{k ∈ ne(i)∖j} α_ki`` (likewise ``h_{i∖j}``). At a fixed point the marginals are
``N(h_i' / J_i', 1 / J_i')`` with ``J_i' = J_ii + Σ_k α_ki``; on a tree they are exact, on a loopy
walk-summable graph (e.g. ``J`` diagonally dominant, Weiss & Freeman 2001) the means are exact and
the variances the Bethe approximation's (Malioutov et al. 2006).

The beliefs of an edge, ``[[J_{i∖j}, J_ij], [J_ij, J_{j∖i}]]^{-1}``, give the pseudo-covariance ``C``
on the graph's support that minimises the Bethe free energy ``⟨Θ, C⟩ - H_B(C)``, with (l.3178)
``H_B(C) = Σ_{(i,j) ∈ E} log(C_ii C_jj - C_ij²) + Σ_i (1 - deg i) log C_ii``. Hence (l.3285, with
this normalisation, exact on trees) ``log det Θ ≈ min_C (⟨Θ, C⟩ - H_B(C)) - p``, whose gradient in
``Θ`` is that ``C``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from solvers.checks import check_count, check_tol
from solvers.errors import InputError


@dataclass(frozen=True)
class Edges:
    """An undirected graph as two index arrays ``i < j`` of its ``m`` edges over ``p`` nodes."""

    i: np.ndarray
    j: np.ndarray
    p: int

    @classmethod
    def of(cls, A: Any) -> Edges:
        """The edges of a symmetric matrix's off-diagonal support (dense or scipy.sparse)."""
        U = sp.triu(sp.csr_matrix(A), k=1).tocoo()
        keep = U.data != 0
        return cls(U.row[keep].astype(np.int64), U.col[keep].astype(np.int64), int(A.shape[0]))

    @property
    def degree(self) -> np.ndarray:
        return np.bincount(self.i, minlength=self.p) + np.bincount(self.j, minlength=self.p)

    def node_sum(self, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """``Σ_{e ∋ n}`` of a per-edge value: ``a`` at the edges' ``i`` end, ``b`` (default ``a``) at ``j``."""
        return np.bincount(self.i, a, self.p) + np.bincount(self.j, a if b is None else b, self.p)


@dataclass(frozen=True)
class GaBPResult:
    """Marginal means and variances, edge pseudo-covariances ``C_ij`` (``Edges`` order), convergence."""

    mean: np.ndarray
    var: np.ndarray
    edge_cov: np.ndarray
    converged: bool
    n_iter: int
    messages: tuple[np.ndarray, np.ndarray]


def _as_precision(J: Any, field: str) -> sp.csr_matrix:
    M = sp.csr_matrix(J, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1] or M.shape[0] < 2:
        raise InputError(field, f"must be a square (p, p) matrix with p >= 2; got shape {M.shape}", code="bad_shape")
    if not np.isfinite(M.data).all():
        raise InputError(field, "has a non-finite entry", code="nan")
    if abs(M - M.T).max() > 1e-10 * max(abs(M).max(), 1e-300):
        raise InputError(field, "must be symmetric", code="not_symmetric")
    if (M.diagonal() <= 0).any():
        raise InputError(field, "must have a positive diagonal", code="not_pd")
    return M


def gaussian_bp(
    J: Any,
    h: Any = None,
    *,
    max_iter: int = 1000,
    tol: float = 1e-12,
    damping: float = 0.0,
    messages: tuple[np.ndarray, np.ndarray] | None = None,
    edges: Edges | None = None,
    field: str = "precision",
) -> GaBPResult:
    """Synchronous GaBP on precision ``J`` and potential ``h`` (default 0) until messages move < ``tol``.

    ``messages`` warm-starts from a previous result's (same graph). ``edges`` fixes the graph (edges of
    weight 0 included) instead of reading it off ``J``'s non-zeros. ``damping`` in ``[0, 1)`` mixes the
    old message in. Non-convergence is reported (``converged=False``), not raised: the seed's
    baseline only uses diagonally dominant ``J``, where GaBP converges.
    """
    M = _as_precision(J, field)
    E = Edges.of(M) if edges is None else edges
    p, m = E.p, E.i.size
    hv = np.zeros(p) if h is None else np.asarray(h, dtype=float)
    if hv.shape != (p,) or not np.isfinite(hv).all():
        raise InputError("h", f"must be a finite vector of length {p}", code="bad_shape")
    check_count(max_iter, field="max_iter", minimum=1)
    check_tol(tol)
    if not 0 <= damping < 1:
        raise InputError("damping", f"must be in [0, 1); got {damping!r}")
    d = M.diagonal()
    Jij = np.asarray(M[E.i, E.j]).ravel()
    # directed messages: [i -> j for every edge] then [j -> i]
    src = np.concatenate([E.i, E.j])
    dst = np.concatenate([E.j, E.i])
    rev = np.concatenate([np.arange(m, 2 * m), np.arange(m)])
    Jd = np.concatenate([Jij, Jij])
    a, b = (np.zeros(2 * m), np.zeros(2 * m)) if messages is None else (messages[0].copy(), messages[1].copy())
    converged, it = False, 0
    while it < max_iter:
        it += 1
        Pn = d + np.bincount(dst, a, p)
        hn = hv + np.bincount(dst, b, p)
        Pc = Pn[src] - a[rev]
        if (Pc <= 0).any():
            break  # a cavity lost positivity: GaBP diverges on this J
        a_new = -Jd * Jd / Pc
        b_new = -Jd * (hn[src] - b[rev]) / Pc
        if damping:
            a_new = damping * a + (1 - damping) * a_new
            b_new = damping * b + (1 - damping) * b_new
        delta = max(float(np.max(np.abs(a_new - a), initial=0.0)), float(np.max(np.abs(b_new - b), initial=0.0)))
        a, b = a_new, b_new
        if delta <= tol * max(1.0, float(np.max(np.abs(a), initial=0.0))):
            converged = True
            break
    Pn = d + np.bincount(dst, a, p)
    hn = hv + np.bincount(dst, b, p)
    ci = Pn[E.i] - a[m:]  # cavity of i without j's message (j -> i is at index m + e)
    cj = Pn[E.j] - a[:m]
    edge_cov = -Jij / (ci * cj - Jij * Jij)
    return GaBPResult(hn / Pn, 1.0 / Pn, edge_cov, converged, it, (a, b))


def bethe_entropy(var: np.ndarray, edge_cov: np.ndarray, edges: Edges) -> float:
    """``H_B(C) = Σ_E log(C_ii C_jj - C_ij²) + Σ_i (1 - deg i) log C_ii`` (seed l.3178); ``-inf`` off its domain."""
    D = var[edges.i] * var[edges.j] - edge_cov**2
    if (D <= 0).any() or (var <= 0).any():
        return -np.inf
    return float(np.sum(np.log(D)) + np.sum((1 - edges.degree) * np.log(var)))


def bethe_log_det(
    J: Any, *, bp: GaBPResult | None = None, edges: Edges | None = None, **options: Any
) -> tuple[float, GaBPResult]:
    """The Bethe approximation ``⟨J, C⟩ - H_B(C) - p`` of ``log det J`` at GaBP's ``C``; exact on a tree.

    Returns the value and the GaBP result (whose ``var`` and ``edge_cov`` are the gradient in ``J``'s
    diagonal and in each edge's pair of entries ``J_ij = J_ji``, halved).
    """
    M = sp.csr_matrix(J, dtype=float)
    E = Edges.of(M) if edges is None else edges
    r = bp if bp is not None else gaussian_bp(M, edges=E, **options)
    Jij = np.asarray(M[E.i, E.j]).ravel()
    inner = float(M.diagonal() @ r.var + 2.0 * Jij @ r.edge_cov)
    return inner - bethe_entropy(r.var, r.edge_cov, E) - E.p, r
