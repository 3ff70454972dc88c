"""Regularised linear models as finite sums: logistic, least squares/ridge, lasso/elastic net, SVMs.

Softmax regression (``MultinomialLogistic``) is :mod:`solvers.problems.softmax_regression`; it is
re-exported here for the callers of its old home.

    F(x) = (1/n) sum_i phi(a_i . x, y_i) + (l2/2) |x|^2 + l1 |x|_1

(seed 001 eq. 1.1 and section 4.4; seed 003 section 6.1's loss/penalty table). Each term
``f_i(x) = phi(a_i . x, y_i) + (l2/2)|x|^2`` is ``l2``-strongly convex; ``l1 |x|_1`` is the composite
part ``h``, used only through its prox (seed 001 L1373-1377). ``grad`` and ``term_grad`` are those of
the smooth part; ``value`` is the full objective ``F``.

Losses (``loss=``): ``"logistic"`` (labels +-1, curvature <= 1/4), ``"squared"`` ``(u - y)^2/2``,
``"smooth_hinge"`` (quadratically smoothed hinge of width ``smoothing``, curvature <= 1/smoothing),
``"hinge"`` (non-smooth; only SDCA and SGD apply). The rows ``a_i`` are a dense array or a
scipy.sparse matrix (kept as CSR). The compiled solvers of :mod:`solvers.methods` store ONE scalar
per term for these problems (``linear_terms`` is what they look for).

Equivalences used by the tests: scikit-learn ``LogisticRegression(C)`` (no intercept) is
``loss="logistic", l2=1/(C n)``; ``Ridge(alpha)`` is ``loss="squared", l2=alpha/n``;
``ElasticNet(alpha, l1_ratio)`` is ``loss="squared", l1=alpha*l1_ratio, l2=alpha*(1-l1_ratio)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels_incremental.losses import loss_deriv, value_grad_csr, value_grad_dense
from ..prox import soft_threshold
from ._rows import Rows, as_rows, check_penalties, row_sqnorms, rows_of

LOSSES = {"logistic": 0, "squared": 1, "smooth_hinge": 2, "hinge": 3}
CLASSIFICATION = {"logistic", "smooth_hinge", "hinge"}


@dataclass(frozen=True)
class LinearTerms(Rows):
    """What the compiled kernels need: the rows (dense or CSR), loss id, labels, smoothing, row norms."""

    loss: int
    y: np.ndarray
    smoothing: float  # width of the smoothed hinge
    sqnorms: np.ndarray


def _sym_labels(y: np.ndarray) -> np.ndarray:
    vals = np.unique(y)
    if len(vals) > 2 or len(vals) == 0:
        raise InputError("y", f"a binary classification loss needs two label values; got {len(vals)}")
    if set(vals.tolist()) <= {-1.0, 1.0}:
        return y.astype(np.float64)
    if len(vals) == 1:
        raise InputError("y", "labels must be in {-1, +1} when only one class is present")
    return np.where(y == vals[1], 1.0, -1.0)


class LinearModel:
    """``F(x) = mean_i phi(a_i . x, y_i) + (l2/2)|x|^2 + l1|x|_1`` (see the module docstring).

    Parameters
    ----------
    X : array (n, d) or scipy.sparse matrix
    y : array (n,); for classification losses two label values (mapped to -1/+1, the larger is +1)
    loss : "logistic" | "squared" | "smooth_hinge" | "hinge"
    l2, l1 : regularisation strengths (>= 0)
    smoothing : width of the smoothed hinge (> 0)
    """

    constraint = "none"

    def __init__(self, X, y, loss: str = "logistic", *, l2: float = 0.0, l1: float = 0.0, smoothing: float = 1.0):
        if loss not in LOSSES:
            raise InputError("loss", f"must be one of {sorted(LOSSES)}; got {loss!r}")
        A = as_rows(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        if not np.all(np.isfinite(y)):
            raise InputError("y", "contains NaN or infinite values")
        if A.shape[0] == 0:
            raise InputError("X", "needs at least one row")
        check_penalties(l2=l2, l1=l1)
        if not smoothing > 0:
            raise InputError("smoothing", f"must be > 0; got {smoothing}")
        self.loss = loss
        self.A: Any = A  # a dense ndarray or a scipy CSR matrix
        self.y = _sym_labels(y) if loss in CLASSIFICATION else y
        self.l2 = float(l2)
        self.l1 = float(l1)
        self.smoothing = float(smoothing)
        self.n_terms, self.dim = A.shape
        self.sparse = sp.issparse(A)
        if self.l1 > 0 or loss == "hinge":
            # no Hessian for composite or non-smooth objectives: Newton-type solvers must not apply
            # the capability is withdrawn from this instance (solvers test for None)
            self.hessian = None  # type: ignore[method-assign,assignment]
            self.hvp = None  # type: ignore[method-assign,assignment]
        #: False for the hinge: ``grad`` is then a subgradient and only SDCA/SGD apply
        self.smooth = loss != "hinge"

    # ---- constants -------------------------------------------------------------------------
    @property
    def curvature(self) -> float:
        """Upper bound on phi'' (inf for the hinge)."""
        return {"logistic": 0.25, "squared": 1.0, "smooth_hinge": 1.0 / self.smoothing, "hinge": np.inf}[self.loss]

    @cached_property
    def sqnorms(self) -> np.ndarray:
        """Squared row norms ``|a_i|^2``."""
        return row_sqnorms(self.A)

    @cached_property
    def _sigma_max_sq(self) -> float:
        """Largest eigenvalue of A^T A / n."""
        n, d = self.A.shape
        if min(n, d) <= 500:
            M = self.A.toarray() if self.sparse else self.A
            G = M.T @ M if d <= n else M @ M.T
            return float(np.linalg.eigvalsh(G)[-1]) / n
        from scipy.sparse.linalg import svds

        s = svds(self.A, k=1, return_singular_vectors=False, random_state=0, tol=1e-6)
        return float(s[0]) ** 2 / n * (1 + 1e-5)

    @property
    def L(self) -> float:
        """Lipschitz constant of the smooth part's gradient: c sigma_max(A)^2/n + l2."""
        return self.curvature * self._sigma_max_sq + self.l2

    @property
    def L_max(self) -> float:
        """Max over terms of the term constants: c max_i |a_i|^2 + l2 (seed 001 section 6 [ext])."""
        return self.curvature * float(self.sqnorms.max()) + self.l2

    @cached_property
    def mu(self) -> float:
        """Strong-convexity constant: l2, plus lambda_min(A^T A/n) for least squares when d <= 2000."""
        mu = self.l2
        if self.loss == "squared" and self.dim <= 2000 and self.n_terms >= self.dim:
            M = self.A.toarray() if self.sparse else self.A
            mu += max(0.0, float(np.linalg.eigvalsh(M.T @ M / self.n_terms)[0]))
        return mu

    @property
    def ridge_terms(self) -> LinearTerms | None:
        """The linear terms of a pure ridge model (``l2 > 0``, ``l1 == 0``; else ``None``): what SDCA and
        Prox-Finito need."""
        return self.linear_terms if (self.l1 == 0 and self.l2 > 0) else None

    @cached_property
    def linear_terms(self) -> LinearTerms:
        return LinearTerms(
            **rows_of(self.A), loss=LOSSES[self.loss], y=self.y, smoothing=self.smoothing, sqnorms=self.sqnorms
        )

    def x0(self) -> np.ndarray:
        return np.zeros(self.dim)

    # ---- vectorised loss pieces ------------------------------------------------------------
    def margins(self, x: np.ndarray) -> np.ndarray:
        return self.A @ x

    def phi(self, u: np.ndarray) -> np.ndarray:
        y = self.y
        if self.loss == "logistic":
            return np.logaddexp(0.0, -y * u)
        if self.loss == "squared":
            return 0.5 * (u - y) ** 2
        z = y * u
        if self.loss == "hinge":
            return np.maximum(0.0, 1.0 - z)
        g = self.smoothing
        return np.where(z >= 1, 0.0, np.where(z <= 1 - g, 1 - z - 0.5 * g, (1 - z) ** 2 / (2 * g)))

    def dphi(self, u: np.ndarray) -> np.ndarray:
        y = self.y
        if self.loss == "logistic":
            return -y * _expit(-y * u)
        if self.loss == "squared":
            return u - y
        z = y * u
        if self.loss == "hinge":
            return np.where(z < 1, -y, 0.0)
        g = self.smoothing
        return np.where(z >= 1, 0.0, np.where(z <= 1 - g, -y, -y * (1 - z) / g))

    def d2phi(self, u: np.ndarray) -> np.ndarray:
        if self.loss == "logistic":
            p = _expit(self.y * u)
            return p * (1 - p)
        if self.loss == "squared":
            return np.ones_like(u)
        z = self.y * u
        g = self.smoothing
        return np.where((z < 1) & (z > 1 - g), 1.0 / g, 0.0)

    def conj(self, beta: np.ndarray) -> np.ndarray:
        """phi*(beta) in SDCA's sign convention (beta -> phi'(a . x*)); +inf outside the domain."""
        y = self.y
        if self.loss == "squared":
            return 0.5 * beta**2 + beta * y
        p = -y * beta
        bad = (p < -1e-12) | (p > 1 + 1e-12)
        p = np.clip(p, 0.0, 1.0)
        if self.loss == "logistic":
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0) + np.where(
                    p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1)), 0.0
                )
        elif self.loss == "smooth_hinge":
            r = -p + 0.5 * self.smoothing * p**2
        else:
            r = -p
        return np.where(bad, np.inf, r)

    # ---- protocol ----------------------------------------------------------------------------
    def smooth_value(self, x: np.ndarray) -> float:
        return float(np.mean(self.phi(self.margins(x))) + 0.5 * self.l2 * x @ x)

    def value(self, x: np.ndarray) -> float:
        return self.smooth_value(x) + self.l1 * float(np.abs(x).sum())

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.A.T @ self.dphi(self.margins(x)) / self.n_terms + self.l2 * x

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """(F(x), gradient of the smooth part) in one compiled streaming pass over the rows
        (:func:`~solvers.kernels_incremental.losses.value_grad_csr` / ``value_grad_dense``: each row's
        margin, loss and derivative, then its contribution to the gradient while it is in cache)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        A = self.A
        g = np.empty(self.dim)
        if self.sparse:
            lsum = value_grad_csr(LOSSES[self.loss], A.data, A.indices, A.indptr, self.y, self.smoothing, x, g)
        else:
            lsum = value_grad_dense(LOSSES[self.loss], A, self.y, self.smoothing, x, g)
        n = self.n_terms
        g /= n
        g += self.l2 * x
        return float(lsum / n + 0.5 * self.l2 * (x @ x) + self.l1 * np.abs(x).sum()), g

    def term_grad(self, i: int, x: np.ndarray) -> np.ndarray:
        if self.sparse:
            row = self.A.getrow(i)
            g = self.l2 * x
            u = float(row.data @ x[row.indices])
            g[row.indices] += row.data * float(self.dphi_scalar(u, i))
            return g
        a = self.A[i]
        return float(self.dphi_scalar(float(a @ x), i)) * a + self.l2 * x

    def dphi_scalar(self, u: float, i: int) -> float:
        return float(loss_deriv(LOSSES[self.loss], float(u), float(self.y[i]), self.smoothing))

    def hessian(self, x: np.ndarray) -> np.ndarray:
        w = self.d2phi(self.margins(x)) / self.n_terms
        if self.sparse:
            H = (self.A.T @ self.A.multiply(w[:, None])).toarray()
        else:
            H = self.A.T @ (self.A * w[:, None])
        H[np.diag_indices_from(H)] += self.l2
        return H

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        w = self.d2phi(self.margins(x)) / self.n_terms
        return self.A.T @ (w * (self.A @ v)) + self.l2 * v

    def prox(self, x: np.ndarray, step: float) -> np.ndarray:
        """prox of ``step * l1 |.|_1`` (soft thresholding; the identity when l1 = 0)."""
        if self.l1 == 0:
            return np.array(x, dtype=np.float64, copy=True)
        return soft_threshold(np.asarray(x, dtype=np.float64), step * self.l1)

    # ---- duality (SDCA) -------------------------------------------------------------------------
    def dual_value(self, beta: np.ndarray) -> float:
        """D(beta) = -(1/n) sum phi*(beta_i) - (mu/2)|x(beta)|^2, x(beta) = -(1/(mu n)) A^T beta (seed 001 L436)."""
        if self.l2 <= 0:
            raise InputError("dual_value", "needs l2 > 0")
        xb = -(self.A.T @ beta) / (self.l2 * self.n_terms)
        return float(-np.mean(self.conj(beta)) - 0.5 * self.l2 * xb @ xb)


def _expit(t: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(t)


def LogisticRegression(X, y, *, l2: float = 0.0, l1: float = 0.0) -> LinearModel:
    """L2/L1-regularised binary logistic regression (labels mapped to +-1)."""
    return LinearModel(X, y, "logistic", l2=l2, l1=l1)


def LeastSquares(X, y, *, l2: float = 0.0) -> LinearModel:
    """Least squares ``mean (a_i.x - y_i)^2 / 2``; ridge when ``l2 > 0``."""
    return LinearModel(X, y, "squared", l2=l2)


def Ridge(X, y, *, l2: float) -> LinearModel:
    """Ridge regression: least squares plus ``(l2/2)|x|^2``."""
    return LinearModel(X, y, "squared", l2=l2)


def Lasso(X, y, *, l1: float) -> LinearModel:
    """The lasso: least squares plus ``l1 |x|_1``."""
    return LinearModel(X, y, "squared", l1=l1)


def ElasticNet(X, y, *, l1: float, l2: float) -> LinearModel:
    """The elastic net: least squares plus ``(l2/2)|x|^2 + l1 |x|_1``."""
    return LinearModel(X, y, "squared", l1=l1, l2=l2)


def SmoothHingeSVM(X, y, *, l2: float, smoothing: float = 1.0) -> LinearModel:
    """A linear SVM with the quadratically smoothed hinge of width ``smoothing`` and ridge ``l2``
    (the plain hinge is ``LinearModel(X, y, "hinge", l2=...)``)."""
    return LinearModel(X, y, "smooth_hinge", l2=l2, smoothing=smoothing)


# softmax regression lived here; its module is solvers.problems.softmax_regression
from .softmax_regression import MultinomialLogistic, MultinomialTerms  # noqa: E402,F401
