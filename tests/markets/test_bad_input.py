"""Bad input gets a clear error naming the argument (PredictionError is a ValueError)."""

import numpy as np
import pytest

from aggregators.validation import PredictionError
from markets import MarketPool, equilibrium, make_agents, train_market

from .conftest import random_beliefs


@pytest.fixture
def lp(rng):
    return random_beliefs(rng, 5, 3, 4)


@pytest.mark.parametrize("wealth", [[1, 0, 1], [1, -1, 1], [1, np.nan, 1], [1, np.inf, 1], [1, 2], 3.0, "abc"])
def test_bad_wealth(lp, wealth):
    with pytest.raises(ValueError, match="wealth"):
        equilibrium(lp, 2.0, wealth)


@pytest.mark.parametrize("eta", [0, -2.0, np.nan, np.inf])
def test_bad_eta(lp, eta):
    with pytest.raises(ValueError, match="eta"):
        equilibrium(lp, [2.0, eta, 1.0])


def test_one_agent_market(rng):
    one = random_beliefs(rng, 5, 1, 4)
    with pytest.raises(ValueError, match="two agents"):
        equilibrium(one, "log")
    with pytest.raises(ValueError, match="two agents"):
        make_agents("log", None, 1)
    with pytest.raises(PredictionError, match="two agents"):
        MarketPool().fit(one, np.zeros(5, int))


def test_shape_mismatches(lp):
    with pytest.raises(ValueError, match="utilities: got 2 utilities for 3 agents"):
        equilibrium(lp, ["log", "log"])
    with pytest.raises(PredictionError, match="beliefs.*agents"):
        equilibrium(lp, make_agents(["log", "log"]))
    with pytest.raises(PredictionError, match="shape"):
        equilibrium(lp[0], "log")
    with pytest.raises(PredictionError, match="y"):
        train_market(lp, [0, 1], "log")
    with pytest.raises(PredictionError, match="y"):
        train_market(lp, [0, 1, 2, 3, 4 + 5], "log")
    with pytest.raises(ValueError, match="start"):
        equilibrium(lp, 2.0, start=np.zeros((2, 2)))


def test_nonfinite_and_unnormalised_beliefs(lp):
    bad = lp.copy()
    bad[1, 2, 0] = np.nan
    with pytest.raises(PredictionError, match="NaN"):
        equilibrium(bad, "log")
    with pytest.raises(PredictionError, match="sum to one"):
        equilibrium(np.full((2, 3, 4), 0.3), "log", kind="probs")


def test_zero_beliefs_policy(lp):
    z = lp.copy()
    z[0, 1, 2] = -np.inf
    # default: floored and counted
    res = equilibrium(z, "exp")
    assert res.n_floored == 1 and res.all_converged
    # no floor: exponential agents cannot take a zero belief ...
    with pytest.raises(PredictionError, match="exponential") as e:
        equilibrium(z, ["log", "exp", 2.0], floor=None)
    assert e.value.item == 0 and e.value.agent == 1
    # ... log and isoelastic agents can
    assert equilibrium(z, ["log", 3.0, 2.0], floor=None).all_converged
    # but not a good that nobody believes possible
    dead = lp.copy()
    dead[0, :, 3] = -np.inf
    with pytest.raises(PredictionError, match="every agent"):
        equilibrium(dead, 2.0, floor=None)


def test_bad_options(lp):
    y = np.zeros(5, int)
    with pytest.raises(ValueError, match="method"):
        equilibrium(lp, 2.0, method="magic")
    with pytest.raises(ValueError, match="method"):
        equilibrium(lp, 2.0, method="closed_form")
    with pytest.raises(ValueError, match="method"):
        equilibrium(lp, "exp", method="fixed_point")
    with pytest.raises(ValueError, match="tol"):
        equilibrium(lp, 2.0, tol=-1)
    with pytest.raises(ValueError, match="mode"):
        train_market(lp, y, "log", mode="sometimes")
    with pytest.raises(ValueError, match="batch_size"):
        train_market(lp, y, "log", batch_size=0)
    with pytest.raises(ValueError, match="max_epochs"):
        train_market(lp, y, "log", max_epochs=0)
    with pytest.raises(ValueError, match="utility"):
        equilibrium(lp, ["log", "banana", 2.0])


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda lp: equilibrium(lp, 2.0, [1, 0, 1]), "wealth"),
        (lambda lp: equilibrium(lp, [2.0, -1.0, 1.0]), "eta"),
        (lambda lp: equilibrium(lp, ["log", "nope", "exp"]), "utility"),
        (lambda lp: equilibrium(lp, 2.0, method="bisection"), "method"),
        (lambda lp: equilibrium(lp, 2.0, tol=-1.0), "tol"),
        (lambda lp: equilibrium(lp, 2.0, start=np.zeros((2, 4))), "start"),
        (lambda lp: train_market(lp, [0, 1, 2, 3, 0], 2.0, mode="sometimes"), "mode"),
        (lambda lp: train_market(lp, [0, 1, 2, 3, 0], 2.0, max_epochs=0), "max_epochs"),
        (lambda lp: make_agents("log", n_agents=1), "n_agents"),
        (lambda lp: MarketPool().set_params(colour=1), "colour"),
    ],
)
def test_markets_raise_the_librarys_one_structured_error(lp, call, field):
    """Markets raise the same :class:`solvers.errors.InputError` as aggregators, naming the field."""
    from solvers.errors import InputError

    with pytest.raises(InputError) as ei:
        call(lp)
    assert ei.value.field == field and isinstance(ei.value, PredictionError)


def test_a_bad_eta_among_many_names_its_agent():
    """One negative eta among 1,000 (an eta per agent): the error names the field and the agent."""
    from solvers.errors import InputError

    etas = list(np.linspace(1.5, 30.0, 1000))
    etas[737] = -2.0
    with pytest.raises(InputError) as ei:
        make_agents(etas)
    assert ei.value.field == "eta" and ei.value.agent == 737
    assert ei.value.to_dict()["agent"] == 737 and "got -2.0" in ei.value.reason
