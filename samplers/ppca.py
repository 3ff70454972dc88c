"""Probabilistic PCA with missing data, fitted by EM (seed 003 section 6, EM; notes 003-004 §2.8).

The model (Tipping & Bishop 1999): ``x = W z + mu + eps`` with ``z ~ N(0, I_q)``,
``eps ~ N(0, sigma^2 I_D)``, so ``x ~ N(mu, C)``, ``C = W W^T + sigma^2 I``. Missing entries (NaN)
are missing at random (the seed's assumption); row ``i`` observes the coordinates ``o_i`` and its
observed-data likelihood is ``N(x_o; mu_o, W_o W_o^T + sigma^2 I)``.

EM treats both ``z_i`` and the missing ``x_{i,m}`` as latent (the seed's decomposition
``log p(X | theta) = L(q, theta) + KL(q || p(Y | X, theta))``: the E-step sets ``q`` to the exact
posterior, so the observed-data likelihood never decreases):

* E-step, the conditional normal of the seed (``theta_1 | theta_2``) for the factor:
  ``S_i = (I + W_o^T W_o / sigma^2)^-1``, ``m_i = S_i W_o^T (x_o - mu_o) / sigma^2``; a missing
  coordinate is ``w_d^T z + mu_d + eps_d`` under the old parameters.
* M-step: per coordinate ``d`` the regression of ``x_d`` on ``[z, 1]``:
  ``[w_d; mu_d] = A^-1 b_d`` with ``A = sum_i E[z~ z~^T]`` and ``b_d = sum_i E[x_id z~_i]`` (for a
  missing ``x_id``, ``E[z~ z~^T] [w_d; mu_d]_old``), then ``sigma^2`` the mean expected squared
  residual over all ``N D`` entries (a missing entry adds the old ``sigma^2``).

Each iteration costs O(N D q^2) (the seed: EM is O(nDd) per iteration against SVD's O(nD^2) on
complete data, plus the per-row ``q x q`` posteriors that missing data requires).
:func:`ppca_closed_form` is the complete-data maximum likelihood of Tipping & Bishop (eigenvectors
of the sample covariance, ``sigma^2`` the mean of the discarded eigenvalues), the reference the EM
is tested against; :func:`ppca_loglik` is the observed-data log-likelihood (Woodbury form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.monitor import Run
from solvers.progress import ProgressFn, report
from solvers.result import SolveResult


@dataclass
class PPCAFit:
    """The fitted loading ``W`` ``(D, q)``, mean ``mu`` ``(D,)``, noise variance ``sigma2``, the
    observed-data log-likelihood, and the EM's :class:`SolveResult` (trace of the log-likelihood)."""

    W: np.ndarray
    mu: np.ndarray
    sigma2: float
    log_likelihood: float
    result: SolveResult | None = None

    @property
    def covariance(self) -> np.ndarray:
        """``C = W W^T + sigma^2 I`` (invariant to the rotation ``W R`` that PPCA cannot identify)."""
        return self.W @ self.W.T + self.sigma2 * np.eye(self.W.shape[0])

    def impute(self, X: Any) -> np.ndarray:
        """``X`` with each missing entry replaced by its conditional mean ``E[x_m | x_o]``."""
        X, obs = _check_data(X, self.W.shape[1])
        m, _ = _posterior(X, obs, self.W, self.mu, self.sigma2)
        return np.where(obs, X, m @ self.W.T + self.mu)


def _check_data(X: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.array(X, dtype=float)
    except (TypeError, ValueError):
        raise InputError("X", "must be a numeric (N, D) array (NaN for a missing entry)") from None
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 2:
        raise InputError("X", f"must be an (N >= 2, D >= 2) array; got shape {X.shape}")
    if np.isinf(X).any():
        i, d = (int(v) for v in np.argwhere(np.isinf(X))[0])
        raise InputError("X", f"entry ({i}, {d}) is infinite (a missing entry is NaN)", code="inf", item=i)
    obs = ~np.isnan(X)
    empty = np.flatnonzero(~obs.any(axis=1))
    if empty.size:
        raise InputError("X", f"row {int(empty[0])} has no observed entry", code="all_missing", item=int(empty[0]))
    unseen = np.flatnonzero(~obs.any(axis=0))
    if unseen.size:
        raise InputError("X", f"column {int(unseen[0])} has no observed entry", code="all_missing")
    D = X.shape[1]
    if isinstance(q, bool) or not (isinstance(q, int | np.integer) and 1 <= q < D):
        raise InputError("q", f"must be an integer with 1 <= q < D = {D}; got {q!r}")
    return X, obs


def _posterior(X: np.ndarray, obs: np.ndarray, W: np.ndarray, mu: np.ndarray, s2: float):
    """The E-step: posterior means ``m`` ``(N, q)`` and covariances ``S`` ``(N, q, q)`` of the factors
    given each row's observed entries."""
    q = W.shape[1]
    Mi = np.eye(q) + np.einsum("id,dj,dk->ijk", obs.astype(float), W, W) / s2
    S = np.linalg.inv(Mi)
    r = np.where(obs, X - mu, 0.0)
    m = np.einsum("ijk,ik->ij", S, r @ W) / s2
    return m, S


def ppca_loglik(X: Any, W: np.ndarray, mu: np.ndarray, sigma2: float) -> float:
    """The observed-data log-likelihood ``sum_i log N(x_{i,o}; mu_o, W_o W_o^T + sigma^2 I)``
    (Woodbury: ``log det C_o = log det M_i + |o_i| log sigma^2``)."""
    X, obs = _check_data(X, W.shape[1])
    q = W.shape[1]
    Mi = np.eye(q) + np.einsum("id,dj,dk->ijk", obs.astype(float), W, W) / sigma2
    r = np.where(obs, X - mu, 0.0)
    u = r @ W  # W_o^T r_o
    _, logdet = np.linalg.slogdet(Mi)
    quad = (r * r).sum(axis=1) / sigma2 - np.einsum(
        "ij,ij->i", u, np.linalg.solve(Mi, u[..., None])[..., 0]
    ) / sigma2**2
    n_obs = obs.sum(axis=1)
    return float(-0.5 * (n_obs * np.log(2 * np.pi) + logdet + n_obs * np.log(sigma2) + quad).sum())


def ppca_closed_form(X: Any, q: int) -> PPCAFit:
    """Tipping & Bishop's maximum likelihood on complete data: ``mu`` the sample mean,
    ``W = U_q (Lambda_q - sigma^2 I)^(1/2)``, ``sigma^2`` the mean of the ``D - q`` smallest
    eigenvalues of the (1/N) sample covariance."""
    X, obs = _check_data(X, q)
    if not obs.all():
        raise InputError("X", "the closed form needs complete data; use ppca_em for missing entries")
    mu = X.mean(axis=0)
    lam, U = np.linalg.eigh(np.cov(X.T, bias=True))
    lam, U = lam[::-1], U[:, ::-1]
    s2 = float(lam[q:].mean())
    W = U[:, :q] * np.sqrt(np.maximum(lam[:q] - s2, 0.0))
    return PPCAFit(W, mu, s2, ppca_loglik(X, W, mu, s2))


def ppca_em(
    X: Any,
    q: int,
    *,
    max_iter: int = 1000,
    tol: float = 1e-9,
    seed: int = 0,
    callback: Any = None,
    progress: ProgressFn | None = None,
) -> PPCAFit:
    """EM for PPCA with missing entries (NaN) in ``X`` ``(N, D)``, latent dimension ``q`` (module
    docstring). Starts at the column means, a random ``W`` of ``seed`` scaled to the observed
    variance, and ``sigma^2`` the mean observed variance; stops when the observed-data
    log-likelihood gains less than ``tol * N`` in an iteration (converged) or after ``max_iter``
    iterations. The trace records the log-likelihood per iteration (it never decreases)."""
    X, obs = _check_data(X, q)
    if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
        raise InputError("max_iter", f"must be an integer >= 1; got {max_iter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise InputError("tol", f"must be finite and >= 0; got {tol!r}")
    N, D = X.shape
    run = Run("ppca_em", tol=tol, max_iter=int(max_iter), callback=callback, progress=progress)
    mu = np.nanmean(X, axis=0)
    var = float(np.nanvar(X, axis=0).mean()) or 1.0
    W = np.random.default_rng(seed).standard_normal((D, q)) * np.sqrt(var / q)
    s2 = var
    Xf = np.where(obs, X, 0.0)
    mis = ~obs
    ll = ppca_loglik(X, W, mu, s2)
    run.record(ll)
    converged, message, it = False, "maximum number of iterations reached", 0
    for it in range(1, int(max_iter) + 1):
        m, S = _posterior(X, obs, W, mu, s2)
        # E[z~ z~^T] per row, z~ = [z, 1]
        Ez = np.empty((N, q + 1, q + 1))
        Ez[:, :q, :q] = S + m[:, :, None] * m[:, None, :]
        Ez[:, :q, q] = Ez[:, q, :q] = m
        Ez[:, q, q] = 1.0
        theta_old = np.hstack([W, mu[:, None]])  # (D, q+1): row d is [w_d; mu_d]
        mt = np.hstack([m, np.ones((N, 1))])
        B = Xf.T @ mt + np.einsum("id,iab,db->da", mis.astype(float), Ez, theta_old)
        theta = np.linalg.solve(Ez.sum(axis=0), B.T).T
        # expected squared residuals: observed entries, then missing ones (old noise + parameter change)
        resid = np.where(obs, Xf - mt @ theta.T, 0.0)
        Wn = theta[:, :q]
        e_obs = (resid * resid).sum() + np.einsum("id,dj,ijk,dk->", obs.astype(float), Wn, S, Wn)
        delta = theta_old - theta
        e_mis = np.einsum("id,da,iab,db->", mis.astype(float), delta, Ez, delta) + mis.sum() * s2
        W, mu, s2 = Wn, theta[:, q].copy(), float((e_obs + e_mis) / (N * D))
        run.passes += 1
        ll_new = ppca_loglik(X, W, mu, s2)
        run.record(ll_new)
        gain, ll = ll_new - ll, ll_new
        report(run.progress, it / max_iter)
        if abs(gain) <= tol * N:
            converged, message = True, f"log-likelihood gain below tol * N after {it} iterations"
            break
        if run.callback_stops(np.concatenate([W.ravel(), mu, [s2]])):
            message = f"stopped by callback at iteration {it}"
            break
    x = np.concatenate([W.ravel(), mu, [s2]])
    return PPCAFit(W, mu, s2, ll, run.result(x, -ll, it, converged, message))
