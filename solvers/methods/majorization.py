"""Bound majorization, batch (``bm``) and stochastic (``sbm``), for conditional log-linear models.

Seed 004 (slides "From Bound Majorization to Stochastic Bound Majorization", after Jebara &
Choromanska 2012), with the repairs of ``notes/003-004.md`` section 1 and ``docs/majorization.md``.

The problem is the mean negative log-likelihood of a conditional log-linear model plus a ridge
term (seed 004 Eq. (2) with ``J = -n f``)::

    f(theta) = (1/n) sum_i w_i [log Z_i(theta) - theta^T f_i(y_i) - log h_i(y_i)] + lam/2 ||theta||^2.

Each ``log Z_i`` is majorized at ``theta~`` by the quadratic bound of :mod:`solvers.bound`, so

    f(theta) <= f(theta~) + g^T D + 1/2 D^T H D,   D = theta - theta~,
    g = (1/n) sum_i w_i (mu_i - f_i(y_i)) + lam theta~   (= grad f(theta~)),
    H = (1/n) sum_i w_i Sigma_i + lam I.

The slides' Algorithms 2-3 print ``(sum_i Sigma_i + lam I)`` with the per-sample ``lam`` of (2):
that drops a factor ``t`` and is not a majorizer; with the mean objective above the factor is
already in place. BM minimises the majorizer over the convex set Lambda: the closed form
``theta~ - H^{-1} g`` when unconstrained, else the projection of that point onto Lambda in the
metric of ``H`` (for the simplex a small QP solved exactly by an active-set method). ``f`` then
decreases monotonically.

SBM does the same on a random mini-batch ``B`` (sums over ``B`` scaled by ``1/|B|``, i.e. the batch
majorizer is an unbiased estimate of the full one, ``lam`` unchanged), with step ``eta``. Options:
a geometric batch growth (semi-stochastic, Aravkin et al. 2013) which ends as BM and therefore
converges to the exact optimum; the Sherman-Morrison form of seed 004 Algorithm 4 (repaired) that
never factorises ``H`` (``O(d^2)`` per (item, outcome)); a diagonal majorant of the curvature for
large ``d`` (``curvature="diag"``, ``O(d)`` per (item, outcome)).

Problems qualify when they expose ``features`` (``(n, K, d)`` array, or the structured
:class:`~solvers.problems.multinomial_loglinear.KroneckerFeatures`) and ``labels``; the
optional ``log_h``, ``lam`` and ``sample_weight`` are read when present, and for a problem class
not defined in this package the objective so reconstructed is checked against the problem's
own ``value_and_grad`` before solving.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from numba import njit
from scipy import linalg

from solvers.bound import _beta_scalar, class_space_bounds, nll_bound_sums
from solvers.problem import capability, constraint_of, start_point
from solvers.progress import ProgressFn, report
from solvers.registry import register
from solvers.result import Clock, SolveResult, Trace

from ..errors import InputError

__all__ = ["bound_majorization", "stochastic_bound_majorization", "loglinear_terms", "simplex_metric_projection"]


# ---------------------------------------------------------------------------------------------
# reading a log-linear problem
# ---------------------------------------------------------------------------------------------


class _Terms:
    """Bound sums over items of a conditional log-linear model (base of the two layouts)."""

    n: int
    dim: int
    lam: float
    labels: np.ndarray
    w: np.ndarray

    order: str | None = "ascending"

    def sums(self, theta: np.ndarray, idx: np.ndarray | None = None, curvature: str = "full"):
        """Mean over ``idx`` of ``(log z_i - s_i(y_i), mu_i - f_i(y_i), Sigma_i)`` (weighted)."""
        raise NotImplementedError

    def dense_batch(self, theta: np.ndarray, idx: np.ndarray):
        """``(features (m, K, d), scores (m, K))`` of the items ``idx``."""
        raise NotImplementedError


class _DenseTerms(_Terms):
    def __init__(self, F: np.ndarray, labels: np.ndarray, log_h, lam: float, w: np.ndarray) -> None:
        self.F, self.labels, self.log_h, self.lam, self.w = F, labels, log_h, lam, w
        self.n, _, self.dim = F.shape

    def _scores(self, theta, idx):
        F = self.F if idx is None else self.F[idx]
        s = F @ theta
        if self.log_h is not None:
            s = s + (self.log_h if idx is None else self.log_h[idx])
        return F, s

    def sums(self, theta, idx=None, curvature="full"):
        return nll_bound_sums(theta, self.F, self.labels, self.log_h, self.w, idx=idx, curvature=curvature,
                              order=self.order)

    def dense_batch(self, theta, idx):
        F, s = self._scores(theta, idx)
        return np.ascontiguousarray(F), np.ascontiguousarray(s)


class _MultinomialTerms(_Terms):
    """``f_x(y) = e_y ⊗ x``: the bound runs in class space (``K`` dims), see ``class_space_bounds``."""

    def __init__(self, kf: Any, labels, log_h, lam: float, w: np.ndarray) -> None:
        self.kf, self.X = kf, kf.X
        self.labels, self.log_h, self.lam, self.w = labels, log_h, lam, w
        self.n, _, self.dim = kf.shape

    def _scores(self, theta, idx):
        X = self.X if idx is None else self.X[idx]
        s = np.asarray(X @ self.kf.theta_matrix(theta).T)
        if self.log_h is not None:
            s = s + (self.log_h if idx is None else self.log_h[idx])
        return X, s

    def sums(self, theta, idx=None, curvature="full"):
        X, s = self._scores(theta, idx)
        y = self.labels if idx is None else self.labels[idx]
        w = self.w if idx is None else self.w[idx]
        m = len(y)
        ar = np.arange(m)
        logz, q, C = class_space_bounds(s, order=self.order)
        val = float(w @ (logz - s[ar, y])) / m
        R = q.copy()
        R[ar, y] -= 1.0
        g = self.kf.flat(np.asarray(X.T @ (R * w[:, None])).T) / m
        if curvature == "full":
            S = self.kf.kron_sum(C, idx, w) / m
        elif curvature == "diag":
            # C_i ⊗ x x^T <= diag(row sums of |C_i| ⊗ |x||x|^T) (diagonal dominance)
            cr = np.abs(C).sum(axis=2)  # (m, K)
            ax = np.abs(X)
            S = self.kf.flat(np.asarray(ax.T @ (cr * (w * ax.sum(axis=1))[:, None])).T) / m
        else:
            raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
        return val, g, S

    def dense_batch(self, theta, idx):
        _, s = self._scores(theta, idx)
        return np.ascontiguousarray(self.kf.rows(idx)), np.ascontiguousarray(s)


def _attr(problem: Any, *names: str) -> Any:
    """The first of the declared capabilities ``names`` the problem offers as data (not a method)."""
    for n in names:
        v = capability(problem, n)
        if v is not None and not callable(v):
            return v
    return None


def loglinear_terms(problem: Any) -> _Terms:
    """The bound-sum view of a conditional log-linear ``problem`` (raises ValueError if it is not one)."""
    feats = capability(problem, "features")
    if feats is None or capability(problem, "labels") is None:
        raise InputError("problem", f"{type(problem).__name__} is not a conditional log-linear problem: it needs `features` and `labels`")
    structured = hasattr(feats, "rows") and hasattr(feats, "kron_sum")
    F = feats if structured else np.asarray(feats)  # no copy: (n, K, d) views are used per class
    if not structured and F.ndim != 3:
        raise InputError("problem", f"{type(problem).__name__}.features must have shape (n_items, n_classes, dim); got {F.shape}")
    n, K = F.shape[0], F.shape[1]
    labels = np.asarray(problem.labels).astype(np.int64)
    lam = _attr(problem, "lam", "l2")
    lam = 0.0 if lam is None else float(lam)
    if float(_attr(problem, "l1") or 0.0) != 0.0:
        raise InputError("problem", f"{type(problem).__name__} has an l1 term: bound majorization handles smooth (ridge) objectives only")
    log_h = _attr(problem, "log_h")
    if log_h is not None:
        log_h = np.broadcast_to(np.asarray(log_h, dtype=np.float64), (n, K))
    w = _attr(problem, "sample_weight")
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    if structured:
        return _MultinomialTerms(feats, labels, log_h, lam, w)
    return _DenseTerms(F, labels, log_h, lam, w)


def _check_consistent(problem: Any, terms: _Terms, x: np.ndarray) -> None:
    """For foreign problem classes: the reconstructed objective must be the problem's own."""
    if type(problem).__module__ == "solvers.problems.multinomial_loglinear":
        return
    val, g, _ = terms.sums(x, curvature="diag")
    val += 0.5 * terms.lam * x @ x
    g = g + terms.lam * x
    pv, pg = problem.value_and_grad(x)
    if not (abs(pv - val) <= 1e-8 * (1 + abs(pv)) and np.allclose(pg, g, rtol=1e-6, atol=1e-9)):
        raise InputError(
            "problem",
            f"bound majorization: {type(problem).__name__}'s objective is not the mean log-linear NLL + lam/2||x||^2 "
            f"read from its features/labels/log_h/lam (value {pv!r} vs {val!r}); it cannot be majorized by this solver"
        )


# ---------------------------------------------------------------------------------------------
# the step: minimise the quadratic majorizer (over Lambda)
# ---------------------------------------------------------------------------------------------


def _newton_point(x: np.ndarray, g: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``x - H^{-1} g`` (Cholesky; minimum-norm pseudo-inverse step if ``H`` is singular)."""
    if H.ndim == 1:
        return x - g / np.where(H > 0, H, np.inf)
    try:
        c = linalg.cho_factor(H, check_finite=False)
        return x - linalg.cho_solve(c, g, check_finite=False)
    except linalg.LinAlgError:
        e, V = np.linalg.eigh(H)
        keep = e > 1e-12 * max(e.max(), 1e-300)
        return x - V[:, keep] @ ((V[:, keep].T @ g) / e[keep])


def simplex_metric_projection(H: np.ndarray, v: np.ndarray, x_start: np.ndarray | None = None, max_iter: int | None = None) -> np.ndarray:
    """``argmin_{x in simplex} 1/2 (x - v)^T H (x - v)`` by a primal active-set method.

    ``H`` symmetric positive (semi)definite, ``(d, d)`` or its diagonal ``(d,)``; ``x_start`` a feasible
    warm start (default the Euclidean-nearest vertex set). Exact up to round-off (Nocedal &
    Wright, Algorithm 16.3): each iteration solves the bordered KKT system on the free set.
    """
    H = np.diag(H) if H.ndim == 1 else H
    d = len(v)
    if x_start is None:
        x = np.full(d, 1.0 / d)
    else:
        x = np.maximum(np.asarray(x_start, dtype=np.float64), 0.0)
        x /= x.sum()
    W = x <= 0.0
    if W.all():
        x[:] = 1.0 / d
        W[:] = False
    max_iter = max_iter or 20 * d + 100
    for _ in range(max_iter):
        gr = H @ (x - v)
        F = np.flatnonzero(~W)
        k = len(F)
        KKT = np.zeros((k + 1, k + 1))
        KKT[:k, :k] = H[np.ix_(F, F)]
        KKT[:k, k] = 1.0
        KKT[k, :k] = 1.0
        rhs = np.concatenate([-gr[F], [0.0]])
        try:
            sol = np.linalg.solve(KKT, rhs)
        except np.linalg.LinAlgError:
            sol = np.linalg.lstsq(KKT, rhs, rcond=None)[0]
        p, nu = sol[:k], sol[k]
        if np.linalg.norm(p) <= 1e-13 * (1.0 + np.linalg.norm(x[F])):
            Wi = np.flatnonzero(W)
            if len(Wi) == 0:
                return x
            lam_w = gr[Wi] + nu
            j = np.argmin(lam_w)
            if lam_w[j] >= -1e-12 * (1.0 + np.abs(gr).max()):
                return x
            W[Wi[j]] = False
            continue
        neg = p < 0
        alpha, block = 1.0, -1
        if neg.any():
            ratios = -x[F][neg] / p[neg]
            jj = np.argmin(ratios)
            if ratios[jj] < 1.0:
                alpha, block = max(ratios[jj], 0.0), F[np.flatnonzero(neg)[jj]]
        x[F] += alpha * p
        if block >= 0:
            x[block] = 0.0
            W[block] = True
        x = np.maximum(x, 0.0)
        x /= x.sum()
    return x


def _minimise_majorizer(x, g, H, constraint, projection):
    v = _newton_point(x, g, H)
    if constraint == "none":
        return v
    if projection is not None:
        return projection(H, v, x)
    if constraint == "simplex":
        return simplex_metric_projection(H, v, x)
    raise InputError("problem", f"bound majorization handles constraints 'none' and 'simplex', not {constraint!r}")


def _add_lam(S: np.ndarray, lam: float) -> np.ndarray:
    if S.ndim == 1:
        return S + lam
    H = S.copy()
    H[np.diag_indices_from(H)] += lam
    return H


def _prepare(problem, x0, curvature, order):
    if curvature not in ("full", "diag"):
        raise InputError("curvature", f"must be 'full' or 'diag'; got {curvature!r}")
    if order not in ("ascending", "given"):
        raise InputError("order", f"must be 'ascending' or 'given'; got {order!r}")
    terms = loglinear_terms(problem)
    terms.order = "ascending" if order == "ascending" else None
    constraint = constraint_of(problem)
    if constraint not in ("none", "simplex"):
        raise InputError("problem", f"bound majorization handles constraints 'none' and 'simplex', not {constraint!r}")
    x = start_point(problem, x0)
    if constraint == "simplex" and (np.any(x < 0) or abs(x.sum() - 1.0) > 1e-9):
        proj = capability(problem, "project")
        x = proj(x) if proj is not None else simplex_metric_projection(np.ones(len(x)), x)
    _check_consistent(problem, terms, x)
    return terms, constraint, x


def _check_common(tol: float, max_iter: int) -> None:
    if not (tol >= 0 and math.isfinite(tol)):
        raise InputError("tol", f"must be finite and >= 0; got {tol}")
    if int(max_iter) < 1:
        raise InputError("max_iter", f"must be >= 1; got {max_iter}")


# ---------------------------------------------------------------------------------------------
# BM
# ---------------------------------------------------------------------------------------------


@register("bm", needs=("features", "labels"), constraints=("none", "simplex"),
          summary="Batch bound majorization (Jebara & Choromanska 2012): bound-Newton steps, monotone")
def bound_majorization(
    problem: Any,
    x0: np.ndarray | None = None,
    *,
    tol: float = 1e-8,
    max_iter: int = 1000,
    callback: Callable[[np.ndarray], Any] | None = None,
    progress: ProgressFn | None = None,
    curvature: str = "full",
    order: str = "ascending",
    projection: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> SolveResult:
    """Batch bound majorization (seed 004 Algorithm 2, repaired).

    Each iteration runs ComputeBound on every item at the current ``theta~`` (one pass), forms
    ``g`` and ``H`` (module docstring) and moves to the minimiser of the majorizer over Lambda.
    Stops when ``||theta_new - theta_old||_2 <= tol`` (the slides' "theta_new - theta_old >= eps",
    with a norm) or after ``max_iter`` iterations.

    Options
    -------
    curvature : ``"full"`` (default; ``O(n K d^2)`` per iteration) or ``"diag"`` (diagonal majorant,
        ``O(n K d)``; more iterations, still monotone).
    order : the order in which ComputeBound visits each item's outcomes: ``"ascending"`` (default;
        least likely first at ``theta~``, re-sorted at every iteration) or ``"given"`` (the class
        order). Every order gives a valid bound; ascending is much tighter when many outcomes are
        unlikely (measured in docs/majorization.md).
    projection : ``projection(H, v, x) -> theta`` for a custom convex set: the minimiser over Lambda of
        ``1/2 (theta - v)^T H (theta - v)`` (``x`` is the current feasible point, a warm start).
        Default: none, or the exact simplex QP when ``problem.constraint == "simplex"``.
    callback : called as ``callback(theta)`` after each iteration; returning True stops.

    ``trace`` records ``f(theta~)`` at the start of every iteration (free: ``log z_i = log Z_i``).
    """
    _check_common(tol, max_iter)
    clock = Clock()
    terms, constraint, x = _prepare(problem, x0, curvature, order)
    lam = terms.lam
    trace = Trace()
    converged, message, it, passes, step_norm = False, "max_iter reached", 0, 0.0, float("nan")
    for it in range(1, int(max_iter) + 1):
        val, g, S = terms.sums(x, curvature=curvature)
        passes += 1.0
        fval = val + 0.5 * lam * x @ x
        g = g + lam * x
        trace.record(fval, passes - 1.0, clock(), step=step_norm)
        H = _add_lam(S, lam)
        x_new = _minimise_majorizer(x, g, H, constraint, projection)
        step_norm = float(np.linalg.norm(x_new - x))
        x = x_new
        report(progress, it / max_iter)
        if callback is not None and callback(x) is True:
            message = "stopped by callback"
            break
        if not np.all(np.isfinite(x)):
            message = "non-finite iterate"
            break
        if step_norm <= tol:
            converged, message = True, f"step norm {step_norm:.3g} <= tol"
            break
    seconds = clock()
    clock.pause()
    fun = float(problem.value(x))
    trace.record(fun, passes, seconds, step=step_norm)
    report(progress, 1.0)
    return SolveResult(x=x, fun=fun, n_iter=it, n_passes=passes, converged=converged, message=message,
                       method="bm", seconds=seconds, trace=trace, extra={"curvature": curvature})


# ---------------------------------------------------------------------------------------------
# SBM
# ---------------------------------------------------------------------------------------------


@njit(cache=True)
def _sherman_morrison_direction(theta, Fb, scores, labels, w, lam, ascending=False):
    """Seed 004 Algorithm 4 (repaired): ``phi = H_B^{-1} g_B`` without factorising ``H_B``.

    Keeps ``M = (lam I + (1/m) sum w_i beta l l^T)^{-1}`` by Sherman-Morrison rank-one updates and
    ``phi = M grad`` with ``grad = lam theta + (1/m) sum_i w_i (mu_i - f_i(y_i))`` built up term by
    term. Repairs: the update ``U`` uses the OLD ``M``; the data term ``-f_i(y_i)`` enters once per
    item (not once per outcome); ``M``, ``phi`` and ``grad`` start afresh for every mini-batch;
    ``lam`` is not divided by ``t``.
    """
    m, K, d = Fb.shape
    M = np.zeros((d, d))
    for k in range(d):
        M[k, k] = 1.0 / lam
    grad = lam * theta
    phi = theta.copy()  # M grad
    gbar = np.zeros(d)
    l = np.zeros(d)
    Ml = np.zeros(d)
    for i in range(m):
        c = w[i] / m
        logz = -np.inf
        for k in range(d):
            gbar[k] = 0.0
        order = np.argsort(scores[i]) if ascending else np.arange(K)
        for jj in range(K + 1):
            if jj < K:
                j = order[jj]
                la = scores[i, j]
                if la == -np.inf:
                    continue
                for k in range(d):
                    l[k] = Fb[i, j, k] - gbar[k]
                if logz == -np.inf:
                    b = 0.0
                    kappa = 1.0
                    logz = la
                else:
                    b = _beta_scalar(la - logz)
                    new = max(logz, la) + np.log1p(np.exp(-abs(la - logz)))
                    kappa = np.exp(la - new)
                    logz = new
                if b > 0.0:
                    # U = coef (M l)(M l)^T with the OLD M; phi <- phi - U grad_old; M <- M - U
                    lMl = 0.0
                    Mlg = 0.0
                    for r in range(d):
                        acc = 0.0
                        for q in range(d):
                            acc += M[r, q] * l[q]
                        Ml[r] = acc
                        lMl += l[r] * acc
                        Mlg += acc * grad[r]
                    s = c * b
                    coef = s / (1.0 + s * lMl)
                    for r in range(d):
                        phi[r] -= coef * Mlg * Ml[r]
                        cr = coef * Ml[r]
                        for q in range(d):
                            M[r, q] -= cr * Ml[q]
                sc = c * kappa  # delta = c kappa l
                for k in range(d):
                    gbar[k] += kappa * l[k]
            else:  # the observed outcome, once per item: delta = -c f_i(y_i)
                sc = -c
                for k in range(d):
                    l[k] = Fb[i, labels[i], k]
            # phi <- phi + M_new delta ; grad <- grad + delta
            for r in range(d):
                acc = 0.0
                for q in range(d):
                    acc += M[r, q] * l[q]
                phi[r] += sc * acc
                grad[r] += sc * l[r]
    return phi, grad, M


@register("sbm", needs=("features", "labels"), constraints=("none", "simplex"),
          summary="Stochastic bound majorization: mini-batch bound steps (optionally growing batch, Sherman-Morrison)")
def stochastic_bound_majorization(
    problem: Any,
    x0: np.ndarray | None = None,
    *,
    tol: float = 1e-8,
    max_iter: int = 200,
    callback: Callable[[np.ndarray], Any] | None = None,
    progress: ProgressFn | None = None,
    batch_size: int | None = None,
    step: float = 1.0,
    schedule: str = "constant",
    decay: float = 1.0,
    growth: float = 1.1,
    sherman_morrison: bool = False,
    curvature: str = "full",
    order: str = "ascending",
    seed: int | None = 0,
) -> SolveResult:
    """Stochastic bound majorization (seed 004 Algorithms 3-4, with a stated convention).

    Iteration ``k`` draws a mini-batch ``B`` of ``p_k`` items (without replacement inside an epoch),
    computes the bounds on ``B`` only and sets

        theta <- argmin_{theta in Lambda} of the batch majorizer at theta~ with step eta_k:
        theta~ - eta_k H_B^{-1} g_B   (then projected in the H_B metric when constrained),
        g_B = (1/p) sum_{i in B} w_i (mu_i - f_i(y_i)) + lam theta~,  H_B = (1/p) sum_{i in B} w_i Sigma_i + lam I.

    So the batch sums are scaled by ``t/p`` relative to the slides' Algorithm 3 and ``lam`` keeps its
    meaning; a full batch with ``eta = 1`` is exactly BM.

    Options
    -------
    max_iter : maximum number of EPOCHS (passes over the data).
    batch_size : ``p_0`` (default ``min(n, 40)``, the slides' Table 1).
    step, schedule, decay : ``eta_k = step`` (``"constant"``) or ``step / (1 + decay * epoch)``
        (``"inverse"``, a Robbins-Monro schedule).
    growth : ``p_{k+1} = min(n, ceil(growth * p_k))``; ``1`` keeps the batch fixed (plain SBM,
        converges only to a neighbourhood with a constant step); ``> 1`` (default 1.1) is the
        semi-stochastic variant, which becomes BM once ``p_k = n`` and converges linearly.
    sherman_morrison : compute ``H_B^{-1} g_B`` by the rank-one updates of Algorithm 4 (``O(d^2)`` per
        (item, outcome), no ``O(d^3)`` factorisation); needs ``lam > 0``, an unconstrained problem and
        ``curvature="full"``; pays when ``p K < d``.
    curvature, order : as in ``bm``.

    Stopping: once the batch is full, when a step has norm ``<= tol``; with a batch that never fills
    (``growth = 1``), when the change of ``theta`` over a whole epoch has norm ``<= tol``.
    ``trace`` records the full objective at the end of each epoch (off the clock).
    """
    _check_common(tol, max_iter)
    if not (step > 0 and math.isfinite(step)):
        raise InputError("step", f"must be finite and > 0; got {step}")
    if schedule not in ("constant", "inverse"):
        raise InputError("schedule", f"must be 'constant' or 'inverse'; got {schedule!r}")
    if not (growth >= 1.0 and math.isfinite(growth)):
        raise InputError("growth", f"must be >= 1; got {growth}")
    clock = Clock()
    terms, constraint, x = _prepare(problem, x0, curvature, order)
    n, lam = terms.n, terms.lam
    if sherman_morrison:
        if lam <= 0:
            raise InputError("sherman_morrison", "sherman_morrison=True needs lam > 0 (M starts at I/lam)")
        if constraint != "none":
            raise InputError("sherman_morrison", "sherman_morrison=True handles unconstrained problems only (the metric projection needs H, not H^{-1})")
        if curvature != "full":
            raise InputError("sherman_morrison", "sherman_morrison=True needs curvature='full'")
    p = int(batch_size) if batch_size is not None else min(n, 40)
    if not 1 <= p:
        raise InputError("batch_size", f"must be >= 1; got {batch_size}")
    p = min(p, n)
    pf = float(p)
    rng = np.random.default_rng(seed)
    perm, pos = rng.permutation(n), 0
    trace = Trace()
    clock.pause()
    trace.record(problem.value(x), 0.0, 0.0)
    clock.resume()
    seen, epoch, it = 0, 0, 0  # items processed, epochs completed, iterations
    converged, message = False, "max_iter (epochs) reached"
    x_epoch = x.copy()
    stop = False
    while not stop:
        it += 1
        if p >= n:
            idx = None
        else:
            if pos + p > n:
                perm, pos = rng.permutation(n), 0
            idx = np.sort(perm[pos:pos + p])
            pos += p
        eta = step if schedule == "constant" else step / (1.0 + decay * epoch)
        if sherman_morrison:
            bidx = np.arange(n) if idx is None else idx
            Fb, sb = terms.dense_batch(x, bidx)
            phi, _, _ = _sherman_morrison_direction(x, Fb, sb, terms.labels[bidx], terms.w[bidx], lam,
                                                    order == "ascending")
            x_new = x - eta * phi
        else:
            _, g, S = terms.sums(x, idx, curvature=curvature)
            g = g + lam * x
            H = _add_lam(S, lam)
            if constraint == "none" and eta == 1.0:
                x_new = _newton_point(x, g, H)
            else:
                # damped point, then (constrained) its projection in the H_B metric
                v = x + eta * (_newton_point(x, g, H) - x)
                x_new = v if constraint == "none" else simplex_metric_projection(H, v, x)
        step_norm = float(np.linalg.norm(x_new - x))
        x = x_new
        seen += min(p, n)
        passes = seen / n
        if not np.all(np.isfinite(x)):
            message = "non-finite iterate"
            break
        if callback is not None and callback(x) is True:
            message = "stopped by callback"
            break
        full = p >= n
        if full and step_norm <= tol:
            converged, message = True, f"step norm {step_norm:.3g} <= tol (full batch)"
            stop = True
        if seen // n > epoch or stop:
            epoch = seen // n
            seconds = clock()
            clock.pause()
            trace.record(problem.value(x), passes, seconds, batch=min(p, n), eta=eta)
            clock.resume()
            report(progress, passes / max_iter)
            if not full and float(np.linalg.norm(x - x_epoch)) <= tol:
                converged, message = True, "epoch change <= tol"
                stop = True
            x_epoch = x.copy()
            if seen >= int(max_iter) * n:
                stop = True
        if growth > 1.0 and p < n:
            pf = min(float(n), pf * growth)
            p = min(n, int(math.ceil(pf)))
    seconds = clock()
    clock.pause()
    fun = float(problem.value(x))
    report(progress, 1.0)
    return SolveResult(x=x, fun=fun, n_iter=it, n_passes=passes, converged=converged, message=message,
                       method="sbm", seconds=seconds, trace=trace,
                       extra={"final_batch_size": min(p, n), "sherman_morrison": sherman_morrison, "curvature": curvature})
