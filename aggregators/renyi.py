"""Weighted Rényi divergence aggregators (seed 000, Eq. 2.6-2.8, 2.21-2.22): the public names.

- :func:`renyi_aggregate` pools given predictions for given weights, γ (and annealing λ);
  the fixed point is solved by Newton in log coordinates (``method="plain"`` is the baseline).
- :class:`RenyiPool` learns the weights (and optionally γ, λ) on a validation set.
- :func:`renyi_variational` is the seed's Algorithm 2.1 (with the corrected mixture weights).

The implementation is split in small modules: :mod:`aggregators.renyi_kernels` (compiled per-item
kernels), :mod:`aggregators.renyi_fixed_point` (the aggregate), :mod:`aggregators.renyi_gradient`
(exact gradients by implicit differentiation, the weight-learning problem),
:mod:`aggregators.renyi_variational` (Algorithm 2.1) and :mod:`aggregators.renyi_pool` (the estimator).
"""

from .renyi_fixed_point import FixedPointResult, mixture_weights, renyi_aggregate, renyi_objective, solve_fixed_point
from .renyi_gradient import RenyiProblem, renyi_loglik_grad
from .renyi_pool import DEFAULT_GAMMA_GRID, RenyiPool
from .renyi_variational import VariationalResult, renyi_variational

__all__ = [
    "renyi_aggregate",
    "solve_fixed_point",
    "FixedPointResult",
    "mixture_weights",
    "renyi_objective",
    "RenyiPool",
    "DEFAULT_GAMMA_GRID",
    "RenyiProblem",
    "renyi_loglik_grad",
    "renyi_variational",
    "VariationalResult",
]
