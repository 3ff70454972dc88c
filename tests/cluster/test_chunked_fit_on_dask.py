"""Chunked fits on a real multi-process Dask ``LocalCluster`` (no mocks) when the cluster fails and
with item weights: a worker killed in the middle of a fit costs time, not the fit (the same weights);
a cluster that loses every worker, or its scheduler, is an ``InputError`` naming ``client`` after
``timeout`` seconds, never a wait without end; weighted fits (weights as a dask array) equal the in-memory weighted fits.

Every fit that could hang runs in a thread joined with a time limit, so a regression fails the test
rather than hanging the suite (``pytest-timeout`` is not installed).
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")

import dask.array as da  # noqa: E402

from aggregators import LinearPool, LogPool, RenyiPool  # noqa: E402
from benchmarks.logpool_families import make_family  # noqa: E402
from cluster.chunked_fit import fit_chunked  # noqa: E402
from cluster.scattered import scatter_blocks  # noqa: E402
from solvers.errors import InputError  # noqa: E402

from .test_on_dask import MEMORY_LIMIT  # noqa: E402

LIMIT = 240.0
"""Seconds a fit in these tests may take before the test fails as a hang (they take 5-30 s)."""


def _cluster():
    return distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, memory_limit=MEMORY_LIMIT, dashboard_address=None
    )


def _bounded(fn):
    """``fn()`` in a thread, joined with :data:`LIMIT`: its result, or its exception raised here."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(LIMIT)
    assert not t.is_alive(), f"the fit still waits after {LIMIT:g} s: a hang"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _kill(c, address):
    """SIGKILL the worker process at ``address`` (a crash: its nanny starts a new worker)."""
    pid = c.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def client():
    with dask.config.set({"distributed.worker.memory.pause": False}), _cluster() as lc, distributed.Client(lc) as c:
        yield c


SOURCES = ["dask-array", "zarr-read-per-pass", "scattered"]


@pytest.mark.parametrize("source", SOURCES)
def test_a_worker_killed_in_the_middle_of_a_fit_costs_time_not_the_fit(client, tmp_path, source):
    """Dask recomputes what the lost worker held on the worker that remains (the kept blocks from
    the array slice in their task, the labels and weights of blocks read per pass from their task)
    and the passes go on: the fit ends with the in-memory weights. Blocks placed by
    ``cluster.scattered.scatter_blocks`` are data, not tasks: when the lost worker held one that Dask
    cannot recompute the fit stops with ``InputError("client")`` instead (both outcomes seen)."""
    lp, y = make_family("gaussian-logit", 4000, 30, 8, seed=2)
    sw = np.random.default_rng(0).integers(0, 3, size=4000).astype(float)
    ref = LogPool().fit(lp, y, sample_weight=sw)
    if source == "dask-array":
        data, kw = da.from_array(lp, chunks=(500, 30, 8)), {}
    elif source == "scattered":
        data, kw = scatter_blocks(lp, client, chunk_items=500), {}
    else:
        data = zarr.create_array(str(tmp_path / "lp.zarr"), shape=lp.shape, chunks=(500, 30, 8), dtype="f8")
        data[:] = lp
        kw = {"persist": False, "chunk_items": 500}
    client.wait_for_workers(2, timeout=60)
    victim = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
    calls = []

    def kill_at_the_first_step(f: float) -> None:
        if not calls:
            _kill(client, victim)
        calls.append(f)

    def fit():
        return fit_chunked(
            LogPool(), data, y, client=client, sample_weight=sw, progress=kill_at_the_first_step, timeout=30, **kw
        )

    try:
        pool = _bounded(fit)
    except InputError as e:
        assert source == "scattered" and e.field == "client" and e.code == "workers_lost", e
        assert victim not in client.scheduler_info(n_workers=-1)["workers"]
        client.wait_for_workers(2, timeout=60)
        return
    np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
    assert pool.fit_result_.converged and pool.n_iter_ == ref.n_iter_
    assert len(calls) > 1  # passes ran after the kill
    # the passes went to the workers' block actors (reduce="auto"), lost with the victim: the fit went
    # on as tasks, which Dask recomputed
    assert "direct_passes_stopped" in pool.fit_result_.extra, pool.fit_result_.extra
    assert victim not in client.scheduler_info(n_workers=-1)["workers"]  # the worker did die
    client.wait_for_workers(2, timeout=60)  # its replacement, for the next test


def _retire_every_worker(lc, c) -> None:
    lc.scale(0)  # the workers close and are not replaced
    while c.scheduler_info(n_workers=-1)["workers"]:
        time.sleep(0.1)


def _close_the_scheduler(lc, c) -> None:
    lc.sync(lc.scheduler.close)


FAILURES = [
    pytest.param(_retire_every_worker, "no_workers", id="every-worker"),
    # the error comes within 10 s; closing a LocalCluster whose scheduler is gone takes 30-40 s more
    pytest.param(_close_the_scheduler, "unreachable", id="the-scheduler", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("fail, code", FAILURES)
def test_a_cluster_that_loses_every_worker_or_its_scheduler_during_a_fit_is_a_clear_error(fail, code):
    lp, y = make_family("gaussian-logit", 2000, 30, 8, seed=2)
    with _cluster() as lc, distributed.Client(lc) as c:
        failed = []

        def fail_at_the_first_step(f: float) -> None:
            if not failed:
                failed.append(f)
                fail(lc, c)

        start = time.monotonic()
        with pytest.raises(InputError) as e:
            _bounded(
                lambda: fit_chunked(
                    LogPool(),
                    da.from_array(lp, chunks=(500, 30, 8)),
                    y,
                    client=c,
                    progress=fail_at_the_first_step,
                    timeout=3,
                )
            )
        assert failed and e.value.field == "client" and e.value.code == code
        assert time.monotonic() - start < 60
        if code == "no_workers":
            assert "no workers" in e.value.reason and "3 s" in e.value.reason
            with pytest.raises(InputError) as e:  # a cluster without workers from the start
                fit_chunked(LogPool(), lp, y, client=c)
            assert e.value.field == "client"
        else:
            assert "scheduler" in e.value.reason


@pytest.mark.parametrize(
    "make, source",
    [
        (LogPool, "dask-array"),
        (lambda: LinearPool(solver="newton"), "zarr-read-per-pass"),
        (lambda: RenyiPool(gamma=0.3), "dask-array, to the driver"),
    ],
    ids=["log", "linear", "renyi"],
)
def test_weighted_chunked_fits_on_dask_equal_the_in_memory_weighted_fits(client, tmp_path, make, source):
    lp, y = make_family("gaussian-logit", 4000, 30, 8, seed=2)
    sw = np.random.default_rng(1).integers(0, 4, size=4000).astype(float)
    sw[:500] = 0.0  # a whole block left out
    ref = make().fit(lp, y, sample_weight=sw)
    kw: dict = {"reduce": "driver"} if source.endswith("driver") else {}
    if source.startswith("zarr"):
        data = zarr.create_array(str(tmp_path / "lp.zarr"), shape=lp.shape, chunks=(500, 30, 8), dtype="f8")
        data[:] = lp
        kw.update(persist=False, chunk_items=500)
    else:
        data = da.from_array(lp, chunks=(500, 30, 8))
    on = _bounded(lambda: fit_chunked(make(), data, y, client=client, sample_weight=da.from_array(sw, 500), **kw))
    np.testing.assert_allclose(on.weights_, ref.weights_, atol=1e-10)
    assert on.fit_result_.converged and on.n_iter_ == ref.n_iter_
    assert np.abs(make().fit(lp, y).weights_ - ref.weights_).max() > 1e-6  # the weights matter


def test_waiting_for_the_blocks_leaves_them_on_the_workers_and_still_raises(client):
    """``_groups`` waits for the kept blocks with ``gather(..., fetch=False)``: fetching them sent the
    whole array to the driver (26 of a 28 s fit at 20,000 x 269 x 64, measured). Waiting must still
    raise a block's own error."""
    from cluster.connect import gather

    big = client.submit(np.ones, 2_000_000, pure=False)
    assert gather(client, [big], fetch=False) == []
    assert big.status == "finished"

    def bad():
        raise InputError("log_probs", "a bad block", item=7)

    with pytest.raises(InputError, match="a bad block"):
        gather(client, [big, client.submit(bad, pure=False)], fetch=False)
