"""Mixture likelihood on the simplex: the linear opinion pool's weight-learning problem.

Seed 000 Eq. (2.4): the linear pool ``P(y|n) = sum_i w_i P_i(y|n)`` with ``w`` on the simplex,
fitted by maximum likelihood. Only the probability each agent gave to the *true* label matters, so
the problem is reduced to its sufficient statistic, the matrix ``Q[n, i] = P_i(y_n | n)``
(``n_items x n_agents``):

    f(w) = -(1/N) sum_n log (Q w)_n,                w in the simplex,
    grad f = -(1/N) Qᵀ (1 / Qw),    hess f = (1/N) Qᵀ diag(1/(Qw)^2) Q.

Each row of ``Q`` is stored divided by its maximum (the objective changes by a constant, which is
added back in :meth:`MixtureLikelihood.value`), so tiny probabilities cannot underflow ``Qw``.

With per-item weights ``c_n >= 0`` (``sample_weight``, scikit-learn's convention) the mean becomes the
weighted mean ``-(1/Σc) Σ_n c_n log (Qw)_n``: an integer weight counts the item that many times.
Items of weight 0 are dropped on construction (a zero-probability item then does not matter).
At a feasible ``w``, ``<grad f, w> = -1`` exactly, so the Frank-Wolfe gap is
``max_i mean_n Q_ni/(Qw)_n - 1``; EM's update (:mod:`solvers.methods.em`) is
``w_i <- w_i mean_n Q_ni/(Qw)_n``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import as_labels
from ..errors import InputError
from ..simplex import project_simplex


class MixtureLikelihood:
    """Negative mean log-likelihood of a mixture with fixed components; simplex-constrained.

    Parameters
    ----------
    probs_true : array ``(n_items, n_agents)``, non-negative: ``Q[n, i] = P_i(y_n | n)``.
        Every item of positive weight needs at least one agent with positive probability for its label.
    sample_weight : ``None`` or ``(n_items,)`` finite non-negative weights with a positive sum.

    A weighted problem (``sample_weight`` not ``None``) offers no ``mixture_rows`` (the compiled
    stochastic kernels cannot weight their terms; the stochastic solvers use ``term_grad``, which
    is weighted).
    """

    constraint = "simplex"

    def __init__(self, probs_true: Any, sample_weight: Any = None) -> None:
        Q = np.asarray(probs_true, dtype=np.float64)
        if Q.ndim != 2 or Q.shape[0] < 1 or Q.shape[1] < 1:
            raise InputError("probs_true", f"must be 2-D (n_items, n_agents) and non-empty; got shape {Q.shape}")
        self.sample_weight: np.ndarray | None = None
        if sample_weight is not None:
            c = np.asarray(sample_weight, dtype=np.float64)
            if c.shape != (Q.shape[0],) or not np.isfinite(c).all() or (c < 0).any() or not c.sum() > 0:
                raise InputError("sample_weight", f"must be ({Q.shape[0]},) finite, non-negative, with a positive sum")
            keep = c > 0
            Q, self.sample_weight = Q[keep], np.ascontiguousarray(c[keep])
        self._sw_total = float(self.sample_weight.sum()) if self.sample_weight is not None else 0.0
        if not np.isfinite(Q).all() or (Q < 0).any():
            raise InputError("probs_true", "must be finite and non-negative")
        rmax = Q.max(axis=1)
        bad = np.flatnonzero(rmax <= 0)
        if bad.size:
            raise InputError(
                "probs_true",
                "every agent gives probability 0 to the true label, so every linear pool has log-likelihood -inf there",
                item=int(bad[0]),
            )
        self.Q = np.ascontiguousarray(Q / rmax[:, None])
        self.n_terms, self.dim = self.Q.shape
        self.offset = -self._mean(np.log(rmax))
        self.project = project_simplex
        self.prox = lambda x, step=1.0: project_simplex(x)

    def _mean(self, v: np.ndarray) -> float:
        """The (weighted) mean over items of ``v`` (n_terms,)."""
        if self.sample_weight is None:
            return float(np.mean(v))
        return float(self.sample_weight @ v / self._sw_total)

    def _item_factors(self) -> np.ndarray | float:
        """``c_n / Σc`` per item (``1/N`` unweighted): the factor of item ``n`` in every mean."""
        if self.sample_weight is None:
            return 1.0 / self.n_terms
        return self.sample_weight / self._sw_total

    @classmethod
    def from_log_probs(cls, log_probs: np.ndarray, labels: Any, sample_weight: Any = None) -> MixtureLikelihood:
        """Build ``Q[n, i] = exp(log_probs[n, i, y_n])`` from ``(n_items, n_agents, n_classes)``."""
        lp = np.asarray(log_probs)
        if lp.ndim != 3:
            raise InputError("log_probs", "must be (n_items, n_agents, n_classes)")
        y = as_labels(labels, lp.shape[0], lp.shape[2])  # one label per item, each in 0..n_classes-1
        return cls(np.exp(lp[np.arange(lp.shape[0]), :, y]), sample_weight)

    def x0(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    @property
    def mixture_rows(self) -> np.ndarray | None:
        """The rows ``q_i`` (scaled by their maxima) the compiled stochastic kernels read
        (:mod:`solvers.kernels_incremental.mixture`); ``None`` for a weighted problem."""
        return self.Q if self.sample_weight is None else None

    @property
    def mixture_offset(self) -> float:
        """The constant the row scaling removed: ``f(w) = -mean_n log (Qw)_n + mixture_offset``."""
        return self.offset

    def mixture(self, x: np.ndarray) -> np.ndarray:
        """``(Q w)_n`` in the scaled units (row maxima divided out)."""
        return self.Q @ np.asarray(x, dtype=np.float64)

    def value(self, x: np.ndarray) -> float:
        m = self.mixture(x)
        if np.any(m <= 0):
            return float("inf")
        return -self._mean(np.log(m)) + self.offset

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        m = self.mixture(x)
        if np.any(m <= 0):
            return float("inf"), np.full(self.dim, np.nan)
        f = -self._mean(np.log(m)) + self.offset
        if self.sample_weight is None:
            return f, -(self.Q.T @ (1.0 / m)) / self.n_terms
        return f, -(self.Q.T @ (self._item_factors() / m))

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def hessian(self, x: np.ndarray, *, items: np.ndarray | None = None) -> np.ndarray:
        """``(1/N) Qᵀ diag(1/(Qw)²) Q``; with ``items``, averaged over those items only (subsampled)."""
        its = np.arange(self.n_terms) if items is None else np.asarray(items, dtype=np.int64)
        Q = self.Q[its]
        B = Q / (Q @ np.asarray(x, dtype=np.float64))[:, None]
        if self.sample_weight is None:
            return (B.T @ B) / Q.shape[0]
        c = self.sample_weight[its]
        return (B.T @ (B * c[:, None])) / c.sum()

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        r = 1.0 / self.mixture(x)
        if self.sample_weight is None:
            return self.Q.T @ ((self.Q @ v) * r * r) / self.n_terms
        return self.Q.T @ ((self.Q @ v) * r * r * self._item_factors())

    def term_grad(self, i: int, x: np.ndarray) -> np.ndarray:
        """Gradient of term ``i``; the terms' mean is the gradient (weighted: ``N c_i / Σc`` times the item's)."""
        q = self.Q[i]
        scale = 1.0 if self.sample_weight is None else self.n_terms * float(self.sample_weight[i]) / self._sw_total
        return -scale * q / float(q @ x)

    def responsibilities(self, x: np.ndarray) -> np.ndarray:
        """EM's E-step: ``r[n, i] = w_i Q_ni / (Qw)_n`` (seed 000 Eq. 2.4 as a mixture)."""
        x = np.asarray(x, dtype=np.float64)
        return self.Q * x[None, :] / self.mixture(x)[:, None]

    def screen(self, k: int) -> np.ndarray:
        """The ``k`` agents with the largest (weighted) mean log-probability of the true labels."""
        with np.errstate(divide="ignore"):
            lq = np.log(self.Q)
        score = lq.mean(axis=0) if self.sample_weight is None else self.sample_weight @ lq
        return np.sort(np.argsort(-score, kind="stable")[: min(k, self.dim)])

    def restrict(self, idx: Any) -> MixtureLikelihood:
        sub = MixtureLikelihood.__new__(MixtureLikelihood)
        idx = np.asarray(idx, dtype=np.int64)
        Q = self.Q[:, idx]
        rmax = Q.max(axis=1)
        if np.any(rmax <= 0):
            raise InputError("idx", "restricted problem has an item with zero probability under every kept agent")
        sub.sample_weight, sub._sw_total = self.sample_weight, self._sw_total
        sub.Q = np.ascontiguousarray(Q / rmax[:, None])
        sub.offset = self.offset - self._mean(np.log(rmax))
        sub.n_terms, sub.dim = sub.Q.shape
        sub.project = project_simplex
        sub.prox = lambda x, step=1.0: project_simplex(x)
        return sub
