"""Softmax (multinomial logistic) regression as a finite sum, for the compiled incremental solvers.

    F(W) = (1/n) sum_i [logsumexp(a_i W) - (a_i W)_{y_i}] + (l2/2)|W|^2 + l1 |W|_1,

``x`` = ``W`` of shape ``(d, K)`` flattened row-major, rows dense or CSR. The house has three
problems of this model family, each for its own solvers: this one (l1 by prox, sparse rows, one
K-vector per term for the compiled SAGA/SAG/SVRG/SGD/Finito/MISO/SDCA kernels), the general
:class:`~solvers.problems.loglinear.ConditionalLogLinear` (any features ``f_n(y)``, the log pool,
fused value+gradient kernels) and :class:`~solvers.problems.multinomial_loglinear.MultinomialLogLinear`
(``theta`` of shape ``(K, p)``, a base measure ``log_h`` and sample weights, read by bound
majorization). They are the same likelihood for plain softmax regression but differ in parameter
layout and in what else they model, so they stay three; ``MultinomialLogistic.features`` exposes this
problem to bound majorization without a copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..prox import soft_threshold
from ..special import logsumexp
from ._rows import Rows, as_rows, check_penalties, row_sqnorms, rows_of
from .multinomial_loglinear import KroneckerFeatures

__all__ = ["MultinomialLogistic", "MultinomialTerms"]


@dataclass(frozen=True)
class MultinomialTerms(Rows):
    """What the compiled multinomial kernels need (:mod:`solvers.kernels_incremental.multinomial`)."""

    K: int
    labels: np.ndarray  # int64 class indices 0..K-1


class MultinomialLogistic:
    """Softmax regression ``F(W) = mean_i [logsumexp(a_i W) - (a_i W)_{y_i}] + (l2/2)|W|^2 + l1|W|_1``.

    ``x`` is ``W`` of shape (d, K) flattened row-major. The compiled stochastic solvers (SAGA, SAG,
    SVRG, S2GD, SGD, Finito, MISO; :mod:`solvers.kernels_incremental.multinomial`) store one K-vector
    per term, ``s_i = softmax(W^T a_i) - e_{y_i}`` (seed 001 section 4.4's "p - 1 values for p
    classes" with the redundant class kept), read through ``multinomial_terms``. SDCA and
    Prox-Finito (a K-dimensional prox per term) do not apply. ``L`` uses the bound 1/2 on the
    softmax Hessian.
    """

    constraint = "none"

    @property
    def features(self) -> KroneckerFeatures | None:
        """The ``(n, K, dK)`` features ``e_y ⊗ a_i`` as a view (no copy) for bound majorization
        (``bm``, ``sbm``); ``None`` (not offered) for sparse rows or with an l1 term."""
        return None if (self.sparse or self.l1 > 0) else KroneckerFeatures(self.A, self.K, layout="dk")

    def __init__(self, X, y, *, l2: float = 0.0, l1: float = 0.0, n_classes: int | None = None):
        A = as_rows(X)
        y = np.asarray(y).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        classes, yi = np.unique(y, return_inverse=True)
        K = int(n_classes or len(classes))
        if K < 2:
            raise InputError("y", "needs at least two classes")
        check_penalties(l2=l2, l1=l1)
        self.A: Any = A  # a dense ndarray or a scipy CSR matrix
        self.classes = classes
        self.labels = yi
        self.K = K
        self.l2 = float(l2)
        self.l1 = float(l1)
        self.n_terms, self.d = A.shape
        self.dim = self.d * K
        self.sparse = sp.issparse(A)
        self.Y = np.zeros((self.n_terms, K))
        self.Y[np.arange(self.n_terms), yi] = 1.0
        if self.l1 > 0:
            # the capability is withdrawn from this instance (solvers test for None)
            self.hessian = None  # type: ignore[method-assign,assignment]
            self.hvp = None  # type: ignore[method-assign,assignment]

    def x0(self) -> np.ndarray:
        return np.zeros(self.dim)

    @property
    def ridge_terms(self) -> MultinomialTerms | None:
        """The multinomial terms of a pure ridge model (``l2 > 0``, ``l1 == 0``; else ``None``): what SDCA
        and Prox-Finito need."""
        return self.multinomial_terms if (self.l1 == 0 and self.l2 > 0) else None

    @cached_property
    def multinomial_terms(self) -> MultinomialTerms:
        labels = np.ascontiguousarray(self.labels, dtype=np.int64)
        return MultinomialTerms(**rows_of(self.A), K=self.K, labels=labels)

    @cached_property
    def sqnorms(self) -> np.ndarray:
        """Squared row norms ``|a_i|^2``."""
        return row_sqnorms(self.A)

    @cached_property
    def L(self) -> float:
        """0.5 sigma_max(A)^2 / n + l2 (the softmax Hessian is <= I/2); Gram eigenvalue when min(n, d) <= 500,
        else a truncated SVD (no dense copy of sparse rows)."""
        n, d = self.A.shape
        if min(n, d) <= 500:
            M = self.A.toarray() if self.sparse else self.A
            G = M.T @ M if d <= n else M @ M.T
            s2 = float(np.linalg.eigvalsh(G)[-1]) * (1 + 1e-12)
        else:
            from scipy.sparse.linalg import svds

            s2 = float(svds(self.A, k=1, return_singular_vectors=False, random_state=0, tol=1e-6)[0]) ** 2 * (1 + 1e-5)
        return 0.5 * s2 / n + self.l2

    @property
    def L_max(self) -> float:
        return 0.5 * float(self.sqnorms.max()) + self.l2

    @property
    def mu(self) -> float:
        return self.l2

    def _probs(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Z = self.A @ W
        return Z, logsumexp(Z, axis=1)

    def value(self, x: np.ndarray) -> float:
        return self.value_and_grad(x)[0]

    def smooth_value(self, x: np.ndarray) -> float:
        return self.value(x) - self.l1 * float(np.abs(x).sum())

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """One product ``A W``, one ``exp`` of the logits (reused for the softmax), one ``A^T R``;
        the elementwise steps work in place on the logits (no extra (n, K) temporaries)."""
        W = x.reshape(self.d, self.K)
        Z = np.asarray(self.A @ W)
        rows = np.arange(self.n_terms)
        zy = Z[rows, self.labels]
        m = Z.max(axis=1, keepdims=True)
        np.subtract(Z, m, out=Z)
        np.exp(Z, out=Z)
        S = Z.sum(axis=1, keepdims=True)
        v = float(np.mean(m[:, 0] + np.log(S[:, 0]) - zy))
        np.divide(Z, S, out=Z)  # softmax
        Z[rows, self.labels] -= 1.0
        # dense rows: (R^T A)^T is the faster BLAS product here (no transposed-operand GEMM)
        G = np.asarray(self.A.T @ Z) if self.sparse else (Z.T @ self.A).T
        G = G * (1.0 / self.n_terms)
        G += self.l2 * W
        v += 0.5 * self.l2 * float(x @ x) + self.l1 * float(np.abs(x).sum())
        return v, G.ravel()

    def term_grad(self, i: int, x: np.ndarray) -> np.ndarray:
        W = x.reshape(self.d, self.K)
        a = self.A.getrow(i).toarray().ravel() if self.sparse else self.A[i]
        z = a @ W
        p = np.exp(z - z.max())
        p /= p.sum()
        p[self.labels[i]] -= 1.0
        return (np.outer(a, p) + self.l2 * W).ravel()

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        W = x.reshape(self.d, self.K)
        V = v.reshape(self.d, self.K)
        Z, lse = self._probs(W)
        P = np.exp(Z - lse[:, None])
        AV = self.A @ V
        R = P * (AV - (P * AV).sum(axis=1, keepdims=True))
        return (np.asarray(self.A.T @ R) / self.n_terms + self.l2 * V).ravel()

    def hessian(self, x: np.ndarray) -> np.ndarray:
        return np.column_stack([self.hvp(x, e) for e in np.eye(self.dim)])

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        if self.l1 == 0:
            return np.array(x, dtype=np.float64, copy=True)
        return soft_threshold(np.asarray(x, dtype=np.float64), step * self.l1)
