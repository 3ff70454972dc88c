"""Robust PCA as a constrained separable problem (seed 000 Eq. 3.60-3.61, Parikh & Boyd's matrix decomposition).

    min  (1/2)|X_1|_F^2 + g2 |X_2|_1 + g3 |X_3|_*     subject to   X_1 + X_2 + X_3 = B,

offered in the ADMM split (:class:`~solvers.problems.admm_form.ConsensusSplit`) and the saddle form
``sum_j f_j(X_j) + <sum_j X_j, Y> - <Y, B>`` (``K = [I; I; I]``, ``g* = <., B>``). ``x`` is the flat
vector ``(X_1, X_2, X_3)``; :meth:`RPCA.parts` reshapes it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..prox import L1, Equality, Nuclear, Separable, SquaredL2
from .admm_form import ConsensusSplit
from .saddle_point import SaddlePoint


class RPCA:
    """``(1/2)|X_1|^2 + g2 |X_2|_1 + g3 |X_3|_*`` s.t. ``X_1 + X_2 + X_3 = B``."""

    def __init__(self, B: np.ndarray, g2: float, g3: float) -> None:
        B = np.asarray(B, dtype=float)
        if B.ndim != 2 or not np.all(np.isfinite(B)):
            raise InputError("B", "must be a finite 2-D matrix")
        self.B = B
        self.shape = B.shape
        self.f = Separable([SquaredL2(1.0), L1(g2), Nuclear(g3)], [B.shape] * 3)
        self.dim = self.f.dim
        self.n_terms = 1

    @classmethod
    def generate(cls, s: int, n: int, rank: int, *, density: float = 0.05, noise: float = 1e-3, seed: int = 0) -> RPCA:
        """Parikh & Boyd's generator (notes 000 section 3.2): ``B = L + S + V``, ``g2 = 0.15 |B|_inf``, ``g3 = 0.15 |B|_2``."""
        rng = np.random.default_rng(seed)
        L = rng.normal(size=(s, rank)) @ rng.normal(size=(rank, n))
        S = np.where(rng.random((s, n)) < density, rng.uniform(-10, 10, (s, n)), 0.0)
        B = L + S + np.sqrt(noise) * rng.normal(size=(s, n))
        return cls(B, 0.15 * float(np.abs(B).max()), 0.15 * float(np.linalg.norm(B, 2)))

    def parts(self, x: np.ndarray) -> list[np.ndarray]:
        return [self.f.block(x, j) for j in range(3)]

    def value(self, x: np.ndarray) -> float:
        """The objective (the constraint is reported apart, by :meth:`residual`)."""
        return self.f.value(x)

    def residual(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(sum(self.parts(x)) - self.B))

    def splitting(self) -> ConsensusSplit:
        return ConsensusSplit(self.f, self.B)

    def multi_block(self) -> ConsensusSplit:
        """The three-block form of Eq. 3.60-3.61 (every ``A_j = I``), for Gauss-Seidel ADMM."""
        return ConsensusSplit(self.f, self.B)

    def saddle_point(self) -> SaddlePoint:
        m = self.B.size
        K = sp.vstack([sp.identity(m, format="csr")] * 3, format="csr")  # K y = (Y, Y, Y), K^T x = sum_j X_j
        blocks = [np.arange(j * m, (j + 1) * m) for j in range(3)]
        return SaddlePoint(K, self.f, Equality(self.B.ravel()), blocks=blocks)
