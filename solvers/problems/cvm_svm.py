"""The CVM-form L2-SVM and its simplex dual (seed 002, Ouyang, ch. IV section 4.3.1, eq. aP, aD, 116).

The primal (aP, L1710; Tsang et al. 2005's core vector machine)

    min_{w, b, rho, xi}  (|w|^2 + b^2)/2 + C sum_i xi_i^2 - nu rho   s.t.  y_i (<w, phi(x_i)> + b) >= rho - xi_i

has the dual (aD, L1716) ``max -alpha^T A alpha`` over the unit simplex (``nu = 1``: the objective is
homogeneous), with ``A = K o yy^T + yy^T + I/2C``, ``A_pq = y_p y_q (k_pq + 1) + delta_pq / 2C`` (eq. 116).
In the minimisation convention of :mod:`solvers.problem` the problem is ``min q(alpha) = alpha^T A alpha``
on the simplex, gradient ``2 A alpha`` (the seed's ``g = -2 A alpha`` of eq. 117 is its negative).
From the KKT conditions of (aP) [derived]: ``w = sum_i alpha_i y_i phi(x_i)``, ``b = y^T alpha`` (L1820)
and ``xi_i = alpha_i / 2C``, so the decision function is ``h(x) = sum_i alpha_i y_i (k(x_i, x) + 1)``.
Kernel: RBF ``k = exp(-|x_i - x_j|^2 / (2 sigma^2))`` (L2025).

Where this lives, and why: :class:`CVMDual` is a problem of the core (so the simplex solvers apply to
it as references, e.g. ``projected_gradient`` on a small set), and it offers ``cvm_kernel`` (itself):
the entries of ``A`` computed on demand row by row, with an optional LRU cache of kernel columns,
which is what the stochastic Frank-Wolfe solvers of :mod:`solvers.methods.frank_wolfe_svm` read. The
dense members (``value``, ``grad``) build ``A`` once, O(n^2) memory; they are for small problems
and tests; the Frank-Wolfe solvers never call them.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import cached_property
from typing import Any

import numpy as np

from ..checks import check_count, check_positive
from ..errors import InputError
from ..simplex import project_simplex
from ._rows import as_rows
from .linear_models import _sym_labels


def rbf(
    X: np.ndarray, Z: np.ndarray, sigma: float, sqX: np.ndarray | None = None, sqZ: np.ndarray | None = None
) -> np.ndarray:
    """``k(x, z) = exp(-|x - z|^2 / (2 sigma^2))`` for the rows of ``X`` against the rows of ``Z``;
    ``sqX``, ``sqZ``: their squared norms when the caller keeps them (a working set's: O(|S| d) saved per call)."""
    sqX = np.einsum("ij,ij->i", X, X) if sqX is None else sqX
    sqZ = np.einsum("ij,ij->i", Z, Z) if sqZ is None else sqZ
    K = X @ Z.T  # in place from here: one n_X x n_Z array, no temporaries
    K *= -2.0
    K += sqX[:, None]
    K += sqZ[None, :]
    np.maximum(K, 0.0, out=K)
    K *= -1.0 / (2.0 * sigma * sigma)
    return np.exp(K, out=K)


class CVMDual:
    """``min alpha^T A alpha`` on the unit simplex, ``A_pq = y_p y_q (k_pq + 1) + delta_pq / 2C`` (eq. 116).

    Parameters
    ----------
    X : (n, d) array of training points (dense)
    y : (n,) labels, two values (mapped to -1/+1, the larger is +1)
    C : the squared-slack weight (> 0)
    sigma : the RBF width (> 0)
    cache_columns : kernel columns kept (LRU) by :meth:`column`; 0 disables the cache
    """

    constraint = "simplex"

    def __init__(self, X: Any, y: Any, *, C: float = 1.0, sigma: float = 1.0, cache_columns: int = 0):
        A = as_rows(X)
        if not isinstance(A, np.ndarray):
            raise InputError("X", "must be a dense array (the RBF kernel is computed on dense rows)")
        if A.shape[0] < 2:
            raise InputError("X", f"needs at least two rows; got {A.shape[0]}")
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        if not np.all(np.isfinite(y)):
            raise InputError("y", "contains NaN or infinite values")
        self.X = A
        self.y = _sym_labels(y)
        self.C = check_positive(C, field="C")
        self.sigma = check_positive(sigma, field="sigma")
        self.cache_columns = check_count(cache_columns, field="cache_columns")
        self.n_terms, self.dim = A.shape[0], A.shape[0]
        self.sq = np.einsum("ij,ij->i", A, A)
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        #: kernel evaluations made so far (the seed's cost measure, O(d) each)
        self.kernel_evals = 0

    @property
    def cvm_kernel(self) -> CVMDual:
        return self

    @property
    def diag(self) -> float:
        """``A_pp = 2 + 1/2C`` (the RBF kernel has ``k_pp = 1``)."""
        return 2.0 + 0.5 / self.C

    def entries(
        self, p: int, idx: np.ndarray, rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    ) -> np.ndarray:
        """``A[p, idx]`` computed from the kernel (``len(idx)`` kernel evaluations); ``rows``: the
        points ``X[idx]``, labels ``y[idx]`` and squared norms already gathered (a working set keeps them
        contiguous)."""
        self.kernel_evals += len(idx)
        Xi, yi, sqi = (self.X[idx], self.y[idx], self.sq[idx]) if rows is None else rows
        k = rbf(self.X[p : p + 1], Xi, self.sigma, self.sq[p : p + 1], sqi)[0]
        a = self.y[p] * yi * (k + 1.0)
        a[idx == p] += 0.5 / self.C
        return a

    def column(self, p: int) -> np.ndarray:
        """The whole column ``A[:, p]``, from the LRU cache when it holds it (``n`` evaluations otherwise)."""
        col = self._cache.get(p)
        if col is not None:
            self._cache.move_to_end(p)
            return col
        col = self.entries(p, np.arange(self.n_terms))
        if self.cache_columns:
            self._cache[p] = col
            if len(self._cache) > self.cache_columns:
                self._cache.popitem(last=False)
        return col

    # ---- the dense members: small problems and references ----------------------------------
    @cached_property
    def matrix(self) -> np.ndarray:
        """The dense ``A`` (O(n^2) memory)."""
        K = rbf(self.X, self.X, self.sigma, self.sq, self.sq)
        return np.outer(self.y, self.y) * (K + 1.0) + np.eye(self.n_terms) * (0.5 / self.C)

    def value(self, alpha: np.ndarray) -> float:
        return float(alpha @ self.matrix @ alpha)

    def grad(self, alpha: np.ndarray) -> np.ndarray:
        return 2.0 * (self.matrix @ alpha)

    def value_and_grad(self, alpha: np.ndarray) -> tuple[float, np.ndarray]:
        Aa = self.matrix @ alpha
        return float(alpha @ Aa), 2.0 * Aa

    def project(self, alpha: np.ndarray) -> np.ndarray:
        return project_simplex(alpha)

    def x0(self) -> np.ndarray:
        return np.full(self.n_terms, 1.0 / self.n_terms)

    @property
    def L(self) -> float:
        return 2.0 * float(np.linalg.eigvalsh(self.matrix)[-1])

    # ---- the model -------------------------------------------------------------------------
    def decision_function(self, alpha: np.ndarray, Z: Any) -> np.ndarray:
        """``h(z) = sum_i alpha_i y_i (k(x_i, z) + 1)``: ``w^T phi(z) + b`` with ``b = y^T alpha`` (L1820)."""
        alpha = np.asarray(alpha, dtype=float)
        if alpha.shape != (self.n_terms,):
            raise InputError("alpha", f"must have shape ({self.n_terms},); got {alpha.shape}")
        Z = as_rows(Z)
        if not isinstance(Z, np.ndarray) or Z.shape[1] != self.X.shape[1]:
            raise InputError("X", f"must be a dense array with {self.X.shape[1]} columns")
        sv = np.flatnonzero(alpha > 0)
        K = rbf(Z, self.X[sv], self.sigma)
        return K @ (alpha[sv] * self.y[sv]) + float(self.y @ alpha)
