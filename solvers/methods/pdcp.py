"""PDCP: the Chambolle-Pock primal-dual method on the saddle form (seed 000 Eq. 3.29-3.31, l.1269-1281).

For ``min_x max_y f(x) + <x, K y> - g*(y)`` (:class:`~solvers.problems.saddle_point.SaddlePoint`),
from ``x_bar^0 = x^0``:

    y+    = prox_{sigma g*}(y + sigma K^T x_bar)           (3.29)
    x+    = prox_{tau f}(x - tau K y+)                     (3.30)
    x_bar = x+ + theta (x+ - x)                            (3.31)

with ``tau sigma |K|^2 <= 1`` and ``theta = 1`` (O(1/T)). ``|K|`` comes from power iteration
(:func:`~solvers.problems.saddle_point.operator_norm`); by default ``tau = sigma = 1/|K|``, option
``ratio = tau/sigma`` keeps ``tau sigma |K|^2 = 1`` (seed 000 l.1695 uses ``(1, 1/sqrt(3), 1/sqrt(3))``
for RPCA, where ``|K| = sqrt(3)``). One pass = one product with ``K`` and one with ``K^T``.

Trace: the primal objective, the duality gap where it is defined (``f*`` offered, ``g`` not a
constraint), the constraint residual where ``g`` is one, and the primal-dual residual
``|(x - x+)/tau| + |(y - y+)/sigma + K^T(x_bar - x+)|`` (the distance of the optimality conditions
``-K y+ in df(x+)``, ``K^T x+ in dg*(y+)`` from holding), which is the stopping measure when there is
no gap.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np

from ..checks import check_count, check_positive
from ..errors import InputError
from ..monitor import Run, Stop
from ..problem import start_point
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop


@register("pdcp", needs=("saddle_point",), tol=1e-8, max_iter=10000)
def pdcp(
    problem,
    x0=None,
    *,
    tau: float | None = None,
    sigma: float | None = None,
    ratio=1.0,
    theta=1.0,
    y0: np.ndarray | None = None,
    check_every=1,
    **stop: Unpack[Stop],
) -> SolveResult:
    """PDCP (Chambolle-Pock): primal-dual proximal steps with extrapolation; ``tau sigma |K|^2 <= 1``.

    Options: ``tau``, ``sigma`` (default ``sqrt(ratio)/|K|`` and ``1/(sqrt(ratio)|K|)``), ``theta``
    (extrapolation, in [0, 1]), ``y0`` (dual start), ``check_every``.
    """
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    check_positive(ratio, field="ratio")
    if not 0.0 <= theta <= 1.0:
        raise InputError("theta", f"must be in [0, 1]; got {theta!r}")
    sp = problem.saddle_point()
    run = Run("pdcp", **stop)
    norm = sp.norm
    if tau is None:
        tau = math.sqrt(ratio) / norm
    if sigma is None:
        sigma = 1.0 / (math.sqrt(ratio) * norm)
    tau, sigma = check_positive(tau, field="tau"), check_positive(sigma, field="sigma")
    if tau * sigma * norm**2 > 1.0 + 1e-9:
        raise InputError("tau", f"tau * sigma * |K|^2 = {tau * sigma * norm**2:.4g} > 1 (PDCP needs <= 1)")
    x = np.array(start_point(sp, x0), dtype=float)
    y = np.zeros(sp.dual_dim) if y0 is None else np.array(y0, dtype=float)
    if y.shape != (sp.dual_dim,):
        raise InputError("y0", f"must have shape ({sp.dual_dim},); got {y.shape}")
    KTx = sp.KTx(x)
    KTx_bar = KTx
    converged, message, k = False, f"max_iter ({max_iter}) reached", 0
    for k in range(1, max_iter + 1):
        y_new = sp.g.conj_prox(y + sigma * KTx_bar, sigma)
        x_new = sp.f.prox(x - tau * sp.Ky(y_new), tau)
        KTx_new = sp.KTx(x_new)
        run.passes += 1
        KTx_bar_old = KTx_bar
        KTx_bar = KTx_new + theta * (KTx_new - KTx)  # K^T x_bar, x_bar = x+ + theta (x+ - x) (3.31)
        if k % check_every == 0 or k == max_iter:
            pd_res = float(
                np.linalg.norm((x - x_new) / tau) + np.linalg.norm((y - y_new) / sigma + (KTx_bar_old - KTx_new))
            )
            gap = sp.gap(x_new, y_new, KTx_new)
            res = sp.residual(x_new, KTx_new)
            extra = {"pd_residual": pd_res}
            if gap is not None:
                extra["gap"] = gap
            if res is not None:
                extra["residual"] = res
            fx = sp.primal(x_new, KTx_new)
            measure = gap if gap is not None else pd_res
            done = measure <= tol
            ok = f"converged: {'duality gap' if gap is not None else 'primal-dual residual'} {measure:.3g} <= tol"
            why = record_and_stop(run, x_new, fx, ok if done else None, **extra)
            x, y, KTx = x_new, y_new, KTx_new
            if why:
                converged, message = done, why
                break
        else:
            x, y, KTx = x_new, y_new, KTx_new
    fun = run.trace.objective[-1] if len(run.trace) else sp.primal(x)
    return run.result(x, float(fun), k, converged, message, y=y, tau=tau, sigma=sigma, norm_K=norm)
