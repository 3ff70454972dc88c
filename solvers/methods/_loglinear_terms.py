"""The bound-sum view of a conditional log-linear problem, read by bound majorization (``bm``, ``sbm``).

A problem qualifies when it offers the declared capabilities ``features`` (an ``(n, K, d)`` array in
any memory layout, or the structured
:class:`~solvers.problems.multinomial_loglinear.KroneckerFeatures`) and ``labels``; the optional
``log_h``, ``lam`` (or ``l2``) and ``sample_weight`` are read when present, an ``l1`` term is
refused. For a problem class not defined in :mod:`solvers.problems.multinomial_loglinear` the
objective so reconstructed is checked against the problem's own ``value_and_grad`` before solving
(:func:`prepare`), so a solver never quietly minimises a different objective.

Not a solver module (leading underscore: not auto-imported by :mod:`solvers.methods`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..bound import class_space_bounds, nll_bound_sums
from ..errors import InputError
from ..problem import capability, constraint_of, start_point
from ..simplex import simplex_metric_projection

__all__ = ["loglinear_terms", "prepare", "check_budget"]


class _Terms:
    """Bound sums over items of a conditional log-linear model (base of the two layouts)."""

    n: int
    dim: int
    lam: float
    labels: np.ndarray
    w: np.ndarray

    order: str | None = "ascending"

    def sums(self, theta: np.ndarray, idx: np.ndarray | None = None, curvature: str = "full"):
        """Mean over ``idx`` of ``(log z_i - s_i(y_i), mu_i - f_i(y_i), Sigma_i)`` (weighted)."""
        raise NotImplementedError

    def dense_batch(self, theta: np.ndarray, idx: np.ndarray):
        """``(features (m, K, d), scores (m, K))`` of the items ``idx``."""
        raise NotImplementedError


class _DenseTerms(_Terms):
    def __init__(self, F: np.ndarray, labels: np.ndarray, log_h, lam: float, w: np.ndarray) -> None:
        self.F, self.labels, self.log_h, self.lam, self.w = F, labels, log_h, lam, w
        self.n, _, self.dim = F.shape

    def _scores(self, theta, idx):
        F = self.F if idx is None else self.F[idx]
        s = F @ theta
        if self.log_h is not None:
            s = s + (self.log_h if idx is None else self.log_h[idx])
        return F, s

    def sums(self, theta, idx=None, curvature="full"):
        return nll_bound_sums(
            theta, self.F, self.labels, self.log_h, self.w, idx=idx, curvature=curvature, order=self.order
        )

    def dense_batch(self, theta, idx):
        F, s = self._scores(theta, idx)
        return np.ascontiguousarray(F), np.ascontiguousarray(s)


class _MultinomialTerms(_Terms):
    """``f_x(y) = e_y ⊗ x``: the bound runs in class space (``K`` dims), see ``class_space_bounds``."""

    def __init__(self, kf: Any, labels, log_h, lam: float, w: np.ndarray) -> None:
        self.kf, self.X = kf, kf.X
        self.labels, self.log_h, self.lam, self.w = labels, log_h, lam, w
        self.n, _, self.dim = kf.shape

    def _scores(self, theta, idx):
        X = self.X if idx is None else self.X[idx]
        s = np.asarray(X @ self.kf.theta_matrix(theta).T)
        if self.log_h is not None:
            s = s + (self.log_h if idx is None else self.log_h[idx])
        return X, s

    def sums(self, theta, idx=None, curvature="full"):
        X, s = self._scores(theta, idx)
        y = self.labels if idx is None else self.labels[idx]
        w = self.w if idx is None else self.w[idx]
        m = len(y)
        ar = np.arange(m)
        logz, q, C = class_space_bounds(s, order=self.order)
        val = float(w @ (logz - s[ar, y])) / m
        R = q.copy()
        R[ar, y] -= 1.0
        g = self.kf.flat(np.asarray(X.T @ (R * w[:, None])).T) / m
        if curvature == "full":
            S = self.kf.kron_sum(C, idx, w) / m
        elif curvature == "diag":
            # C_i ⊗ x x^T <= diag(row sums of |C_i| ⊗ |x||x|^T) (diagonal dominance)
            cr = np.abs(C).sum(axis=2)  # (m, K)
            ax = np.abs(X)
            S = self.kf.flat(np.asarray(ax.T @ (cr * (w * ax.sum(axis=1))[:, None])).T) / m
        else:
            raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
        return val, g, S

    def dense_batch(self, theta, idx):
        _, s = self._scores(theta, idx)
        return np.ascontiguousarray(self.kf.rows(idx)), np.ascontiguousarray(s)


def _attr(problem: Any, *names: str) -> Any:
    """The first of the declared capabilities ``names`` the problem offers as data (not a method)."""
    for n in names:
        v = capability(problem, n)
        if v is not None and not callable(v):
            return v
    return None


def loglinear_terms(problem: Any) -> _Terms:
    """The bound-sum view of a conditional log-linear ``problem`` (raises ValueError if it is not one)."""
    feats = capability(problem, "features")
    if feats is None or capability(problem, "labels") is None:
        raise InputError(
            "problem",
            f"{type(problem).__name__} is not a conditional log-linear problem: it needs `features` and `labels`",
        )
    structured = hasattr(feats, "rows") and hasattr(feats, "kron_sum")
    F = feats if structured else np.asarray(feats)  # no copy: (n, K, d) views are used per class
    if not structured and F.ndim != 3:
        raise InputError(
            "problem", f"{type(problem).__name__}.features must have shape (n_items, n_classes, dim); got {F.shape}"
        )
    n, K = F.shape[0], F.shape[1]
    labels = np.asarray(problem.labels).astype(np.int64)
    lam = _attr(problem, "lam", "l2")
    lam = 0.0 if lam is None else float(lam)
    if float(_attr(problem, "l1") or 0.0) != 0.0:
        raise InputError(
            "problem",
            f"{type(problem).__name__} has an l1 term: bound majorization handles smooth (ridge) objectives only",
        )
    log_h = _attr(problem, "log_h")
    if log_h is not None:
        log_h = np.broadcast_to(np.asarray(log_h, dtype=np.float64), (n, K))
    w = _attr(problem, "sample_weight")
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    if structured:
        return _MultinomialTerms(feats, labels, log_h, lam, w)
    return _DenseTerms(F, labels, log_h, lam, w)


def _check_consistent(problem: Any, terms: _Terms, x: np.ndarray) -> None:
    """For foreign problem classes: the reconstructed objective must be the problem's own."""
    if type(problem).__module__ == "solvers.problems.multinomial_loglinear":
        return
    val, g, _ = terms.sums(x, curvature="diag")
    val += 0.5 * terms.lam * x @ x
    g = g + terms.lam * x
    pv, pg = problem.value_and_grad(x)
    if not (abs(pv - val) <= 1e-8 * (1 + abs(pv)) and np.allclose(pg, g, rtol=1e-6, atol=1e-9)):
        raise InputError(
            "problem",
            f"bound majorization: {type(problem).__name__}'s objective is not the mean log-linear NLL + lam/2||x||^2 "
            f"read from its features/labels/log_h/lam (value {pv!r} vs {val!r}); it cannot be majorized by this solver",
        )


def prepare(problem, x0, curvature, order):
    """Check the options, read the problem's terms and the feasible start; returns ``(terms, constraint, x)``."""
    if curvature not in ("full", "diag"):
        raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
    if order not in ("ascending", "given"):
        raise InputError("order", f"must be 'ascending' or 'given'; got {order!r}")
    terms = loglinear_terms(problem)
    terms.order = "ascending" if order == "ascending" else None
    constraint = constraint_of(problem)
    if constraint not in ("none", "simplex"):
        raise InputError("problem", f"bound majorization handles constraints 'none' and 'simplex', not {constraint!r}")
    x = start_point(problem, x0)
    if constraint == "simplex" and (np.any(x < 0) or abs(x.sum() - 1.0) > 1e-9):
        proj = capability(problem, "project")
        x = proj(x) if proj is not None else simplex_metric_projection(np.ones(len(x)), x)
    _check_consistent(problem, terms, x)
    return terms, constraint, x


def check_budget(tol: float, max_iter: int) -> None:
    """``tol`` finite and >= 0, ``max_iter`` >= 1."""
    if not (tol >= 0 and math.isfinite(tol)):
        raise InputError("tol", f"must be finite and >= 0; got {tol}")
    if int(max_iter) < 1:
        raise InputError("max_iter", f"must be >= 1; got {max_iter}")
