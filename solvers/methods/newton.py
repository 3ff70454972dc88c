"""Newton's method with backtracking (seed 003 §6.2), unconstrained or on the simplex.

Unconstrained: damped Newton, ``d = -(H + δI)^{-1} g`` (Cholesky; δ grows only when H is not
positive definite), Armijo backtracking; stop when half the squared Newton decrement
``λ²/2 = -<g, d>/2`` (the estimate of ``f(x) - f*``) is ``<= tol * max(1, |f|)``.

Simplex (projected / SQP Newton): the step solves the quadratic model in the Hessian metric on the
simplex, ``z = argmin_{z in Δ} <g, z - x> + ½ (z - x)ᵀ H (z - x)`` (active-set QP,
:func:`solvers.simplex.solve_simplex_qp`), then backtracks along ``d = z - x`` (feasible for
``t in [0, 1]``). Coordinates the QP puts on the boundary are exactly zero. Stop when the smaller
of the Frank-Wolfe gap ``<g, x> - min_i g_i`` (a certified upper bound on ``f(x) - f*``) and the
decrease predicted by the quadratic model ``-(<g, d> + ½ dᵀHd)`` (the simplex analogue of ``λ²/2``,
which estimates ``f(x) - f*`` to second order near the optimum; with a subsampled Hessian it is an
estimate of that estimate) is ``<= tol * max(1, |f|)``.

Working set (simplex problems that offer ``restrict(idx)``, dimension above ``ws_min``): Newton
runs on a small set ``S`` of coordinates (the others at zero; the first ``S`` comes from the
problem's ``screen(k)`` when it offers one and no ``x0`` is given, else from the gradient at
``x0``); a full pass then gives the gradient
of every coordinate; the coordinates violating the KKT condition ``g_i >= nu`` (``nu = <g, x>``)
most are added to ``S``, until the gap of the full problem is below the tolerance. Pool optima are
sparse, so most Newton iterations touch only a few agents' data and the Hessians stay small.

Warm start (problems offering ``subsample(items)`` with at least ``2 * warm_items`` terms, no ``x0``):
the problem is first solved on a random quarter of its terms (recursively, to ``WARM_TOL``); its
optimum is close to the full one at a quarter of the cost per pass. From there every trial point
gets a full value+gradient pass, so the KKT violators join the working set at once
(:func:`_newton_grow`); the model Hessians average over ``GROW_HESSIAN_ITEMS`` random items in
float32 BLAS products and are kept while each step divides the gap by ten (chord steps), so most
iterations cost one pass and no Hessian. The gradient is always exact (float64 sums), so the
optimum reached is the full problem's. ``warm_x0=True`` takes a given ``x0`` as such a warm start (a
neighbouring problem's optimum). A problem whose ``hessian`` is only a model of the curvature
(``hessian_approximate``, e.g. the Rényi weights' Fisher blend, which converges linearly) has that
model corrected by a BFGS update from each full step's exact gradients and kept while it descends.
"""

from __future__ import annotations

from typing import Unpack

import numpy as np
from scipy.linalg import cho_solve

from ..errors import InputError
from ..linesearch import armijo, gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import capability, constraint_of, offers, start_point
from ..registry import register, register_auto_rule
from ..result import SolveResult
from ..simplex import fw_gap, solve_simplex_qp


def _newton_direction(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    d = H.shape[0]
    scale = max(float(np.max(np.abs(np.diag(H)))), 1e-300)
    delta = 0.0
    for _ in range(30):
        try:
            C = np.linalg.cholesky(H + delta * np.eye(d) if delta else H)
            # two triangular solves (LAPACK potrs), not two general ones (an LU of each factor: at 1,000
            # coordinates 2/3 of box_newton's linear algebra)
            return -cho_solve((C, True), g, check_finite=False)
        except np.linalg.LinAlgError:
            delta = max(1e-12 * scale, 10 * delta)
    return -g / scale


WS_MIN = 40
"""The default ``ws_min`` of :func:`newton`: simplex problems of more coordinates take the working set
(and, from ``2 * warm_items`` terms without a start, its subsample warm start)."""


@register("newton", needs=("hessian",), constraints=("none", "simplex"), tol=1e-10, max_iter=200)
def newton(
    problem,
    x0=None,
    *,
    alpha=0.01,
    beta=0.5,
    working_set: bool | None = None,
    ws_min=WS_MIN,
    ws_init: int | None = None,
    ws_add: int | None = None,
    hessian_sample: float | None = None,
    seed=0,
    ws_first_tol=1e-6,
    warm_items=500,
    warm_x0=False,
    check_model: bool | None = None,
    model0: np.ndarray | None = None,
    return_model: bool = False,
    **stop: Unpack[Stop],
) -> SolveResult:
    """Newton with Armijo backtracking; projected (SQP) Newton on the simplex; working set when offered.

    Options: ``alpha``, ``beta`` (Armijo constants, seed 003 §6.2), ``working_set`` (``None``: use it
    on simplex problems offering ``restrict`` with ``dim > ws_min``), ``ws_init`` (initial working-set
    size, default ``max(20, ceil(dim / 5))``), ``ws_add`` (most coordinates added per round, default
    ``max(20, |S| // 2)``), ``hessian_sample`` (fraction of the items the Hessian averages over, a
    fixed random subset drawn with ``seed``: subsampled Newton; default all items, and 1/4 of them
    inside the working set when there are more than 8,000 items), ``ws_first_tol`` (relative
    tolerance of the first, rough working-set solve; default 1e-6), ``warm_items`` (working set on a
    problem offering ``subsample`` with at least twice this many terms and no ``x0``: the start and
    the first working set come from the solve of a random quarter of the terms, recursively down to
    this many; ``0`` disables the warm start), ``warm_x0`` (working set: ``x0`` is itself a warm start,
    e.g. a neighbouring problem's optimum; Newton goes straight to the growing working set from it),
    ``check_model`` (after a warm start, confirm a convergence claimed by the sampled/float32 model with
    the float64 Hessian of every item; default: when ``tol`` < :data:`MODEL_CHECK_BELOW`),
    ``model0`` (plain path only, ignored by the working set: a ``dim x dim`` model Hessian from a
    neighbouring problem, e.g. the last model of the previous γ of a grid, taken for the first step
    instead of forming one; it claims nothing until a full step has validated it, see
    :func:`_newton_plain`), ``return_model`` (plain path: the last model, BFGS-corrected when the
    Hessian is approximate, in ``extra["model"]``, for the next problem's ``model0``).
    """
    simplex = constraint_of(problem) == "simplex"
    if model0 is not None:
        model0 = np.asarray(model0, dtype=np.float64)
        if model0.shape != (problem.dim, problem.dim) or not np.isfinite(model0).all():
            raise InputError(
                "model0", f"must be a finite {problem.dim} x {problem.dim} matrix; got shape {model0.shape}"
            )
    if working_set is None:
        working_set = simplex and offers(problem, "restrict") and problem.dim > ws_min
    if working_set:
        if not (simplex and offers(problem, "restrict")):
            raise InputError("working_set", "working_set=True needs a simplex problem offering restrict(idx)")
        return _newton_working_set(
            problem,
            x0,
            **stop,
            alpha=alpha,
            beta=beta,
            ws_init=ws_init,
            ws_add=ws_add,
            hessian_sample=hessian_sample,
            seed=seed,
            ws_first_tol=ws_first_tol,
            warm_items=warm_items,
            warm_x0=warm_x0,
            check_model=stop["tol"] < MODEL_CHECK_BELOW if check_model is None else bool(check_model),
        )
    return _newton_plain(
        problem,
        x0,
        **stop,
        alpha=alpha,
        beta=beta,
        hessian_items=_sample(problem, hessian_sample, seed),
        model0=model0,
        return_model=return_model,
    )


def _model_step(H: np.ndarray, g: np.ndarray, x: np.ndarray, simplex: bool) -> tuple[np.ndarray, float, float]:
    """Newton direction from the quadratic model with Hessian ``H`` (on the simplex: the QP), its
    slope ``<g, d>`` and the model decrease ``-(<g, d> + ½ dᵀHd)`` (``>= 0``)."""
    if simplex:
        z, _ = solve_simplex_qp(H, g - H @ x, x)
        d = z - x
    else:
        d = _newton_direction(H, g)
    slope = float(g @ d)
    return d, slope, max(0.0, -(slope + 0.5 * float(d @ H @ d)))


def _step(x: np.ndarray, t: float, d: np.ndarray, simplex: bool) -> np.ndarray:
    """``x + t d``, put back on the simplex (clip rounding negatives, renormalise) when constrained."""
    z = x + t * d
    if simplex:
        z[z < 0] = 0.0
        z /= z.sum()
    return z


def _hessian_takes(problem, name: str) -> bool:
    """Whether the problem's ``hessian`` takes the keyword ``name`` (``items``: subsampled; ``dtype``:
    precision of its BLAS products)."""
    import inspect

    try:
        return name in inspect.signature(problem.hessian).parameters
    except (TypeError, ValueError):
        return False


def _subsamples(problem) -> bool:
    """Whether the working set's Newton averages its Hessians over a sample of the items by default:
    when the problem's ``hessian`` takes ``items`` and its Hessian over every item is not cheap
    (``hessian_cheap``: the Rényi weights at γ = 1, where a 20,000 x 269 x 64 fit took 11.9 s and 22
    iterations on every item against 22.8-23.1 s and 33 on the 2,000-item sample; over 10 other shapes
    0.29-0.75x at 7, 1.04-1.12x at 3: ``benchmarks/results/session22.md`` §1)."""
    return _hessian_takes(problem, "items") and not capability(problem, "hessian_cheap", False)


def _hessian(problem, x, items, dtype=None):
    """The model Hessian at ``x`` (over ``items`` when given; in ``dtype`` BLAS products when the
    problem offers that keyword)."""
    kw: dict = {} if items is None else {"items": items}
    if dtype is not None and _hessian_takes(problem, "dtype"):
        kw["dtype"] = dtype
    H = problem.hessian(x, **kw)
    if not np.isfinite(H).all():
        # a NaN model would make the model decrease 0 and the solver report a false convergence
        raise FloatingPointError(
            f"the problem's Hessian at the current point has non-finite entries ({type(problem).__name__})"
        )
    return H


def _sample(problem, fraction, seed):
    """A fixed random subset of the items for a subsampled Hessian (None: every item)."""
    if fraction is None or fraction >= 1:
        return None
    if not (fraction > 0):
        raise InputError("hessian_sample", f"must be in (0, 1]; got {fraction!r}")
    n = problem.n_terms
    m = max(1, int(round(fraction * n)))
    return np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))


def _newton_plain(
    problem,
    x0,
    *,
    alpha,
    beta,
    hessian_items=None,
    clock=None,
    start=None,
    model0=None,
    return_model=False,
    **stop: Unpack[Stop],
) -> SolveResult:
    """``start``: ``(f, g)`` already known at ``x0`` (then ``x0`` is used as given, not projected).

    ``model0``: a model Hessian for the first step (a neighbouring problem's): its model decrease is
    not taken as the gap (no claim of convergence from it) and, when it gives no descent direction, a
    Hessian is formed instead; after a full step it predicted (``VALIDATED_RATIO``) it certifies the
    next point like any validated model, else the next iteration forms a Hessian. ``return_model``:
    the last model in ``extra["model"]``."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    run = Run("newton", **stop, clock=clock)
    simplex = constraint_of(problem) == "simplex"
    x = start_point(problem, x0)
    if start is not None:
        f, g = float(start[0]), np.asarray(start[1], dtype=np.float64)
        run.passes = 0.0
    else:
        if simplex:
            x = problem.project(x) if offers(problem, "project") else x
        f, g = problem.value_and_grad(x)
        run.passes = 1.0
    run.record(f)
    gap0 = None
    converged, message, it, gap, flat = False, "maximum number of iterations reached", 0, float("inf"), 0
    H = H_prev = None
    margin = 1.0  # the factor on H_prev's model decrease when it is tested against the tolerance
    secant = bool(capability(problem, "hessian_approximate", False))
    for it in range(1, max_iter + 1):
        if simplex:
            gap = fw_gap(x, g)
            if gap <= tol * rel_tol_scale(f):  # certified: no Hessian needed
                converged, message, it = True, "gap below tolerance", it - 1
                break
        if H_prev is not None:
            # after a full step, the previous Hessian (a sample estimate, or one the step validated) at
            # a point a Newton step away is tried first, and when its model already certifies the
            # tolerance the solve stops without forming a new Hessian
            d_, slope_, dec_ = _model_step(H_prev, g, x, simplex)
            dec_ *= margin
            gap_ = min(gap, dec_) if simplex else dec_
            if slope_ < 0 and gap_ <= tol * rel_tol_scale(f):
                gap = gap_
                gap_progress(run.progress, gap0 if gap0 is not None else gap, gap, tol * rel_tol_scale(f))
                converged, message, it = True, "gap below tolerance", it - 1
                break
        borrowed = False
        if model0 is not None and it == 1:
            d, slope, model_dec = _model_step(model0, g, x, simplex)
            borrowed = slope < 0 and model_dec > 0
        if borrowed:
            H = model0  # a neighbouring problem's model: its decrease is no gap (it claims nothing)
            target = tol * rel_tol_scale(f)
        else:
            H = _hessian(problem, x, hessian_items)
            run.passes += 1 if hessian_items is None else hessian_items.size / problem.n_terms
            d, slope, model_dec = _model_step(H, g, x, simplex)  # model_dec: λ²/2 for the pure Newton step
            gap = min(gap, model_dec) if simplex else model_dec
            gap0 = gap if gap0 is None else gap0
            target = tol * rel_tol_scale(f)
            if gap_progress(run.progress, gap0, gap, target):
                converged, message, it = True, "gap below tolerance", it - 1
                break
        if slope >= 0:
            converged = gap <= 10 * target
            message, it = "no descent direction (precision limit)", it - 1
            break
        if model_dec <= 1e-3 * target and not borrowed:
            converged, message, it = True, "model decrease far below tolerance", it - 1
            break
        # the full Newton step is tried with a fused value+gradient evaluation: when Armijo accepts
        # it (the usual case) its gradient is the next one, and the step costs one pass, not two
        x_prev, g_prev = x, g
        x1 = _step(x, 1.0, d, simplex)
        f1, g1 = problem.value_and_grad(x1)
        run.passes += 1
        f_old = f
        lo, hi = VALIDATED_RATIO
        validated = model_dec >= VALIDATE_MIN * rel_tol_scale(f) and lo * model_dec <= f - f1 <= hi * model_dec
        if f1 <= f + alpha * slope:
            t, x, f, g = 1.0, x1, f1, g1
        else:
            t, f_new, n_ev, ok = armijo(lambda t: problem.value(x + t * d), f, slope, t0=beta, alpha=alpha, beta=beta)
            run.passes += n_ev
            if not ok and f1 < f_new:
                t, ok = 1.0, True  # no backtracked step beats the full one
            if not ok and -slope <= 1e-13 * rel_tol_scale(f):
                t = 1.0  # the decrease is below the resolution of f: take the (tiny) Newton step as it is
            elif t == 0.0:
                converged = gap <= 10 * target
                message = "line search made no progress (precision limit)"
                break
            if t == 1.0:
                x, f, g = x1, f1, g1
            else:
                x = _step(x, t, d, simplex)
                f, g = problem.value_and_grad(x)
                run.passes += 1
        if t == 1.0 and hessian_items is not None:
            H_prev, margin = H, 1.0
        elif t == 1.0 and validated:
            # every item's model, and the full step decreased f as it predicted: it may certify the next
            # point with GROW_VALIDATED_MARGIN, as in the working set's growth (an approximate model
            # first corrected by the step's exact gradients: BFGS). The last Hessian of a converging
            # solve is then not formed (one of the two Hessians of each warm-started fit of a γ grid)
            if not secant:
                H_prev = H
            else:
                H_prev = (_bfgs_update if simplex else _bfgs)(H, x - x_prev, g - g_prev)
            margin = GROW_VALIDATED_MARGIN
        else:
            H_prev = None
        flat = flat + 1 if abs(f_old - f) <= 1e-15 * rel_tol_scale(f) else 0
        if flat >= 2 and hessian_items is not None:
            hessian_items, flat, H_prev = None, 0, None  # stalled on the subsample: finish with the exact Hessian
        elif flat >= 3:
            gap = fw_gap(x, g) if simplex else gap
            converged = gap <= 10 * tol * rel_tol_scale(f)
            message = "objective stopped changing (precision limit)"
            run.record(f, gap=gap, step=t)
            break
        run.record(f, gap=gap, step=t)
        if run.callback_stops(x):
            message = "stopped by callback"
            break
    else:
        converged = gap <= tol * rel_tol_scale(f)
        if converged:
            message = "gap below tolerance"
    fw = fw_gap(x, g) if simplex else float("nan")
    extra = {"model": H_prev if H_prev is not None else H} if return_model else {}
    return run.result(x, f, it, converged, message, gap=float(gap), fw_gap=fw, grad=g, **extra)


WARM_TOL = 1e-4
"""Relative tolerance of a warm-start solve on a subsample (its optimum differs from the full one by
far more: solving it further would be wasted)."""
GROW_REUSE = 0.1
"""After a warm start: a model Hessian is kept while each step divides the gap by at least 10."""
GROW_HESSIAN_ITEMS = 2000
"""After a warm start: the model Hessians average over this many random items (a sample estimate:
the steps converge linearly at a rate of a few per cent, and the gradient stays exact)."""
GROW_MODEL_MARGIN = 10.0
"""After a warm start: the model decrease (an estimate of the gap, exact for a quadratic) counts ten
times when tested against the tolerance (near-singular Hessians make it optimistic)..."""
GROW_VALIDATED_MARGIN = 2.0
"""... and twice when the model has just been validated: the previous full step decreased ``f`` by
``VALIDATED_RATIO``-close to what its model predicted (checked only for predictions of at least
:data:`VALIDATE_MIN` relative to ``f``, well above its rounding). A model whose curvature is too
large in some direction predicts about half the decrease a step along it gives, one too small more
than it gives, so an agreeing prediction says the model holds at the scale of the last step. On the
Rényi weights at 20,000 × 269 × 64 (γ = 0.5) the sampled float32 model predicted 8.11e-8 and the
step gave 7.35e-8; at the next point it predicted 4.53e-9 where ``f - f*`` was 4.19e-9, and the
margin of ten cost one more full pass (1.7 s of a 23 s fit) to reach ``tol·|f|`` = 3.2e-8."""
VALIDATED_ONLY = True
"""Since session 20 the model decrease claims convergence only when validated (False: as before), on the working set
the validating step used (a fresh model on another set is not validated). Before, an unvalidated
model claimed with :data:`GROW_MODEL_MARGIN`: on near-duplicate agents (2,000 × 269 × 64, Rényi
γ = 0.5, tol 1e-8) a fresh float64 model on 17 agents put the remaining decrease at 5.4e-10 (claimed
gap 1.1e-9) while ``f - f*`` was 9.1e-8 (2.8e-8 relative): one agent outside the set, a violator only
after the next step, carried it. The step that would have tested the model decreased ``f`` as
predicted, the set grew to 18 and the next step reached ``f*`` to 2.5e-12. On 3 families × 7 shapes
× (log pool, Rényi γ = 0.5) the rule changed 3 of 42 fits (that one, 13 → 15 iterations, and two log
pools at K = 2, +1 iteration each); ``benchmarks/results/choice-and-check-session20.md`` §7."""
VALIDATED_RATIO = (0.75, 1.33)
"""Range of (actual decrease) / (predicted decrease) of the last full step that validates the model."""
VALIDATE_MIN = 1e-13
"""Predicted decreases below this times ``max(1, |f|)`` validate nothing (``f``'s rounding)."""
GROW_HESSIAN_DTYPE = np.float32
"""After a warm start: BLAS precision of the model Hessians (half the time of float64; each item
chunk is summed into a float64 matrix)."""

MODEL_CHECK_BELOW = 1e-6
"""After a warm start: a convergence claimed by a sampled or float32 model is confirmed with the
float64 Hessian of every item (``check_model``) when the tolerance is below this. float32 products
resolve the model to about 1e-7 of its scale: the claim that motivated the check (near-duplicate
agents at K = 2 stopping at relative gap 2e-7 while claiming 3e-9) was at tolerance 1e-8. At 1e-6
(the Rényi pool's γ-grid fits) the check cost 10-25 % of a 10-γ sweep and changed no value of the
validation curve, to the last bit, in 15 sweeps (5 families x 3 shapes, measured in session 15)."""


def _warm_start(problem, opts: dict, warm_items: int, seed: int) -> tuple[np.ndarray, float, int]:
    """Solve the problem on a random quarter of its terms (recursively, working-set Newton): its
    minimiser, the passes it cost (in passes over the full problem) and its iterations. A problem
    whose terms are stored in a random order (``terms_shuffled``) gives its first quarter, a uniform
    random subset as well, which it may serve without a copy."""
    n = problem.n_terms
    m = n // 4
    if getattr(problem, "terms_shuffled", False):
        items = np.arange(m)
    else:
        items = np.sort(np.random.default_rng(seed).choice(n, size=m, replace=False))
    sub = problem.subsample(items)
    r = _newton_working_set(
        sub,
        None,
        **opts,
        seed=seed,
        warm_items=warm_items,
        tol=WARM_TOL,
        max_iter=200,
        callback=None,
        progress=None,
        check_model=False,
    )
    return r.x, r.n_passes * m / n, r.n_iter


def _newton_working_set(
    problem,
    x0,
    *,
    alpha,
    beta,
    ws_init,
    ws_add,
    hessian_sample,
    seed,
    ws_first_tol=1e-6,
    warm_items=0,
    warm_x0=False,
    check_model=True,
    **stop: Unpack[Stop],
) -> SolveResult:
    tol, max_iter = stop["tol"], stop["max_iter"]
    run = Run("newton", **stop)
    d = problem.dim
    x = start_point(problem, x0)
    x = problem.project(x) if offers(problem, "project") else x
    k0 = min(d, ws_init or max(20, -(-d // 5)))
    run.passes = 0.0
    warm_iter = 0
    known = None
    subsampled = x0 is None and warm_items > 0 and problem.n_terms >= 2 * warm_items and offers(problem, "subsample")
    if subsampled or (x0 is not None and warm_x0):
        if subsampled:
            opts = dict(alpha=alpha, beta=beta, ws_init=ws_init, ws_add=ws_add, hessian_sample=hessian_sample)
            opts.update(ws_first_tol=ws_first_tol)
            x, p_warm, warm_iter = _warm_start(problem, opts, warm_items, seed)
            run.passes += p_warm
        f, g = problem.value_and_grad(x)
        run.passes += 1.0
        run.record(f)
        if hessian_sample is None and problem.n_terms > GROW_HESSIAN_ITEMS and _subsamples(problem):
            hessian_sample = GROW_HESSIAN_ITEMS / problem.n_terms
        items = _sample(problem, hessian_sample, seed)
        return _newton_grow(
            problem, x, f, g, run, alpha=alpha, beta=beta, items=items, n_iter=warm_iter, check=check_model, **stop
        )
    elif x0 is None and offers(problem, "screen"):
        # no start given: screen coordinates cheaply instead of a full gradient pass at x0
        S = np.asarray(problem.screen(k0), dtype=np.int64)
        run.passes += 1.0 / problem.n_classes if offers(problem, "n_classes") else 0.0
        x = np.zeros(d)
        x[S] = 1.0 / S.size
    else:
        f, g = problem.value_and_grad(x)
        run.passes += 1.0
        run.record(f)
        support = np.flatnonzero(x > 0)
        if support.size <= k0:
            S = np.union1d(support, np.argsort(g)[: k0 - support.size])
        else:
            S = np.sort(np.argsort(g)[:k0])
    if hessian_sample is None and problem.n_terms > 8000 and _subsamples(problem):
        hessian_sample = 0.25
    items = _sample(problem, hessian_sample, seed)
    final_inner = tol / 10
    # the first working set is a guess (unless a warm start chose it): solve it roughly
    inner_tol = final_inner if known is not None else max(final_inner, ws_first_tol)
    converged, message = False, "maximum number of iterations reached"
    n_iter, rounds, gap, gap0 = warm_iter, 0, float("inf"), None
    sizes = []
    tried: set = set()
    # the restricted problem's f and gradient at x (zero outside S) are the full ones restricted to S
    # when both read the same data (float64 storage): then a round starts from the last full pass
    exact = np.dtype(capability(problem, "dtype", np.float64)) == np.float64
    while True:
        rounds += 1
        sub = problem.restrict(S)
        xs = x[S]
        start = None
        if known is not None and exact and abs(xs.sum() - 1.0) <= 1e-12:
            start = (known[0], known[1][S])
        else:
            xs = xs / xs.sum() if xs.sum() > 0 else np.full(S.size, 1.0 / S.size)
        res = _newton_plain(
            sub,
            xs,
            tol=inner_tol,
            max_iter=max(1, max_iter - n_iter),
            callback=None,
            progress=None,
            alpha=alpha,
            beta=beta,
            hessian_items=items,
            start=start,
        )
        n_iter += res.n_iter
        run.passes += res.n_passes * S.size / d
        sizes.append(int(S.size))
        x = np.zeros(d)
        x[S] = res.x
        f, g = problem.value_and_grad(x)
        run.passes += 1
        known = (f, g)
        # the part inside S from the exact restricted gradient, violations outside from the full pass
        gs = res.extra["grad"]
        nu = float(gs @ res.x)
        out = np.ones(d, dtype=bool)
        out[S] = False
        viol = nu - g
        viol[~out] = -np.inf
        vmax = max(0.0, float(viol.max())) if out.any() else 0.0
        gap = max(0.0, float(res.extra["gap"])) + vmax
        gap0 = gap if gap0 is None else gap0
        run.record(f, gap=gap, ws_size=S.size)
        target = tol * rel_tol_scale(f)
        if gap_progress(run.progress, gap0, gap, target):
            converged, message = True, "gap below tolerance"
            break
        if run.callback_stops(x):
            message = "stopped by callback"
            break
        if n_iter >= max_iter:
            break
        cand = np.flatnonzero(viol > 0.5 * target)
        if cand.size == 0:
            if inner_tol <= final_inner:
                converged = gap <= 10 * target
                message = "restricted solve at its precision limit"
                break
            inner_tol = final_inner  # only the restricted solve is short: tighten it
            continue
        m = ws_add or max(20, S.size // 2)
        add = cand[np.argsort(-viol[cand])[:m]]
        tried.add((S.tobytes(), inner_tol))
        S = np.union1d(np.flatnonzero(x > 0), add)
        inner_tol = final_inner  # Newton converges quadratically: later rounds solve to the end
        if (S.tobytes(), inner_tol) in tried:
            # the restricted solves stopped on their model decrease without moving the added
            # coordinates (near-singular Hessians): the rounds would cycle
            converged, message = gap <= 10 * target, "working set repeats (precision limit)"
            break
    return run.result(x, f, n_iter, converged, message, gap=float(gap), rounds=rounds, working_set_sizes=sizes, grad=g)


def _bfgs_update(H: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """BFGS correction of the model Hessian ``H`` by the step ``s`` (on the simplex: Σ s = 0) and the
    change ``y`` of the exact gradient (its component along the ones vector, which no feasible step
    sees, removed); unchanged when the curvature ``sᵀy`` is not positive."""
    return _bfgs(H, s, y - y.mean())


def _bfgs_terms(
    B: np.ndarray, s: np.ndarray, y: np.ndarray, Bs: np.ndarray | None = None
) -> tuple[float, np.ndarray, float] | None:
    """``(sᵀy, Bs, sᵀBs)`` of the BFGS correction ``B + yyᵀ/sᵀy - (Bs)(Bs)ᵀ/sᵀBs``, or ``None`` when it is
    skipped (the curvature ``sᵀy`` or the model's ``sᵀBs`` not positive). ``Bs``: when already formed."""
    sy = float(s @ y)
    Bs = B @ s if Bs is None else Bs
    sBs = float(s @ Bs)
    if not (sy > 1e-12 * np.linalg.norm(s) * np.linalg.norm(y)) or not sBs > 0:
        return None
    return sy, Bs, sBs


def _bfgs(B: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """BFGS correction of the model ``B`` by the step ``s`` and the change ``y`` of the gradient (a new
    matrix); ``B`` itself when skipped (:func:`_bfgs_terms`)."""
    terms = _bfgs_terms(B, s, y)
    if terms is None:
        return B
    sy, Bs, sBs = terms
    return B + np.outer(y, y) / sy - np.outer(Bs, Bs) / sBs


def _newton_grow(problem, x, f, g, run, *, alpha, beta, items, n_iter, check=True, **stop: Unpack[Stop]) -> SolveResult:
    """Projected Newton on a growing working set from a warm start ``x`` with its full ``f``, ``g``.

    Every trial point is evaluated by a full value+gradient pass, so the KKT violators outside ``S``
    (``g_i < <g, x>``) are seen at every iterate and join ``S`` at once; the Hessian and the simplex
    QP are restricted to ``S`` (the other weights stay zero). A model Hessian is kept while ``S`` is
    unchanged and the gap keeps falling by the factor ``GROW_REUSE`` (chord steps). The gap is the
    smaller of the full Frank-Wolfe gap and the restricted model decrease (no violators remain).
    ``check``: a convergence claimed by a sampled or float32 model is confirmed with the float64
    Hessian of every item; off for the levels of the warm start (:func:`_warm_start`, tolerance
    :data:`WARM_TOL`), where that Hessian cost up to a third of the level (0.9 s of the 5,000-item
    level of a Rényi fit at 20,000 × 269 × 64) and a start needs no certificate.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    secant = bool(capability(problem, "hessian_approximate", False))
    H: np.ndarray | None = None
    gap_last, gap0 = None, None
    S, sizes = np.flatnonzero(x > 0), []
    prev_S = S  # the working set of the last iteration's model
    checked = False  # the last model Hessian is float64 over every item, at the current point
    validated = False  # the last full step decreased f as its model predicted (GROW_VALIDATED_MARGIN)
    converged, message, gap = False, "maximum number of iterations reached", float("inf")
    while True:
        target = tol * rel_tol_scale(f)
        # the support and the KKT violators: the set a new Hessian is formed on
        need = np.flatnonzero((x > 0) | (float(g @ x) - g > 0.5 * target))
        gap = fw_gap(x, g)
        if gap <= target:
            converged, message = True, "gap below tolerance"
            break
        fresh = H is None or np.setdiff1d(need, S, assume_unique=True).size > 0
        if H is not None and not fresh:
            d_, slope_, dec_ = _model_step(H, g[S], x[S], True)
            # an approximate Hessian, secant-corrected after each full step, is kept while it descends
            fresh = not (slope_ < 0 and (secant or gap_last is not None and min(gap, dec_) <= GROW_REUSE * gap_last))
        if fresh:
            S = need
            sizes.append(int(S.size))
            H = _hessian(problem.restrict(S), x[S], items, GROW_HESSIAN_DTYPE)
            run.passes += (1 if items is None else items.size / problem.n_terms) * S.size / problem.dim
            d_, slope_, dec_ = _model_step(H, g[S], x[S], True)
            if VALIDATED_ONLY and not np.array_equal(S, prev_S):
                validated = False  # a model on another working set: not the one the last step tested
        prev_S = S
        margin = GROW_VALIDATED_MARGIN if validated else GROW_MODEL_MARGIN
        if check and min(gap, margin * dec_) <= target and not checked:
            # the model of a sampled or kept Hessian claims convergence: check it with the Hessian of
            # every item at this point in float64 (a sample's curvature, or float32 rounding, can be off
            # in near-singular directions, and the model decrease with it)
            S = need
            H = _hessian(problem.restrict(S), x[S], None)
            run.passes += S.size / problem.dim
            d_, slope_, dec_ = _model_step(H, g[S], x[S], True)
            checked = True
        xs = x[S]
        if validated or not VALIDATED_ONLY:  # only a model the last step confirmed may claim convergence
            gap = min(gap, margin * dec_)
        gap_last = gap
        gap0 = gap if gap0 is None else gap0
        if gap_progress(run.progress, gap0, gap, target):
            converged, message = True, "gap below tolerance"
            break
        if slope_ >= 0:
            converged, message = gap <= 10 * target, "no descent direction (precision limit)"
            break
        if n_iter >= max_iter:
            break
        n_iter += 1
        d = np.zeros_like(x)
        d[S] = _step(xs, 1.0, d_, True) - xs
        x1 = x + d
        checked = False
        f1, g1 = problem.value_and_grad(x1)
        run.passes += 1
        lo, hi = VALIDATED_RATIO
        validated = dec_ >= VALIDATE_MIN * rel_tol_scale(f) and lo * dec_ <= f - f1 <= hi * dec_
        if f1 <= f + alpha * slope_:
            if secant and H is not None:
                H = _bfgs_update(H, d[S], g1[S] - g[S])
            x, f, g, t = x1, f1, g1, 1.0
        else:
            t, f_new, n_ev, ok = armijo(lambda t: problem.value(x + t * d), f, slope_, t0=beta, alpha=alpha, beta=beta)
            run.passes += n_ev
            if t == 0.0 and f1 >= f:
                converged, message = gap <= 10 * target, "line search made no progress (precision limit)"
                break
            if not ok and f1 < f_new:
                t = 1.0
            x = x1 if t == 1.0 else _step(x, t, d, True)
            f, g = (f1, g1) if t == 1.0 else problem.value_and_grad(x)
            run.passes += 0 if t == 1.0 else 1
            H = None  # a short step: the model was poor, form a new Hessian
            validated = False
        run.record(f, gap=gap, step=t, ws_size=S.size)
        if run.callback_stops(x):
            message = "stopped by callback"
            break
    return run.result(
        x,
        f,
        n_iter,
        converged,
        message,
        gap=float(gap),
        rounds=len(sizes),
        working_set_sizes=sizes,
        grad=g,
        warm_start=True,
    )


def _auto_rule(problem) -> str | None:
    """``auto``: Newton for simplex problems with a Hessian (small dense QPs, working sets when
    offered), and for unconstrained ones of moderate dimension; otherwise defer."""
    if not offers(problem, "hessian"):
        return None
    if constraint_of(problem) == "simplex":
        return "newton" if (offers(problem, "restrict") or problem.dim <= 500) else None
    if constraint_of(problem) == "none" and problem.dim <= 1000:
        return "newton"
    return None


register_auto_rule("newton", _auto_rule)
