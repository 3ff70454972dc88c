"""The weighted Rényi divergence aggregator: the pooled distribution for given weights and γ.

Seed 000, Definition 2 and Eq. (2.6)-(2.8): for each item the aggregate is

    P = argmin_Q Σ_i w_i γ_i^{-1} D^R_{γ_i}[P_i ‖ Q],
    D^R_γ[P ‖ Q] = (γ - 1)^{-1} log Σ_y P(y)^γ Q(y)^{1-γ}                         (2.7)

whose solution satisfies the fixed point (Proposition 1, Eq. 2.8)

    P(y) = Σ_i w'_i Q_i(y),   Q_i(y) ∝ P_i(y)^{γ_i} P(y)^{1-γ_i},   w'_i = (w_i/γ_i) / Σ_j (w_j/γ_j).

(The mixture weights are ``w'_i ∝ w_i/γ_i``; Algorithm 2.1's line 6 ``Q ∝ Σ w'_i γ_i Q_i`` is a typo,
see ``/work/shared/notes/000-ch2-aggregation-markets.md`` and the direct-solve test.)

γ = 1 is the linear pool; γ → 0 is the log pool with weights ``w'`` (Proposition 2). The annealed
maximum-entropy form (Eq. 2.21-2.22) replaces each belief ``P_i`` by ``P_i^{λ_i}`` (renormalised).

Conventions: log space throughout; predictions ``(n_items, n_agents, n_classes)``; the result is
``(n_items, n_classes)`` normalised log-probabilities. Convergence is measured by the log-space
fixed-point residual ``max_y |log F(Q)(y) - log Q(y)|`` per item.

Methods: ``"newton"`` (Newton in log coordinates, one solve with the K x K matrix ``H`` per
step, dense, Woodbury or CG by shape (:mod:`aggregators.renyi_hessian`), see
:mod:`aggregators.renyi_kernels`), ``"anderson"`` (the Anderson-accelerated iteration,
:mod:`aggregators.renyi_anderson`: cheaper than Newton from 100 agents), ``"auto"`` (default: Anderson
where :func:`aggregators.renyi_anderson.prefer` says so and the fast form serves, else Newton) and
``"plain"`` (the iteration of Eq. 2.8 as written, the baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InputError
from solvers.progress import ProgressFn, report
from solvers.special import logsumexp

from .validation import DEFAULT_FLOOR, Kind, PredictionError, apply_floor, as_log_probs, check_weights

__all__ = [
    "renyi_aggregate",
    "solve_fixed_point",
    "FixedPointResult",
    "check_gamma",
    "check_lam",
    "anneal",
    "mixture_weights",
    "renyi_objective",
    "GAMMA_LOG_LIMIT",
]

GAMMA_LOG_LIMIT = 1e-12
"""When every γ_i is at or below this, the aggregate is the log pool with weights w' (error O(γ))."""

METHODS = ("auto", "newton", "anderson", "plain")


@dataclass
class FixedPointResult:
    """Solution of the Rényi fixed point for every item.

    ``log_q`` (n, K) normalised log-probabilities; ``sweeps`` (n,) passes over each item's agent data
    (the setup pass plus every evaluation of the map); ``residual`` (n,) final log-space residual
    (the last one evaluated, or, when Newton stopped on an exact step it did not evaluate after, the
    bound of ``renyi_kernels._step_bound`` or the quadratic rate's prediction);
    ``converged`` (n,) bool; ``method`` and ``mode`` ("fast", "stable" or "log_limit").
    """

    log_q: np.ndarray
    sweeps: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    method: str
    mode: str
    adjoint_done: bool = False

    @property
    def max_sweeps(self) -> int:
        return int(self.sweeps.max()) if self.sweeps.size else 0

    @property
    def all_converged(self) -> bool:
        return bool(self.converged.all())


# -- argument checks ------------------------------------------------------------------------------
def _per_agent(x: Any, n_agents: int, field: str, what: str, code: str) -> np.ndarray:
    """A number or one per agent, as a per-agent vector (finite; the range is the caller's)."""
    try:
        v = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise PredictionError(field, f"must be {what} or one per agent", code=code) from None
    if v.ndim == 0:
        v = np.full(n_agents, float(v))
    if v.shape != (n_agents,):
        raise PredictionError(field, f"must be a scalar or have shape ({n_agents},); got {v.shape}", code="bad_shape")
    return v


def check_gamma(gamma: Any, n_agents: int, field: str = "gamma") -> np.ndarray:
    """γ as a per-agent vector; every entry in (0, 1]."""
    g = _per_agent(gamma, n_agents, field, "a number in (0, 1]", "bad_gamma")
    bad = ~(np.isfinite(g) & (g > 0) & (g <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise PredictionError(field, f"must lie in (0, 1]; got {g[i]!r}", agent=i, code="bad_gamma")
    return g


def check_lam(lam: Any, n_agents: int, field: str = "lam") -> np.ndarray | None:
    """Annealing exponents λ_i > 0 (Eq. 2.21-2.22) as a per-agent vector, or None."""
    if lam is None:
        return None
    a = _per_agent(lam, n_agents, field, "a positive number", "bad_lam")
    bad = ~(np.isfinite(a) & (a > 0))
    if bad.any():
        i = int(np.argmax(bad))
        raise PredictionError(field, f"must be positive and finite; got {a[i]!r}", agent=i, code="bad_lam")
    return a


def anneal(L: np.ndarray, lam: np.ndarray | None) -> np.ndarray:
    """Annealed beliefs ``P_i^{λ_i}`` renormalised, in log space (Eq. 2.21-2.22)."""
    if lam is None or np.all(lam == 1.0):
        return L
    La = L * lam[None, :, None]
    return np.ascontiguousarray(La - logsumexp(La, axis=2, keepdims=True))


def check_no_zero(L: np.ndarray) -> None:
    """Raise :class:`PredictionError` when log-probabilities ``L`` hold a ``-inf`` (or a NaN): Eq. (2.8)
    needs strictly positive probabilities. One sum over ``L`` (log-probabilities cannot overflow it);
    the exact test only when the sum says something is not finite."""
    if not np.isfinite(L.sum()) and not np.isfinite(L).all():
        raise PredictionError(
            "predictions",
            "the Rényi pool needs strictly positive probabilities (apply the floor)",
            code="zero_probability",
        )


def mixture_weights(w: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """``w'_i = (w_i/γ_i) / Σ_j (w_j/γ_j)``, the mixture weights of Eq. (2.8)."""
    v = w / gamma
    return v / v.sum()


def renyi_objective(log_q: np.ndarray, L: np.ndarray, w: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """``h(Q) = Σ_i w_i γ_i^{-1} D^R_{γ_i}[P_i ‖ Q]`` per item (Eq. 2.6-2.7, the proof of Prop. 1).

    For reference and tests; γ_i = 1 terms use ``KL(P_i ‖ Q)`` (the analytic continuation).
    """
    lq = np.asarray(log_q)[:, None, :]
    out = np.zeros(L.shape[0])
    for i in range(L.shape[1]):
        g = gamma[i]
        Li = L[:, i, :]
        if g == 1.0:
            d = np.sum(np.exp(Li) * (Li - lq[:, 0, :]), axis=1)
        else:
            d = logsumexp(g * Li + (1 - g) * lq[:, 0, :], axis=1) / (g * (g - 1.0))
        out += w[i] * d
    return out


def hessian_mode(hessian: str, n_agents: int, n_classes: int, gamma_min: float) -> int:
    """The kernels' code for the Hessian solve named ``hessian`` (``"auto"``: by shape)."""
    from . import renyi_hessian as rh

    if hessian == "auto":
        return rh.choose(n_agents, n_classes, gamma_min)
    if hessian not in rh.MODES:
        raise InputError("hessian", f"must be 'auto' or one of {tuple(rh.MODES)}; got {hessian!r}")
    return rh.MODES[hessian]


# -- the solver -----------------------------------------------------------------------------------
def solve_fixed_point(
    L: np.ndarray,
    w: np.ndarray,
    gamma: np.ndarray,
    *,
    method: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    init: np.ndarray | None = None,
    stable: bool | None = None,
    progress: ProgressFn | None = None,
    chunk: int = 2000,
    hessian: str = "auto",
    check_finite: bool = True,
    adjoint: tuple | None = None,
) -> FixedPointResult:
    """Solve Eq. (2.8) for every item of validated, finite, normalised log-probs ``L`` (n, A, K).

    ``w`` (A,) on the simplex and ``gamma`` (A,) in (0, 1] are already checked (annealing already
    applied). ``max_iter`` caps the sweeps per item (default 100 for Newton, 100,000 for plain and
    Anderson, whose last resort is the plain iteration). ``method="auto"`` resolves to ``"anderson"``
    or ``"newton"`` (the result's ``method`` says which; Newton whenever ``hessian`` is not
    ``"auto"``); ``"anderson"`` needs the fast form (more than two classes, ``min γ >= 1e-3``) and no
    ``adjoint``. ``init`` (n, K) warm-starts from previous solutions. ``stable`` forces (True) or
    forbids (False) the γ → 0-stable evaluation; by default it is used when ``min γ < 1e-3``. With ``progress``
    the items are solved in chunks of ``chunk`` and the fraction done is reported after each (a
    callback raising :class:`solvers.progress.Cancelled` stops the work). ``hessian`` picks how
    Newton solves with its Hessian: ``"dense"``, ``"woodbury"``, ``"cg"`` or ``"auto"`` (by shape,
    :func:`aggregators.renyi_hessian.choose`). ``check_finite=False`` skips the test that ``L`` holds
    no ``-inf`` (a zero probability): for callers whose data passed :func:`aggregators.validation.
    as_floored_log_probs` (the pools, :func:`renyi_aggregate`). The test is a pass over ``L`` (0.21 s
    at 20,000 x 269 x 64, 12 % of a weight fit's value-and-gradient pass; session 20).
    ``adjoint=(labels, W)`` or ``(labels, W, rtol)``: where the per-item fast form runs
    (:mod:`aggregators.renyi_fused`), also fill ``W`` (n, A) with the weights' adjoint of every agent at
    the solution (CG to relative residual ``rtol``, default :data:`aggregators.renyi_kernels.ADJOINT_RTOL`), in the same pass over each item; the
    result's ``adjoint_done`` says whether it did (else the caller runs the adjoint).
    """
    from . import renyi_anderson as ra
    from . import renyi_block as rb
    from . import renyi_kernels as rk

    if method not in METHODS:
        raise PredictionError("method", f"must be one of {METHODS}; got {method!r}", code="bad_method")
    if not (tol > 0):
        raise PredictionError("tol", f"must be positive; got {tol!r}", code="bad_tol")
    n, A, K = L.shape
    if check_finite:
        check_no_zero(L)
    if stable is None:
        stable = bool(gamma.min() < rk.STABLE_BELOW)
    gamma_all = np.asarray(gamma, dtype=np.float64)
    act = np.flatnonzero(w > 0)
    agents = None
    if 0 < act.size < A:
        # agents of weight zero do not enter Eq. (2.8): solve on the others. The per-item kernel reads
        # their rows in place (``agents``); a copy of them (``np.take``) cost 0.3 s a pass at 20,000 x
        # 269 x 64 with 140 active agents, 9.5 s of a 41 s weight fit. The block kernel (small items)
        # and the log limit take the copy.
        w, gamma, agents, A = w[act], gamma[act], act, int(act.size)
    if method == "auto":
        # a Hessian solve named by the caller is Newton's
        fast = hessian == "auto" and not stable and K > 2 and adjoint is None and not rb.fits(A, K)
        ng = int(np.unique(gamma).size) if fast else 0
        method = "anderson" if fast and ra.prefer(A, K, ng, float(gamma.min())) else "newton"
    elif method == "anderson" and (stable or K <= 2 or adjoint is not None):
        raise PredictionError(
            "method", "'anderson' needs more than two classes, min gamma >= 1e-3 and no adjoint", code="bad_method"
        )
    if agents is not None and (gamma.max() <= GAMMA_LOG_LIMIT or (method == "newton" and rb.fits(A, K))):
        L, agents = np.take(L, act, axis=1), None
    wp = mixture_weights(w, gamma)
    if gamma.max() <= GAMMA_LOG_LIMIT:
        lq = np.einsum("nik,i->nk", L, wp)
        lq -= logsumexp(lq, axis=1, keepdims=True)
        z = np.zeros(n)
        return FixedPointResult(lq, np.ones(n, dtype=np.int64), z, np.ones(n, dtype=bool), method, "log_limit")
    if max_iter is None:
        max_iter = 100 if method == "newton" else 100_000
    mode = hessian_mode(hessian, A, K, float(gamma.min()))
    ugam, gidx = np.unique(gamma, return_inverse=True)
    gidx = gidx.astype(np.int64)
    gbar = float(np.dot(wp, gamma))
    if init is not None:
        R = np.array(init, dtype=np.float64, copy=True)
        if R.shape != (n, K):
            raise InputError("init", f"must have shape ({n}, {K}); got {R.shape}")
        use_init = True
    else:
        R = np.empty((n, K))
        use_init = False
    sweeps = np.zeros(n, dtype=np.int64)
    res = np.zeros(n)
    conv = np.zeros(n, dtype=np.bool_)
    Lc = np.ascontiguousarray(L, dtype=np.float64)
    step = max(1, n) if progress is None else max(1, int(chunk))
    newton = method == "newton"
    # small items go to the kernel vectorised across items (Newton, fast form, the solve chosen by shape)
    block = newton and not stable and hessian == "auto" and rb.fits(A, K)
    # the adjoint in the same pass: per-item fast Newton on data that still hold every agent
    fused = adjoint is not None and newton and not stable and not block and K > 2 and Lc.shape[1] == gamma_all.size
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        Lk = Lc[lo:hi]

        def per_item(idx, Rk, sk, ek, ck, Lk=Lk, lo=lo, hi=hi):
            sub = Lk if idx is None else np.ascontiguousarray(Lk[idx])
            if fused:
                from .renyi_fused import solve_items_with_adjoint

                ags = np.arange(A, dtype=np.int64) if agents is None else agents
                args_f = (wp, gamma, gidx, ugam, gbar, Rk, use_init, mode, float(tol), int(max_iter) + 1, sk, ek, ck)
                rtol = adjoint[2] if len(adjoint) > 2 else rk.ADJOINT_RTOL
                solve_items_with_adjoint(sub, ags, gamma_all, *args_f, adjoint[0][lo:hi], adjoint[1][lo:hi], rtol)
                return
            if method == "anderson":
                args_a = (wp, gamma, gidx, ugam, gbar, Rk, use_init, float(tol), int(max_iter) + 1)
                ra.solve_items(sub, *args_a, sk, ek, ck, agents=agents)
                return
            args = (wp, gamma, gidx, ugam, gbar, Rk, use_init, newton, mode, stable, float(tol), int(max_iter) + 1)
            rk.solve_items(sub, *args, sk, ek, ck, agents=agents)

        if block:
            args = (wp, gamma, gidx, ugam, gbar, R[lo:hi], use_init, float(tol), int(max_iter) + 1)
            rb.solve_items(Lk, *args, sweeps[lo:hi], res[lo:hi], conv[lo:hi], per_item)
        else:
            per_item(None, R[lo:hi], sweeps[lo:hi], res[lo:hi], conv[lo:hi])
        report(progress, hi / n)
    return FixedPointResult(R, sweeps, res, conv, method, "stable" if stable else "fast", adjoint_done=fused)


def renyi_aggregate(
    log_probs: Any,
    weights: Any = None,
    gamma: Any = 1.0,
    *,
    lam: Any = None,
    tol: float = 1e-10,
    max_iter: int | None = None,
    method: str = "auto",
    floor: float | None = DEFAULT_FLOOR,
    kind: Kind = "log_probs",
    init: np.ndarray | None = None,
    return_info: bool = False,
    progress: ProgressFn | None = None,
) -> Any:
    """Weighted Rényi divergence aggregate of each item's agent beliefs (Eq. 2.6-2.8, 2.21-2.22).

    Parameters
    ----------
    log_probs : (n_items, n_agents, n_classes) log-probabilities (or probabilities with
        ``kind="probs"``); validated by :func:`aggregators.validation.as_log_probs` and floored with
        ``floor`` (zeros leave the Rényi pool undefined for γ < 1).
    weights : (n_agents,) non-negative, rescaled onto the simplex; ``None`` is uniform. These are the
        ``w_i`` of Eq. (2.6); the mixture weights of the fixed point are ``w'_i ∝ w_i/γ_i``.
    gamma : scalar or (n_agents,), each in (0, 1]. γ = 1 is the linear pool, γ → 0 the log pool.
    lam : optional annealing exponents λ_i > 0 (scalar or per agent): the beliefs become
        ``P_i^{λ_i}`` renormalised (the maximum-entropy form, Eq. 2.21-2.22).
    tol : stop when the log-space fixed-point residual is below ``tol`` for the item.
    max_iter : cap on sweeps per item (default 100 for Newton, 100,000 for plain and Anderson).
    method : ``"auto"`` (default: Anderson or Newton by shape), ``"newton"``, ``"anderson"`` or
        ``"plain"`` (the iteration of Eq. 2.8); see :func:`solve_fixed_point`.
    init : optional (n_items, n_classes) log-probabilities to warm-start from.
    return_info : also return the :class:`FixedPointResult` (sweeps, residuals, convergence).
    progress : optional ``progress(fraction)`` callback (:mod:`solvers.progress`), called as chunks
        of items are solved.

    Returns
    -------
    (n_items, n_classes) normalised log-probabilities (and the result when ``return_info``).
    """
    preds = as_log_probs(log_probs, kind=kind)
    preds = apply_floor(preds, floor)
    L = preds.log_probs
    n, A, K = L.shape
    w = check_weights(weights, A)
    g = check_gamma(gamma, A)
    a = check_lam(lam, A)
    La = anneal(L, a)
    if init is not None:
        init = np.asarray(init, dtype=np.float64)
        if init.shape != (n, K) or not np.isfinite(init).all():
            raise PredictionError("init", f"must be finite with shape ({n}, {K})", code="bad_shape")
    # floored (or checked free of zeros) just above; annealed data (an extreme λ could overflow) are checked
    out = solve_fixed_point(
        La, w, g, method=method, tol=tol, max_iter=max_iter, init=init, progress=progress, check_finite=La is not L
    )
    if return_info:
        return out.log_q, out
    return out.log_q
