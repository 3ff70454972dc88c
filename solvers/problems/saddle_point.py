"""The separable convex-concave saddle-point form (Sep-CCSP) read by the primal-dual solvers.

Seed 000 Eq. 3.19-3.28:

    min_x max_y  L(x, y) = f(x) + <x, K y> - g*(y),       K in R^{Dx x Dy},

whose primal is ``P(x) = f(x) + g(K^T x)`` and dual ``D(y) = -f*(-K y) - g*(y)``. ERM
``(1/N) sum_i phi_i(a_i^T x) + f(x)`` is the case ``K = A^T / N``, ``g* = sum_i phi_i*`` (3.26-3.28); a
linear constraint ``sum_j A_j x_j = b`` is ``g = indicator of {b}``, ``g*(y) = <y, b>`` (3.24-3.25).

``f`` offers ``value`` and ``prox(v, t)`` (``t`` may be a vector: the diagonally scaled prox of
SP-BCD, Eq. 3.46), and optionally ``conj_value`` / ``dual_scale`` (then the duality gap is defined);
``g`` offers ``conj_prox(v, s)``, ``conj_value`` and ``value`` (or ``residual``, for a constraint).
The objects of :mod:`solvers.prox` are such functions. ``K`` is a dense array, a sparse matrix or a
:class:`scipy.sparse.linalg.LinearOperator`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, aslinearoperator

from ..errors import InputError


def operator_norm(K: Any, *, tol: float = 1e-10, max_iter: int = 500, seed: int = 0) -> float:
    """``|K|_2`` by power iteration on ``K^T K`` (the PDCP step rule needs it, seed 000 l.1275)."""
    op = aslinearoperator(K)
    v = np.random.default_rng(seed).normal(size=op.shape[1])
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(max_iter):
        w = op.rmatvec(op.matvec(v))
        s_new = float(np.sqrt(np.linalg.norm(w)))
        if s_new == 0.0:
            return 0.0
        v = w / np.linalg.norm(w)
        if abs(s_new - s) <= tol * s_new:
            return s_new
        s = s_new
    return s


def _check_coupling(K: Any) -> None:
    """Refuse a coupling with an all-zero row or column (a variable or constraint that nothing couples)."""
    if isinstance(K, LinearOperator):
        return
    M = sp.csr_matrix(K) if sp.issparse(K) else np.asarray(K)
    absM = abs(M)
    rows = np.asarray(absM.sum(axis=1)).ravel()
    cols = np.asarray(absM.sum(axis=0)).ravel()
    if not np.all(np.isfinite(rows)):
        raise InputError("K", "must be finite")
    if np.any(rows == 0):
        raise InputError("K", "has an all-zero row (a primal coordinate nothing couples)", row=int(np.argmin(rows)))
    if np.any(cols == 0):
        raise InputError("K", "has an all-zero column (a dual coordinate nothing couples)", column=int(np.argmin(cols)))


class SaddlePoint:
    """``min_x max_y f(x) + <x, K y> - g*(y)`` (seed 000 Eq. 3.19), with its primal, dual and gap."""

    def __init__(self, K: Any, f: Any, g: Any, *, blocks: list[np.ndarray] | None = None) -> None:
        if len(getattr(K, "shape", ())) != 2:
            raise InputError("K", "must be a 2-D matrix or linear operator")
        _check_coupling(K)
        self.K = K
        self.op = aslinearoperator(K)
        self.f = f
        self.g = g
        self.dim, self.dual_dim = (int(n) for n in self.op.shape)
        self._norm: float | None = None
        #: the primal block partition of Eq. 3.45 (index arrays); None: one block per coordinate
        self.blocks = blocks
        if blocks is not None:
            seen = np.sort(np.concatenate(blocks))
            if not np.array_equal(seen, np.arange(self.dim)):
                raise InputError("blocks", f"must partition the {self.dim} primal coordinates")

    @property
    def A(self) -> Any:
        """The coupling as the seed's ``A = K^T`` (``Dy x Dx``; CSC when sparse): column ``d`` couples ``x_d``."""
        if isinstance(self.K, LinearOperator):
            raise InputError("K", "a block method needs K as a matrix, not a LinearOperator")
        return sp.csc_matrix(self.K.T) if sp.issparse(self.K) else np.asarray(self.K).T

    def prox_block(self, j: int, idx: np.ndarray, v: np.ndarray, t: Any) -> np.ndarray:
        """``prox`` of ``f_j`` (block ``j``, coordinates ``idx``) at ``v`` with step(s) ``t``.

        A :class:`~solvers.prox.Separable` ``f`` uses its part ``j``; any other ``f`` must be
        coordinate-separable (l1, elastic net, ridge, box), so its prox acts on the sub-vector.
        """
        if hasattr(self.f, "parts"):
            shape = self.f.shapes[j]
            return np.ravel(self.f.parts[j].prox(v.reshape(shape), float(np.min(t))))
        return self.f.prox(v, t)

    @property
    def norm(self) -> float:
        """``|K|_2`` (power iteration, computed once)."""
        if self._norm is None:
            self._norm = operator_norm(self.K)
        return self._norm

    def Ky(self, y: np.ndarray) -> np.ndarray:
        return self.op.matvec(y)

    def KTx(self, x: np.ndarray) -> np.ndarray:
        return self.op.rmatvec(x)

    def primal(self, x: np.ndarray, KTx: np.ndarray | None = None) -> float:
        """``f(x) + g(K^T x)``; for a constraint (``g`` an indicator with a residual) ``f(x)`` alone."""
        z = self.KTx(x) if KTx is None else KTx
        gv = 0.0 if hasattr(self.g, "residual") else self.g.value(z)
        return self.f.value(x) + gv

    def residual(self, x: np.ndarray, KTx: np.ndarray | None = None) -> float | None:
        """The constraint residual ``|K^T x - b|`` when ``g`` is a constraint, else None."""
        if not hasattr(self.g, "residual"):
            return None
        return float(self.g.residual(self.KTx(x) if KTx is None else KTx))

    @property
    def has_gap(self) -> bool:
        return hasattr(self.f, "conj_value") and hasattr(self.f, "dual_scale") and not hasattr(self.g, "residual")

    def dual(self, y: np.ndarray) -> float:
        """``D(y) = -f*(-K y) - g*(y)`` after scaling ``y`` into the domain of ``f*`` (``f.dual_scale``)."""
        u = -self.Ky(y)
        c = self.f.dual_scale(u)
        return -self.f.conj_value(c * u) - self.g.conj_value(c * y)

    def gap(self, x: np.ndarray, y: np.ndarray, KTx: np.ndarray | None = None) -> float | None:
        """The duality gap ``P(x) - D(y) >= 0`` (None when ``f*`` is not offered or ``g`` is a constraint)."""
        if not self.has_gap:
            return None
        return self.primal(x, KTx) - self.dual(y)
