"""``MarketPool``: a machine learning market as a scikit-learn-shaped estimator (Algorithm 2.4).

``fit(log_probs, y)`` trains the wealth on labelled items (market training); ``predict(log_probs)``
returns the equilibrium prices under the trained wealth as normalised log-probabilities
``(n_items, n_classes)`` (market test). :class:`MarketPool` is an :class:`aggregators.base.Pool`
(parameters, ``repr``, ``predict``, ``predict_proba``, ``score`` are the base class's): markets
depend on aggregators for the one validator and this estimator base, never the other way.
``predict_with_info`` returns the equilibrium's checks in a :class:`MarketPredictInfo` instead of
storing them on the estimator.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from aggregators.base import Pool, PredictInfo
from aggregators.validation import DEFAULT_FLOOR, Kind
from solvers.errors import InputError
from solvers.progress import ProgressFn

from .agents import Agents, make_agents
from .equilibrium import EquilibriumResult, equilibrium
from .training import train_market
from .utilities import EXPONENTIAL


@dataclass(frozen=True)
class MarketPredictInfo(PredictInfo):
    """:class:`~aggregators.base.PredictInfo` of a market: also the equilibrium with its checks
    (prices, iterations, clearing, budgets)."""

    equilibrium: EquilibriumResult | None = None


@dataclass(eq=False, repr=False)
class MarketPool(Pool):
    """Machine learning market aggregator (Storkey et al. 2012; seed 000 section 2.8).

    Parameters
    ----------
    utilities : ``"log"``, ``"exp"``, a number ``eta`` (isoelastic) or one spec per agent.
    wealth : initial wealth (default equal); normalised to sum to one.
    mode, batch_size, max_epochs, wealth_tol : market training options (:func:`train_market`).
    tol : equilibrium clearing tolerance; method : ``"auto"``, ``"newton"`` or the seed's ``"fixed_point"``.
    floor : probability floor for beliefs (``None`` rejects zeros where a utility cannot take them).

    Learnt state: ``wealth_``, ``wealth_history_`` (per epoch), ``n_epochs_``, ``converged_``,
    ``training_`` (the :class:`~markets.training.TrainingResult`), ``n_agents_``, ``n_floored_``.
    """

    utilities: Any = "log"
    wealth: Any = None
    _: KW_ONLY
    mode: str = "batch"
    batch_size: int | None = None
    max_epochs: int = 100
    wealth_tol: float = 1e-10
    tol: float = 1e-10
    method: str = "auto"
    floor: float | None = DEFAULT_FLOOR

    def _agents(self, n_agents: int) -> Agents:
        return make_agents(self.utilities, self.wealth, n_agents)

    def _fit(
        self, log_probs: np.ndarray, y: np.ndarray, progress: ProgressFn | None, *, sample_weight: np.ndarray | None
    ) -> None:
        """Train the wealth on labelled items (:func:`markets.training.train_market`, which documents
        ``sample_weight``); every hyper-parameter but the agents' is a training option of the same name."""
        if log_probs.shape[1] < 2:
            raise InputError("predictions", "a market needs at least two agents; got 1", code="one_agent")
        agents = self._agents(log_probs.shape[1])
        options = {k: v for k, v in self.get_params().items() if k not in ("utilities", "wealth")}
        res = train_market(log_probs, y, agents, **options, progress=progress, sample_weight=sample_weight)
        # An agent that lost everything (wealth exactly 0: it gave zero probability to the labels)
        # spends nothing, so it cannot move a price; it is kept in the test-phase market with the
        # smallest positive wealth (its spending is below rounding) because markets need W > 0.
        # ``wealth_`` reports the trained wealth as it is.
        self.wealth_ = res.wealth
        self.rebuild_agents()
        self.wealth_history_ = res.wealth_history
        self.n_epochs_ = res.n_epochs
        self.converged_ = res.converged
        self.training_ = res
        self.n_floored_ = res.n_floored

    def rebuild_agents(self) -> None:
        """Set ``agents_``, the test-phase market, from the trained ``wealth_`` (called by ``fit``, and
        after restoring a stored market whose agents were not stored)."""
        W = np.asarray(self.wealth_, dtype=np.float64)
        agents = self._agents(W.shape[0])
        keep = (agents.kind != EXPONENTIAL) & (W <= 0.0)
        self.agents_ = agents.with_wealth(np.where(keep, np.finfo(np.float64).tiny, W))

    def _check_fitted(self) -> None:
        if not hasattr(self, "wealth_"):
            raise RuntimeError("MarketPool: call fit before predict")

    def equilibrium(self, log_probs: Any, *, kind: Kind = "log_probs") -> EquilibriumResult:
        """The market test phase with all checks (prices, iterations, clearing, budgets)."""
        self._check_fitted()
        return equilibrium(
            log_probs,
            self.agents_,
            method="fixed_point" if self.method == "fixed_point" else "auto",
            tol=self.tol,
            kind=kind,
            floor=self.floor,
        )

    def predict_with_info(self, log_probs: Any, *, kind: Kind = "log_probs") -> tuple[np.ndarray, MarketPredictInfo]:
        """Equilibrium log-prices under the trained wealth, (n_items, n_classes), and the
        equilibrium's checks; the estimator is not changed."""
        res = self.equilibrium(log_probs, kind=kind)
        return res.log_prices, MarketPredictInfo(n_floored=res.n_floored, equilibrium=res)
