"""The one-pass leave-one-out log pools (evaluation.leave_one_out) against the per-agent computation
they replace: the registry's log pool over the other agents with renormalised weights, one agent at a
time (independent of the subtraction used here)."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.metrics import perplexity
from aggregators.registry import aggregate
from evaluation.aggregation import aggregate_submissions
from evaluation.leave_one_out import DIRECT_ABOVE, loo_log_pool_perplexities


def _per_agent(lp: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    out = []
    for a in range(lp.shape[1]):
        keep = np.arange(lp.shape[1]) != a
        out.append(perplexity(aggregate("log", lp[:, keep], weights=w[keep] / w[keep].sum())[0], y))
    return np.array(out)


def _data(seed: int, n: int, a: int, k: int, zeros: bool = False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    sharp = rng.uniform(0.2, 3.0, a)
    logits = rng.normal(size=(n, a, k)) + sharp[None, :, None] * np.eye(k)[y][:, None, :]
    lp = logits - np.logaddexp.reduce(logits, axis=2, keepdims=True)
    if zeros:  # some zero probabilities: both sides floor them
        lp[rng.random(lp.shape) < 0.02] = -np.inf
        lp[:, :, 0] = np.maximum(lp[:, :, 0], -5.0)  # every row keeps some mass
    return lp, y


@pytest.mark.parametrize(
    "n,a,k,weights",
    [
        (300, 6, 4, "dirichlet"),
        (200, 30, 16, "sparse"),  # most weights zero, as a fitted log pool's
        (150, 5, 3, "dominant"),  # one agent above DIRECT_ABOVE: summed directly
        (400, 2, 2, "dirichlet"),
    ],
)
def test_equals_the_per_agent_log_pools(n, a, k, weights):
    rng = np.random.default_rng(n + a)
    lp, y = _data(n, n, a, k, zeros=(k > 4))
    if weights == "dirichlet":
        w = rng.dirichlet(np.ones(a))
    elif weights == "sparse":
        w = np.zeros(a)
        w[rng.choice(a, 4, replace=False)] = rng.dirichlet(np.ones(4))
    else:
        w = np.full(a, 0.2 / (a - 1))
        w[1] = 0.8
        assert w[1] > DIRECT_ABOVE
    got = loo_log_pool_perplexities(lp, y, w)
    np.testing.assert_allclose(got, _per_agent(lp, y, w), rtol=1e-10, atol=0)
    full = perplexity(aggregate("log", lp, weights=w)[0], y)
    assert np.allclose(got[w == 0], full, rtol=1e-12)  # a weightless agent changes nothing


def test_an_agent_holding_all_the_weight_is_an_error():
    lp, y = _data(1, 50, 3, 4)
    with pytest.raises(ValueError, match="holds all the weight"):
        loo_log_pool_perplexities(lp, y, [0.0, 1.0, 0.0])


def test_the_competition_credit_uses_it_when_refits_are_too_dear(monkeypatch):
    import evaluation.aggregation as agg

    lp, y = _data(7, 400, 8, 5)
    monkeypatch.setattr(agg, "LOO_REFIT_BUDGET", 0)  # force the renormalised credit at this small size
    res = aggregate_submissions(lp[:200], y[:200], lp[200:], y[200:], methods=("log",), etas=())
    assert res["loo_mode"] == "renormalised"
    w = np.array([c["weight_log"] for c in res["credit"]])
    base = perplexity(aggregate("log", lp[200:], weights=w / w.sum())[0], y[200:])
    want = _per_agent(lp[200:], y[200:], w / w.sum()) - base
    np.testing.assert_allclose([c["loo_gain"] for c in res["credit"]], want, rtol=0, atol=1e-9)
