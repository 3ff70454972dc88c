"""Regularised empirical risk minimisation with conjugate losses (seed 000 Eq. 3.26-3.28).

    J(x) = s * sum_i phi_i(a_i^T x) + r(x),     s = 1/N (``mean=True``) or 1,

with ``phi_i`` a :class:`solvers.prox.Loss` (squared, smooth hinge, logistic) and ``r`` a regulariser
of :mod:`solvers.prox` (``L1`` gives the lasso, ``SquaredL2`` ridge, ``ElasticNet``, ``GroupL2``). It
offers the composite split read by ISTA/FISTA (``smooth_value``, ``grad`` of the smooth part,
``prox`` of ``r``, ``L``), the saddle-point form (``K = s A^T``, ``g* = sum_i phi_i*``) read by the
primal-dual solvers, the ADMM split ``f(x) + r(z)`` s.t. ``x - z = 0`` for the squared loss, and the
duality gap at ``x`` (dual point ``y_i = phi_i'(a_i^T x)``, scaled into the domain of ``r*``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..prox import Loss
from .admm_form import QuadraticSplit
from .saddle_point import SaddlePoint, operator_norm


class ScaledLoss:
    """``g`` of the saddle form: ``g*(y) = s sum_i phi_i*(y_i)``, so ``g(w) = s sum_i phi_i(w_i / s)``."""

    def __init__(self, loss: Loss, scale: float) -> None:
        self.loss, self.scale = loss, float(scale)

    def value(self, w: np.ndarray) -> float:
        return self.scale * self.loss.value(w / self.scale)

    def conj_value(self, y: np.ndarray) -> float:
        return self.scale * self.loss.conj_value(y)

    def conj_prox(self, v: np.ndarray, s: Any) -> np.ndarray:
        return self.loss.conj_prox(v, self.scale * np.asarray(s))


class ERM:
    """``s * sum_i phi(a_i^T x; b_i) + r(x)``; see the module docstring."""

    n_classes = None

    def __init__(self, A: Any, b: Any, reg: Any, *, loss: str = "squared", mean: bool = True, gamma: float = 1.0):
        self.A = A if sp.issparse(A) else np.asarray(A, dtype=float)
        if self.A.ndim != 2:
            raise InputError("A", f"must be a 2-D matrix; got {self.A.ndim} dimensions")
        n, d = self.A.shape
        b = np.asarray(b, dtype=float)
        if b.shape != (n,):
            raise InputError("b", f"must have shape ({n},); got {b.shape}")
        if not (hasattr(reg, "prox") and hasattr(reg, "value")):
            raise InputError("reg", "must offer value(x) and prox(v, t) (see solvers.prox)")
        self.phi = Loss(loss, b, gamma=gamma)
        self.b = b
        self.reg = reg
        self.scale = 1.0 / n if mean else 1.0
        self.dim, self.n_terms = d, n
        self._L: float | None = None

    # the composite split (ista, fista, and the generic proximal solvers)
    def smooth_value(self, x: np.ndarray) -> float:
        return self.scale * self.phi.value(self.A @ x)

    def value(self, x: np.ndarray) -> float:
        return self.smooth_value(x) + self.reg.value(x)

    def grad(self, x: np.ndarray) -> np.ndarray:
        """Gradient of the smooth part."""
        return self.scale * (self.A.T @ self.phi.derivs(self.A @ x))

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        z = self.A @ x
        v = self.scale * self.phi.value(z) + self.reg.value(x)
        return v, self.scale * (self.A.T @ self.phi.derivs(z))

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        return self.reg.prox(x, step)

    @property
    def L(self) -> float:
        """Lipschitz constant of the smooth part's gradient: ``s * max phi'' * |A|_2^2``."""
        if self._L is None:
            self._L = self.scale * self.phi.curvature * operator_norm(self.A) ** 2
        return self._L

    # the primal-dual forms
    def saddle_point(self) -> SaddlePoint:
        """``min_x max_y r(x) + s sum_i (<x, y_i a_i> - phi_i*(y_i))`` (seed 000 Eq. 3.28)."""
        return SaddlePoint(self.A.T * self.scale, self.reg, ScaledLoss(self.phi, self.scale))

    def splitting(self) -> QuadraticSplit:
        """``(s/2)|A x - b|^2 + r(z)`` s.t. ``x - z = 0`` (the squared loss only)."""
        if self.phi.kind != "squared":
            raise InputError("loss", f"the ADMM split needs the squared loss; got {self.phi.kind!r}")
        return QuadraticSplit(self.A, self.b, self.reg, scale=self.scale)

    @property
    def duality_gap(self) -> Any:
        """``x -> J(x) - D(y(x))`` when the regulariser offers its conjugate (``conj_value``, ``dual_scale``), else None."""
        return self._gap if hasattr(self.reg, "conj_value") and hasattr(self.reg, "dual_scale") else None

    def _gap(self, x: np.ndarray) -> float:
        """``J(x) - D(y(x))`` with ``y_i = phi_i'(a_i^T x)`` (the maximiser of the saddle at ``x``)."""
        z = self.A @ x
        y = self.phi.derivs(z)
        u = -self.scale * (self.A.T @ y)
        c = self.reg.dual_scale(u)
        dual = -self.reg.conj_value(c * u) - self.scale * self.phi.conj_value(c * y)
        return self.scale * self.phi.value(z) + self.reg.value(x) - dual
