"""The Gauss-Newton (Fisher) matrix of the Rényi pool's weight-learning objective.

Seed 000 §2.6 learns the weights ``w`` by maximising ``Σ_n log P_agg(y_n | w)``; the aggregate
``r = log P_agg`` is the fixed point of Eq. (2.8). By the implicit-function theorem (see
:mod:`aggregators.renyi_gradient`) its Jacobian in the weights, per item, is

    J = dr/dw = H^{-1} M,    M[:, k] = (Q_k - Q) / (γ_k S),    S = Σ_j w_j/γ_j,

with the symmetric positive-definite ``K x K`` matrix ``H = diag(Σ_i w'_i γ_i Q_i) + Σ_i w'_i (1-γ_i)
Q_i Q_iᵀ`` of :mod:`aggregators.renyi_kernels` (``Q_i`` the tilted agents, ``Q = Σ_i w'_i Q_i``).

The loss of an item is ``-r_y`` with ``r`` normalised, i.e. softmax cross-entropy in the "logits"
``r`` (``qᵀ J = 0`` because ``Σ_y exp r_y = 1`` for every ``w``). Its generalised Gauss-Newton
matrix, the Fisher information of the pool in ``w``, is

    G = mean_n  J_nᵀ diag(q_n) J_n,

positive semi-definite, and equal to the exact Hessian when ``r`` is linear in ``w`` (γ → 0: the log
pool, whose Hessian ``Cov_q[log P]`` this reduces to) and, at the optimum, up to the term
``Σ_y (q_y - [y = y_n]) ∇²r_y`` whose mean vanishes when the pool is calibrated. It is what the
working-set Newton solver (:mod:`solvers.methods.newton`) uses as the Hessian of
:class:`aggregators.renyi_gradient.RenyiProblem` when only the weights are learnt.

Cost per item with ``A`` agents of which ``a`` have a positive weight: ``Q_i`` (``A K``
exponentials), ``H`` (``K² a``), the solve (``K³/3 + 2 K² A``, dense, or ``K a² + a³ + K a A`` by
Woodbury when ``K > a``) and the product ``K A²``, all as batched BLAS over chunks of items.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import InputError

from .renyi_fixed_point import anneal, mixture_weights
from .renyi_gradient import RenyiProblem

__all__ = ["renyi_weight_gauss_newton", "RenyiWeightProblem"]


def renyi_weight_gauss_newton(
    La: np.ndarray,
    w: np.ndarray,
    gamma: np.ndarray,
    log_q: np.ndarray,
    c: np.ndarray,
    *,
    chunk: int = 64,
) -> np.ndarray:
    """``Σ_n c_n J_nᵀ diag(q_n) J_n`` over the given items: the weights' Gauss-Newton matrix ``(A, A)``.

    ``La`` (n, A, K) annealed, normalised log-probabilities; ``w`` (A,) on the simplex; ``gamma``
    (A,); ``log_q`` (n, K) the solved aggregate at ``(w, gamma)``; ``c`` (n,) item weights (``1/n``
    for the mean).
    """
    n, A, K = La.shape
    wp = mixture_weights(w, gamma)
    S = float(np.sum(w / gamma))
    act = np.flatnonzero(wp > 0)
    a = act.size
    sv = np.sqrt(wp[act] * (1.0 - gamma[act]))  # scales of the rank-one terms of H
    dg = wp[act] * gamma[act]  # weights of the diagonal
    colscale = 1.0 / (gamma * S)
    G = np.zeros((A, A))
    woodbury = K > a
    for s in range(0, n, chunk):
        Lc = La[s : s + chunk]
        m = Lc.shape[0]
        r = log_q[s : s + chunk]
        # tilted agents Q_i ∝ P_i^γ_i Q^(1-γ_i), normalised over classes
        U = gamma[None, :, None] * Lc + (1.0 - gamma)[None, :, None] * r[:, None, :]
        U -= U.max(axis=2, keepdims=True)
        Qi = np.exp(U)
        Qi /= Qi.sum(axis=2, keepdims=True)
        q = np.exp(r)
        M = (Qi - q[:, None, :]) * colscale[None, :, None]  # (m, A, K): rows are the columns of M
        Qa = Qi[:, act, :]
        d = np.einsum("a,mak->mk", dg, Qa)  # diagonal of H
        V = Qa * sv[None, :, None]  # (m, a, K): H = diag(d) + Vᵀ V
        if woodbury:
            # H^{-1} Mᵀ = D^{-1}Mᵀ - D^{-1}Vᵀ (I + V D^{-1} Vᵀ)^{-1} V D^{-1} Mᵀ
            Vd = V / d[:, None, :]
            C = Vd @ V.transpose(0, 2, 1)
            C[:, np.arange(a), np.arange(a)] += 1.0
            Md = M / d[:, None, :]  # (m, A, K) = (D^{-1} Mᵀ)ᵀ
            T = np.linalg.solve(C, Vd @ M.transpose(0, 2, 1))  # (m, a, A)
            J = Md - T.transpose(0, 2, 1) @ V / d[:, None, :]  # (m, A, K) = Jᵀ
        else:
            H = V.transpose(0, 2, 1) @ V
            H[:, np.arange(K), np.arange(K)] += d
            J = np.linalg.solve(H, M.transpose(0, 2, 1)).transpose(0, 2, 1)  # (m, A, K) = Jᵀ
        Y = J * (np.sqrt(q) * np.sqrt(c[s : s + chunk])[:, None])[:, None, :]
        Y2 = np.ascontiguousarray(Y.transpose(1, 0, 2)).reshape(A, m * K)
        G += Y2 @ Y2.T
    return 0.5 * (G + G.T)


class RenyiWeightProblem(RenyiProblem):
    """:class:`RenyiProblem` with the weights alone free, offering ``hessian`` and ``restrict``.

    ``hessian(x, items=None)`` is the Gauss-Newton matrix :func:`renyi_weight_gauss_newton` at ``x``
    (over ``items`` only when given: subsampled Newton); ``restrict(idx)`` is the problem on the agents
    ``idx`` (the others at weight zero, so the aggregate and the gradient on ``idx`` are the full
    problem's), sharing the warm start, for the working-set Newton solver of :mod:`solvers.methods.newton`.
    """

    def __init__(self, log_probs, labels, gamma=1.0, lam=None, *, tol=1e-12, sample_weight=None) -> None:
        super().__init__(log_probs, labels, gamma, lam, tol=tol, sample_weight=sample_weight)
        self._root: RenyiWeightProblem = self
        self._La = anneal(self.L, self.lam0)

    def project(self, x: np.ndarray) -> np.ndarray:
        """Projection onto the simplex; a point already on it is returned as it is (the projection's
        rounding would turn its zero weights into 1e-17 ones, and every agent back into the solve)."""
        x = np.asarray(x, dtype=np.float64)
        if x.min() >= 0 and abs(x.sum() - 1.0) <= 1e-12:
            return x.copy()
        return super().project(x)

    def _evaluate(self, x, grad):
        before = self.sweeps
        out = super()._evaluate(x, grad)
        if self._root is not self:
            self._root.sweeps += self.sweeps - before
            self._root.n_evals = self._root.n_evals + 1
            if self._warm is not None:
                self._root._warm = self._warm
        return out

    def _solved_at(self, x: np.ndarray) -> np.ndarray:
        key = np.asarray(x, dtype=np.float64).tobytes()
        if self._cache is not None and self._cache[0] == key and np.isfinite(self._cache[1]) and self._warm is not None:
            return self._warm
        return self.log_q(x)

    def hessian(self, x: np.ndarray, *, items: np.ndarray | None = None) -> np.ndarray:
        """The Gauss-Newton matrix of the mean negative log-likelihood in the weights at ``x``."""
        w, gamma, _ = self.unpack(x)
        w = w / w.sum()
        log_q = self._solved_at(x)
        n = self.n_terms
        its = np.arange(n) if items is None else np.asarray(items, dtype=np.int64)
        sw = np.ones(n) if self.sample_weight is None else self.sample_weight
        c = sw[its] / sw[its].sum()
        La = self._La if items is None else self._La[its]
        return renyi_weight_gauss_newton(La, w, gamma, log_q[its], c)

    def screen(self, k: int) -> np.ndarray:
        """The ``k`` agents with the best own mean log-likelihood ``mean_n log P_i(y_n)`` (one value
        per item and agent read): the first working set, without a solve at uniform weights."""
        n = self.n_terms
        own = self._La[np.arange(n), :, self.labels]  # (n, A)
        score = own.mean(axis=0) if self.sample_weight is None else self.sample_weight @ own
        return np.sort(np.argsort(-score, kind="stable")[: min(k, self.n_agents)])

    def restrict(self, idx: Any) -> RenyiWeightProblem:
        """The same problem on the agents ``idx`` (the others at weight zero)."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= self.n_agents:
            raise InputError("idx", f"must be non-empty 1-D agent indices in 0..{self.n_agents - 1}")
        lam = None if self.lam0 is None else self.lam0[idx]
        sub = RenyiWeightProblem(
            self.L[:, idx], self.labels, self.gamma0[idx], lam, tol=self.tol, sample_weight=self.sample_weight
        )
        sub._root = self._root
        sub._warm = self._root._warm
        return sub
