"""The stop test the primal-dual and splitting solvers share after their own convergence test."""

from __future__ import annotations

import math

import numpy as np

from ..monitor import Run


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
