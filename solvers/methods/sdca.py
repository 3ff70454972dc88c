"""SDCA (seed 001 Alg 2.1, L438-503) for L2-regularised linear models, three step variants.

Problem ``(1/n) sum_i phi(a_i . x, y_i) + (mu/2)|x|^2`` with ``mu = l2 > 0`` and no l1 term. One dual
scalar per term (L493-503) in the seed's sign convention ``x = -(1/(mu n)) sum_i beta_i a_i``:

- ``variant="exact"``: ``beta_j = argmin phi_j*(b) + (mu n/2)|x - (b - beta_j) a_j/(mu n)|^2``,
  computed as the prox of ``phi_j`` (Primal SDCA, Alg 3.2 / Eq. 3.6; closed form for the squared and
  (smoothed) hinge losses, safeguarded Newton for the logistic loss);
- ``variant="line_search"``: the interval line search (a) of L479-491 between ``beta_j`` and
  ``phi'(a_j . x)``;
- ``variant="constant"``: the same with the constant ``s = mu n/(mu n + L)`` (b), L the largest
  smoothness constant of the terms without the ridge (not for the hinge).

Stops when the duality gap ``P(x) - D(beta)`` (L465-467) is ``<= tol``. Hinge losses are allowed
(non-smooth; the seed returns a tail average then, we return the last iterate and certify it by
the gap).
"""

from __future__ import annotations

from typing import Unpack

import numpy as np

from ..errors import InputError
from ..kernels_incremental.multinomial_sdca import mn_sdca_dual_terms, mn_sdca_epoch
from ..kernels_incremental.table_methods import sdca_dual_terms, sdca_epoch
from ..monitor import Stop
from ..problem import capability
from ..registry import register
from ._incremental_common import DEFAULT_TOL, IndexDraws, Monitor

VARIANTS = {"exact": 0, "line_search": 1, "constant": 2}


@register("sdca", needs=("ridge_terms",), constraints=("none",), tol=DEFAULT_TOL, max_iter=300)
def sdca(
    problem, x0=None, *, variant: str | None = None, order="random", seed=0, off_clock=False, **stop: Unpack[Stop]
):
    """SDCA (seed 001 Alg 2.1): ``variant`` "exact" | "line_search" | "constant"; stops on the duality gap.

    Starts from ``beta = 0`` (so ``x = 0``; an ``x0`` is not used: SDCA's start is set by the duals).
    Multinomial logistic regression: one K-dimensional dual per term
    (:mod:`solvers.kernels_incremental.multinomial_sdca`), variants "line_search" (the default there;
    elsewhere "exact") and "constant"; "exact" is refused (no usable closed form, seed 001 L472).
    """
    draw = IndexDraws(order, seed, problem.n_terms)
    if variant is None:  # the seed's exact step where it has a usable form, else the line search
        variant = "line_search" if capability(problem, "multinomial_terms") is not None else "exact"
    if variant not in VARIANTS:
        raise InputError("variant", f"must be one of {sorted(VARIANTS)}; got {variant!r}")
    mu = float(problem.l2)
    if mu <= 0 or capability(problem, "l1", 0.0):
        raise InputError("problem", "solver 'sdca' needs l2 > 0 and l1 = 0")
    if capability(problem, "multinomial_terms") is not None:
        return _sdca_multinomial(problem, variant=variant, draw=draw, off_clock=off_clock, **stop)
    if variant == "constant" and not np.isfinite(problem.curvature):
        raise InputError("variant", "sdca variant 'constant' needs a smooth loss (the hinge has no L); use 'exact'")
    lt = problem.linear_terms
    n = problem.n_terms
    Lphi = problem.curvature * float(lt.sqnorms.max()) if np.isfinite(problem.curvature) else np.inf
    sconst = mu * n / (mu * n + Lphi) if np.isfinite(Lphi) else 0.0
    v = VARIANTS[variant]
    return _loop(
        problem,
        np.zeros(n),
        mu,
        variant,
        draw,
        off_clock,
        dual_terms=lambda beta: sdca_dual_terms(lt.loss, beta, lt.y, lt.smoothing),
        epoch=lambda idx, beta, x: sdca_epoch(
            lt.loss, *lt.args(), lt.y, lt.smoothing, idx, beta, x, lt.sqnorms, mu, v, sconst
        ),
        **stop,
    )


def _loop(problem, beta, mu, variant, draw, off_clock, *, dual_terms, epoch, **stop: Unpack[Stop]):
    """SDCA's outer loop: the duality gap ``P(x) - D(beta)`` (L465-467),
    ``D = -(1/n) sum_i phi*(beta_i) - (mu/2)|x|^2``, checked before every epoch (off the clock with
    ``off_clock``), then one epoch of coordinate steps from ``beta = 0, x = 0``."""
    n = problem.n_terms
    mon = Monitor(problem, "sdca", **stop)
    mon.off_clock = off_clock
    x = np.zeros(problem.dim)
    k = 0
    while True:
        if off_clock:
            mon.clock.pause()
        P = problem.value(x)
        D = -dual_terms(beta) / n - 0.5 * mu * float(x @ x)
        if off_clock:
            mon.clock.resume()
        gap = P - D
        mon.passes += 0 if k == 0 else 1
        if mon.check(x, k, value_grad=(P, None), measure=gap, dual=D):
            break
        epoch(draw(), beta, x)
        k += 1
    return mon.result(x, k, dual=beta, duality_gap=gap, variant=variant, compiled=True)


def _sdca_multinomial(problem, *, variant, draw, off_clock, **stop: Unpack[Stop]):
    """SDCA on :class:`~solvers.problems.linear_models.MultinomialLogistic` (seed 001 section 2.3.2):
    duals ``beta`` (n, K) with ``W = -(1/(mu n)) sum_i a_i beta_i^T``; the duality gap
    ``P(W) - D(beta)``, ``D = -(1/n) sum_i phi*(beta_i) - (mu/2)|W|^2``, is the stopping measure."""
    if variant == "exact":
        raise InputError(
            "variant",
            "sdca variant 'exact' has no usable closed form for the multinomial logistic loss "
            "(seed 001 L472); use 'line_search' or 'constant'",
        )
    mt = problem.multinomial_terms
    n, K = problem.n_terms, mt.K
    mu = float(problem.l2)
    sqn = np.ascontiguousarray(problem.sqnorms, dtype=np.float64)
    Lphi = 0.5 * float(sqn.max())  # the softmax loss's Hessian is <= I/2 in the logits
    sconst = mu * n / (mu * n + Lphi)
    v = VARIANTS[variant]
    return _loop(
        problem,
        np.zeros((n, K)),
        mu,
        variant,
        draw,
        off_clock,
        dual_terms=lambda beta: mn_sdca_dual_terms(beta, mt.labels),
        epoch=lambda idx, beta, x: mn_sdca_epoch(*mt.args(), mt.labels, idx, beta, x, sqn, mu, v, sconst),
        **stop,
    )
