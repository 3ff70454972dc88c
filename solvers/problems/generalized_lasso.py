"""The generalised lasso ``(s/2)|M x - b|^2 + lam |D x|_1`` (Boyd et al. 2011 section 6.4.1; total variation with D the difference matrix).

Offered in the ADMM split (``A = D``, :class:`~solvers.problems.admm_form.QuadraticSplit`) and the
saddle form ``f(x) + <x, D^T y> - g*(y)`` with ``f = (s/2)|M x - b|^2`` (a quadratic prox) and
``g = lam |.|_1`` (``g*`` the indicator of the inf-ball, its prox the clip).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..prox import L1, Box, Quadratic
from .admm_form import QuadraticSplit
from .saddle_point import SaddlePoint


class _L1Conj:
    """``g = lam |.|_1`` seen through its conjugate (the indicator of ``{|y|_inf <= lam}``)."""

    def __init__(self, lam: float) -> None:
        self.l1, self.box = L1(lam), Box(-lam, lam)

    def value(self, z: np.ndarray) -> float:
        return self.l1.value(z)

    def conj_value(self, y: np.ndarray) -> float:
        return self.l1.conj_value(y)

    def conj_prox(self, v: np.ndarray, s: Any) -> np.ndarray:
        return self.box.prox(v)


class GeneralizedLasso:
    """``(s/2)|M x - b|^2 + lam |D x|_1`` (``mean=True``: ``s = 1/N``)."""

    def __init__(self, M: Any, b: Any, D: Any, lam: float, *, mean: bool = False) -> None:
        self.M = np.asarray(M, dtype=float)
        self.b = np.asarray(b, dtype=float)
        self.D = np.asarray(D, dtype=float)
        if self.M.ndim != 2 or self.b.shape != (self.M.shape[0],):
            raise InputError("b", f"must have one entry per row of M ({self.M.shape[0]})")
        if self.D.ndim != 2 or self.D.shape[1] != self.M.shape[1]:
            raise InputError("D", f"must have {self.M.shape[1]} columns")
        self.lam = float(lam)
        self.scale = 1.0 / self.M.shape[0] if mean else 1.0
        self.dim, self.n_terms = self.M.shape[1], self.M.shape[0]
        self.g = L1(self.lam)

    @classmethod
    def total_variation(cls, M: Any, b: Any, lam: float, **kw: Any) -> GeneralizedLasso:
        """``D`` the first-difference matrix: ``lam sum_i |x_{i+1} - x_i|`` (1-D total variation)."""
        d = np.asarray(M).shape[1]
        return cls(M, b, np.diff(np.eye(d), axis=0), lam, **kw)

    def value(self, x: np.ndarray) -> float:
        r = self.M @ x - self.b
        return 0.5 * self.scale * float(r @ r) + self.g.value(self.D @ x)

    def splitting(self) -> QuadraticSplit:
        return QuadraticSplit(self.M, self.b, self.g, A=self.D, scale=self.scale)

    def saddle_point(self) -> SaddlePoint:
        s = self.scale
        f = Quadratic(s * self.M.T @ self.M, -s * self.M.T @ self.b, 0.5 * s * float(self.b @ self.b))
        return SaddlePoint(self.D.T, f, _L1Conj(self.lam))
