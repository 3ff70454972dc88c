"""Machine learning markets (seed 000, section 2.8; Storkey et al. 2012).

Agents with beliefs, wealth and utilities (:mod:`markets.utilities`, :mod:`markets.agents`) trade
Arrow-Debreu goods; the equilibrium prices aggregate their beliefs (:mod:`markets.equilibrium`);
market training moves wealth to the agents that predict well (:mod:`markets.training`); the
labels' log-likelihood has a wealth gradient by one adjoint solve per item (:mod:`markets.gradient`);
:class:`MarketPool` wraps both as an estimator. See ``docs/markets.md``.
"""

import solvers.kernel_cache  # noqa: F401  (keys numba's cache by the sources before any kernel compiles)

from .agents import Agents, make_agents, prepare_beliefs
from .equilibrium import EquilibriumResult, check_equilibrium, equilibrium, investments
from .estimator import MarketPool
from .gradient import WealthGradient, wealth_gradient
from .training import TrainingResult, train_market
from .utilities import Exponential, Isoelastic, Logarithmic, Utility, make_utility

__all__ = [
    "Agents",
    "make_agents",
    "prepare_beliefs",
    "EquilibriumResult",
    "check_equilibrium",
    "equilibrium",
    "investments",
    "MarketPool",
    "WealthGradient",
    "wealth_gradient",
    "TrainingResult",
    "train_market",
    "Exponential",
    "Isoelastic",
    "Logarithmic",
    "Utility",
    "make_utility",
]
