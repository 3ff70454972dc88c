"""The item-field model (seed 001 chapter 9): a Gaussian over items with squared-difference features.

A user's ratings ``r`` (one per item, centred by the item means ``μ``) have density
``∝ exp(-½ (r-μ)ᵀ Θ (r-μ))`` with ``Θ = Σ_{(i,j) ∈ E} w_ij (e_i - e_j)(e_i - e_j)ᵀ``, ``w >= 0``: the
features ``f_ij = -½((r_i-μ_i) - (r_j-μ_j))²`` (l.3338) make ``Θ`` a Z-matrix (``Θ_ij = -w_ij <= 0``)
that is actively diagonally dominant, ``Θ_ii = -Σ_j Θ_ij`` (Def 9.3; the seed's l.3215 drops the
minus: notes pitfall 9). ``Θ`` is singular, but on a connected graph every proper principal
submatrix is positive definite (Thm 9.2), so conditionals are proper.

Learning:

* :func:`pseudo_moment_precision` -- Eq 9.3, the unconstrained Bethe maximum-entropy solution
  ``Θ = ∂H_B/∂C |_{C=Σ}``: ``Θ_ij = -Σ_ij / (Σ_ii Σ_jj - Σ_ij²)``,
  ``Θ_ii = 1/Σ_ii + Σ_{j ∈ ne(i)} (Σ_jj / (Σ_ii Σ_jj - Σ_ij²) - 1/Σ_ii)``.
* :func:`max_entropy_item_field` -- Alg 9.1, block coordinate ascent on ``H_B(C)`` subject to the
  item field's moment constraints ``E[(x_i - x_j)²] = Σ_ii + Σ_jj - 2Σ_ij`` per edge. Given the
  diagonal of ``C`` the edges follow, ``C_ij = Σ_ij + ½(C_ii - Σ_ii + C_jj - Σ_jj)``, clamped at 0.
  The seed prints ``C_ij = Σ_ij - Σ_ii - Σ_jj + C_ii + C_jj`` (l.3272), which double-counts: its
  Lagrangian sums ordered pairs for the off-diagonal term (notes pitfall 9). With the ½ the diagonal
  step ``C_ii += (α/√k)(Θ_ii + Σ_j Θ_ij)`` is exactly the gradient of ``H_B`` along the constraint
  set, so its fixed point is an actively diagonally dominant ``Θ``.
* :func:`bethe_ml_item_field` -- the baseline (§9.3): maximum likelihood with ``log det`` replaced
  by its Bethe approximation computed by Gaussian BP, minimised by L-BFGS-B over ``w >= 0``. A
  singular ``Θ`` makes the Bethe free energy unbounded (the model is improper), so the baseline keeps
  diagonal dominance as an inequality: ``Θ = L(w) + diag(d)``, ``d >= d_min > 0`` -- the diagonally
  dominant class on which the seed notes BP converges (l.3298).
* :func:`exact_ml_item_field` -- Table 9.1's exact maximum-likelihood row: the same parameters and
  bounds with the exact ``log det`` and ``Θ^{-1}`` (dense Cholesky), tractable for a few hundred items.

Prediction (§9.7): ``μ_{U|K} = μ_U - Θ_UU^{-1} Θ_UK (r_K - μ_K)``, one sparse solve per user; a
component of unrated items with no rated neighbour gets its means (the seed's rule for components).
With every neighbour of ``i`` known this is the positive-weight average
``μ_i + Σ_j w_ij (r_j - μ_j) / Σ_j w_ij`` (the seed's l.3368-3370 sign: notes pitfall 9).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu

from graphical.checks import as_adjacency, as_covariance
from graphical.gaussian_bp import Edges, bethe_log_det, gaussian_bp
from solvers.checks import check_count, check_positive, check_tol
from solvers.errors import InputError


def pseudo_moment_precision(Sigma: Any, graph: Any) -> tuple[np.ndarray, np.ndarray, Edges]:
    """Eq 9.3: the diagonal and edge entries of ``Θ = ∂H_B(C)/∂C`` at ``C = Σ``; pairs with ``Σ_ii Σ_jj <= Σ_ij²`` get 0.

    Returns ``(theta_diag, theta_edge, edges)``; ``theta_edge[e]`` is ``Θ_ij = Θ_ji`` of edge ``e``.
    """
    S = as_covariance(Sigma, field="Sigma", nonzero_variance=True)
    E = Edges.of(as_adjacency(graph, field="graph", p=S.shape[0]))
    td, te = _eq93(np.diag(S).copy(), S[E.i, E.j], E)
    return td, te, E


def _eq93(cd: np.ndarray, ce: np.ndarray, E: Edges) -> tuple[np.ndarray, np.ndarray]:
    D = cd[E.i] * cd[E.j] - ce * ce
    ok = D > 0
    Dd = np.where(ok, D, 1.0)
    te = np.where(ok, -ce / Dd, 0.0)
    td = 1.0 / cd + E.node_sum(
        np.where(ok, cd[E.j] / Dd - 1.0 / cd[E.i], 0.0), np.where(ok, cd[E.i] / Dd - 1.0 / cd[E.j], 0.0)
    )
    return td, te


@dataclass
class Fit:
    """A learnt item field: edge weights ``w`` (``Θ_ij = -w``), extra diagonal ``d`` (0 for Alg 9.1)."""

    edges: Edges
    w: np.ndarray
    d: np.ndarray
    n_iter: int
    converged: bool
    seconds: float
    history: list[float] = field(default_factory=list)

    def precision(self) -> sp.csr_matrix:
        """``Θ = L(w) + diag(d)`` as a sparse matrix."""
        E = self.edges
        diag = E.node_sum(self.w) + self.d
        rows = np.concatenate([E.i, E.j, np.arange(E.p)])
        cols = np.concatenate([E.j, E.i, np.arange(E.p)])
        vals = np.concatenate([-self.w, -self.w, diag])
        return sp.csr_matrix((vals, (rows, cols)), shape=(E.p, E.p))


def max_entropy_item_field(
    Sigma: Any, graph: Any, *, step: float | None = None, max_iter: int = 200, tol: float = 1e-8
) -> Fit:
    """Alg 9.1 (with the ½ of the edge update): Bethe maximum-entropy learning of the item field.

    ``step`` is the seed's ``α`` (unstated there); by default the first step moves a variance by at
    most 10 % of the median variance. ``α`` is halved whenever a step would leave the Bethe entropy's
    domain (``C_ii C_jj > C_ij²`` on every edge, ``C_ii > 0``). Stops when every ``|Θ_ii + Σ_j Θ_ij| · Σ_ii <= tol``
    (active diagonal dominance reached). ``history`` holds ``H_B(C)`` per sweep.
    """
    t0 = time.perf_counter()
    S = as_covariance(Sigma, field="Sigma", nonzero_variance=True)
    E = Edges.of(as_adjacency(graph, field="graph", p=S.shape[0]))
    check_count(max_iter, field="max_iter", minimum=1)
    check_tol(tol)
    sd = np.diag(S).copy()
    if step is not None:
        check_positive(step, field="step")
    cd, ce0 = sd.copy(), S[E.i, E.j]
    ce = ce0.copy()
    history: list[float] = []
    converged, k, alpha = False, 0, step
    for k in range(1, max_iter + 1):
        td, te = _eq93(cd, ce, E)
        g = td + E.node_sum(te)  # ∂H_B(C(diag))/∂C_ii along the constraint set
        if float(np.max(np.abs(g) * sd)) <= tol:
            converged = True
            break
        if alpha is None:  # the seed leaves α open: a first move of at most 10 % of a variance
            alpha = 0.1 * float(np.median(sd)) / max(float(np.max(np.abs(g))), 1e-300)
        while True:  # halve α while a step leaves the Bethe entropy's domain (C_ii C_jj > C_ij²)
            cd_new = cd + alpha / np.sqrt(k) * g
            ce_new = np.maximum(ce0 + 0.5 * ((cd_new - sd)[E.i] + (cd_new - sd)[E.j]), 0.0)
            D = cd_new[E.i] * cd_new[E.j] - ce_new * ce_new
            if (cd_new > 0).all() and (D > 0).all():
                break
            alpha *= 0.5
        cd, ce = cd_new, ce_new
        history.append(float(np.sum(np.log(D)) + np.sum((1 - E.degree) * np.log(cd))))
    _, te = _eq93(cd, ce, E)
    return Fit(E, np.maximum(-te, 0.0), np.zeros(E.p), k, converged, time.perf_counter() - t0, history)


def bethe_ml_item_field(
    Sigma: Any,
    graph: Any,
    *,
    d_min: float | None = None,
    max_iter: int = 200,
    tol: float = 1e-7,
    bp_tol: float = 1e-10,
) -> Fit:
    """The §9.3 baseline: minimise ``⟨Θ, Σ⟩ - logdet_Bethe(Θ)`` over ``w >= 0``, ``d >= d_min`` by L-BFGS-B.

    ``logdet_Bethe`` and its gradient ``C`` come from Gaussian BP (warm-started between evaluations):
    ``∂/∂w_ij = (Σ_ii + Σ_jj - 2Σ_ij) - (C_ii + C_jj - 2C_ij)``, ``∂/∂d_i = Σ_ii - C_ii``. ``d_min``
    defaults to ``1e-3 / median(Σ_ii)``. ``history`` holds the objective per evaluation.
    """
    state: dict[str, Any] = {"msg": None}

    def moments(theta: sp.csr_matrix, E: Edges) -> tuple[float, np.ndarray, np.ndarray] | None:
        bp = gaussian_bp(theta, tol=bp_tol, max_iter=100_000, messages=state["msg"], edges=E)
        if not bp.converged and state["msg"] is not None:  # a warm start can leave a cavity non-positive
            bp = gaussian_bp(theta, tol=bp_tol, max_iter=100_000, edges=E)
        if not bp.converged:
            return None
        state["msg"] = bp.messages
        ld, _ = bethe_log_det(theta, bp=bp, edges=E)
        return ld, bp.var, bp.edge_cov

    return _max_likelihood(Sigma, graph, moments, d_min, max_iter, tol)


def exact_ml_item_field(
    Sigma: Any, graph: Any, *, d_min: float | None = None, max_iter: int = 200, tol: float = 1e-7
) -> Fit:
    """Exact maximum likelihood of the item field (Table 9.1's exact row, where it is tractable):
    minimise ``⟨Θ, Σ⟩ - log det Θ`` (Eq 6.4 restricted to ``Θ = L(w) + diag(d)``) over the same
    parameters and bounds as :func:`bethe_ml_item_field`, with ``log det`` and ``C = Θ^{-1}`` exact (one
    dense Cholesky factor and inverse per evaluation, ``O(p^3)``: a few hundred items)."""

    def moments(theta: sp.csr_matrix, E: Edges) -> tuple[float, np.ndarray, np.ndarray] | None:
        try:
            F = cho_factor(theta.toarray(), lower=True, check_finite=False)
        except LinAlgError:
            return None
        C = cho_solve(F, np.eye(E.p), check_finite=False)
        return 2.0 * float(np.sum(np.log(np.diag(F[0])))), np.diag(C).copy(), C[E.i, E.j]

    return _max_likelihood(Sigma, graph, moments, d_min, max_iter, tol)


def _max_likelihood(Sigma: Any, graph: Any, moments: Any, d_min: float | None, max_iter: int, tol: float) -> Fit:
    """``min ⟨Θ, Σ⟩ - logdet(Θ)`` over ``Θ = L(w) + diag(d)``, ``w >= 0``, ``d >= d_min`` by L-BFGS-B, from the
    Eq 9.3 start; ``moments(Θ, edges)`` gives ``(logdet, diag C, C on the edges)`` or None outside the domain."""
    t0 = time.perf_counter()
    S = as_covariance(Sigma, field="Sigma", nonzero_variance=True)
    E = Edges.of(as_adjacency(graph, field="graph", p=S.shape[0]))
    check_count(max_iter, field="max_iter", minimum=1)
    sd = np.diag(S).copy()
    dmin = 1e-3 / float(np.median(sd)) if d_min is None else check_positive(d_min, field="d_min")
    m, p = E.i.size, E.p
    sq = sd[E.i] + sd[E.j] - 2.0 * S[E.i, E.j]  # data's E[(x_i - x_j)²] per edge
    td, te = _eq93(sd, S[E.i, E.j], E)
    w0 = np.maximum(-te, 0.0)
    x0 = np.concatenate([w0, np.maximum(td - E.node_sum(w0), 1.0 / sd)])
    history: list[float] = []

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        got = moments(Fit(E, x[:m], x[m:], 0, True, 0.0).precision(), E)
        if got is None:
            return np.inf, np.zeros_like(x)
        ld, var, edge_cov = got
        f = float(x[:m] @ sq + x[m:] @ sd - ld)
        history.append(f)
        return f, np.concatenate([sq - (var[E.i] + var[E.j] - 2.0 * edge_cov), sd - var])

    bounds = [(0.0, None)] * m + [(dmin, None)] * p
    opts = {"maxiter": max_iter, "gtol": tol, "ftol": 1e-2 * tol}  # ftol: at tol = 1e-7 about scipy's default
    r = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)
    return Fit(E, r.x[:m], r.x[m:], int(r.nit), bool(r.success), time.perf_counter() - t0, history)


def knn_graph(R: np.ndarray, k: int) -> np.ndarray:
    """Each item joined to its ``k`` most similar items by Pearson correlation (l.3323), made undirected (union)."""
    p = R.shape[0]
    k = check_count(k, field="n_neighbours", minimum=1)
    if k >= p:
        raise InputError("n_neighbours", f"must be < the number of items ({p}); got {k}")
    S = R.copy()
    np.fill_diagonal(S, -np.inf)
    nn = np.argpartition(-S, k - 1, axis=1)[:, :k]
    A = np.zeros((p, p), dtype=bool)
    A[np.repeat(np.arange(p), k), nn.ravel()] = True
    return A | A.T


def conditional_mean(theta: sp.csr_matrix, mu: np.ndarray, ratings: np.ndarray) -> np.ndarray:
    """§9.7's prediction for every user: ``μ_U - Θ_UU^{-1} Θ_UK (r_K - μ_K)``; rated entries are returned as given.

    ``ratings`` is ``(n_users, n_items)`` with ``nan`` where unrated.
    """
    theta = sp.csr_matrix(theta)
    out = np.array(ratings, dtype=float)
    for u in range(out.shape[0]):
        known = ~np.isnan(out[u])
        U = np.flatnonzero(~known)
        if U.size == 0:
            continue
        K = np.flatnonzero(known)
        pred = mu[U].copy()
        if K.size:
            TUU = theta[U][:, U]
            rhs = -(theta[U][:, K] @ (out[u, K] - mu[K]))
            # components of the unrated subgraph that touch no rated item keep their means (Thm 9.2)
            n_comp, lab = connected_components(TUU, directed=False)
            live = np.zeros(n_comp, dtype=bool)
            live[lab[rhs != 0]] = True
            sel = live[lab]
            if sel.any():
                pred[sel] += splu(sp.csc_matrix(TUU[sel][:, sel])).solve(rhs[sel])
        out[u, U] = pred
    return out


class ItemField:
    """Item-field recommender (seed 001 ch. 9): ``fit(ratings)`` learns ``Θ``; ``predict(ratings)`` fills the gaps.

    ``method`` is ``"max_entropy"`` (Alg 9.1), ``"bethe_ml"`` (GaBP + L-BFGS-B) or ``"exact_ml"``
    (exact log det + L-BFGS-B, a few hundred items). ``ratings`` are
    ``(n_users, n_items)`` with ``nan`` where unrated; missing entries are imputed by the item mean
    for the covariance (l.3417). Learnt: ``mu_``, ``graph_``, ``fit_`` (a :class:`Fit`), ``theta_``.
    """

    def __init__(self, n_neighbours: int = 10, method: str = "max_entropy", clip: tuple[float, float] | None = (1, 5)):
        self.n_neighbours = n_neighbours
        self.method = method
        self.clip = clip

    def fit(self, ratings: Any) -> ItemField:
        R = _as_ratings(ratings)
        self.mu_ = np.nanmean(R, axis=0)
        Z = np.where(np.isnan(R), 0.0, R - self.mu_)
        Sigma = Z.T @ Z / R.shape[0] + 1e-9 * np.eye(R.shape[1])
        sd = np.sqrt(np.diag(Sigma))
        self.graph_ = knn_graph(Sigma / sd[:, None] / sd[None, :], self.n_neighbours)
        if self.method == "max_entropy":
            self.fit_ = max_entropy_item_field(Sigma, self.graph_)
        elif self.method in ("bethe_ml", "exact_ml"):
            learn = bethe_ml_item_field if self.method == "bethe_ml" else exact_ml_item_field
            self.fit_ = learn(Sigma, self.graph_)
        else:
            raise InputError("method", f"must be 'max_entropy', 'bethe_ml' or 'exact_ml'; got {self.method!r}")
        self.theta_ = self.fit_.precision()
        return self

    def predict(self, ratings: Any) -> np.ndarray:
        P = conditional_mean(self.theta_, self.mu_, _as_ratings(ratings))
        return P if self.clip is None else np.clip(P, *self.clip)


def _as_ratings(ratings: Any) -> np.ndarray:
    R = np.asarray(ratings, dtype=float)
    if R.ndim != 2 or R.shape[1] < 2:
        raise InputError(
            "ratings", f"must be (n_users, n_items) with n_items >= 2; got shape {R.shape}", code="bad_shape"
        )
    if np.isinf(R).any():
        raise InputError("ratings", "has an infinite entry (use nan for unrated)", code="nan")
    if np.isnan(R).all(axis=0).any():
        raise InputError(
            "ratings", f"item {int(np.flatnonzero(np.isnan(R).all(axis=0))[0])} has no rating", code="empty"
        )
    return R
