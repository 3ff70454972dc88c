"""Conditional log-linear models as problems of the solver protocol (seed 004, Eqs. (1)-(2)).

    p_theta(y | x_i) = h_i(y) exp(theta^T f_i(y)) / Z_i(theta),
    f(theta) = (1/n) sum_i w_i [log Z_i(theta) - theta^T f_i(y_i) - log h_i(y_i)] + lam/2 ||theta||^2,

the mean negative log-likelihood plus a ridge term (minimisation, as :mod:`solvers.problem` asks).
The seed's objective (2) is ``J = -n f``: its per-sample ``lam`` is this ``lam``.

Two classes:

``MultinomialLogLinear``  multinomial logistic regression, ``f_x(y) = e_y ⊗ x``: ``theta`` is the
    row-major ``(K, p)`` matrix of class weights flattened. The ``(n, K, K p)`` features are never
    materialised: ``features`` is a :class:`KroneckerFeatures` view that only builds rows on demand.
``DenseLogLinear``  any conditional log-linear model given its features ``(n, K, d)`` (e.g. a log
    pool, whose features are the agents' log-probabilities), optionally on the probability
    simplex (``constraint="simplex"``). The pools' own problem is
    :class:`solvers.problems.loglinear.ConditionalLogLinear`; this one is the minimal reference
    used by the majorization tests and benchmarks.

Both expose ``features``, ``labels``, ``log_h`` (or None), ``lam`` and ``sample_weight`` (or None),
which is what the bound-majorization solvers (``bm``, ``sbm``) read.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dsyrk as _syrk

from ..checks import as_labels
from ..errors import InputError
from ..simplex import project_simplex
from ..special import logsumexp

__all__ = ["KroneckerFeatures", "MultinomialLogLinear", "DenseLogLinear"]


def _check_log_h(log_h, n: int, K: int, labels: np.ndarray) -> np.ndarray | None:
    if log_h is None:
        return None
    log_h = np.asarray(log_h, dtype=np.float64)
    if log_h.shape == (K,):
        log_h = np.broadcast_to(log_h, (n, K)).copy()
    if log_h.shape != (n, K):
        raise InputError("log_h", f"must have shape ({K},) or ({n}, {K}); got {log_h.shape}")
    if np.any(np.isnan(log_h)) or np.any(log_h == np.inf):
        raise InputError("log_h", "must be finite or -inf")
    if np.any(log_h[np.arange(n), labels] == -np.inf):
        raise InputError("log_h", "an observed label has zero base measure (infinite loss)")
    return log_h


def _check_weights(w, n: int) -> np.ndarray | None:
    if w is None:
        return None
    w = np.asarray(w, dtype=np.float64)
    if w.shape != (n,) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise InputError("sample_weight", f"must be ({n},) finite and non-negative")
    return w


def _term_probs(problem, i: int, theta: np.ndarray) -> np.ndarray:
    """``p(. | x_i)`` of item ``i`` (a fresh array)."""
    s = problem.scores(theta, np.array([i]))[0]
    p = np.exp(s - s.max())
    p /= p.sum()
    return p


class KroneckerFeatures:
    """The features ``f_i(y) = e_y ⊗ x_i`` of multinomial logistic regression, built on demand.

    ``layout="kd"``: ``theta`` is the row-major ``(K, p)`` matrix flattened (``f = e_y ⊗ x``);
    ``layout="dk"``: ``theta`` is the row-major ``(p, K)`` matrix flattened (``f = x ⊗ e_y``, the layout
    of :class:`solvers.problems.linear_models.MultinomialLogistic`).
    ``shape == (n, K, K * p)``; ``rows(idx)`` materialises the ``(len(idx), K, K p)`` block for a
    few items (mini-batches); nothing of size ``n K^2 p`` is ever stored.
    """

    def __init__(self, X: np.ndarray, n_classes: int, layout: str = "kd") -> None:
        if layout not in ("kd", "dk"):
            raise InputError("layout", f"must be 'kd' or 'dk'; got {layout!r}")
        self.X = X
        self.n_classes = int(n_classes)
        self.layout = layout
        n, p = X.shape
        self.shape = (n, self.n_classes, self.n_classes * p)

    def rows(self, idx: np.ndarray) -> np.ndarray:
        Xb = np.asarray(self.X[idx], dtype=np.float64)
        K, p = self.n_classes, self.X.shape[1]
        out = np.zeros((len(Xb), K, K * p))
        for k in range(K):
            if self.layout == "kd":
                out[:, k, k * p : (k + 1) * p] = Xb
            else:
                out[:, k, k::K] = Xb
        return out

    def theta_matrix(self, theta: np.ndarray) -> np.ndarray:
        """``theta`` as the ``(K, p)`` matrix of class weights (a view when possible)."""
        K, p = self.n_classes, self.X.shape[1]
        t = np.asarray(theta, dtype=np.float64)
        return t.reshape(K, p) if self.layout == "kd" else t.reshape(p, K).T

    def flat(self, G: np.ndarray) -> np.ndarray:
        """A ``(K, p)`` matrix back to the flat layout of ``theta``."""
        return (G if self.layout == "kd" else G.T).ravel()

    def kron_sum(self, C: np.ndarray, idx: np.ndarray | None = None, weights: np.ndarray | None = None) -> np.ndarray:
        """``sum_i w_i C_i ⊗ x_i x_i^T`` (``C`` is ``(m, K, K)``) as a ``(K p, K p)`` matrix in the layout of ``theta``.

        One GEMM ``X^T diag(w C[:, a, b]) X`` per class pair ``a <= b``: ``O(m K^2 p^2)``.
        """
        X = self.X if idx is None else self.X[idx]
        w = np.ones(X.shape[0]) if weights is None else weights
        K, p = self.n_classes, self.X.shape[1]
        H = np.empty((K, p, K, p))
        for a in range(K):
            for b in range(a, K):
                cw = w * C[:, a, b]
                if a == b and np.all(cw >= 0):  # symmetric block: syrk, half the flops
                    Y = X * np.sqrt(cw)[:, None]
                    blk = _syrk(1.0, Y.T, trans=0, lower=0)
                    blk = np.triu(blk) + np.triu(blk, 1).T
                else:
                    blk = X.T @ (X * cw[:, None])
                H[a, :, b, :] = blk
                if b != a:
                    H[b, :, a, :] = blk.T
        if self.layout == "dk":
            H = H.transpose(1, 0, 3, 2)
        return H.reshape(K * p, K * p)


class MultinomialLogLinear:
    """L2-regularised multinomial logistic regression as a conditional log-linear model.

    Parameters
    ----------
    X : (n, p) inputs.
    y : (n,) integer labels in ``[0, n_classes)``.
    n_classes : K (default ``max(y) + 1``).
    lam : ridge weight (``lam/2 ||theta||^2`` added to the MEAN loss; seed 004 Eq. (2) per sample).
    log_h : optional base measure, ``(K,)`` or ``(n, K)`` (seed 004 section "Experiments": a prior
        over classes); default uniform (``h = 1``).
    sample_weight : optional ``(n,)`` weights ``w_i`` of the terms.
    """

    constraint = "none"

    def __init__(self, X, y, n_classes: int | None = None, *, lam: float = 0.0, log_h=None, sample_weight=None) -> None:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or not np.all(np.isfinite(X)):
            raise InputError("X", f"must be a finite (n, p) array; got shape {X.shape}")
        n, p = X.shape
        y = np.asarray(y)
        K = int(n_classes) if n_classes is not None else int(np.max(y)) + 1
        if K < 2:
            raise InputError("n_classes", "must be at least 2")
        if not (np.isfinite(lam) and lam >= 0):
            raise InputError("lam", f"must be finite and >= 0; got {lam}")
        self.X = np.ascontiguousarray(X)
        self.labels = as_labels(y, n, K)
        self.n_classes = K
        self.n_features = p
        self.lam = float(lam)
        self.log_h = _check_log_h(log_h, n, K, self.labels)
        self.sample_weight = _check_weights(sample_weight, n)
        self.features = KroneckerFeatures(self.X, K)
        self.dim = K * p
        self.n_terms = n
        self._w = np.ones(n) if self.sample_weight is None else self.sample_weight
        self._wsum = n  # the objective is the mean over the n terms

    # -- scores and probabilities ---------------------------------------------------------------
    def scores(self, theta: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """``log h_i(y) + theta_y^T x_i`` for items ``idx`` (all by default), shape (m, K)."""
        W = np.asarray(theta, dtype=np.float64).reshape(self.n_classes, self.n_features)
        X = self.X if idx is None else self.X[idx]
        s = X @ W.T
        if self.log_h is not None:
            s += self.log_h if idx is None else self.log_h[idx]
        return s

    def predict_log_proba(self, theta: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        W = np.asarray(theta).reshape(self.n_classes, self.n_features)
        s = (self.X if X is None else np.asarray(X, dtype=np.float64)) @ W.T
        if self.log_h is not None:
            if X is not None and self.log_h.shape[0] != s.shape[0]:
                s += self.log_h[0]
            else:
                s += self.log_h
        return s - logsumexp(s, axis=1)[:, None]

    def accuracy(self, theta: np.ndarray, X: np.ndarray | None = None, y: np.ndarray | None = None) -> float:
        lp = self.predict_log_proba(theta, X)
        yy = self.labels if y is None else np.asarray(y)
        return float(np.mean(np.argmax(lp, axis=1) == yy))

    # -- protocol ---------------------------------------------------------------------------------
    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        s = self.scores(theta)
        lse = logsumexp(s, axis=1)
        n = self.n_terms
        ar = np.arange(n)
        val = float(self._w @ (lse - s[ar, self.labels])) / self._wsum + 0.5 * self.lam * theta @ theta
        P = np.exp(s - lse[:, None])
        P[ar, self.labels] -= 1.0
        G = (P * self._w[:, None]).T @ self.X / self._wsum
        return val, G.ravel() + self.lam * theta

    def value(self, theta: np.ndarray) -> float:
        theta = np.asarray(theta, dtype=np.float64)
        s = self.scores(theta)
        lse = logsumexp(s, axis=1)
        return (
            float(self._w @ (lse - s[np.arange(self.n_terms), self.labels])) / self._wsum
            + 0.5 * self.lam * theta @ theta
        )

    def grad(self, theta: np.ndarray) -> np.ndarray:
        return self.value_and_grad(theta)[1]

    def term_grad(self, i: int, theta: np.ndarray) -> np.ndarray:
        """Gradient of term ``i`` (including the ridge term, so that the mean of term gradients is ``grad``)."""
        theta = np.asarray(theta, dtype=np.float64)
        p = _term_probs(self, i, theta)
        p[self.labels[i]] -= 1.0
        return self._w[i] * np.outer(p, self.X[i]).ravel() + self.lam * theta

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        s = self.scores(theta)
        P = np.exp(s - logsumexp(s, axis=1)[:, None])
        C = np.einsum("ia,ab->iab", P, np.eye(self.n_classes)) - P[:, :, None] * P[:, None, :]
        return self.features.kron_sum(C, weights=self._w) / self._wsum + self.lam * np.eye(self.dim)

    def hvp(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        s = self.scores(theta)
        P = np.exp(s - logsumexp(s, axis=1)[:, None])
        V = np.asarray(v).reshape(self.n_classes, self.n_features)
        U = self.X @ V.T  # (n, K)
        R = P * (U - np.sum(P * U, axis=1, keepdims=True))
        return ((R * self._w[:, None]).T @ self.X).ravel() / self._wsum + self.lam * np.asarray(v)

    @property
    def L(self) -> float:
        # Hessian of the mean softmax loss <= (1/2) (1/n) sum ||x_i||^2 per Böhning's bound (I - 11^T/K)/2
        return 0.5 * float(np.max(np.linalg.eigvalsh(self.X.T @ (self.X * self._w[:, None]) / self._wsum))) + self.lam

    @property
    def L_max(self) -> float:
        return 0.5 * float(np.max(self._w * np.sum(self.X**2, axis=1))) + self.lam

    @property
    def mu(self) -> float:
        return self.lam

    def x0(self) -> np.ndarray:
        return np.zeros(self.dim)


class DenseLogLinear:
    """A conditional log-linear model given its features ``(n, K, d)`` (seed 004, Eq. (1)-(2)).

    ``constraint="simplex"`` restricts ``theta`` to the probability simplex (the log pool's
    weights); ``project`` is then the Euclidean projection onto it.
    """

    def __init__(
        self, features, labels, *, lam: float = 0.0, log_h=None, sample_weight=None, constraint: str = "none"
    ) -> None:
        F = np.asarray(features, dtype=np.float64)
        if F.ndim != 3 or not np.all(np.isfinite(F)):
            raise InputError("features", f"must be a finite (n_items, n_classes, dim) array; got shape {F.shape}")
        n, K, d = F.shape
        if constraint not in ("none", "simplex"):
            raise InputError("constraint", f"must be 'none' or 'simplex'; got {constraint!r}")
        if not (np.isfinite(lam) and lam >= 0):
            raise InputError("lam", f"must be finite and >= 0; got {lam}")
        self.features = np.ascontiguousarray(F)
        self.labels = as_labels(labels, n, K)
        self.lam = float(lam)
        self.log_h = _check_log_h(log_h, n, K, self.labels)
        self.sample_weight = _check_weights(sample_weight, n)
        self.constraint = constraint
        self.dim, self.n_terms, self.n_classes = d, n, K
        self._w = np.ones(n) if self.sample_weight is None else self.sample_weight

    def scores(self, theta: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        F = self.features if idx is None else self.features[idx]
        s = F @ np.asarray(theta, dtype=np.float64)
        if self.log_h is not None:
            s += self.log_h if idx is None else self.log_h[idx]
        return s

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        theta = np.asarray(theta, dtype=np.float64)
        s = self.scores(theta)
        lse = logsumexp(s, axis=1)
        ar = np.arange(self.n_terms)
        val = float(self._w @ (lse - s[ar, self.labels])) / self.n_terms + 0.5 * self.lam * theta @ theta
        P = np.exp(s - lse[:, None])
        Ef = np.einsum("ik,ikd->id", P, self.features)
        G = self._w @ (Ef - self.features[ar, self.labels]) / self.n_terms
        return val, G + self.lam * theta

    def value(self, theta: np.ndarray) -> float:
        return self.value_and_grad(theta)[0]

    def grad(self, theta: np.ndarray) -> np.ndarray:
        return self.value_and_grad(theta)[1]

    def term_grad(self, i: int, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        p = _term_probs(self, i, theta)
        return self._w[i] * (p @ self.features[i] - self.features[i, self.labels[i]]) + self.lam * theta

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        s = self.scores(theta)
        P = np.exp(s - logsumexp(s, axis=1)[:, None])
        Ef = np.einsum("ik,ikd->id", P, self.features)
        H = np.einsum("i,ik,ikd,ike->de", self._w, P, self.features, self.features) - (Ef * self._w[:, None]).T @ Ef
        return H / self.n_terms + self.lam * np.eye(self.dim)

    def hvp(self, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self.hessian(theta) @ np.asarray(v)

    def project(self, x: np.ndarray) -> np.ndarray:
        if self.constraint == "simplex":
            return project_simplex(np.asarray(x, dtype=np.float64))
        return np.asarray(x, dtype=np.float64)

    def x0(self) -> np.ndarray:
        if self.constraint == "simplex":
            return np.full(self.dim, 1.0 / self.dim)
        return np.zeros(self.dim)
