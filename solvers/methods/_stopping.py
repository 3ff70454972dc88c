"""The stop test the primal-dual and splitting solvers share after their own convergence test."""

from __future__ import annotations

import math

import numpy as np

from ..monitor import Run


def stop_reason(run: Run, x: np.ndarray, fx: float) -> str | None:
    """The message when the solver must stop (a non-finite objective, a truthy callback), else None."""
    if not math.isfinite(fx):
        return "diverged (non-finite objective)"
    if run.callback_stops(x):
        return "stopped by callback"
    return None
