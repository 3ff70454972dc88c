"""Bregman iteration for ``min f(x) s.t. M x = b`` (seed 003 section 6.7, with the text's f/z mix-up fixed).

    x^{k+1} = argmin_x f(x) + (c/2) |M x - z^k|^2          (inner: FISTA, warm-started)
    z^{k+1} = z^k + (b - M x^{k+1})                        (z^0 = b)

Reads the saddle form (:class:`~solvers.problems.saddle_point.SaddlePoint`) with ``g`` an
:class:`~solvers.prox.Equality` (a linear constraint; ``M = K^T``) and ``f`` with a prox: basis
pursuit (``f = |.|_1``) is the seed's case. Each outer iteration adds the residual back, so the
iterates reach the constrained solution without ``c -> infinity``. Stopping:
``|M x - b| <= tol max(1, |b|)``. One pass = one product with ``M`` and one with ``M^T`` (an inner
FISTA step). Trace (per outer iteration): ``f(x)``, the residual, the inner steps.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..checks import check_count, check_positive, check_tol
from ..errors import InputError
from ..monitor import Run, Stop
from ..prox import Equality
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop


@register("bregman", needs=("saddle_point",), tol=1e-8, max_iter=200)
def bregman(
    problem, x0=None, *, c: float = 1.0, inner_tol: float = 1e-12, inner_max_iter: int = 20000, **stop: Unpack[Stop]
) -> SolveResult:
    """Bregman iteration (seed 003 s.6.7) for a linearly constrained problem; inner problems by FISTA.

    Options: ``c`` (the quadratic weight), ``inner_tol`` (gradient-mapping norm of the inner solve),
    ``inner_max_iter``.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_tol(inner_tol, field="inner_tol")
    check_count(inner_max_iter, field="inner_max_iter")
    c = check_positive(c, field="c")
    sad = problem.saddle_point()
    if not isinstance(sad.g, Equality):
        raise InputError("problem", "Bregman iteration needs a linearly constrained problem (g an Equality)")
    M = sad.A
    b = sad.g.b
    f = sad.f
    L = c * sad.norm**2
    t = 1.0 / L
    run = Run("bregman", **stop)
    x = np.zeros(sad.dim) if x0 is None else np.array(x0, dtype=float)
    z = b.copy()
    scale = max(1.0, float(np.linalg.norm(b)))
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    res = math.inf
    for k in range(1, max_iter + 1):  # noqa: B007 (k is the result's n_iter)
        # inner FISTA on (c/2)|M x - z|^2 + f(x), warm start
        w, s, x_prev = x.copy(), 1.0, x
        inner = 0
        for inner in range(1, inner_max_iter + 1):  # noqa: B007 (inner is recorded)
            g = c * (M.T @ (M @ w - z))
            x_new = f.prox(w - t * g, t)
            run.passes += 1
            s_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * s * s))
            step = np.linalg.norm(x_new - x_prev) / t
            w = x_new + ((s - 1.0) / s_new) * (x_new - x_prev)
            s, x_prev = s_new, x_new
            if step <= inner_tol:
                break
        x = x_prev
        r = M @ x - b
        res = float(np.linalg.norm(r))
        fx = float(f.value(x))
        done = res <= tol * scale
        ok = f"converged: residual {res:.3g} <= tol * max(1, |b|)"
        why = record_and_stop(run, x, fx, ok if done else None, residual=res, inner_steps=inner)
        if why:
            converged, message = done, why
            break
        z = z - r  # z + (b - M x)
    return run.result(x, float(f.value(x)), k, converged, message, residual=res)
