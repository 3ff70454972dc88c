"""SPDC (Zhang & Xiao 2015, uniform and non-uniform sampling) and AdaSPDC (seed 000 Alg. 3.1, l.1368-1382; App. B l.2473-2512).

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
non-uniform variant the seed compares with (l.1412, Fig. 3.4; the seed gives no formulas, notes 000 s.1.2)
is Zhang & Xiao's (2015, s.3.3), m = 1: sample ``k`` with ``p_k = 1/(2N) + R_k/(2 sum_i R_i)``, and with
``R_bar = (1/N) sum_i R_i``

    tau   = (1/(4 R_bar)) sqrt(gamma/(N lam)),   sigma = (1/(4 R_bar)) sqrt(N lam/gamma)
    theta = 1 - 1/(2N + 4 R_bar sqrt(N/(lam gamma)))
    y_k+  = prox_{s_k phi_k*}(y_k + s_k <x_bar, a_k>),  s_k = sigma/(p_k N)
    x+    = prox_{tau f}(x - tau (r + (y_k+ - y_k) a_k/(p_k N)))

(``p_k >= R_k/(2 N R_bar)`` keeps ``tau s_k (R_k/(p_k N))^2 <= 1/4``, the uniform method's bound). The
step configuration makes P of Eq. 3.41 PSD for every ``S_t`` (App. B Lemma 1 with ``c = sqrt(N lam/(m gamma))``).
With m = 1, a dense A and a ridge or elastic-net regulariser, each pass runs compiled
(:mod:`solvers.kernels.spdc_pass`); otherwise in Python. One pass = N/m iterations; the trace (once per pass) holds the objective, the duality gap, and the
last ``theta^t`` and ``tau^t``. Stopping: the problem's duality gap ``<= tol``.
"""

from __future__ import annotations

import math
from typing import Unpack

import numpy as np
import scipy.sparse as sp

from ..checks import check_count
from ..errors import InputError
from ..kernels.spdc_pass import LOSS_IDS, spdc_pass
from ..monitor import Run, Stop
from ..problem import start_point
from ..prox import ElasticNet, SquaredL2
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


def _steps(R, lam, gamma, m, *, adaptive, nonuniform):
    """Per-coordinate dual steps ``sigma_i``, the x-step weights ``w_i`` (``1/(p_i N)``; 1 when uniform) and the
    sampling probabilities (None: uniform) of the three variants; see the module docstring."""
    N = len(R)
    if nonuniform:
        p = 0.5 / N + 0.5 * R / R.sum()
        w = 1.0 / (p * N)
        return (math.sqrt(N * lam / gamma) / (4 * R.mean())) * w, w, p
    c = math.sqrt(N * lam / (m * gamma))
    return (c / (2 * R)) if adaptive else np.full(N, c / (2 * R.max())), np.ones(N), None  # (3.34)


def _tau_theta(Rt, N, m, lam, gamma, *, nonuniform=False):
    """``tau^t`` (3.36) and ``theta^t`` (3.39) for ``R^t_max = Rt`` (a scalar, or an array: one value per
    coordinate when m = 1); Zhang & Xiao's constants for the non-uniform variant (``Rt`` then ``R_bar``)."""
    if nonuniform:
        return math.sqrt(gamma / (N * lam)) / (4 * Rt), 1.0 - 1.0 / (2 * N + 4 * Rt * math.sqrt(N / (lam * gamma)))
    c = math.sqrt(N * lam / (m * gamma))
    return 1.0 / (2 * Rt * c), 1.0 - 1.0 / (N / m + Rt * math.sqrt((N / m) / (lam * gamma)))


def _compiled_reg(A, reg, m):
    """``(l1, l2)`` of a ridge / elastic-net regulariser when the compiled pass applies (m = 1, dense A)."""
    if m != 1 or sp.issparse(A):
        return None
    if isinstance(reg, SquaredL2):
        return 0.0, reg.lam
    if isinstance(reg, ElasticNet):
        return reg.lam, reg.lam * reg.gamma
    return None


def _spdc(problem, x0, *, adaptive, m, seed, check_every, sampling="uniform", **stop: Unpack[Stop]) -> SolveResult:
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(check_every, field="check_every", minimum=1)
    A, R, lam, gamma = _erm_parts(problem)
    N = problem.n_terms
    check_count(m, field="m", minimum=1)
    if m > N:
        raise InputError("m", f"must be at most the number of dual blocks N = {N}; got {m}")
    if sampling not in ("uniform", "nonuniform"):
        raise InputError("sampling", f"must be 'uniform' or 'nonuniform'; got {sampling!r}")
    nonuniform = sampling == "nonuniform"
    if nonuniform and m != 1:
        raise InputError("m", f"non-uniform SPDC (Zhang & Xiao 2015) samples one dual coordinate (m = 1); got {m}")
    method = "adaspdc" if adaptive else "spdc"
    run = Run(method, **stop)
    rng = np.random.default_rng(seed)
    sigma, w, p = _steps(R, lam, gamma, m, adaptive=adaptive, nonuniform=nonuniform)
    # tau^t, theta^t per coordinate (m = 1: S_t = {k}) or from R^t_max of each drawn set (m > 1)
    Rt_of = (lambda S: float(R[S].max())) if adaptive else (lambda S: float(R.max()))
    tau_k, theta_k = _tau_theta(R if adaptive else np.full(N, R.max()), N, m, lam, gamma)
    if nonuniform:
        tau_k, theta_k = (np.full(N, v) for v in _tau_theta(float(R.mean()), N, 1, lam, gamma, nonuniform=True))
    phi, reg = problem.phi, problem.reg
    compiled = _compiled_reg(A, reg, m)
    if compiled is not None:
        A = np.ascontiguousarray(A, dtype=float)
    x = np.array(start_point(problem, x0), dtype=float)
    y = np.zeros(N)
    x_bar = x.copy()
    r = (A.T @ y) / N
    iters = max(1, N // m)
    tau = theta = 0.0
    converged, message, k = False, f"max_iter ({max_iter} passes) reached", 0
    for k in range(1, max_iter + 1):
        draws = rng.choice(N, size=iters, p=p) if m == 1 else None
        if compiled is not None and draws is not None:
            spdc_pass(
                A, phi.b, LOSS_IDS[phi.kind], phi.gamma, draws, sigma, w, tau_k, theta_k, *compiled, x, x_bar, y, r
            )
            tau, theta = float(tau_k[draws[-1]]), float(theta_k[draws[-1]])
            run.passes += iters / N
        else:
            for it in range(iters):
                S = draws[it : it + 1] if draws is not None else rng.choice(N, size=m, replace=False)
                A_S = A[S]
                if m == 1:
                    tau, theta = float(tau_k[S[0]]), float(theta_k[S[0]])
                else:
                    tau, theta = _tau_theta(Rt_of(S), N, m, lam, gamma)
                s_S = sigma[S]
                y_new = phi.conj_prox(y[S] + s_S * (A_S @ x_bar), s_S, S)
                dy = y_new - y[S]
                x_new = reg.prox(x - tau * (r + (A_S.T @ (w[S] * dy)) / m), tau)
                x_bar = x_new + theta * (x_new - x)
                r = r + (A_S.T @ dy) / N
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
def spdc(problem, x0=None, *, m=1, sampling="uniform", seed=0, check_every=1, **stop: Unpack[Stop]):
    """SPDC (Zhang & Xiao 2015): ``sampling="uniform"`` (m dual coordinates, global R = max |a_i|) or
    ``"nonuniform"`` (m = 1, p_k from the row norms); max_iter counts passes."""
    return _spdc(problem, x0, adaptive=False, m=m, seed=seed, check_every=check_every, sampling=sampling, **stop)


@register("adaspdc", needs=("saddle_point", "A", "phi", "reg"), tol=1e-8, max_iter=1000)
def adaspdc(problem, x0=None, *, m=1, seed=0, check_every=1, **stop: Unpack[Stop]):
    """AdaSPDC (seed 000 Alg. 3.1): SPDC with per-coordinate sigma_i and per-iteration tau^t, theta^t; max_iter counts passes."""
    return _spdc(problem, x0, adaptive=True, m=m, seed=seed, check_every=check_every, **stop)
