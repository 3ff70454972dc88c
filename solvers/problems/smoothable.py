"""Nonsmooth regularised linear models with a Nesterov-smoothable loss (seed 002 ch. II, eq. 22-23, 70-73).

    Phi(x) = (1/n) sum_i f(a_i . x, y_i) + (l2/2) |x|^2,       f = hinge or absolute loss,

the composite ``f + g`` of L534-540 with ``g = (l2/2)|x|^2`` (``L_g = mu = l2``, L976, L1010) and the
expectation over ``xi`` taken as the uniform draw of a row. ``value`` is ``Phi``; ``grad`` and
``term_grad`` are subgradients (the oracle of the SGD, averaged-SGD and AC-SA baselines; the problem is
``smooth = False`` so the smooth-only solvers refuse it). What ANSGD reads: ``smoothed_term_grad(i, x,
gamma)``, the gradient of ``f_gamma(a_i . x, y_i) + g(x)`` (eq. 23), and ``nesterov_smoothing``, the
constants of its schedules with the estimate of ``E|A_xi|^2`` (:mod:`solvers.smoothing`).

Why a problem of its own and not a loss of :class:`~solvers.problems.linear_models.LinearModel`: the
smoothing parameter changes at every ANSGD step (``gamma_{t+1} = alpha_t``), whereas the linear
models' compiled kernels fix one loss per problem; the per-step oracle here is plain numpy.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..smoothing import SmoothedLoss, SmoothingConstants, check_gamma, estimate_mean_sq_norm
from ._rows import as_rows, check_penalties, row_sqnorms
from .linear_models import _sym_labels


class SmoothableLinearModel:
    """``Phi(x) = mean_i f(a_i . x, y_i) + (l2/2)|x|^2`` with ``f`` the hinge or absolute loss.

    Parameters
    ----------
    X : array (n, d) or scipy.sparse matrix
    y : array (n,); for the hinge two label values (mapped to -1/+1, the larger is +1), else targets
    loss : "hinge" | "absolute"
    l2 : ridge coefficient (>= 0); it is ``L_g`` and ``mu`` of the seed
    n_estimate : samples in the estimate of ``E|A_xi|^2`` (L986: 100)
    seed : seed of that estimate
    """

    constraint = "none"
    smooth = False

    def __init__(self, X: Any, y: Any, loss: str = "hinge", *, l2: float = 0.0, n_estimate: int = 100, seed: int = 0):
        self.phi = SmoothedLoss(loss)
        A = as_rows(X)
        if A.shape[0] == 0:
            raise InputError("X", "needs at least one row")
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        if not np.all(np.isfinite(y)):
            raise InputError("y", "contains NaN or infinite values")
        check_penalties(l2=l2)
        self.loss = loss
        self.A: Any = A
        self.y = _sym_labels(y) if loss == "hinge" else y
        self.l2 = float(l2)
        self.n_terms, self.dim = A.shape
        self.sparse = sp.issparse(A)
        self.sqnorms = row_sqnorms(A)
        self._n_estimate, self._seed = n_estimate, seed

    @property
    def mu(self) -> float:
        return self.l2

    @cached_property
    def nesterov_smoothing(self) -> SmoothingConstants:
        """``L_g = mu = l2``, ``D_U = 1/2``, ``zeta = 1`` and the sampled ``E|A_xi|^2`` (L986)."""
        est = estimate_mean_sq_norm(self.sqnorms, self._n_estimate, self._seed)
        return SmoothingConstants(self.l2, self.l2, self.phi.D_U, self.phi.zeta, est)

    # ---- the full objective -------------------------------------------------------------------
    def smoothed_value(self, x: np.ndarray, gamma: float) -> float:
        """``mean_i f_gamma(a_i . x, y_i) + (l2/2)|x|^2`` (``gamma = 0``: ``Phi``)."""
        z = self.A @ x
        return float(self.phi.values(z, self.y, check_gamma(gamma)).mean()) + 0.5 * self.l2 * float(x @ x)

    def smoothed_grad(self, x: np.ndarray, gamma: float) -> np.ndarray:
        """Gradient of :meth:`smoothed_value` (``gamma = 0``: a subgradient of ``Phi``)."""
        z = self.A @ x
        return self.A.T @ self.phi.derivs(z, self.y, check_gamma(gamma)) / self.n_terms + self.l2 * x

    def value(self, x: np.ndarray) -> float:
        return self.smoothed_value(x, 0.0)

    def grad(self, x: np.ndarray) -> np.ndarray:
        """A subgradient of ``Phi``."""
        return self.smoothed_grad(x, 0.0)

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        return self.value(x), self.grad(x)

    # ---- one sample ----------------------------------------------------------------------------
    def _row(self, i: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Row ``i`` as ``(values, indices)`` (``indices`` None when dense)."""
        if self.sparse:
            a, b = self.A.indptr[i], self.A.indptr[i + 1]
            return self.A.data[a:b], self.A.indices[a:b]
        return self.A[i], None

    def smoothed_term_grad(self, i: int, x: np.ndarray, gamma: float) -> np.ndarray:
        """Gradient of ``f_gamma(a_i . x, y_i) + (l2/2)|x|^2`` (eq. 23; ``gamma = 0``: a subgradient)."""
        vals, idx = self._row(i)
        z = float(vals @ (x if idx is None else x[idx]))
        c = float(self.phi.derivs(np.array([z]), self.y[i : i + 1], gamma)[0])
        g = self.l2 * x
        if idx is None:
            g += c * vals
        else:
            g[idx] += c * vals
        return g

    def term_grad(self, i: int, x: np.ndarray) -> np.ndarray:
        """A subgradient of the term ``f(a_i . x, y_i) + (l2/2)|x|^2``."""
        return self.smoothed_term_grad(i, x, 0.0)

    def x0(self) -> np.ndarray:
        return np.zeros(self.dim)
