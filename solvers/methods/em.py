"""EM for mixture weights on the simplex (the linear opinion pool, seed 000 Eq. 2.4).

E-step: responsibilities ``r_ni = w_i Q_ni / (Qw)_n``; M-step: ``w_i <- mean_n r_ni``, i.e.
``w_i <- w_i * mean_n Q_ni / (Qw)_n`` (one pass: ``Qw`` and ``Qᵀ(1/Qw)``). The likelihood never
decreases, and the fixed points that keep every weight positive are the KKT points of Eq. (2.4);
by convexity EM and a constrained solver reach the same optimum (the seed's claim, tested).

``accelerate=True`` (the default) applies SQUAREM (Varadhan & Roland 2008, scheme S3): from two EM
steps ``r = F(w) - w``, ``v = F(F(w)) - 2F(w) + w``, extrapolate ``w' = w - 2a r + a² v`` with
``a = -||r|| / ||v||`` (capped at -1), project onto the simplex, take one EM step from there, and
fall back to the plain double step if the objective got worse (so the iteration stays monotone).

Stops when the Frank-Wolfe gap ``max_i mean_n Q_ni/(Qw)_n - 1`` (an upper bound on
``f(w) - f*``) is ``<= tol * max(1, |f|)``. Needs a problem offering ``mixture`` and
``mixture_offset`` (:class:`solvers.problems.mixture.MixtureLikelihood`); the ratio is read as
``-grad f(w)``, so per-item weights (``sample_weight``) make the means weighted.
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..errors import InputError
from ..linesearch import gap_progress, rel_tol_scale
from ..monitor import Run, Stop
from ..problem import start_point
from ..registry import register
from ..result import SolveResult
from ..simplex import project_simplex


def _em_map(problem, w):
    """One EM step; returns (new w, f(w), gap(w))."""
    f, g = problem.value_and_grad(w)
    if not np.isfinite(f):
        raise InputError(
            "x0", "EM reached a point where some item has zero mixture probability; start inside the simplex"
        )
    ratio = -g  # mean_n Q_ni/(Qw)_n (weighted by sample_weight when the problem has one)
    f = float(f)
    w_new = w * ratio
    w_new /= w_new.sum()
    return w_new, f, float(ratio.max() - 1.0)


@register("em", needs=("mixture", "mixture_offset"), constraints=("simplex",), tol=1e-10, max_iter=100_000)
def em(problem, x0=None, *, accelerate: bool = True, **stop: Unpack[Stop]) -> SolveResult:
    """EM for a mixture's weights (Eq. 2.4), optionally SQUAREM-accelerated; stops on the FW gap."""
    tol, max_iter = stop["tol"], stop["max_iter"]
    run = Run("em", **stop)
    w = start_point(problem, x0)
    if np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        w = project_simplex(w)
    if np.any(w <= 0):  # EM cannot revive a zero weight: start in the relative interior
        w = 0.5 * w + 0.5 / w.size
    run.passes = 0.0
    w1, f, gap = _em_map(problem, w)
    run.passes += 1
    gap0 = gap
    run.record(f, gap=gap)
    converged, message, it = False, "maximum number of iterations reached", 0
    for it in range(1, max_iter + 1):
        if gap_progress(run.progress, gap0, gap, tol * rel_tol_scale(f)):
            converged, message, it = True, "gap below tolerance", it - 1
            break
        if not accelerate:
            w = w1
            w1, f, gap = _em_map(problem, w)
            run.passes += 1
        else:
            w2, f1, _ = _em_map(problem, w1)
            r = w1 - w
            v = w2 - 2 * w1 + w
            nv = float(np.linalg.norm(v))
            a = -float(np.linalg.norm(r)) / nv if nv > 0 else -1.0
            a = min(a, -1.0)
            wx = project_simplex(w - 2 * a * r + a * a * v)
            wx = np.maximum(wx, 1e-16 * wx.max())  # keep EM able to move every weight
            wx /= wx.sum()
            run.passes += 1
            try:
                w_try, f_try, gap_try = _em_map(problem, wx)
                run.passes += 1
            except ValueError:
                f_try = np.inf
            w3, f2, gap2 = _em_map(problem, w2)
            run.passes += 1
            if f_try <= f2:
                w, w1, f, gap = wx, w_try, f_try, gap_try
            else:
                w, w1, f, gap = w2, w3, f2, gap2
        run.record(f, gap=gap)
        if run.callback_stops(w):
            message = "stopped by callback"
            break
    # weights that EM drives towards zero only geometrically: report them exactly as they are
    return run.result(w, f, it, converged, message, gap=gap)
