"""Regularised linear models as finite sums: logistic, least squares/ridge, lasso/elastic net, SVMs.

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

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels_incremental.losses import (
    DUMMY2,
    DUMMY_F,
    DUMMY_I,
    loss_deriv,
    value_grad_csr,
    value_grad_dense,
)

LOSSES = {"logistic": 0, "squared": 1, "smooth_hinge": 2, "hinge": 3}
CLASSIFICATION = {"logistic", "smooth_hinge", "hinge"}


@dataclass(frozen=True)
class LinearTerms:
    """What the compiled kernels need: rows (dense or CSR), labels, loss id and smoothing."""

    loss: int
    X: np.ndarray  # dense rows, or a (0, 0) dummy when sparse
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    sparse: bool
    y: np.ndarray
    gam: float
    sqnorms: np.ndarray

    def args(self) -> tuple:
        return (self.X, self.data, self.indices, self.indptr, self.sparse)


@dataclass(frozen=True)
class MultinomialTerms:
    """What the compiled multinomial kernels need (:mod:`solvers.kernels_incremental.multinomial`)."""

    K: int
    X: np.ndarray  # dense rows, or a (0, 0) dummy when sparse
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    sparse: bool
    labels: np.ndarray  # int64 class indices 0..K-1

    def args(self) -> tuple:
        return (self.X, self.data, self.indices, self.indptr, self.sparse)


def _as_rows(X) -> np.ndarray | sp.csr_matrix:
    if sp.issparse(X):
        A = sp.csr_matrix(X, dtype=np.float64)
        A.sum_duplicates()
        A.sort_indices()
        if A.nnz < 2**31 and (A.indices.dtype != np.int32 or A.indptr.dtype != np.int32):
            # one index type, so the compiled kernels have one signature (compiled once)
            A = sp.csr_matrix((A.data, A.indices.astype(np.int32), A.indptr.astype(np.int32)), shape=A.shape)
        if not np.all(np.isfinite(A.data)):
            raise InputError("X", "contains NaN or infinite values")
        return A
    A = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if A.ndim != 2:
        raise InputError("X", f"must be a 2-D array (n_samples, n_features); got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise InputError("X", "contains NaN or infinite values")
    return A


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
        A = _as_rows(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        if not np.all(np.isfinite(y)):
            raise InputError("y", "contains NaN or infinite values")
        if A.shape[0] == 0:
            raise InputError("X", "needs at least one row")
        for name, v in (("l2", l2), ("l1", l1)):
            if not np.isfinite(v) or v < 0:
                raise InputError(name, f"must be a finite number >= 0; got {v}")
        if not smoothing > 0:
            raise InputError("smoothing", f"must be > 0; got {smoothing}")
        self.loss = loss
        self.A = A
        self.y = _sym_labels(y) if loss in CLASSIFICATION else y
        self.l2 = float(l2)
        self.l1 = float(l1)
        self.smoothing = float(smoothing)
        self.n_terms, self.dim = A.shape
        self.sparse = sp.issparse(A)
        if self.l1 > 0 or loss == "hinge":
            # no Hessian for composite or non-smooth objectives: Newton-type solvers must not apply
            self.hessian = None
            self.hvp = None
        #: False for the hinge: ``grad`` is then a subgradient and only SDCA/SGD apply
        self.smooth = loss != "hinge"

    # ---- constants -------------------------------------------------------------------------
    @property
    def curvature(self) -> float:
        """Upper bound on phi'' (inf for the hinge)."""
        return {"logistic": 0.25, "squared": 1.0, "smooth_hinge": 1.0 / self.smoothing, "hinge": np.inf}[self.loss]

    @cached_property
    def sqnorms(self) -> np.ndarray:
        if self.sparse:
            return np.asarray(self.A.multiply(self.A).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.A, self.A)

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
        if self.sparse:
            A = self.A
            return LinearTerms(LOSSES[self.loss], DUMMY2, A.data, A.indices, A.indptr, True, self.y, self.smoothing, self.sqnorms)
        return LinearTerms(LOSSES[self.loss], self.A, DUMMY_F, DUMMY_I, DUMMY_I, False, self.y, self.smoothing, self.sqnorms)

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
                r = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0.0) + np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1)), 0.0)
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
        t = step * self.l1
        return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)

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
    features = property(lambda self: None if (self.sparse or self.l1 > 0) else __import__("solvers.problems.multinomial_loglinear", fromlist=["KroneckerFeatures"]).KroneckerFeatures(self.A, self.K, layout="dk"))  # (n, K, dK) view for bm/sbm (majorization)

    def __init__(self, X, y, *, l2: float = 0.0, l1: float = 0.0, n_classes: int | None = None):
        A = _as_rows(X)
        y = np.asarray(y).ravel()
        if y.shape[0] != A.shape[0]:
            raise InputError("y", f"has {y.shape[0]} entries but X has {A.shape[0]} rows")
        classes, yi = np.unique(y, return_inverse=True)
        K = int(n_classes or len(classes))
        if K < 2:
            raise InputError("y", "needs at least two classes")
        for name, v in (("l2", l2), ("l1", l1)):
            if not np.isfinite(v) or v < 0:
                raise InputError(name, f"must be a finite number >= 0; got {v}")
        self.A = A
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
            self.hessian = None
            self.hvp = None

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
        if self.sparse:
            A = self.A
            return MultinomialTerms(self.K, DUMMY2, A.data, A.indices, A.indptr, True, labels)
        return MultinomialTerms(self.K, self.A, DUMMY_F, DUMMY_I, DUMMY_I, False, labels)

    @cached_property
    def sqnorms(self) -> np.ndarray:
        """Squared row norms ``|a_i|^2``."""
        if self.sparse:
            return np.asarray(self.A.multiply(self.A).sum(axis=1)).ravel()
        return np.einsum("ij,ij->i", self.A, self.A)

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
        m = Z.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(Z - m).sum(axis=1))
        return Z, lse

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
        t = step * self.l1
        return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def LogisticRegression(X, y, *, l2: float = 0.0, l1: float = 0.0) -> LinearModel:
    """L2/L1-regularised binary logistic regression (labels mapped to +-1)."""
    return LinearModel(X, y, "logistic", l2=l2, l1=l1)


def LeastSquares(X, y, *, l2: float = 0.0) -> LinearModel:
    """Least squares ``mean (a_i.x - y_i)^2 / 2``; ridge when ``l2 > 0``."""
    return LinearModel(X, y, "squared", l2=l2)


def Ridge(X, y, *, l2: float) -> LinearModel:
    return LinearModel(X, y, "squared", l2=l2)


def Lasso(X, y, *, l1: float) -> LinearModel:
    return LinearModel(X, y, "squared", l1=l1)


def ElasticNet(X, y, *, l1: float, l2: float) -> LinearModel:
    return LinearModel(X, y, "squared", l1=l1, l2=l2)


def HingeSVM(X, y, *, l2: float) -> LinearModel:
    return LinearModel(X, y, "hinge", l2=l2)


def SmoothHingeSVM(X, y, *, l2: float, smoothing: float = 1.0) -> LinearModel:
    return LinearModel(X, y, "smooth_hinge", l2=l2, smoothing=smoothing)
