"""Gaussian graphical models (seed 001 Ch 6-9): structure learning and the item field.

* :mod:`graphical.likelihood`: the Gaussian negative log-likelihood over precisions (Eq 6.4), its gradient.
* :mod:`graphical.admm`: the penalised-likelihood ADMM (eigen-decomposition X-step, pluggable prox) and
  the certified duality gap of the l1 family (Eqs 6.5/6.6).
* :mod:`graphical.penalties`: the (weighted) elementwise l1 penalty.
* :mod:`graphical.glasso`: the graphical lasso (Eq 6.5).
* :mod:`graphical.reweighted`: the log penalty (Eq 6.7) and Liu-Ihler's (Eq 6.8) by reweighted l1.
* :mod:`graphical.degree_prior`: the convex scale-free prior (Prop 7.2, §7.4), its prox by dual
  decomposition (Alg 7.1) and the ADMM with it; :mod:`graphical.owl` the row prox (Alg 7.2).
* :mod:`graphical.generators`: the scale-free Gaussian models of §7.5.1.
* :mod:`graphical.thresholding`: correlation, mutual-information and conditional-covariance (CCT)
  thresholding (§6.3); :mod:`graphical.shortcut` SHORTCUT with maxProduct (Alg 8.1/8.2);
  :mod:`graphical.neighbourhood` neighbourhood selection; :mod:`graphical.walk_summable` the
  generators of §8.3.1; :mod:`graphical.structure_mle` maximum likelihood on a fixed graph.
* :mod:`graphical.gaussian_bp` Gaussian belief propagation and the Bethe log-det;
  :mod:`graphical.item_field` the item field (Eq 9.3, Alg 9.1) and its Bethe-ML baseline (Ch 9).
* :mod:`graphical.checks`: the bad-input checks of a covariance, a graph, a degree prior.

Depends on ``solvers`` only (its prox, Run bookkeeping, InputError).
"""

import solvers.kernel_cache  # noqa: F401  (keys numba's cache by the sources before any kernel compiles)

from .degree_prior import ScaleFreePrior, degree_function, lovasz_omega, scale_free_precision
from .glasso import graphical_lasso
from .likelihood import gaussian_nll, gaussian_nll_grad
from .reweighted import reweighted_l1

__all__ = [
    "ScaleFreePrior",
    "degree_function",
    "gaussian_nll",
    "gaussian_nll_grad",
    "graphical_lasso",
    "lovasz_omega",
    "reweighted_l1",
    "scale_free_precision",
]
