"""SPDC (Zhang & Xiao 2015, uniform sampling) and AdaSPDC (seed 000 Alg. 3.1, l.1368-1382; App. B l.2473-2512).

On the ERM saddle form (3.32) ``min_x max_y f(x) + (1/N) sum_i (<x, a_i y_i> - phi_i*(y_i))`` with f
lambda-strongly convex and every ``phi_i*`` gamma-strongly convex (:class:`~solvers.problems.erm.ERM`
with ``mean=True``, a strongly convex regulariser: ridge or elastic net). ``R_i = |a_i|``. Each
iteration samples ``m`` dual coordinates ``S_t`` uniformly without replacement and, from
``x_bar = x``, ``r = (1/N) sum_i a_i y_i``:

    sigma_i = (1/(2 R_i)) sqrt(N lam/(m gamma))                                (3.34)
    tau^t   = (1/(2 R^t_max)) sqrt(m gamma/(N lam)),  R^t_max = max_{S_t} R_i   (3.36)
    theta^t = 1 - 1/(N/m + R^t_max sqrt((N/m)/(lam gamma)))                    (3.39)
    y_i+    = prox_{sigma_i phi_i*}(y_i + sigma_i <x_bar, a_i>),  i in S_t      (3.33, with phi_i*: the seed prints phi_i)
    x+      = prox_{tau f}(x - tau (r + (1/m) sum_{S_t} a_j (y_j+ - y_j)))      (3.35)
    x_bar   = x+ + theta^t (x+ - x)                                             (3.38)
    r+      = r + (1/N) sum_{S_t} a_j (y_j+ - y_j)                              (3.37)

SPDC is the same with the global ``R = max_i R_i`` in place of ``R_i`` and ``R^t_max`` (l.1331). The
step configuration makes P of Eq. 3.41 PSD for every ``S_t`` (App. B Lemma 1 with ``c = sqrt(N lam/(m gamma))``).
One pass = N/m iterations; the trace (once per pass) holds the objective, the duality gap, and the
last ``theta^t`` and ``tau^t``. Stopping: the problem's duality gap ``<= tol``.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np
import scipy.sparse as sp

from ..checks import check_count
from ..errors import InputError
from ..monitor import Run, Stop
from ..problem import start_point
from ..registry import register
from ..result import SolveResult
from ._stopping import record_and_stop


def _erm_parts(problem):
    for name in ("phi", "reg", "scale", "A"):
        if getattr(problem, name, None) is None:
            raise InputError("problem", f"{type(problem).__name__} is not an ERM problem (no {name!r})")
    if not math.isclose(problem.scale, 1.0 / problem.n_terms):
        raise InputError("problem", "SPDC/AdaSPDC take the mean form (ERM(..., mean=True))")
    lam = float(getattr(problem.reg, "strong_convexity", 0.0))
    if not lam > 0:
        raise InputError(
            "problem",
            f"the regulariser {type(problem.reg).__name__} is not strongly convex (lambda = {lam}); SPDC needs lambda > 0",
        )
    gamma = float(problem.phi.conj_strong_convexity)
    if not gamma > 0:
        raise InputError("problem", "the loss conjugate is not strongly convex (gamma = 0)")
    A = problem.A
    R = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel()) if sp.issparse(A) else np.linalg.norm(A, axis=1)
    if np.any(R == 0):
        raise InputError("A", "has an all-zero row: R_i = 0 gives an infinite dual step", row=int(np.argmin(R)))
    return A, R, lam, gamma


def _spdc(problem, x0, *, adaptive, m, seed, check_every, **stop: Unpack[Stop]) -> SolveResult:
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    A, R, lam, gamma = _erm_parts(problem)
    N = problem.n_terms
    check_count(m, field="m", minimum=1)
    if m > N:
        raise InputError("m", f"must be at most the number of dual blocks N = {N}; got {m}")
    method = "adaspdc" if adaptive else "spdc"
    run = Run(method, **stop)
    rng = np.random.default_rng(seed)
    c = math.sqrt(N * lam / (m * gamma))
    Rg = float(R.max())
    sigma = (c / (2 * R)) if adaptive else np.full(N, c / (2 * Rg))  # (3.34)
    phi, reg = problem.phi, problem.reg
    x = np.array(start_point(problem, x0), dtype=float)
    y = np.zeros(N)
    x_bar = x.copy()
    r = (A.T @ y) / N
    iters = max(1, N // m)
    tau = theta = 0.0
    converged, message, k = False, f"max_iter ({max_iter} passes) reached", 0
    for k in range(1, max_iter + 1):
        for _ in range(iters):
            S = rng.choice(N, size=m, replace=False) if m > 1 else rng.integers(N, size=1)
            A_S = A[S]
            Rt = float(R[S].max()) if adaptive else Rg
            tau = 1.0 / (2 * Rt * c)  # (3.36): (1/(2R)) sqrt(m gamma/(N lam))
            theta = 1.0 - 1.0 / (N / m + Rt * math.sqrt((N / m) / (lam * gamma)))  # (3.39)
            s_S = sigma[S]
            y_new = phi.conj_prox(y[S] + s_S * (A_S @ x_bar), s_S, S)
            dAy = A_S.T @ (y_new - y[S])
            x_new = reg.prox(x - tau * (r + dAy / m), tau)
            x_bar = x_new + theta * (x_new - x)
            r = r + dAy / N
            y[S] = y_new
            x = x_new
            run.passes += m / N
        if k % check_every and k < max_iter:
            continue
        fx = float(problem.value(x))
        gap = float(problem.duality_gap(x))
        done = gap <= tol
        why = record_and_stop(
            run, x, fx, "converged: duality gap <= tol" if done else None, gap=gap, theta=theta, tau=tau
        )
        if why:
            converged, message = done, why
            break
    return run.result(x, float(problem.value(x)), k, converged, message, y=y, m=m)


@register("spdc", needs=("saddle_point", "A", "phi", "reg"), tol=1e-8, max_iter=1000)
def spdc(problem, x0=None, *, m=1, seed=0, check_every=1, **stop: Unpack[Stop]):
    """SPDC (Zhang & Xiao 2015), uniform sampling of m dual coordinates, global R = max |a_i|; max_iter counts passes."""
    return _spdc(problem, x0, adaptive=False, m=m, seed=seed, check_every=check_every, **stop)


@register("adaspdc", needs=("saddle_point", "A", "phi", "reg"), tol=1e-8, max_iter=1000)
def adaspdc(problem, x0=None, *, m=1, seed=0, check_every=1, **stop: Unpack[Stop]):
    """AdaSPDC (seed 000 Alg. 3.1): SPDC with per-coordinate sigma_i and per-iteration tau^t, theta^t; max_iter counts passes."""
    return _spdc(problem, x0, adaptive=True, m=m, seed=seed, check_every=check_every, **stop)
