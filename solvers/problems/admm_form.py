"""The two-block linearly constrained form of ADMM (Boyd et al. 2011; seed 003 section 6.7; seed 000 Eq. 3.24).

    min_{x, z}  f(x) + g(z)    subject to   A x - z = 0

(the general ``A x + B z = c`` with an invertible ``B`` becomes this one with ``z' = c - B z``). A
split offers the two minimisations of the scaled-form ADMM,

    x_step(v, rho) = argmin_x f(x) + (rho/2) |A x - v|^2,
    z_step(w, rho) = argmin_z g(z) + (rho/2) |z - w|^2 = prox_{g/rho}(w),

the products ``A x`` and ``A^T z``, the objective ``f(x) + g(A x)`` of the original problem and,
when the original problem is itself constrained, its residual. Two splits are here:
:class:`QuadraticSplit` (``f = (s/2)|M x - b|^2``: lasso with ``A = I``, generalised lasso with
``A = D``) and :class:`ConsensusSplit` (``f = sum_j f_j(X_j)`` with ``sum_j Z_j = B``: RPCA, Eq. 3.60),
which is also the q-block form ``min sum_j f_j(X_j)`` s.t. ``sum_j X_j = B`` (Eq. 3.24 with every
``A_j = I``) that Gauss-Seidel ADMM sweeps block by block (``block_step``; the ``multi_block`` capability).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ..errors import InputError


class QuadraticSplit:
    """``(s/2)|M x - b|^2 + g(A x)`` split as ``f(x) + g(z)``, ``A x = z`` (``A = None``: the identity).

    The x-step solves ``(s M^T M + rho A^T A) x = s M^T b + rho A^T v`` with a Cholesky factor cached
    per ``rho``; with ``A = I`` and fewer rows than columns it factors the smaller
    ``rho/s I + M M^T`` instead (the matrix inversion lemma, Boyd et al. 2011 section 4.2.4).
    """

    def __init__(self, M: Any, b: np.ndarray, g: Any, *, A: Any = None, scale: float = 1.0) -> None:
        self.M = np.asarray(M.toarray() if sp.issparse(M) else M, dtype=float)
        self.b = np.asarray(b, dtype=float)
        self.g = g
        self.A = None if A is None else np.asarray(A.toarray() if sp.issparse(A) else A, dtype=float)
        self.scale = float(scale)
        n, d = self.M.shape
        if self.A is not None and self.A.shape[1] != d:
            raise InputError("A", f"must have {d} columns (one per coordinate of x); got {self.A.shape[1]}")
        self.dim_x = d
        self.dim_z = d if self.A is None else self.A.shape[0]
        self._Mtb = self.scale * (self.M.T @ self.b)
        self._factors: dict[float, Any] = {}

    def Ax(self, x: np.ndarray) -> np.ndarray:
        return x if self.A is None else self.A @ x

    def ATz(self, z: np.ndarray) -> np.ndarray:
        return z if self.A is None else self.A.T @ z

    def x_step(self, v: np.ndarray, rho: float) -> np.ndarray:
        rhs = self._Mtb + rho * self.ATz(v)
        n, d = self.M.shape
        woodbury = self.A is None and n < d
        if rho not in self._factors:
            if woodbury:
                self._factors[rho] = cho_factor(rho / self.scale * np.eye(n) + self.M @ self.M.T)
            else:
                AtA = np.eye(d) if self.A is None else self.A.T @ self.A
                self._factors[rho] = cho_factor(self.scale * (self.M.T @ self.M) + rho * AtA)
        F = self._factors[rho]
        if woodbury:
            return (rhs - self.M.T @ cho_solve(F, self.M @ rhs)) / rho
        return cho_solve(F, rhs)

    def z_step(self, w: np.ndarray, rho: float) -> np.ndarray:
        return self.g.prox(w, 1.0 / rho)

    def objective(self, x: np.ndarray) -> float:
        r = self.M @ x - self.b
        return 0.5 * self.scale * float(r @ r) + self.g.value(self.Ax(x))

    def residual(self, x: np.ndarray) -> float | None:
        return None


class ConsensusSplit:
    """``sum_j f_j(X_j)`` s.t. ``sum_j X_j = B``, split as ``x = (X_1..X_q)``, ``z = x``, ``g = [sum_j Z_j = B]``.

    ``f``: a :class:`solvers.prox.Separable` over the q blocks (each of B's shape). The x-step is the
    per-block prox, the z-step the projection ``Z_j = W_j - (sum_k W_k - B)/q`` (seed 000 Eq. 3.60).
    """

    def __init__(self, f: Any, B: np.ndarray) -> None:
        self.f = f
        self.B = np.asarray(B, dtype=float)
        self.q = len(f.parts)
        self.dim_x = self.dim_z = f.dim

    def Ax(self, x: np.ndarray) -> np.ndarray:
        return x

    def ATz(self, z: np.ndarray) -> np.ndarray:
        return z

    def total(self, x: np.ndarray) -> np.ndarray:
        return np.sum(x.reshape(self.q, -1), axis=0)

    def x_step(self, v: np.ndarray, rho: float) -> np.ndarray:
        return self.f.prox(v, 1.0 / rho)

    def block_step(self, j: int, v: np.ndarray, rho: float) -> np.ndarray:
        """``argmin_{X_j} f_j(X_j) + (rho/2)|X_j - V|^2 = prox_{f_j/rho}(V)`` of block ``j`` (flat ``v``):
        the block minimisation of multi-block (Gauss-Seidel) ADMM, where every ``A_j = I``."""
        return np.ravel(self.f.parts[j].prox(v.reshape(self.f.shapes[j]), 1.0 / rho))

    def blocks(self, x: np.ndarray) -> np.ndarray:
        """``x`` as a ``(q, size of B)`` array, one row per block (a view)."""
        return x.reshape(self.q, -1)

    def z_step(self, w: np.ndarray, rho: float) -> np.ndarray:
        excess = (self.total(w) - self.B.ravel()) / self.q
        return (w.reshape(self.q, -1) - excess).ravel()

    def objective(self, x: np.ndarray) -> float:
        return self.f.value(x)

    def residual(self, x: np.ndarray) -> float | None:
        """``|sum_j X_j - B|_F``."""
        return float(np.linalg.norm(self.total(x) - self.B.ravel()))
