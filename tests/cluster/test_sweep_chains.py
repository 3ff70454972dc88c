"""The competition's γ sweep as warm chains, one task per chain, on a real 2-process ``LocalCluster``
(issue 18 §4): the first chain's rows are the serial sweep's bit for bit, the later chains' agree with
it to the sweep's solver tolerance, and the chains run on both workers; ``aggregate_submissions``
picks chains by default on a cluster and its results keep to that tolerance."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from benchmarks.competition_data import make_competition_predictions  # noqa: E402
from benchmarks.logpool_families import make_family  # noqa: E402
from cluster.fanout import CompetitionTasks, chain_points, resolve_chains, warm_sweep  # noqa: E402
from cluster.scattered import to_every_worker  # noqa: E402
from evaluation.aggregation import RENYI_OPTIONS, aggregate_submissions  # noqa: E402
from solvers.errors import InputError  # noqa: E402

from .test_on_dask import client  # noqa: E402, F401  (the module's 2-worker LocalCluster)

TOL = RENYI_OPTIONS["tol"]


def _chain_workers(ts) -> list[str]:
    return [t["worker"] for t in ts.data if t["key"].startswith("warm_chain")]


def test_the_sweep_as_two_warm_chains_on_two_workers(client):  # noqa: F811
    lp, y = make_competition_predictions(1200, 100, 6, seed=1)
    args, etas = (lp[:600], y[:600], lp[600:], y[600:]), (2.0, 5.0, 10.0, 30.0)
    ref = warm_sweep(*args, etas)  # the serial warm chain
    here = warm_sweep(*args, etas, chains=2)  # the same two chains in this process
    with distributed.get_task_stream(client) as ts:
        on = warm_sweep(*args, etas, chains=2, client=client)
    assert [r["eta"] for r in on] == list(etas)
    workers = _chain_workers(ts)
    assert len(workers) == 2 and len(set(workers)) == 2  # one task per chain, one chain on each worker
    assert not any(t["key"].startswith("group_pass") for t in ts.data)  # no data-parallel passes
    # the first chain [2, 5] starts from w0 as the serial sweep does: the same rows, bit for bit
    assert on[:2] == ref[:2] == here[:2]
    # the second chain [10, 30] goes down from 30, started from the pool's own start: the same as in
    # this process...
    assert on[2:] == here[2:]
    # ...and the serial warm chain's to the solver's tolerance (its public perplexity is exp of the
    # objective the fit minimises to `tol`; measured 2.5e-9 public, 1.6e-5 private, weights 6.0e-4)
    for a, b in zip(on[2:], ref[2:]):
        assert a["public_perplexity"] == pytest.approx(b["public_perplexity"], rel=TOL)
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=10 * TOL)
        np.testing.assert_allclose(a["weights"], b["weights"], atol=5e-3)


def test_a_later_chain_from_the_log_pools_weights_is_the_same_on_a_worker(client):  # noqa: F811
    from aggregators.registry import make_pool

    lp, y = make_competition_predictions(1200, 100, 6, seed=2)
    args, etas = (lp[:600], y[:600], lp[600:], y[600:]), (2.0, 5.0, 10.0, 30.0)
    w_top = [float(x) for x in make_pool("log").fit(args[0], args[1]).weights_]
    ref = warm_sweep(*args, etas)
    here = warm_sweep(*args, etas, chains=2, w_top=w_top)
    on = warm_sweep(*args, etas, chains=2, client=client, w_top=w_top)
    assert on == here  # both chains, bit for bit: the same start reaches the worker
    assert on[:2] == ref[:2]
    for a, b in zip(on[2:], ref[2:]):
        assert a["public_perplexity"] == pytest.approx(b["public_perplexity"], rel=TOL)
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=10 * TOL)


def test_the_competition_runs_its_sweep_as_chains_by_default_on_a_cluster(client):  # noqa: F811
    lp, y = make_family("gaussian-logit", 600, 5, 6, seed=3)
    args = (lp[:300], y[:300], lp[300:], y[300:])
    kw = {
        "methods": ("average", "linear", "log", "renyi", "market"),
        "etas": (2.0, 10.0, 30.0),
        "market_max_epochs": 20,
    }
    serial = aggregate_submissions(*args, **kw)
    with distributed.get_task_stream(client) as ts:
        on = aggregate_submissions(*args, **kw, client=client)
    keys = {t["key"].split("-")[0] for t in ts.data}
    assert {"_fit_method", "_loo_perplexity", "warm_chain"} <= keys and not keys & {"group_pass", "predict"}
    assert len(set(_chain_workers(ts))) == 2
    # chain [2] from the linear pool's weights as in the serial run; chain [10, 30] down from 30, from
    # the log pool's fitted weights (cluster.fanout.later_start)
    assert on["gamma_sweep"][:2] == serial["gamma_sweep"][:2]  # η = 1 (the linear pool) and 2
    for a, b in zip(on["gamma_sweep"][2:], serial["gamma_sweep"][2:]):
        assert a["public_perplexity"] == pytest.approx(b["public_perplexity"], rel=TOL)
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=10 * TOL)
    renyi = next(r for r in serial["rows"] if r["method"] == "renyi")["params"]["eta"]
    for ra, rb in zip(on["rows"], serial["rows"]):
        assert ra["method"] == rb["method"] and "error" not in ra
        # every row but the Rényi pool's (and the market's, which uses its γ) is the serial run's;
        # those two too when the chosen γ is in the first chain
        exact = ra["method"] not in ("renyi", "market") or renyi == 2.0
        rel = 1e-12 if exact else 10 * TOL
        assert ra["private_perplexity"] == pytest.approx(rb["private_perplexity"], rel=rel)
        assert ra["public_perplexity"] == pytest.approx(rb["public_perplexity"], rel=1e-12 if exact else TOL)
    for key in ("loo_gain", "weight_log", "weight_linear"):
        np.testing.assert_allclose([c[key] for c in on["credit"]], [c[key] for c in serial["credit"]], atol=1e-10)


def test_auto_picks_chains_when_the_data_fits_a_worker_and_data_parallel_when_not(client):  # noqa: F811
    limit = min(w["memory_limit"] for w in client.scheduler_info(n_workers=-1)["workers"].values())
    assert resolve_chains("auto", client, 1000) == 2  # one chain per worker
    assert resolve_chains("auto", client, limit) is None  # 3x a worker's memory limit: data-parallel
    assert resolve_chains(None, client, 1000) is None and resolve_chains(3, client, 1000) == 3
    for bad in ("chains", 0, 1.5, True):
        with pytest.raises(InputError) as e:
            resolve_chains(bad, client, 1000)
        assert e.value.field == "sweep_chains"
    lp, y = make_family("gaussian-logit", 200, 3, 4, seed=1)
    data = (lp[:100], y[:100], lp[100:], y[100:])
    with pytest.raises(InputError) as e:
        CompetitionTasks(client, data, ("log",), loo=False, sweep_chains="many")
    assert e.value.field == "sweep_chains"


def test_every_worker_keeps_its_copy_and_chains_fetch_nothing(client):  # noqa: F811
    """The arrays a chain reads stay on every worker while held (one key per worker, which Dask's
    active memory manager, run every 2 s, does not drop: it drops replicas of ONE key, as
    ``scatter(broadcast=True)`` made), so chain tasks submitted after a few of its cycles start at
    once: no transfer phase in Dask's task stream."""
    import time

    lp, y = make_competition_predictions(800, 60, 6, seed=2)
    arrays = (lp[:400], y[:400], lp[400:], y[400:])
    data = [to_every_worker(x, client) for x in arrays]
    workers = sorted(client.scheduler_info()["workers"])
    time.sleep(5)  # two or more cycles of the active memory manager
    for d in data:
        assert sorted(d.copies) == workers
        who = client.who_has(d.futures())
        assert {w for f in d.futures() for w in who[f.key]} == set(workers)
        assert all(len(who[f.key]) == 1 for f in d.futures())
    with distributed.get_task_stream(client) as ts:
        points = list(chain_points(client, data, (2.0, 10.0), None, 2))
    assert len(points) == 2
    chains = [t for t in ts.data if t["key"].startswith("warm_chain")]
    assert len({t["worker"] for t in chains}) == 2
    assert all(s["action"] != "transfer" for t in chains for s in t["startstops"])
