"""The stop test the primal-dual and splitting solvers share after their own convergence test."""

from __future__ import annotations

import math

import numpy as np

from ..monitor import Run
from ..problem import offers


def splitting_columns(
    problem: object, x: np.ndarray, r_pri: float, r_dual: float, residual: float | None, tol: float
) -> tuple[dict[str, float], bool | None]:
    """The trace columns of a splitting solver at ``x`` (the primal and dual residuals, the problem's
    own residual when it has one, the duality gap when offered) and whether the gap is ``<= tol``
    (None when the problem offers no gap: the solver then applies its residual test)."""
    extra = {"primal_residual": r_pri, "dual_residual": r_dual}
    if residual is not None:
        extra["residual"] = residual
    if not offers(problem, "duality_gap"):
        return extra, None
    extra["gap"] = gap = float(problem.duality_gap(x))  # type: ignore[attr-defined]
    return extra, gap <= tol


def record_and_stop(run: Run, x: np.ndarray, fx: float, done: str | None, **extra: float) -> str | None:
    """Record ``fx`` (and the ``extra`` columns) in the trace, then the message to stop with: ``done``
    (the solver's own convergence message, when its test passed), else :func:`stop_reason`'s; None
    to go on. A solver has converged when it stops with ``done``."""
    run.record(fx, **extra)
    return done or stop_reason(run, x, fx)


def stop_reason(run: Run, x: np.ndarray, fx: float) -> str | None:
    """The message when the solver must stop (a non-finite objective, a truthy callback), else None."""
    if not math.isfinite(fx):
        return "diverged (non-finite objective)"
    if run.callback_stops(x):
        return "stopped by callback"
    return None
