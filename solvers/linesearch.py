"""Backtracking (Armijo) line search and small helpers shared by the batch solvers.

Seed 003 §6.2: start at ``t = t0``; while ``f(x + t d) > f(x) + alpha t <grad f(x), d>`` set
``t <- beta t`` (``0 < alpha <= 1/2``, ``0 < beta < 1``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .errors import InputError
from .progress import ProgressFn, report


def armijo(
    phi: Callable[[float], float],
    f0: float,
    slope: float,
    *,
    t0: float = 1.0,
    alpha: float = 0.01,
    beta: float = 0.5,
    max_steps: int = 60,
) -> tuple[float, float, int, bool]:
    """Backtrack along a descent direction; ``phi(t) = f(x + t d)``, ``slope = <grad f(x), d> < 0``.

    Returns ``(t, phi(t), evaluations, accepted)``. When no step passes the test (the decrease is
    below floating-point resolution) it returns the best step tried, possibly ``t = 0``.
    """
    if not (0 < alpha <= 0.5 and 0 < beta < 1):
        raise InputError("armijo", "needs 0 < alpha <= 1/2 and 0 < beta < 1")
    t = t0
    best_t, best_f = 0.0, f0
    for k in range(1, max_steps + 1):
        ft = phi(t)
        if ft <= f0 + alpha * t * slope:
            return t, ft, k, True
        if ft < best_f:
            best_t, best_f = t, ft
        t *= beta
    return best_t, best_f, max_steps, False


def rel_tol_scale(f: float) -> float:
    """The scale a relative tolerance applies to: ``max(1, |f|)``."""
    return max(1.0, abs(f)) if math.isfinite(f) else 1.0


def gap_progress(progress: ProgressFn | None, gap0: float, gap: float, target: float, floor: float = 0.0) -> bool:
    """Report progress as the fraction of the way, on a log scale, from ``gap0`` down to ``target``;
    returns whether ``gap`` has reached ``target``."""
    if gap <= target or gap0 <= target:
        report(progress, 1.0)
        return gap <= target
    if progress is None:
        return False
    frac = math.log(max(gap0, 1e-300) / max(gap, 1e-300)) / math.log(max(gap0, 1e-300) / max(target, 1e-300))
    report(progress, max(floor, frac))
    return False
