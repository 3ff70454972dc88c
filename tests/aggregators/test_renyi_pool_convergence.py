"""``RenyiPool`` says when its weight solver stopped unconverged (issue core-at-scale §3)."""

from __future__ import annotations

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from aggregators.renyi import RenyiPool
from tests.aggregators.test_renyi_pool import biased_agents


def test_learn_per_agent_stopped_early_warns_and_says_so():
    lp, y = biased_agents(n=120, seed=4)
    with pytest.warns(ConvergenceWarning, match="unconverged"):
        per = RenyiPool(gamma="learn_per_agent", gamma_grid=[1.0, 0.1], max_iter=3).fit(lp, y)
    assert per.converged_ is False and per.fit_result_.converged is False
    assert per.gamma_.shape == (5,)


def test_converged_fit_is_flagged_and_silent():
    lp, y = biased_agents(n=120, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        pool = RenyiPool(gamma=0.3, tol=1e-6).fit(lp, y)
    assert pool.converged_ is True and pool.fit_result_.converged is True


def test_learn_per_agent_converges_or_warns():
    lp, y = biased_agents(n=120, seed=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        per = RenyiPool(gamma="learn_per_agent", gamma_grid=[1.0, 0.3, 0.1], max_iter=200).fit(lp, y)
    warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    assert per.converged_ == per.fit_result_.converged
    assert warned == (not per.converged_)
