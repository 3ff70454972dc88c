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

The problem reader is :mod:`solvers.methods._loglinear_terms`, the step
:mod:`solvers.methods._majorizer_step`; the stochastic variant is
:mod:`solvers.methods.stochastic_bound_majorization`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

import numpy as np

from ..monitor import Run, Stop
from ..progress import report
from ..registry import register
from ..result import SolveResult
from ._loglinear_terms import check_budget, prepare
from ._majorizer_step import add_lam, minimise_majorizer

__all__ = ["bound_majorization"]


@register("bm", needs=("features", "labels"), constraints=("none", "simplex"), tol=1e-8, max_iter=1000)
def bound_majorization(
    problem,
    x0=None,
    *,
    curvature="full",
    order="ascending",
    projection: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
    **stop: Unpack[Stop],
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
    callback : called as ``callback(theta)`` after each iteration; a truthy return stops.

    ``trace`` records ``f(theta~)`` at the start of every iteration (free: ``log z_i = log Z_i``).
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_budget(tol, max_iter)
    run = Run("bm", **stop)
    terms, constraint, x = prepare(problem, x0, curvature, order)
    lam = terms.lam
    converged, message, it, step_norm = False, "max_iter reached", 0, float("nan")
    for it in range(1, int(max_iter) + 1):
        val, g, S = terms.sums(x, curvature=curvature)
        fval = val + 0.5 * lam * x @ x
        g = g + lam * x
        run.record(fval, step=step_norm)  # f at the start of the iteration, before its pass is counted
        run.passes += 1.0
        H = add_lam(S, lam)
        x_new = minimise_majorizer(x, g, H, constraint, projection)
        step_norm = float(np.linalg.norm(x_new - x))
        x = x_new
        report(run.progress, it / max_iter)
        if run.callback_stops(x):
            message = "stopped by callback"
            break
        if not np.all(np.isfinite(x)):
            message = "non-finite iterate"
            break
        if step_norm <= tol:
            converged, message = True, f"step norm {step_norm:.3g} <= tol"
            break
    seconds = run.clock()
    run.clock.pause()
    fun = float(problem.value(x))  # off the clock
    run.record(fun, at=seconds, step=step_norm)
    report(run.progress, 1.0)
    return run.result(x, fun, it, converged, message, seconds=seconds, curvature=curvature)
