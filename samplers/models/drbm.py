"""The discriminative restricted Boltzmann machine (seed 000 section 4.6.3, Eq. 4.53-4.57; Larochelle
and Bengio 2008) as a sampler model.

The energy ``E(y, x, z) = -z^T W x - b^T x - c^T z - d^T e_y - z^T U e_y`` (4.54), with ``N_h``
binary hidden units ``z``, gives the class conditional (4.56)

    ``p(y | x) ∝ exp(d_y) prod_j (1 + exp(o_yj(x)))``,   ``o_yj(x) = c_j + U_jy + sum_k W_jk x_k``,

so ``log p(y | x) = f_y - logsumexp_y' f_y'`` with ``f_y = d_y + sum_j softplus(o_yj)``. Its gradient
(4.57) is ``sum_j sigm(o_yj) do_yj - sum_{j,y'} sigm(o_y'j) p(y'|x) do_y'j`` for W, c and U, and
``e_y - p(.|x)`` for d (which (4.57) leaves out: d is not in ``o``). The visible bias ``b`` cancels
from ``p(y | x)`` and is not a parameter. The potential is ``U(Theta) = -sum_i log p(y_i | x_i)``
(4.55) plus the prior's; the seed's prior is flat (``prior_std=None``, the default; a proper
``N(0, prior_std^2 I)`` is offered).

``theta`` concatenates ``W`` (``N_h x F``, row-major), ``c`` (``N_h``), ``U`` (``N_h x C``) and
``d`` (``C``): ``D = N_h F + N_h + N_h C + C``, the count of the seed's Table 4.2 (connect-4:
20 * 126 + 20 + 60 + 3 = 2603).

:meth:`DRBM.loglik_terms` is written once with the tape's primitives (:mod:`solvers.autodiff`): on
arrays it is the per-example log-likelihood, on tape variables it is differentiated (the check of
the hand-written Eq. 4.57 in :meth:`DRBM.loglik_grads`, and :class:`~samplers.models.tape.TapeGradients`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

from solvers import autodiff as ad
from solvers.errors import InputError

from .base import GaussianPrior


class DRBM(GaussianPrior):
    def __init__(
        self, X: Any, y: Any, *, n_hidden: int, n_classes: int | None = None, prior_std: float | None = None
    ) -> None:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[0] < 1 or not np.isfinite(X).all():
            raise InputError("X", f"must be a finite (N, F) array; got shape {X.shape}")
        y = np.asarray(y)
        if y.shape != (X.shape[0],) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise InputError("y", f"must hold {X.shape[0]} integer class labels >= 0", code="bad_labels")
        C = int(y.max()) + 1 if n_classes is None else n_classes
        if not (isinstance(C, int) and C >= 2 and y.max() < C):
            raise InputError("n_classes", f"must be an integer >= 2 above every label; got {n_classes!r}")
        if not (isinstance(n_hidden, int | np.integer) and n_hidden >= 1):
            raise InputError("n_hidden", f"must be an integer >= 1; got {n_hidden!r}")
        if prior_std is not None and not (np.isfinite(prior_std) and prior_std > 0):
            raise InputError("prior_std", f"must be finite and > 0, or None (flat); got {prior_std!r}")
        self.X, self.y, self.n_hidden, self.n_classes = X, y.astype(np.intp), int(n_hidden), C
        self.n_data, self.n_features = X.shape
        self.prior_var = np.inf if prior_std is None else float(prior_std) ** 2  # inf: the seed's flat prior
        H, F = self.n_hidden, self.n_features
        self._ends = np.cumsum([H * F, H, H * C, C])
        self.dim = int(self._ends[-1])
        self._onehot = np.eye(C)[self.y]

    @classmethod
    def generate(
        cls, n: int = 2000, n_features: int = 20, n_classes: int = 3, *, n_hidden: int = 10, seed: int = 0
    ) -> DRBM:
        """A generated multi-class set (scikit-learn's ``make_classification``, standardised)."""
        from sklearn.datasets import make_classification

        informative = min(n_features, max(n_features // 2, int(np.ceil(np.log2(n_classes))) + 1))
        X, y = make_classification(
            n, n_features, n_informative=informative, n_redundant=0, n_classes=n_classes, random_state=seed
        )
        return cls((X - X.mean(0)) / X.std(0), y, n_hidden=n_hidden)

    def init(self, seed: int = 0, scale: float = 0.1) -> np.ndarray:
        """A starting point: ``N(0, scale^2)`` weights (zero weights make every hidden unit alike),
        zero biases."""
        theta = np.zeros(self.dim)
        W = slice(0, int(self._ends[0]))
        theta[W] = scale * np.random.default_rng(seed).standard_normal(int(self._ends[0]))
        return theta

    def unpack(self, theta: Any) -> tuple[Any, Any, Any, Any]:
        """``(W, c, U, d)`` of ``theta`` ``(..., D)`` (leading axes kept: one parameter set per row)."""
        lead = tuple(np.shape(theta.value if isinstance(theta, ad.Var) else theta)[:-1])
        H, F, C = self.n_hidden, self.n_features, self.n_classes
        e = [0, *map(int, self._ends)]
        shapes = ((H, F), (H,), (H, C), (C,))
        return tuple(ad.reshape(theta[..., e[k] : e[k + 1]], lead + shapes[k]) for k in range(4))  # type: ignore[return-value]

    def scores(self, theta: Any, X: np.ndarray) -> tuple[Any, Any]:
        """``(o, f)``: ``o[i, y, j] = o_yj(x_i)`` and ``f[i, y] = d_y + sum_j softplus(o_yj(x_i))``
        (Eq. 4.56), for one ``theta`` ``(D,)`` or one row per example ``(n, D)``."""
        W, c, U, d = self.unpack(theta)
        h = ad.matmul(W, X[:, :, None])[..., 0] + c  # (n, N_h): c_j + sum_k W_jk x_k
        o = h[:, None, :] + ad.swapaxes(U, -1, -2)  # (n, C, N_h)
        return o, d + ad.sum(ad.softplus(o), axis=-1)

    def loglik_terms(self, theta: Any, idx: Any) -> Any:
        """``log p(y_i | x_i)`` for the items ``idx`` (Eq. 4.56): ``(n,)``."""
        _, f = self.scores(theta, self.X[idx])
        return ad.sum(f * self._onehot[idx], axis=-1) - ad.logsumexp(f, axis=-1)

    def loglik_grads(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Eq. (4.57) per example, ``(n, D)``: with ``a_y'j = (1[y' = y] - p(y'|x)) sigm(o_y'j)``,
        ``dU_jy' = a_y'j``, ``dc_j = sum_y' a_y'j``, ``dW_jk = dc_j x_k``, ``dd_y' = 1[y'=y] - p(y'|x)``."""
        X = self.X[idx]
        o, f = self.scores(theta, X)
        r = self._onehot[idx] - softmax(f, axis=1)  # (n, C)
        a = r[:, :, None] * expit(o)  # (n, C, N_h)
        dc = a.sum(axis=1)
        dW = dc[:, :, None] * X[:, None, :]
        n = len(X)
        return np.concatenate([dW.reshape(n, -1), dc, a.transpose(0, 2, 1).reshape(n, -1), r], axis=1)

    def log_post(self, theta: np.ndarray) -> float:
        return self.log_prior(theta) + float(self.loglik_terms(theta, slice(None)).sum())

    def grad_log_post(self, theta: np.ndarray) -> np.ndarray:
        return self.grad_log_prior(theta) + self.loglik_grads(theta, np.arange(self.n_data)).sum(axis=0)

    def predict_proba(self, theta: np.ndarray, X: Any) -> np.ndarray:
        """``p(y | x)`` for the rows of ``X``: ``(m, C)``."""
        return softmax(self.scores(theta, np.asarray(X, dtype=float))[1], axis=1)

    def error(self, theta: np.ndarray, X: Any, y: Any) -> float:
        """Classification error of ``argmax_y p(y | x)`` on ``(X, y)``."""
        return float(np.mean(self.predict_proba(theta, X).argmax(axis=1) != np.asarray(y)))
