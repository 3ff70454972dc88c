"""The quadratic upper bound on a log-partition function (Jebara & Choromanska 2012, Algorithm 1).

For a log-linear model with features ``f(y) in R^d`` and base measure ``h(y) >= 0`` over a finite
``Omega`` the partition function is (seed 004, Eq. (1))

    Z(theta) = sum_y h(y) exp(theta^T f(y)),

and for every ``theta, theta~`` (seed 004, "Upper bound of partition"; J&C 2012, Thm 1)

    log Z(theta) <= log z + (theta - theta~)^T mu + 1/2 (theta - theta~)^T Sigma (theta - theta~),

with equality at ``theta = theta~``; ``z = Z(theta~)``, ``mu = grad log Z(theta~)`` and
``Sigma >= Cov_p[f] = hess log Z(theta~)`` (``p(y) ∝ h(y) exp(theta~^T f(y))``).

ComputeBound visits ``Omega`` once, in any order::

    z <- 0+ ; mu <- 0 ; Sigma <- 0
    for y in Omega:
        alpha <- h(y) exp(theta~^T f(y))
        l     <- f(y) - mu                       # the OLD mu  (the slides swap these two lines:
        Sigma <- Sigma + beta(log(alpha/z)) l l^T  #  that order is NOT a bound, see docs)
        mu    <- mu + alpha / (z + alpha) l
        z     <- z + alpha

with ``beta(x) = tanh(x/2) / (2x)`` (``beta(0) = 1/4``, ``beta(+-inf) = 0``). Everything runs in the
log domain (``log z``, ``log alpha``): the first term (``z = 0+``) gives ``beta = 0``, ``mu = f(y_1)``.

Functions
---------
``compute_bound``     one model, features ``(n, d)`` (numba kernel, sequential over ``Omega``).
``compute_bounds``    many models at once, features ``(N, n, d)``: the loop over ``Omega`` is
                      sequential, each of its steps is vectorised over the ``N`` items.
``bound_sums``        as ``compute_bounds`` but returns the (weighted) SUM of the curvatures
                      without storing ``N`` matrices ``(d, d)`` (what batch majorization needs).
``class_space_bounds`` the bound of a model whose features are a linear image of ``e_y``
                      (multinomial logistic: ``f_x(y) = e_y ⊗ x``): returns ``(log z, q, C)`` with
                      ``mu = q ⊗ x`` and ``Sigma = C ⊗ x x^T``.
``omega``             the paper's uniform curvature bound ``Sigma <= omega I`` (J&C 2012, Thm 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.linalg.blas import dsyrk as _syrk

from .errors import InputError

__all__ = [
    "QuadBound",
    "beta",
    "compute_bound",
    "compute_bounds",
    "bound_sums",
    "class_space_bounds",
    "bound_value",
    "log_partition",
    "omega",
    "nll_bound_sums",
]


@dataclass
class QuadBound:
    """``log Z(theta) <= log_z + d^T mu + 1/2 d^T sigma d`` with ``d = theta - theta_tilde``."""

    log_z: float
    mu: np.ndarray
    sigma: np.ndarray
    theta_tilde: np.ndarray

    def __call__(self, theta: np.ndarray) -> float:
        return bound_value(self, theta)


def beta(x: np.ndarray | float) -> np.ndarray:
    """``tanh(x/2) / (2x)`` with ``beta(0) = 1/4`` and ``beta(+-inf) = beta(nan) = 0`` (vectorised)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(ax < 1e-4, 0.25 - x * x / 48.0, np.tanh(0.5 * x) / (2.0 * x))
    return np.where(np.isfinite(x), out, 0.0)


@njit(cache=True)
def _beta_scalar(x: float) -> float:
    if not np.isfinite(x):
        return 0.0
    if abs(x) < 1e-4:
        return 0.25 - x * x / 48.0
    return np.tanh(0.5 * x) / (2.0 * x)


@njit(cache=True, inline="always")
def _bound_step(la: float, logz: float) -> tuple[float, float, float]:
    """One outcome of Algorithm 1 in the log domain: with ``la = log alpha`` and ``logz = log z`` so
    far, ``(beta(log(alpha/z)), alpha/(z + alpha), log(z + alpha))``."""
    b = _beta_scalar(la - logz)
    new = max(logz, la) + np.log1p(np.exp(-abs(la - logz)))
    return b, np.exp(la - new), new


@njit(cache=True)
def _bound_kernel(log_alpha: np.ndarray, F: np.ndarray, slides_order: bool):
    """Algorithm 1 for one model; ``log_alpha[j] = log h_j + theta~^T f_j``. Returns log z, mu, Sigma."""
    n, d = F.shape
    mu = np.zeros(d)
    sigma = np.zeros((d, d))
    logz = -np.inf
    l = np.empty(d)
    for j in range(n):
        la = log_alpha[j]
        if la == -np.inf:  # h(y) = 0: the term is absent
            continue
        if logz == -np.inf:  # first term: z = 0+, beta = 0, mu = f(y)
            for k in range(d):
                mu[k] = F[j, k]
            logz = la
            continue
        x = la - logz
        b = _beta_scalar(x)
        new_logz = max(logz, la) + np.log1p(np.exp(-abs(la - logz)))
        kappa = np.exp(la - new_logz)
        if slides_order:  # the slides' (wrong) order: mu first, then Sigma with f - mu_new
            for k in range(d):
                mu[k] += kappa * (F[j, k] - mu[k])
            for k in range(d):
                l[k] = F[j, k] - mu[k]
        else:
            for k in range(d):
                l[k] = F[j, k] - mu[k]
            for k in range(d):
                mu[k] += kappa * l[k]
        for a in range(d):
            bla = b * l[a]
            for c in range(d):
                sigma[a, c] += bla * l[c]
        logz = new_logz
    return logz, mu, sigma


def _as_features(F: np.ndarray, name: str = "features") -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise InputError(name, f"must have shape (n_outcomes, dim); got {F.shape}")
    if not np.all(np.isfinite(F)):
        raise InputError(name, "must be finite")
    return F


def _as_log_h(log_h: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if log_h is None:
        return np.zeros(shape)
    log_h = np.asarray(log_h, dtype=np.float64)
    if log_h.shape != shape:
        raise InputError("log_h", f"must have shape {shape}; got {log_h.shape}")
    if np.any(np.isnan(log_h)) or np.any(log_h == np.inf):
        raise InputError("log_h", "must be finite or -inf (h(y) = 0)")
    return log_h


def compute_bound(
    theta_tilde: np.ndarray,
    F: np.ndarray,
    log_h: np.ndarray | None = None,
    *,
    order: np.ndarray | None = None,
    slides_order: bool = False,
) -> QuadBound:
    """ComputeBound (seed 004 Algorithm 1, paper order) for one model.

    Parameters
    ----------
    theta_tilde : (d,) the point where the bound touches ``log Z``.
    F : (n, d) features ``f(y)`` of the ``n`` outcomes.
    log_h : (n,) log base measure (``-inf`` for ``h = 0``); default ``h = 1``.
    order : optional permutation of ``range(n)``: the order in which ``Omega`` is visited
        (``z`` and ``mu`` do not depend on it, ``Sigma`` does; every order is a valid bound).
    slides_order : reproduce the slides' misprinted update order (``mu`` before ``Sigma``). It is
        NOT an upper bound; kept only for the regression test that shows it.
    """
    F = _as_features(F)
    theta = np.asarray(theta_tilde, dtype=np.float64)
    if theta.shape != (F.shape[1],):
        raise InputError("theta_tilde", f"must have shape ({F.shape[1]},); got {theta.shape}")
    lh = _as_log_h(log_h, (F.shape[0],))
    if order is not None:
        order = np.asarray(order)
        if sorted(order.tolist()) != list(range(F.shape[0])):
            raise InputError("order", "must be a permutation of range(n_outcomes)")
        F, lh = F[order], lh[order]
    la = lh + F @ theta
    if not np.any(la > -np.inf):
        raise InputError("log_h", "the base measure is zero everywhere (Z = 0)")
    log_z, mu, sigma = _bound_kernel(np.ascontiguousarray(la), np.ascontiguousarray(F), bool(slides_order))
    return QuadBound(float(log_z), mu, sigma, theta.copy())


def bound_value(bound: QuadBound, theta: np.ndarray) -> float:
    """The bound ``log z + d^T mu + 1/2 d^T Sigma d`` at ``theta``."""
    d = np.asarray(theta, dtype=np.float64) - bound.theta_tilde
    return float(bound.log_z + d @ bound.mu + 0.5 * d @ bound.sigma @ d)


def log_partition(theta: np.ndarray, F: np.ndarray, log_h: np.ndarray | None = None) -> float:
    """``log Z(theta) = logsumexp_y(log h(y) + theta^T f(y))`` (the exact value the bound majorizes)."""
    F = _as_features(F)
    s = _as_log_h(log_h, (F.shape[0],)) + F @ np.asarray(theta, dtype=np.float64)
    m = np.max(s)
    return float(m + np.log(np.sum(np.exp(s - m))))


# --------------------------------------------------------------------------------------------
# many models at once: sequential over Omega, vectorised over items
# --------------------------------------------------------------------------------------------


def _step(logz: np.ndarray, la: np.ndarray):
    """One step of the recursion for all items: (beta, kappa, new log z)."""
    with np.errstate(invalid="ignore"):
        x = la - logz  # +inf for the first term, -inf / nan where alpha = 0
        b = beta(x)
        new_logz = np.logaddexp(logz, la)
        kappa = np.exp(la - new_logz)
    kappa = np.where(la == -np.inf, 0.0, np.where(logz == -np.inf, 1.0, kappa))
    return b, kappa, new_logz


def compute_bounds(scores: np.ndarray, F: np.ndarray, *, curvature: bool = True, order: np.ndarray | str | None = None):
    """Algorithm 1 for ``N`` models at once.

    Parameters
    ----------
    scores : (N, n) ``log alpha_{i,y} = log h_i(y) + theta~^T f_i(y)``.
    F : (N, n, d) per-item features, or (n, d) features shared by all items.
    curvature : also return the per-item ``Sigma_i`` (``(N, d, d)``).
    order : ``None`` (outcomes in the given order), ``"ascending"`` (each item visits its outcomes
        from the least to the most likely at ``theta~``; usually a much tighter ``Sigma``, see
        docs/majorization.md) or an ``(N, n)`` array of per-item permutations.

    Returns ``log_z (N,)``, ``mu (N, d)`` and, when asked, ``Sigma (N, d, d)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    N, n = scores.shape
    shared = F.ndim == 2
    d = F.shape[-1]
    logz = np.full(N, -np.inf)
    mu = np.zeros((N, d))
    S = np.zeros((N, d, d)) if curvature else None
    if isinstance(order, str):
        if order != "ascending":
            raise InputError("order", f"must be None, 'ascending' or an (N, n) array; got {order!r}")
        order = np.argsort(scores, axis=1, kind="stable")
    ar = np.arange(N)
    for j in range(n):
        if order is None:
            b, kappa, logz = _step(logz, scores[:, j])
            l = (F[j][None, :] if shared else F[:, j, :]) - mu
        else:
            oj = order[:, j]
            b, kappa, logz = _step(logz, scores[ar, oj])
            l = (F[oj] if shared else F[ar, oj, :]) - mu
        if S is not None:
            S += b[:, None, None] * l[:, :, None] * l[:, None, :]
        mu += kappa[:, None] * l
    if np.any(logz == -np.inf):
        raise InputError("log_h", "an item has zero base measure on every outcome (Z = 0)")
    return (logz, mu, S) if curvature else (logz, mu)


def bound_sums(
    scores: np.ndarray,
    F: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    curvature: str = "full",
):
    """Algorithm 1 for ``N`` items, returning the weighted SUM of their curvatures.

    ``scores`` (N, n), ``F`` (N, n, d) as in :func:`compute_bounds`; ``weights`` (N,) (default 1).
    ``curvature="full"`` gives ``sum_i w_i Sigma_i`` (d, d) at ``O(N n d^2)`` (one GEMM per outcome);
    ``curvature="diag"`` gives the diagonal majorant ``sum_i w_i D_i`` (d,) with
    ``D_i = sum_y beta |l| ||l||_1 >= Sigma_i`` (each rank-one ``l l^T <= diag(|l| ||l||_1)`` by
    diagonal dominance) at ``O(N n d)``: still an upper bound, so majorization stays monotone.

    Returns ``log_z (N,)``, ``mu (N, d)``, ``S``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    N, n = scores.shape
    d = F.shape[-1]
    w = np.ones(N) if weights is None else np.asarray(weights, dtype=np.float64)
    logz = np.full(N, -np.inf)
    mu = np.zeros((N, d))
    if curvature not in ("full", "diag"):
        raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
    S = np.zeros((d, d), order="F") if curvature == "full" else np.zeros(d)
    for j in range(n):
        b, kappa, logz = _step(logz, scores[:, j])
        l = F[:, j, :] - mu
        wb = w * b
        if curvature == "full":
            # S += l^T diag(wb) l, upper triangle only (BLAS syrk: half the flops of a GEMM)
            a = l * np.sqrt(wb)[:, None]
            S = _syrk(1.0, a.T, beta=1.0, c=S, trans=0, lower=0, overwrite_c=1)
        elif curvature == "diag":
            al = np.abs(l)
            S += (wb * al.sum(axis=1)) @ al
        else:
            raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
        mu += kappa[:, None] * l
    if np.any(logz == -np.inf):
        raise InputError("log_h", "an item has zero base measure on every outcome (Z = 0)")
    if curvature == "full":
        S = np.triu(S) + np.triu(S, 1).T
    return logz, mu, S


@njit(cache=True)
def _class_space_kernel(scores, ascending):
    N, K = scores.shape
    logz_out = np.empty(N)
    Q = np.zeros((N, K))
    C = np.zeros((N, K, K))
    l = np.empty(K)
    for i in range(N):
        order = np.argsort(scores[i]) if ascending else np.arange(K)
        logz = -np.inf
        q = Q[i]
        for jj in range(K):
            j = order[jj]
            la = scores[i, j]
            if la == -np.inf:
                continue
            if logz == -np.inf:
                q[j] = 1.0
                logz = la
                continue
            b, kappa, logz = _bound_step(la, logz)
            for k in range(K):
                l[k] = -q[k]
            l[j] += 1.0
            for a in range(K):
                bla = b * l[a]
                if bla != 0.0:
                    for c in range(K):
                        C[i, a, c] += bla * l[c]
            for k in range(K):
                q[k] += kappa * l[k]
        logz_out[i] = logz
    return logz_out, Q, C


def class_space_bounds(scores: np.ndarray, order: np.ndarray | str | None = None):
    """The bound of ``N`` models whose features are ``f_i(y) = Phi_i e_y`` (e.g. ``e_y ⊗ x_i``).

    ComputeBound commutes with a linear map of the features: with ``f = Phi g``,
    ``mu = Phi mu_g`` and ``Sigma = Phi Sigma_g Phi^T``. So one run in class space (features
    ``e_y``, ``K`` outcomes) gives ``(log z (N,), q (N, K), C (N, K, K))`` and, for multinomial
    logistic regression, ``mu_i = q_i ⊗ x_i`` and ``Sigma_i = C_i ⊗ x_i x_i^T`` without ever
    materialising ``(N, K, K p)`` features.
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    K = scores.shape[1]
    if order is None or (isinstance(order, str) and order == "ascending"):
        logz, q, C = _class_space_kernel(scores, order is not None)
        if np.any(logz == -np.inf):
            raise InputError("log_h", "an item has zero base measure on every outcome (Z = 0)")
        return logz, q, C
    return compute_bounds(scores, np.eye(K), curvature=True, order=order)


def omega(r: float, n: int) -> float:
    """Uniform bound ``Sigma <= omega I`` for ``||f(y)|| <= r``, ``|Omega| <= n`` (J&C 2012, Thm 2).

    ``omega = 2 r^2 sum_{i=1}^{n-1} tanh(log(i)/2) / log(i)`` with the ``i = 1`` term ``1/2``.
    (The slides sum from ``i = 2`` to ``n``, which is violated already at ``n = 2``.)
    """
    i = np.arange(1, n, dtype=np.float64)
    li = np.log(i)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(i == 1, 0.5, np.tanh(0.5 * li) / np.where(li == 0, 1.0, li))
    return float(2.0 * r * r * t.sum())


# --------------------------------------------------------------------------------------------
# the whole negative log-likelihood of a conditional log-linear model, item chunk by item chunk
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _nll_bound_chunk(F, theta, log_h, use_h, labels, w, mode, B, D, g, ascending):
    """Algorithm 1 for every item of a chunk, reading ``F[i, y, k]`` in any memory layout.

    Accumulates ``g += sum_i w_i (mu_i - f_i(y_i))`` and returns ``sum_i w_i (log z_i - s_i(y_i))``.
    ``mode`` 1: row ``i*K + y`` of ``B`` is ``sqrt(w_i beta) l`` (so that ``B^T B = sum_i w_i Sigma_i``);
    ``mode`` 2: ``D += w_i beta |l| ||l||_1`` (diagonal majorant); ``mode`` 0: no curvature.
    """
    c, K, d = F.shape
    s = np.empty(K)
    mu = np.empty(d)
    lbuf = np.empty(d)
    val = 0.0
    for i in range(c):
        for j in range(K):
            acc = log_h[i, j] if use_h else 0.0
            for k in range(d):
                acc += F[i, j, k] * theta[k]
            s[j] = acc
        logz = -np.inf
        order = np.argsort(s) if ascending else np.arange(K)
        for jj in range(K):
            j = order[jj]
            row = i * K + jj
            la = s[j]
            if la == -np.inf or logz == -np.inf:
                if mode == 1:
                    for k in range(d):
                        B[row, k] = 0.0
                if la == -np.inf:
                    continue
                for k in range(d):
                    mu[k] = F[i, j, k]
                logz = la
                continue
            b, kappa, logz = _bound_step(la, logz)
            sw = np.sqrt(w[i] * b)
            l1 = 0.0
            for k in range(d):
                lk = F[i, j, k] - mu[k]
                lbuf[k] = lk
                mu[k] += kappa * lk
                l1 += abs(lk)
            if mode == 1:
                for k in range(d):
                    B[row, k] = sw * lbuf[k]
            elif mode == 2:
                wb = w[i] * b * l1
                for k in range(d):
                    D[k] += wb * abs(lbuf[k])
        yi = labels[i]
        val += w[i] * (logz - s[yi])
        for k in range(d):
            g[k] += w[i] * (mu[k] - F[i, yi, k])
    return val


def nll_bound_sums(
    theta: np.ndarray,
    F: np.ndarray,
    labels: np.ndarray,
    log_h: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    *,
    idx: np.ndarray | None = None,
    curvature: str | None = "full",
    order: str | None = "ascending",
    chunk: int = 128,
):
    """Bound of the mean NLL of a conditional log-linear model at ``theta`` (items ``idx`` or all).

    Returns ``(value, g, S)``: ``value = mean_i w_i (log Z_i(theta) - s_i(y_i))`` (exact),
    ``g = mean_i w_i (mu_i - f_i(y_i))`` (the exact gradient), and ``S = mean_i w_i Sigma_i``
    (``curvature="full"``, one BLAS ``syrk`` per chunk of items), its diagonal majorant (``"diag"``)
    or ``None``. ``order``: ``"ascending"`` (each item visits its outcomes from the least to the most
    likely at ``theta``; a tighter bound) or ``None`` (the given order). ``F`` is ``(n, K, d)`` in any memory layout (e.g. a ``swapaxes`` view of the log
    pool's ``(n, d, K)`` store): a numba kernel reads each item's block, so nothing is copied.
    """
    n, K, d = F.shape
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    labels = np.asarray(labels)
    w_all = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    items = np.arange(n) if idx is None else np.asarray(idx)
    m = len(items)
    mode = {"full": 1, "diag": 2, None: 0}.get(curvature, -1)
    if order not in ("ascending", None):
        raise InputError("order", f"must be 'ascending' or None; got {order!r}")
    if mode < 0:
        raise InputError("curvature", f"must be 'full', 'diag' or None; got {curvature!r}")
    g = np.zeros(d)
    D = np.zeros(d)
    S = np.zeros((d, d), order="F") if mode == 1 else None
    B = np.empty((chunk * K, d)) if mode == 1 else np.empty((1, 1))
    dummy_h = np.zeros((1, 1))
    val = 0.0
    for a in range(0, m, chunk):
        sl = items[a : a + chunk]
        contiguous = idx is None
        Fc = F[a : a + len(sl)] if contiguous else F[sl]
        hc = dummy_h if log_h is None else (log_h[a : a + len(sl)] if contiguous else log_h[sl])
        val += _nll_bound_chunk(
            Fc, theta, hc, log_h is not None, labels[sl], w_all[sl], mode, B, D, g, order == "ascending"
        )
        if mode == 1:
            rows = B[: len(sl) * K]
            S = _syrk(1.0, rows.T, beta=1.0, c=S, trans=0, lower=0, overwrite_c=1)
    if mode == 1:
        assert S is not None
        S = (np.triu(S) + np.triu(S, 1).T) / m
    elif mode == 2:
        S = D / m
    return val / m, g / m, S
