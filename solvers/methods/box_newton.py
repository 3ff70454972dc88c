"""Projected Newton on a box with a model of the curvature (Bertsekas 1982, the ε-active set form).

For problems on a box ``lower <= x <= upper`` (``constraint = "box"``, ``bounds``) that offer, besides
``value_and_grad`` and ``value``, a model of their Hessian: ``hessian(x, free=mask)``, a symmetric
positive semi-definite ``(dim, dim)`` matrix of which only the rows and columns where ``mask`` is true
are read (the problem may leave the others zero and spend nothing on them).

Each iteration, from ``x`` with gradient ``g`` and the measure ``m = max |clip(x - g) - x|``:

- the ε-active set ``I`` (``ε = min(eps, m)``): coordinates within ε of a bound whose gradient points
  out of the box; the others are free (``F``);
- the direction ``d_F = -(B_FF + μ diag(B_FF) + ρ m I + δ I)^{-1} g_F`` (Cholesky; ``ρ`` the ridge in
  force, the ``ridge`` option, adapted with ``adapt_ridge``; ``m`` the mean of the damped free diagonal;
  δ grows only when the matrix is not positive definite; free coordinates of zero gradient and no
  coupling stay out of it, their step zero) and ``d_I = -g_I / b`` (``b`` the mean free diagonal of ``B``). ``μ`` is a
  Levenberg-Marquardt damping (``damping=True``): zero at first, raised tenfold (from 1e-3, to at most
  1e6) after a step the line search cut below one half, divided by ten after a longer one, reset to
  zero after a step that did not lower ``f``: where the model is poor far from the optimum, the next
  directions turn towards the scaled gradient instead of being searched along a direction the model
  has wrong (the Rényi joint problem from its shared-γ start: 177 → 101 evaluations);
- the projection arc ``x(α) = clip(x + α d)`` with Armijo backtracking on
  ``f(x(α)) <= f(x) + σ gᵀ(x(α) - x)`` (values only, each cut by quadratic interpolation, at most by
  ``beta``; the gradient at the accepted point);
- the model ``B`` is corrected by BFGS from each accepted step's exact gradients (``sᵀy > 0``) and
  formed anew from the problem when a step had to be cut below ``refresh_step`` (the model was poor
  along it; when the first step of a freshly formed model is cut too, the problem's model is no better
  there, and the number of corrected steps before the next refresh grows by one), or when the free set gained more than ``grow`` times as many coordinates as the model
  was formed over (fewer start from the diagonal fill, the mean free curvature, and BFGS corrects them).

Bertsekas (1982), "Projected Newton methods for optimization problems with simple constraints",
SIAM J. Control Optim. 20(2): with ``B`` the Hessian the method identifies the active set in finitely
many steps and converges superlinearly; with a Gauss-Newton model corrected by BFGS it converges
(at least) linearly, faster as the model improves along the steps taken.

Stopping: the projected-gradient measure ``m`` at most ``tol * max(1, |f|)`` (as :mod:`.box_quasi_newton`
and ``projected_gradient`` on a box). One pass: one ``value_and_grad``, ``value`` or ``hessian`` call.

Measured on the Rényi pool's joint weights-and-per-agent-γ problem (the box form of
:mod:`solvers.problems.orthant`, the model :mod:`aggregators.renyi_joint_curvature`), against SciPy's
TNC from the same start: ``benchmarks/bench_renyi_per_agent.py`` and ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

from typing import Unpack

import numpy as np
from scipy.linalg.blas import dger

from ..checks import check_tol
from ..errors import InputError
from ..linesearch import gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import start_point
from ..registry import register
from ..result import SolveResult
from .newton import _bfgs_terms, _newton_direction

STALLS = 3
"""Consecutive accepted steps without a decrease of ``f`` (the model's decrease below its rounding)
after which the solver stops at the precision limit (converged when the measure is within ten times
the target, as :mod:`.box_quasi_newton` reports it)."""


def _cut(f: float, fa: float, slope: float, beta: float) -> float:
    """The factor to shrink a rejected step ``α`` by: the minimiser of the quadratic through ``f``, the
    slope ``slope`` (per unit ``α``, times ``α``) and ``f(α) = fa``, kept in ``[0.1, beta]`` (Nocedal &
    Wright 2006, §3.5); ``0.1`` when ``f(α)`` is not finite. A step far too long (a model poor far from
    the optimum) then shrinks tenfold per trial instead of halving."""
    if not np.isfinite(fa):
        return 0.1
    curv = fa - f - slope
    if not curv > 0:
        return beta
    return min(max(-slope / (2.0 * curv), 0.1), beta)


def _bfgs_in_place(B: np.ndarray, s: np.ndarray, y: np.ndarray, Bs: np.ndarray) -> None:
    """The BFGS correction of :func:`.newton._bfgs_terms` on ``B`` itself (``Bs = B @ s`` given; ``B``
    C-ordered and symmetric, updated through its transpose, a Fortran-ordered view, by two BLAS rank-one
    updates): at 2,000 coordinates the copy's outer products and sums were a quarter of the solver's time."""
    terms = _bfgs_terms(B, s, y, Bs)
    if terms is None:
        return
    sy, Bs, sBs = terms
    Bt = B.T
    dger(1.0 / sy, y, y, a=Bt, overwrite_a=1)
    dger(-1.0 / sBs, Bs, Bs, a=Bt, overwrite_a=1)


def _inert(B: np.ndarray, g: np.ndarray, fidx: np.ndarray) -> np.ndarray:
    """Which free coordinates ``fidx`` the Newton system leaves at rest: a zero gradient and no coupling
    to another free coordinate in ``B`` (their rows of the system read ``b_ii d_i = 0``, so ``d_i = 0``
    and the others' solve is the same without them). The Rényi joint problem's γ of agents of weight
    zero are such (hundreds at 1,000 agents); leaving them out of the factorisation changes no step."""
    out = np.zeros(fidx.size, dtype=bool)
    cand = np.flatnonzero(g[fidx] == 0.0)
    if cand.size:
        rows = B[np.ix_(fidx[cand], fidx)]
        rows[np.arange(cand.size), cand] = 0.0
        out[cand] = ~rows.any(axis=1)
    return out


@register("box_newton", constraints=("box",), needs=("hessian", "bounds"), tol=1e-8, max_iter=500)
def box_newton(
    problem,
    x0=None,
    *,
    sigma: float = 1e-4,
    beta: float = 0.5,
    eps: float = 1e-3,
    refresh_step: float = 0.1,
    grow: float = 0.25,
    damping: bool = True,
    ridge: float = 0.0,
    adapt_ridge: bool = False,
    **stop: Unpack[Stop],
) -> SolveResult:
    """Projected Newton with a BFGS-corrected curvature model on a box (see the module docstring).

    Options: ``sigma`` (Armijo constant), ``beta`` (backtracking factor), ``eps`` (the largest ε of the
    active set, in the units of ``x``), ``refresh_step`` (a step cut below this forms a new model),
    ``grow`` (a free set grown by more than this fraction forms a new model), ``damping`` (the
    Levenberg-Marquardt damping of the direction), ``ridge`` (a constant term ``ridge · mean(diag B_FF)``
    on the free block's diagonal: a floor under the model's curvature, for models with near-null
    directions the objective is not flat along; zero by default, as a fixed one slows the last steps of a
    badly conditioned problem whose model is exact), ``adapt_ridge`` (the ridge in force starts at
    ``ridge`` and moves within ``[1e-3, 100] · ridge``: tenfold up after a step the line search cut
    below one half or whose decrease was under a quarter of the model's ``-(gᵀs + ½ sᵀBs)``, tenfold
    down after a full step whose decrease was over three quarters of it (Moré 1978's trust rule, on
    the ridge): the floor where the model overshoots, Newton's steps where it is right)."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(tol, positive=True)
    if not (0 < sigma < 0.5 and 0 < beta < 1 and eps > 0 and 0 < refresh_step <= 1 and grow >= 0 and ridge >= 0):
        raise InputError(
            "options", "need 0 < sigma < 1/2, 0 < beta < 1, eps > 0, 0 < refresh_step <= 1, grow >= 0 and ridge >= 0"
        )
    lower, upper = (np.asarray(b, dtype=np.float64) for b in problem.bounds)
    dim = int(problem.dim)
    if lower.shape != (dim,) or upper.shape != (dim,) or np.any(lower > upper):
        raise InputError("problem", f"bounds must be two arrays of shape ({dim},) with lower <= upper")
    run = Run("box_newton", **stop)
    x = np.clip(start_point(problem, x0), lower, upper)
    f, g = problem.value_and_grad(x)
    g = np.asarray(g, dtype=np.float64)
    run.passes += 1
    if not np.isfinite(f):
        raise InputError("x0", "the objective is not finite at the start")

    def measure(x: np.ndarray, g: np.ndarray) -> float:
        return float(np.max(np.abs(np.clip(x - g, lower, upper) - x))) if x.size else 0.0

    gap0 = gap = measure(x, g)
    run.record(f, gap=gap, step=0.0)
    B: np.ndarray | None = None
    seen = np.zeros(dim, dtype=bool)  # coordinates the current model was formed over
    stalls = 0  # consecutive accepted steps that did not lower f
    mu = 0.0  # Levenberg-Marquardt damping of the free block
    age = patience = 0  # steps since the model was formed; cut steps it takes to form it again
    r_now = ridge  # the ridge in force (adapted when adapt_ridge)
    n_iter, refreshes, converged, message = 0, 0, False, "max_iter reached"
    while True:
        target = tol * rel_tol_scale(f)
        if gap <= target:
            converged, message = True, "gap below tolerance"
            break
        if n_iter >= max_iter:
            break
        e = min(eps, gap)
        active = ((x <= lower + e) & (g > 0)) | ((x >= upper - e) & (g < 0))
        free = ~active
        n_seen = max(int(np.count_nonzero(seen)), 1)
        if B is None or int(np.count_nonzero(free & ~seen)) > grow * n_seen:
            B = np.array(problem.hessian(x, free=free), dtype=np.float64)
            run.passes += 1
            refreshes += 1
            age = 0
            B = 0.5 * (B + B.T)
            fill = float(np.mean(np.diag(B)[free])) if free.any() else 1.0
            fill = fill if fill > 0 else 1.0
            B[~free, :] = 0.0
            B[:, ~free] = 0.0
            B[~free, ~free] = fill
            seen = free.copy()
        d = np.zeros(dim)
        if free.any():
            fidx = np.flatnonzero(free)
            diag_f = B[fidx, fidx]
            damped = diag_f + mu * np.maximum(diag_f, 0.0) if mu > 0 else diag_f
            lift = r_now * max(float(np.mean(damped)), 0.0) if r_now > 0 else 0.0
            core = fidx[~_inert(B, g, fidx)]
            BF = B[np.ix_(core, core)]  # a copy: the damping and the ridge go on its diagonal in place
            dg = np.einsum("ii->i", BF)
            if mu > 0:
                dg += mu * np.maximum(dg, 0.0)
            dg += lift
            d[core] = _newton_direction(BF, g[core])
            scale = float(np.mean(np.diag(B)[free]))
        else:
            scale = 1.0
        d[active] = -g[active] / (scale if scale > 0 else 1.0)
        alpha, accepted = 1.0, False
        for _ in range(60):
            xn = np.clip(x + alpha * d, lower, upper)
            fn = problem.value(xn)
            run.passes += 1
            slope = float(g @ (xn - x))  # <g, x(α) - x>, negative along the arc
            if np.isfinite(fn) and fn <= f + sigma * slope:
                accepted = True
                break
            alpha *= _cut(f, fn, slope, beta)
        n_iter += 1
        if not accepted:
            converged = gap <= 10 * target
            message = "line search failed (precision limit)" if converged else "line search failed"
            break
        fn, gn = problem.value_and_grad(xn)
        gn = np.asarray(gn, dtype=np.float64)
        run.passes += 1
        stalls = stalls + 1 if not fn < f else 0
        step = xn - x
        Bs = B @ step  # the model before its correction: the adapted ridge's prediction and BFGS
        if adapt_ridge and ridge > 0:
            pred = -(slope + 0.5 * float(step @ Bs))
            rho = (f - fn) / pred if pred > 0 else 0.0
            if alpha < 0.5 or rho < 0.25:
                r_now = min(10.0 * r_now, 100.0 * ridge)
            elif alpha == 1.0 and rho > 0.75:
                r_now = max(r_now / 10.0, 1e-3 * ridge)
        _bfgs_in_place(B, step, gn - g, Bs)  # coordinates new to the free set start from the diagonal fill
        if alpha < refresh_step:
            if age == 0:  # the problem's own fresh model was as poor: let BFGS work longer before the next
                patience += 1
            elif age >= patience:
                B = None  # the model was poor along this step: form it anew at the next point
        elif age == 0:
            patience = 0
        age += 1
        if damping:
            if not fn < f:  # no decrease at all: the step is at the rounding of f, damping cannot help
                mu = 0.0
            elif alpha < 0.5:
                mu = min(max(10.0 * mu, 1e-3), 1e6)
            else:
                mu = mu / 10.0 if mu > 1e-6 else 0.0
        x, f, g = xn, float(fn), gn
        gap = measure(x, g)
        run.record(f, gap=gap, step=alpha)
        gap_progress(run.progress, gap0, gap, tol * rel_tol_scale(f))
        if stalls >= STALLS and gap > tol * rel_tol_scale(f):
            # steps accepted with no decrease: the model's decrease is below the rounding of f
            converged = gap <= 10 * tol * rel_tol_scale(f)
            message = "no decrease (precision limit)"
            break
        if run.callback_stops(x):
            message = "stopped by callback"
            converged = gap <= tol * rel_tol_scale(f)
            break
    return run.result(x, float(f), n_iter, converged, message, gap=gap, refreshes=refreshes)
