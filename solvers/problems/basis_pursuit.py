"""Basis pursuit ``min |x|_1 s.t. A x = b`` (seed 003 section 6.7, Bregman iteration; seed 000 Eq. 3.24-3.25).

Offered in the saddle form ``|x|_1 + <x, A^T y> - <y, b>`` (``K = A^T``, ``g`` the indicator of ``{b}``),
which ``bregman``, ``pdcp`` and ``spbcd`` read; ``value`` is ``|x|_1`` and ``residual`` ``|A x - b|``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError
from ..prox import L1, Equality
from .saddle_point import SaddlePoint


class BasisPursuit:
    """``min |x|_1`` subject to ``A x = b``."""

    def __init__(self, A: Any, b: Any) -> None:
        self.A = np.asarray(A, dtype=float)
        self.b = np.asarray(b, dtype=float)
        if self.A.ndim != 2 or self.b.shape != (self.A.shape[0],):
            raise InputError("b", f"must have one entry per row of A ({self.A.shape[0] if self.A.ndim == 2 else '?'})")
        self.dim, self.n_terms = self.A.shape[1], 1

    def value(self, x: np.ndarray) -> float:
        return float(np.abs(x).sum())

    def residual(self, x: np.ndarray) -> float:
        return float(np.linalg.norm(self.A @ x - self.b))

    def saddle_point(self) -> SaddlePoint:
        return SaddlePoint(self.A.T, L1(1.0), Equality(self.b))
