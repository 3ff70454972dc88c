"""The (weighted) elementwise l1 penalty on a precision matrix, with what the ADMM needs of it.

``Σ_ij W_ij |Θ_ij|`` over the full symmetric matrix (each off-diagonal pair counted twice, as in
seed 001 Eq 6.5's elementwise norm). The graphical lasso is ``W = λ`` off the diagonal (and on it
when the diagonal is penalised, Eq 6.5 as printed; scikit-learn and SPICE leave it free, l.2511);
the reweighted schemes of Eqs 6.7-6.8 give each entry its own weight.

A penalty object offers ``value(Θ)`` and ``prox(V, t) = argmin_Θ t·value(Θ) + ½|Θ - V|_F^2`` over
symmetric matrices; the l1 one also offers ``dual_project(Γ)``, the projection onto the box
``|Γ_ij| <= W_ij`` of Eq 6.6, which gives the ADMM a duality gap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.prox import soft_threshold


class WeightedL1:
    """``Σ_ij W_ij |Θ_ij|`` with a symmetric, finite, non-negative weight matrix ``W``."""

    def __init__(self, weights: Any, *, field: str = "weights") -> None:
        W = np.asarray(weights, dtype=float)
        if W.ndim != 2 or W.shape[0] != W.shape[1]:
            raise InputError(field, f"must be a square matrix; got shape {W.shape}", code="bad_shape")
        if not np.isfinite(W).all() or (W < 0).any():
            raise InputError(field, "must be finite and >= 0", code="invalid")
        self.W = 0.5 * (W + W.T)

    @classmethod
    def uniform(cls, lam: float, p: int, *, penalize_diagonal: bool = False) -> WeightedL1:
        """The graphical lasso's ``λ |Θ|_1`` (off the diagonal unless ``penalize_diagonal``)."""
        if not (np.isfinite(lam) and lam >= 0):
            raise InputError("lam", f"must be finite and >= 0; got {lam!r}")
        W = np.full((p, p), float(lam))
        if not penalize_diagonal:
            np.fill_diagonal(W, 0.0)
        return cls(W)

    def value(self, Theta: np.ndarray) -> float:
        return float(np.sum(self.W * np.abs(Theta)))

    def prox(self, V: np.ndarray, t: float) -> np.ndarray:
        return soft_threshold(V, t * self.W)

    def dual_project(self, Gamma: np.ndarray) -> np.ndarray:
        """The nearest point of the dual box ``|Γ_ij| <= W_ij`` (Eq 6.6's constraint, ``Γ = S - C``)."""
        return np.clip(Gamma, -self.W, self.W)
