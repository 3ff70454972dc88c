"""The cluster package on a real multi-process Dask ``LocalCluster`` (no mocks): 2 worker processes,
one thread each, one cluster for the whole module.

Consensus ADMM's Dask rounds equal the in-process rounds and reach the centralized optimum; a
data-less worker in a role that needs data and an unreachable scheduler are clear errors; the log
pool's chunked fit (dask.array, Zarr) equals the in-memory fit, and a Zarr store larger than the
workers' memory limit fits; so do the linear and Rényi (weights) chunked fits, with their partial
sums added on the workers (one per pass reaches the driver) or on the driver.
"""

import os
import tempfile
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import dask.array as da  # noqa: E402

from aggregators import LinearPool, LogPool, RenyiPool  # noqa: E402
from cluster import graphs as g  # noqa: E402
from cluster.chunked_fit import fit_chunked, fit_log_pool  # noqa: E402
from cluster.consensus_admm import consensus_admm  # noqa: E402
from cluster.fanout import gamma_sweep  # noqa: E402
from solvers.errors import InputError  # noqa: E402

from .test_consensus_admm import _least_squares  # noqa: E402

# a worker process holds about 320 MB before its first task in a freshly installed environment (numba
# and the packages' imports), and 410-480 MB after a log-pool and a Rényi chunked fit (measured); with
# 640 MiB both workers died repeatedly in the full suite (12 block tasks ended as KilledWorker, none left
# running; consistent with the nanny's kill at 95 % of the limit) and the fit waited forever. The Zarr
# test's store stays larger than this limit
MEMORY_LIMIT = 1024 * 2**20


@pytest.fixture(scope="module")
def client():
    # pausing at 80% of the limit is for workers that hold data; these tasks read a block and drop it
    with dask.config.set({"distributed.worker.memory.pause": False}):
        with (
            distributed.LocalCluster(
                n_workers=2, processes=True, threads_per_worker=1, memory_limit=MEMORY_LIMIT, dashboard_address=None
            ) as lc,
            distributed.Client(lc) as c,
        ):
            yield c


def test_consensus_rounds_on_dask_equal_the_in_process_rounds_and_the_optimum(client):
    shards, x_star = _least_squares(n_nodes=6)
    G = g.topology("biregular", 6)
    ref = consensus_admm(G, shards, beta="adaptive", max_rounds=40)
    on = consensus_admm(G, shards, beta="adaptive", max_rounds=40, client=client)
    # the same rounds to rounding (BLAS may sum in another order in another process): 1e-14 of the start
    np.testing.assert_allclose(on.extra["r"], ref.extra["r"], rtol=1e-8, atol=1e-14 * ref.extra["r"][0])
    np.testing.assert_allclose(on.extra["s"], ref.extra["s"], rtol=1e-8, atol=1e-14 * ref.extra["s"][0])
    np.testing.assert_allclose(on.extra["beta"], ref.extra["beta"], rtol=1e-12)
    np.testing.assert_allclose(on.extra["node_values"], ref.extra["node_values"], atol=1e-12)
    np.testing.assert_allclose(on.x, x_star, atol=1e-6)
    # the node states were dropped from the workers at the end
    from cluster import consensus_admm as mod

    assert all(n == 0 for n in client.run(lambda: len(mod._NODES)).values())


def test_dask_errors_are_clear(client):
    shards, _ = _least_squares(n_nodes=4)
    shards[1] = (np.zeros((0, 5)), np.zeros(0))  # a right node of the ring without data
    with pytest.raises(InputError) as e:
        consensus_admm(g.ring(4), shards, beta="adaptive", client=client)
    assert e.value.field == "shards[1]" and "f ≡ 0" in e.value.reason
    with pytest.raises(InputError) as e:
        consensus_admm(g.ring(4), shards, beta=1.0, client="tcp://127.0.0.1:9", timeout=1.0)
    assert e.value.field == "client" and "tcp://127.0.0.1:9" in e.value.reason
    with pytest.raises(InputError) as e:
        fit_log_pool(np.zeros((4, 2, 3)), [0, 1, 2, 0], client="tcp://127.0.0.1:9", timeout=1.0)
    assert e.value.field == "client"


def test_chunked_log_pool_fit_equals_the_in_memory_fit(client, tmp_path):
    from benchmarks.logpool_families import make_family

    lp, y = make_family("gaussian-logit", 4000, 30, 8, seed=2)
    lp[5, 3, :] = -np.inf  # a zero probability: floored on the worker exactly as in memory
    lp[5, 3, 0] = 0.0
    ref = LogPool().fit(lp, y)
    on_dask = fit_log_pool(da.from_array(lp, chunks=(900, 30, 8)), y, client=client)
    z = zarr.create_array(str(tmp_path / "lp.zarr"), shape=lp.shape, chunks=(1000, 30, 8), dtype="f8")
    z[:] = lp
    on_zarr = fit_log_pool(str(tmp_path / "lp.zarr"), y, client=client, chunk_items=1500)  # kept on the workers
    streamed = fit_log_pool(z, y, client=client, chunk_items=1500, persist=False)  # read at every pass
    for pool in (on_dask, on_zarr, streamed):
        np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
        assert pool.n_floored_ == ref.n_floored_ > 0
        assert pool.fit_result_.converged
    np.testing.assert_allclose(on_zarr.predict(lp[:50]), ref.predict(lp[:50]), atol=1e-9)


@pytest.mark.parametrize(
    "make", [lambda: LinearPool(solver="newton"), lambda: RenyiPool(gamma=0.3)], ids=["linear", "renyi"]
)
def test_linear_and_renyi_chunked_fits_on_dask_equal_the_in_memory_fits(client, tmp_path, make):
    from benchmarks.logpool_families import make_family

    lp, y = make_family("gaussian-logit", 4000, 30, 8, seed=2)
    ref = make().fit(lp, y)
    z = zarr.create_array(str(tmp_path / "lp.zarr"), shape=lp.shape, chunks=(500, 30, 8), dtype="f8")
    z[:] = lp
    # blocks of 512 items: whole runs of the Rényi curvature's 64 (a block cutting a run hands over
    # that run's columns, which the byte count below would include; tests/cluster/test_chunked_renyi.py)
    tree = fit_chunked(make(), da.from_array(lp, chunks=(512, 30, 8)), y, client=client, reduce="workers")
    to_driver = fit_chunked(make(), da.from_array(lp, chunks=(512, 30, 8)), y, client=client, reduce="driver")
    direct = fit_chunked(make(), da.from_array(lp, chunks=(512, 30, 8)), y, client=client)  # actors ("auto")
    streamed = fit_chunked(make(), str(tmp_path / "lp.zarr"), y, client=client, persist=False)  # read at every pass
    for pool in (tree, to_driver, direct, streamed):
        np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
        assert pool.fit_result_.converged and pool.n_iter_ == ref.n_iter_
        assert "direct_passes_stopped" not in pool.fit_result_.extra
    # 8 blocks on 2 workers: the tree sends the driver one partial sum per pass, the driver mode 8,
    # the workers' actors one each (2; the Rényi curvature's passes go through the tree in that mode too)
    (a, b), (c, d), (e, f) = (
        (p.fit_result_.extra["driver_bytes"], p.fit_result_.extra["passes_on_workers"])
        for p in (tree, to_driver, direct)
    )
    assert b == d == f and 7 * a < c < 9 * a and 1.02 * a < e < 2.5 * a
    # the fits closed their actors: no worker keeps a block actor (and with it the blocks) afterwards
    t0 = time.monotonic()
    while any(client.run(lambda dask_worker: len(dask_worker.state.actors)).values()):
        assert time.monotonic() - t0 < 10, client.run(lambda dask_worker: list(dask_worker.state.actors))
        time.sleep(0.1)


@pytest.mark.parametrize(
    "make",
    [LogPool, lambda: LinearPool(solver="newton"), lambda: RenyiPool(gamma=0.3)],
    ids=["log", "linear", "renyi"],
)
def test_at_100_agents_and_2000_items_the_chunked_fits_on_dask_equal_the_in_memory_fits(client, make):
    """Past 40 agents and 1,000 items the log and Rényi pools' Newton starts from a subsample fit and
    steps with float32 model Hessians: the chunked problem (blocks across the in-memory runs of 256 and
    64 items, on two worker processes) follows the same path."""
    from benchmarks.competition_data import make_competition_predictions

    lp, y = make_competition_predictions(2500, 120, 8, seed=0)
    ref = make().fit(lp, y)
    on = fit_chunked(make(), da.from_array(lp, chunks=(700, 120, 8)), y, client=client)
    np.testing.assert_allclose(on.weights_, ref.weights_, atol=1e-10)
    assert on.fit_result_.converged and on.n_iter_ == ref.n_iter_
    assert ("warm_start" in ref.fit_result_.extra) == (not isinstance(ref, LinearPool))


@pytest.mark.parametrize(
    "times", [pytest.param(1.25, id="short"), pytest.param(4.0, id="full", marks=pytest.mark.slow)]
)
def test_a_zarr_store_larger_than_the_workers_memory_limit_fits(client, times):
    A, K, block = 8, 8, 16_384
    N = int(times * MEMORY_LIMIT // (A * K * 8))  # the store is `times` times one worker's memory limit
    before = set(client.scheduler_info(n_workers=-1)["workers"])
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.zarr")
        z = zarr.create_array(path, shape=(N, A, K), chunks=(block, A, K), dtype="f8", compressors=None)
        y = np.empty(N, dtype=np.int64)
        sharp = np.linspace(0.3, 2.0, A)
        for a in range(0, N, block):
            b = min(N, a + block)
            t = rng.normal(size=(b - a, K))
            y[a:b] = t.argmax(axis=1)
            x = sharp[None, :, None] * (t[:, None, :] + rng.normal(size=(b - a, A, K)))
            z[a:b] = x - np.log(np.exp(x).sum(axis=2, keepdims=True))
        assert z.nbytes >= times * MEMORY_LIMIT - A * K * 8
        pool = fit_log_pool(path, y, client=client, chunk_items=block, solver="newton", persist=False)
    assert pool.fit_result_.converged
    assert pool.weights_.sum() == pytest.approx(1.0) and pool.weights_[-1] > pool.weights_[0]
    limits = client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit)
    assert set(limits.values()) == {MEMORY_LIMIT}
    assert set(client.scheduler_info(n_workers=-1)["workers"]) == before  # no worker was killed and replaced


def test_gamma_sweep_and_leave_one_out_fan_out_as_dask_tasks(client):
    from benchmarks.logpool_families import make_family
    from cluster.fanout import leave_one_out

    lp, y = make_family("gaussian-logit", 600, 5, 6, seed=3)
    args = (lp[:300], y[:300], lp[300:], y[300:])
    on = gamma_sweep(*args, (2.0, 10.0), client=client)
    ref = gamma_sweep(*args, (2.0, 10.0))
    for a, b in zip(on, ref):
        assert a["eta"] == b["eta"]
        np.testing.assert_allclose(a["weights"], b["weights"], atol=1e-12)
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=1e-12)
    np.testing.assert_allclose(leave_one_out(*args, client=client), leave_one_out(*args), atol=1e-12)


def test_the_warm_sweep_runs_each_gammas_passes_on_both_workers_and_equals_the_serial_sweep(client):
    from benchmarks.competition_data import make_competition_predictions
    from cluster.fanout import warm_sweep

    lp, y = make_competition_predictions(1200, 100, 6, seed=1)
    args, etas = (lp[:600], y[:600], lp[600:], y[600:]), (2.0, 10.0, 30.0)
    ref = warm_sweep(*args, etas)
    from cluster.block_actors import passes_run

    before = client.run(passes_run)
    with distributed.get_task_stream(client) as ts:
        on = warm_sweep(*args, etas, client=client)
    after = client.run(passes_run)
    for a, b in zip(on, ref):
        assert a["eta"] == b["eta"]
        np.testing.assert_allclose(a["weights"], b["weights"], atol=1e-10)
        assert a["public_perplexity"] == pytest.approx(b["public_perplexity"], rel=1e-12)
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=1e-12)
    # data-parallel: every fit's passes ran on both worker processes (by their block actors; as
    # group_pass tasks when reduce="workers")
    assert set(before) == set(after) and len(after) == 2 and all(after[w] > before[w] for w in after)
    assert {t["worker"] for t in ts.data if t["key"].startswith("BlockHolder")} == set(after)
    # each block was validated and floored once for the three gammas' fits and predictions
    cut = sum(t["key"].startswith("aligned") for t in ts.data)
    assert cut >= 2 and sum(t["key"].startswith("_floored") for t in ts.data) == cut


def test_the_competition_aggregation_runs_its_fits_on_the_cluster(client):
    from benchmarks.logpool_families import make_family
    from evaluation.aggregation import aggregate_submissions

    lp, y = make_family("gaussian-logit", 600, 5, 6, seed=3)
    args = (lp[:300], y[:300], lp[300:], y[300:])
    kw = {"methods": ("average", "linear", "log", "renyi", "market"), "etas": (2.0, 10.0), "market_max_epochs": 20}
    serial = aggregate_submissions(*args, **kw)
    tasks_before = len(client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.task_prefixes))
    on = aggregate_submissions(*args, **kw, client=client, sweep_chains=None)
    # the methods and the refits ran as tasks of those functions, the sweep's fits (data-parallel) as
    # passes over item blocks (by the workers' block actors, BlockHolder) and its predictions block by
    # block (predict)
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"fit_method", "BlockHolder", "predict", "loo_perplexity"} <= set(prefixes) and len(prefixes) > tasks_before
    # the same run: the sweep warm-starts each gamma from the previous one, as in-process
    assert [r["method"] for r in on["rows"]] == [r["method"] for r in serial["rows"]]
    for a, b in zip(on["rows"], serial["rows"]):
        assert "error" not in a
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=1e-12)
        assert a["public_perplexity"] == pytest.approx(b["public_perplexity"], rel=1e-12)
    assert [p["eta"] for p in on["gamma_sweep"]] == [1.0, 2.0, 10.0]
    for a, b in zip(on["gamma_sweep"], serial["gamma_sweep"]):
        assert a["private_perplexity"] == pytest.approx(b["private_perplexity"], rel=1e-12)
    for key in ("loo_gain", "weight_log", "weight_renyi", "weight_linear", "market_wealth"):
        np.testing.assert_allclose([c[key] for c in on["credit"]], [c[key] for c in serial["credit"]], atol=1e-10)


def _tasks_run(client, prefix: str) -> int:
    """How many tasks named ``prefix`` the scheduler has seen finish (entries into the memory state)."""
    return client.run_on_scheduler(
        lambda dask_scheduler: getattr(dask_scheduler.task_prefixes.get(prefix), "state_counts", {}).get("memory", 0)
    )


def test_the_service_runs_a_competition_on_the_cluster_agora_dask_scheduler_names(client, tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from app.competitions import parsing
    from app.main import create_app
    from app.settings import Settings, get_settings
    from cluster.connect import close_shared
    from tests.app.conftest import competition_body, finished_job

    admin = {"Authorization": "Bearer cluster-admin"}
    y = np.random.default_rng(6).integers(0, 3, 80)
    results = {}
    settings = Settings(database_url=f"sqlite:///{tmp_path}/agora.db", admin_key="cluster-admin")
    with TestClient(create_app(settings)) as api:
        cid = api.post("/v1/competitions", json=competition_body(y, 3, daily_cap=1000), headers=admin).json()["id"]
        for i, s in enumerate((0.7, 0.6, 0.5)):
            tok = api.post(f"/v1/competitions/{cid}/participants", json={"name": f"p{i}"}).json()["token"]
            probs = np.where(np.arange(3)[None, :] == y[:, None], s, (1 - s) / 2)
            probs = 0.8 * probs + 0.2 * np.random.default_rng(i).dirichlet(np.ones(3), len(y))
            up = api.post(
                f"/v1/competitions/{cid}/submissions?kind=probs",
                content=parsing.to_npy(np.arange(len(y)), probs),
                headers={"Authorization": f"Bearer {tok}"},
            )
            assert up.status_code == 201, up.text
        for name, address in (("in the server", None), ("on the cluster", client.scheduler.address)):
            if address is None:
                monkeypatch.delenv("AGORA_DASK_SCHEDULER", raising=False)
            else:
                monkeypatch.setenv("AGORA_DASK_SCHEDULER", address)
            get_settings.cache_clear()  # the job reads the setting when it runs
            before = _tasks_run(client, "fit_method"), _tasks_run(client, "warm_chain")
            body = {"methods": ["linear", "log", "renyi"], "etas": [2.0, 10.0]}
            r = api.post(f"/v1/competitions/{cid}/aggregations", json=body, headers=admin)
            job = finished_job(api, r, "cluster-admin", poll=0.05)
            assert job["state"] == "succeeded", job
            results[name] = api.get(f"/v1/competitions/{cid}/aggregations/{r.json()['id']}", headers=admin).json()
            ran = _tasks_run(client, "fit_method") - before[0], _tasks_run(client, "warm_chain") - before[1]
            # linear and log; the sweep as one warm chain per worker (cluster.fanout's default here)
            assert ran == ((0, 0) if address is None else (2, 2))
    monkeypatch.delenv("AGORA_DASK_SCHEDULER", raising=False)
    get_settings.cache_clear()
    close_shared()  # the service's kept connection to this cluster
    a, b = (results[k]["result"] for k in ("on the cluster", "in the server"))
    assert (
        [r["method"] for r in a["rows"]]
        == [r["method"] for r in b["rows"]]
        == ["best_single", "linear", "log", "renyi"]
    )
    for ra, rb in zip(a["rows"], b["rows"]):
        assert ra["private_perplexity"] == pytest.approx(rb["private_perplexity"], rel=1e-12)
    np.testing.assert_allclose([c["loo_gain"] for c in a["credit"]], [c["loo_gain"] for c in b["credit"]], atol=1e-10)


def test_a_worker_lost_mid_run_stops_consensus_admm_or_restarts_from_the_last_round():
    from cluster.consensus_admm import WorkerLost

    shards, x_star = _least_squares(n_nodes=6)
    G = g.topology("biregular", 6)
    # its own cluster: the module's workers stay as they are for the other tests
    with (
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as lc,
        distributed.Client(lc) as c,
    ):
        victim = sorted(c.scheduler_info(n_workers=-1)["workers"])[0]

        def kill_after_round_3(f: float) -> None:
            if f == pytest.approx(3 / 40):
                c.restart_workers([victim])  # the nanny replaces the process: a new worker, the state gone

        with pytest.raises(WorkerLost) as e:
            consensus_admm(G, shards, beta="adaptive", max_rounds=40, client=c, progress=kill_after_round_3)
        assert e.value.workers == [victim] and e.value.nodes == [0, 2, 4]  # round-robin: every other node
        assert victim in str(e.value) and "run it again" in str(e.value)
        # with checkpoints, round 4 restarts from round 3's state and the run ends as an uninterrupted one
        victim = sorted(c.scheduler_info(n_workers=-1)["workers"])[1]
        ref = consensus_admm(G, shards, beta="adaptive", max_rounds=40)
        on = consensus_admm(
            G, shards, beta="adaptive", max_rounds=40, client=c, checkpoint=True, progress=kill_after_round_3
        )
        assert on.extra["restarts"] == [(4, [victim])] and len(on.extra["r"]) == 40
        np.testing.assert_allclose(on.extra["r"], ref.extra["r"], rtol=1e-8, atol=1e-14 * ref.extra["r"][0])
        np.testing.assert_allclose(on.extra["beta"], ref.extra["beta"], rtol=1e-12)
        np.testing.assert_allclose(on.extra["node_values"], ref.extra["node_values"], atol=1e-12)
        np.testing.assert_allclose(on.x, x_star, atol=1e-6)
