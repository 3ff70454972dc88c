"""Non-convex log penalties solved by reweighted l1 (seed 001 §6.4, Eqs 6.7 and 6.8).

Both are majorisation-minimisation (l.2566): at the current Θ each log term is replaced by its
tangent, a weighted l1 term, and the weighted graphical lasso is solved (warm-started ADMM of
:mod:`graphical.admm`); the non-convex objective cannot increase from one stage to the next.

* ``"log"`` (Eq 6.7, Candès et al. 2008): ``λ Σ_{i≠j} log(|Θ_ij| + ε)``; weights ``λ / (|Θ_ij| + ε)``.
* ``"liu_ihler"`` (Eq 6.8): ``λ Σ_i log(|Θ_i*|_1 - |Θ_ii| + ε) + γ Σ_i |Θ_ii|``; entry ``(i, j)`` of row
  ``i`` gets ``λ / (s_i + ε)`` with ``s_i = Σ_{j≠i} |Θ_ij|`` (symmetrised: the mean of the two rows'
  weights, the same penalty on symmetric Θ), the diagonal ``γ``.

The first stage is the plain graphical lasso at weight ``λ`` (``γ`` on the diagonal for Eq 6.8):
started from the tangent at ``Θ = 0`` every weight would be ``λ/ε`` and the empty graph would be a
fixed point.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.checks import check_choice, check_count, check_positive
from solvers.result import SolveResult

from .admm import penalised_likelihood_admm
from .checks import as_covariance
from .likelihood import gaussian_nll
from .penalties import WeightedL1


def _row_sums(Theta: np.ndarray) -> np.ndarray:
    return np.abs(Theta).sum(axis=1) - np.abs(np.diag(Theta))


def log_penalty_objective(C: np.ndarray, Theta: np.ndarray, lam: float, eps: float, kind: str, gamma: float) -> float:
    """The non-convex objective of Eq 6.7 (``kind="log"``) or Eq 6.8 (``"liu_ihler"``)."""
    nll = gaussian_nll(C, Theta)
    if kind == "log":
        off = ~np.eye(C.shape[0], dtype=bool)
        return nll + lam * float(np.sum(np.log(np.abs(Theta[off]) + eps)))
    return nll + lam * float(np.sum(np.log(_row_sums(Theta) + eps))) + gamma * float(np.sum(np.abs(np.diag(Theta))))


def _tangent_weights(Theta: np.ndarray, lam: float, eps: float, kind: str, gamma: float) -> np.ndarray:
    if kind == "log":
        W = lam / (np.abs(Theta) + eps)
        np.fill_diagonal(W, 0.0)
        return W
    r = lam / (_row_sums(Theta) + eps)
    W = np.broadcast_to(r[:, None], Theta.shape).copy()
    np.fill_diagonal(W, gamma)
    return W


def reweighted_l1(
    covariance: Any,
    lam: float,
    *,
    kind: str = "log",
    eps: float = 0.1,
    gamma: float = 0.0,
    n_stages: int = 10,
    stage_tol: float = 1e-4,
    **options: Any,
) -> SolveResult:
    """Minimise Eq 6.7 or 6.8 by reweighted l1 (at most ``n_stages`` weighted graphical lassos after
    the first, stopping when ``|Θ - Θ_prev|_max < stage_tol``). ``options``: the ADMM's (its ``tol``
    is each stage's duality gap). ``result.extra["objectives"]`` holds the non-convex objective after
    each stage; ``n_passes`` counts every eigen-decomposition of every stage."""
    check_choice(kind, ("log", "liu_ihler"), field="kind")
    check_count(n_stages, field="n_stages")
    eps = check_positive(eps, field="eps")
    stage_tol = check_positive(stage_tol, field="stage_tol")
    C = as_covariance(covariance)
    p = C.shape[0]
    W0 = WeightedL1.uniform(lam, p).W
    if kind == "liu_ihler":
        np.fill_diagonal(W0, gamma)
    res = penalised_likelihood_admm(C, WeightedL1(W0), method="reweighted_l1", **options)
    passes, seconds = res.n_passes, res.seconds
    objectives = [log_penalty_objective(C, res.x, lam, eps, kind, gamma)]
    for _ in range(n_stages):
        prev = res.x
        W = _tangent_weights(prev, lam, eps, kind, gamma)
        res = penalised_likelihood_admm(C, WeightedL1(W), method="reweighted_l1", warm_start=res, **options)
        passes += res.n_passes
        seconds += res.seconds
        objectives.append(log_penalty_objective(C, res.x, lam, eps, kind, gamma))
        if float(np.max(np.abs(res.x - prev))) < stage_tol:
            break
    res.n_passes, res.seconds = passes, seconds
    res.fun = objectives[-1]
    res.extra["objectives"] = objectives
    res.extra["stages"] = len(objectives)
    return res
