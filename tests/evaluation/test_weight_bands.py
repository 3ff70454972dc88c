"""The competition's credible bands (evaluation.weight_posterior.credit_bands): within the budget on
every validation item; above it on a random subset of items, with the stated effect (intervals about
sqrt(n/m) wider than given every item) measured against the bands given every item."""

import numpy as np

from aggregators.logpool import LogPool
from evaluation.weight_posterior import credit_bands, fit_posterior
from tests.samplers.test_pool_weights import agents


def _bands(lp, y, **kw):
    pool = LogPool().fit(lp, y)
    credit = [{"index": a} for a in range(lp.shape[1])]
    return credit_bands(credit, pool, lp, y, **kw), credit, pool


def test_within_the_budget_every_item_is_used():
    lp, y = agents(n=200, M=3, K=3, seed=5)
    msg, credit, pool = _bands(lp, y)
    assert msg.startswith("95 % credible intervals") and "given a random" not in msg
    ref = fit_posterior(LogPool().fit(lp, y), lp, y, samples=800, options={"n_leapfrog": 8})
    np.testing.assert_allclose([c["weight_log_interval"] for c in credit], ref["intervals"], rtol=1e-12)


def test_above_the_budget_a_subset_with_the_stated_widening():
    lp, y = agents(n=1600, M=3, K=3, seed=5)
    budget = 400 * 3 * 3  # m = 400 of n = 1600 items: the intervals about sqrt(4) = 2x wider
    msg, credit, pool = _bands(lp, y, budget=budget)
    assert "given a random 400 of the 1600 validation items" in msg and "about 2.0x wider" in msg, msg
    assert "up to 4.0x for a weight near 0" in msg, msg
    for c in credit:
        lo, hi = c["weight_log_interval"]
        assert 0 <= lo <= c["weight_log_mean"] <= hi <= 1
    _, full, _ = _bands(lp, y, budget=lp.size)
    width = lambda cr: np.array([c["weight_log_interval"][1] - c["weight_log_interval"][0] for c in cr])
    ratio = width(credit) / width(full)
    inside = pool.weights_ > 0.05  # here two weights inside the simplex (about 0.75, 0.25) and one at 0
    assert inside.sum() == 2
    # measured with 3,000 well-mixed draws: 2.27x inside, 2.86x at 0; 800 draws add their noise
    assert np.all((ratio[inside] > 1.5) & (ratio[inside] < 3.0)), ratio
    assert np.all((ratio[~inside] > 1.5) & (ratio[~inside] < 6.0)), ratio
    # the subset's bands cover the weights given every item (they are wider, centred near them)
    for c, f in zip(credit, full, strict=True):
        assert c["weight_log_interval"][0] <= f["weight_log_mean"] <= c["weight_log_interval"][1]


def test_an_item_over_the_budget_is_reported():
    lp, y = agents(n=20, M=3, K=3)
    msg, credit, _ = _bands(lp, y, budget=10)
    assert msg.startswith("not computed") and "weight_log_interval" not in credit[0]
