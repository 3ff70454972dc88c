"""The competition's aggregation run from Python, on arrays, without a server."""

from __future__ import annotations

import numpy as np
import pytest

from aggregators.logpool import LogPool
from aggregators.metrics import perplexity
from aggregators.registry import aggregate
from evaluation.aggregation import aggregate_submissions

K = 4


def _field(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and three agents: a sharp informed one, an uninformed one and a confidently wrong one."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    onehot = np.eye(K)[y]
    good = 0.7 * onehot + 0.3 / K
    noise = rng.dirichlet(np.ones(K), n)
    wrong = 0.6 * np.eye(K)[(y + 1) % K] + 0.4 / K
    return np.log(np.stack([good, noise, wrong], axis=1)), y


@pytest.fixture(scope="module")
def run():
    val_lp, val_y = _field(400, 0)
    test_lp, test_y = _field(300, 1)
    res = aggregate_submissions(val_lp, val_y, test_lp, test_y, seed=3, methods=("linear", "log"))
    return val_lp, val_y, test_lp, test_y, res


def test_rows_of_table_2_3(run):
    *_, res = run
    rows = {r["method"]: r for r in res["rows"]}
    assert list(rows) == ["best_single", "linear", "log"]
    assert all("error" not in r for r in rows.values())
    assert rows["best_single"]["params"]["submission_index"] == 0  # the informed agent
    assert rows["linear"]["p_value"] is None and rows["linear"]["diff_mean"] == 0.0
    assert res["n_validation"] == 400 and res["n_private"] == 300 and res["n_subsets"] == 10


def test_log_pool_row_is_a_direct_fit_on_the_same_arrays(run):
    val_lp, val_y, test_lp, test_y, res = run
    pool = LogPool().fit(val_lp, val_y)
    log_row = next(r for r in res["rows"] if r["method"] == "log")
    assert log_row["private_perplexity"] == pytest.approx(perplexity(pool.predict(test_lp), test_y), rel=1e-9)
    credit = res["credit"]
    np.testing.assert_allclose([c["weight_log"] for c in credit], pool.weights_, rtol=1e-9)


def test_log_pool_beats_the_simple_average_and_credits_the_informed_agent(run):
    _, _, test_lp, test_y, res = run
    log_row = next(r for r in res["rows"] if r["method"] == "log")
    average = perplexity(aggregate("average", test_lp)[0], test_y)
    assert log_row["private_perplexity"] < average
    credit = res["credit"]
    assert credit[0]["weight_log"] > credit[1]["weight_log"]
    assert credit[0]["loo_gain"] > 0.0  # leaving the informed agent out hurts
    assert res["loo_mode"] == "refit"


def test_simple_average_is_a_method_of_a_run():
    """Eq. (2.1): the equal-weight mixture, computed here independently of the pools."""
    val_lp, val_y = _field(200, 5)
    test_lp, test_y = _field(150, 6)
    res = aggregate_submissions(val_lp, val_y, test_lp, test_y, seed=1, methods=("average", "linear"), loo=False)
    row = next(r for r in res["rows"] if r["method"] == "average")
    assert row["label"] == "Simple average" and "error" not in row
    mix = np.log(np.exp(test_lp).mean(axis=1))
    assert row["private_perplexity"] == pytest.approx(np.exp(-mix[np.arange(150), test_y].mean()), rel=1e-9)
    vmix = np.log(np.exp(val_lp).mean(axis=1))
    assert row["public_perplexity"] == pytest.approx(np.exp(-vmix[np.arange(200), val_y].mean()), rel=1e-9)


def test_the_market_trains_to_convergence_under_a_generous_cap():
    val_lp, val_y = _field(200, 7)
    test_lp, test_y = _field(100, 8)
    res = aggregate_submissions(
        val_lp, val_y, test_lp, test_y, seed=1, methods=("market",), loo=False, market_max_epochs=2000
    )
    params = next(r for r in res["rows"] if r["method"] == "market")["params"]
    assert params["max_epochs"] == 2000 and params["converged"] is True and params["epochs"] < 2000
    capped = aggregate_submissions(
        val_lp, val_y, test_lp, test_y, seed=1, methods=("market",), loo=False, market_max_epochs=2
    )
    p2 = next(r for r in capped["rows"] if r["method"] == "market")["params"]
    assert p2["epochs"] <= 2 and p2["max_epochs"] == 2


def test_progress_plan_and_stage_name_the_step_a_fraction_falls_in():
    from evaluation.aggregation import progress_plan, stage_at

    plan = progress_plan(("linear", "renyi", "market"), 4, 8, loo=True, loo_refit=True)
    assert plan == [("linear", 1.0), ("renyi", 4.0), ("market", 3.0), ("loo", 2.0)]  # total 10
    assert stage_at(plan, 0.05) == ("linear", pytest.approx(0.5))
    assert stage_at(plan, 0.3) == ("renyi", pytest.approx(0.5))
    assert stage_at(plan, 0.65) == ("market", pytest.approx(0.5))
    assert stage_at(plan, 1.0) == ("loo", 1.0)


def test_the_stage_label_reports_the_renyi_fit_and_the_market_epoch():
    from app.competitions.runs import _stage_label

    kw = {"n_etas": 4, "max_epochs": 30, "n_agents": 8}
    assert _stage_label("renyi", 0.5, **kw) == "renyi: fit 3/4"
    assert _stage_label("market", 0.4, **kw) == "market: epoch 12/30"
    assert _stage_label("loo", 1.0, **kw) == "leave-one-out: 8/8"
    assert _stage_label("topk", 0.3, **kw) == "topk: 30%"
