"""A competition's fits on a Dask cluster: the Rényi gamma sweep, the methods and the leave-one-out refits.

:func:`evaluation.aggregation.aggregate_submissions` fits every method on the public part, the
Rényi pool for each ``eta = 1/gamma`` in turn (each warm-started from the previous weights,
:func:`~evaluation.aggregation.warm_points`), and refits the log pool without each submission. Given
a cluster (``client=``, the service's ``AGORA_DASK_SCHEDULER``) it hands them to
:class:`CompetitionTasks`: the four arrays are scattered once to every worker, and every method but
the market (which needs the chosen gamma) and every leave-one-out refit is one task submitted at the
start of the run. The sweep runs in one of two ways:

- **Chains** (task-parallel): the sorted etas are cut into contiguous warm chains
  (:func:`split_etas`, balanced by per-gamma cost), one per worker, and each chain is ONE task that
  runs a warm chain in-process on its worker, on its worker's copies. The first chain goes up from
  ``w0`` as the serial sweep does, so its rows are the serial rows bit for bit; each later chain goes
  DOWN from its largest eta, started from ``w_top`` when given (the log pool's fitted weights, the
  limit eta -> infinity, which the competition fits anyway) and otherwise as the serial sweep's first
  point is without ``w0`` (the pool's own start: a log-pool fit at gamma <= 0.25, closest to the Rényi
  optimum at the largest eta), so its rows agree with the serial sweep's to the solver's tolerance
  (``RENYI_OPTIONS["tol"]``), not bit for bit. Starting from the fitted log pool saves the later
  chain that fit: at eta = 100, 2,000 x 269 x 64 on one thread, 0.52-1.10 s against 0.73-1.52 s on three
  families, 1.75 against 2.5 s at 50 x 1,024 (session 17, ``benchmarks/results/hugepages-session17.md``
  §6). Why down: at 2,000 x 269 x 64 a cold start at eta = 100 cost 1.0-1.4x a warm point, at
  eta = 1.5 2.4-2.5x (competition, noise and gaussian-logit families), and warm points going down
  cost 0.6-1.0x those going up from eta = 3 to 50 (1.1-1.6x at eta = 1.5, where the linear pool's
  weights are the better start; competition and gaussian-logit families; session 16,
  ``benchmarks/results/sweep-chains-session16.md``).
  Only the etas, the start and the results (pools, perplexities, the private aggregate) cross the
  network: one message per chain.
- **Data-parallel**: the warm chain stays on the driver, and each gamma's fit runs its passes over
  blocks of the public items on every worker (:func:`cluster.chunked_fit.fit_chunked` on
  :mod:`cluster.scattered` blocks sliced from the copies on each worker), as do its predictions; the
  results are the serial run's (the chunked fit equals the in-memory one to 1e-10). Every pass is
  a round trip through the driver, whose latency limits the second worker's gain: 1.40x on 2
  workers at 2,000 items and 1.56x at 20,000 (chains: 1.73-1.91x at 2,000,
  ``benchmarks/results/cluster-sweep-session9.md``; session 13, the first gamma from the linear
  pool's weights as the competition starts it: chains 1.34-1.64x, data-parallel 1.33-1.57x on three
  families, ``benchmarks/results/sparse-start-and-copies-session13.md``).

The competition's default (``sweep_chains="auto"``, :func:`resolve_chains`): chains, one per
worker, when :data:`CHAIN_MEMORY_FACTOR` times the public and private arrays fit in every worker's
memory limit (a worker then holds its copies of the arrays and a whole in-process fit); data-parallel
when they do not, since a data-parallel fit holds only its blocks' share on each worker.

:func:`warm_sweep` is the sweep alone (the benchmark's), in either mode. :func:`gamma_sweep` is the
sweep as independent tasks, one cold-started chain per gamma. :func:`leave_one_out` is the refits
alone. ``client=None`` runs their tasks in this process, one after the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from aggregators.metrics import perplexity
from aggregators.renyi_pool import LIMIT_START_GAMMA
from evaluation.aggregation import DEFAULT_ETAS, fit_method, loo_perplexity, sweep_floor, warm_points
from solvers.errors import InputError
from solvers.progress import ProgressFn, scaled

from .connect import connected, shared_client, worker_addresses
from .scattered import floored_blocks, scatter_blocks, to_every_worker

__all__ = [
    "CompetitionTasks",
    "CHAIN_MEMORY_FACTOR",
    "gamma_sweep",
    "warm_sweep",
    "leave_one_out",
    "split_etas",
    "chain_points",
    "later_start",
    "warm_chain",
    "resolve_chains",
]

CHAIN_MEMORY_FACTOR = 3.0
"""A chain task holds its worker's copies of the public and private arrays and runs a whole Rényi fit in-process
(its floored copy of the public items and the fixed point's temporaries): the sweep runs as chains
when this many times the two arrays' bytes fit in every worker's memory limit."""


def _row(eta: float, point: tuple) -> dict:
    """A ``gamma_sweep`` row with the weights, from :func:`~evaluation.aggregation.sweep_point`'s result."""
    pool, pv, _, pt = point
    w = [float(x) for x in pool.weights_]
    return {
        "eta": float(eta),
        "gamma": 1.0 / float(eta),
        "public_perplexity": pv,
        "private_perplexity": pt,
        "weights": w,
    }


def _etas(etas: Sequence[float]) -> list[float]:
    e = sorted(float(x) for x in etas)
    if not e or min(e) <= 0:
        raise InputError("etas", f"must be positive numbers; got {list(etas)!r}")
    return e


def split_etas(etas: Sequence[float], n_chains: int, costs: Sequence[float] | None = None) -> list[list[float]]:
    """The sorted ``etas`` cut into at most ``n_chains`` contiguous non-empty chains whose largest
    summed cost is least (``costs[i]``: the predicted cost of ``etas[i]``'s fit once sorted; by
    default 1 each: at 2,000 x 269 x 64 a point took 0.6-2.6 s at every eta from 1.5 to 100,
    ``benchmarks/results/sweep-chains-session16.md``). Among equal splits the later chains are the
    longer ones: they run down from a large eta (:func:`chain_points`), whose cold start and warm
    points are the cheapest of the sweep (session 16: 0.56-0.8 s against 0.8-0.9 s going up, competition
    family)."""
    e = _etas(etas)
    if isinstance(n_chains, bool) or not (isinstance(n_chains, (int, np.integer)) and n_chains >= 1):
        raise InputError("sweep_chains", f"must be an integer >= 1; got {n_chains!r}")
    c = np.ones(len(e)) if costs is None else np.asarray(costs, dtype=float)
    if c.shape != (len(e),) or not np.all(np.isfinite(c)) or np.any(c < 0):
        raise InputError("costs", f"must be {len(e)} non-negative numbers, one per eta; got {costs!r}")
    k = min(int(n_chains), len(e))
    P = np.concatenate(([0.0], np.cumsum(c)))
    n = len(e)
    # best[j][m]: the least largest cost of the first j etas in m chains; cut[j][m]: where the last one starts
    best = np.full((n + 1, k + 1), np.inf)
    cut = np.zeros((n + 1, k + 1), dtype=int)
    best[0][0] = 0.0
    for m in range(1, k + 1):
        for j in range(m, n + 1):
            for i in range(m - 1, j):  # the last chain as long as possible among ties
                v = max(best[i][m - 1], P[j] - P[i])
                if v < best[j][m]:
                    best[j][m], cut[j][m] = v, i
    parts, j = [], n
    for m in range(k, 0, -1):
        parts.append(e[cut[j][m] : j])
        j = cut[j][m]
    return parts[::-1]


def later_start(part: Sequence[float], w_top: list[float] | None) -> list[float] | None:
    """The start of a later chain ``part`` (sorted etas, run down from the largest): ``w_top`` (the log
    pool's weights, the eta -> infinity limit) when its largest eta is one whose own start is a log-pool
    fit (gamma <= :data:`~aggregators.renyi_pool.LIMIT_START_GAMMA`), else None (the pool's own start)."""
    return w_top if w_top is not None and 1.0 / max(part) <= LIMIT_START_GAMMA else None


def _fit_method(method: str, val_lp: Any, val_y: Any, test_lp: Any, test_y: Any) -> Any:
    """:func:`~evaluation.aggregation.fit_method` as a task on a worker's copies of the four arrays."""
    return fit_method(method, val_lp, val_y, test_lp)


def _loo_perplexity(agent: int, val_lp: Any, val_y: Any, test_lp: Any, test_y: Any) -> float:
    """:func:`~evaluation.aggregation.loo_perplexity` as a task on a worker's copies of the four arrays."""
    return loo_perplexity(val_lp, val_y, test_lp, test_y, agent)


def warm_chain(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    etas: list,
    w0: list | None,
    down: bool = False,
    progress: ProgressFn | None = None,
) -> list[tuple]:
    """One warm chain in this process (a worker's task): :func:`~evaluation.aggregation.warm_points`'s
    points over the sorted ``etas``, fitted in that order or, with ``down``, from the largest eta down
    (the points still returned in the order of ``etas``)."""
    order = etas[::-1] if down else etas
    points = list(warm_points(val_lp, val_y, test_lp, test_y, order, w0, progress))
    return points[::-1] if down else points


def chain_points(
    client: Any,
    data: Sequence[Any],
    etas: Sequence[float],
    w0: list[float] | None,
    n_chains: int,
    *,
    costs: Sequence[float] | None = None,
    progress: ProgressFn | None = None,
    w_top: list[float] | None = None,
) -> Iterator[tuple]:
    """The sweep as warm chains (:func:`split_etas`): :func:`~evaluation.aggregation.sweep_point`'s
    points in the order of the sorted etas. The first chain goes up from ``w0``, the later ones down
    from their largest eta (:func:`warm_chain` with ``down``), started from ``w_top`` or the pool's own
    start (:func:`later_start`).
    With a ``client``, ``data`` are futures of the four arrays on every worker
    (:class:`~cluster.scattered.OnEveryWorker`, one copy per worker) and chain ``i`` is one task on
    worker ``i`` (round-robin) on that worker's copies, all submitted before the first is awaited;
    without one, ``data`` are the arrays and the chains run here in turn (with ``progress``)."""
    parts = split_etas(etas, n_chains, costs)
    starts = [w0, *[later_start(p, w_top) for p in parts[1:]]]
    if client is None:
        val_lp, val_y, test_lp, test_y = data
        done, n = 0, sum(len(p) for p in parts)
        for i, (part, start) in enumerate(zip(parts, starts)):
            on = scaled(progress, done / n, (done + len(part)) / n)
            yield from warm_chain(val_lp, val_y, test_lp, test_y, part, start, i > 0, on)
            done += len(part)
        return
    workers = worker_addresses(client)
    futures = []
    for i, (part, start) in enumerate(zip(parts, starts)):
        w = workers[i % len(workers)]
        args = [d.on(w) for d in data]
        futures.append(
            client.submit(warm_chain, *args, part, start, i > 0, workers=[w], allow_other_workers=True, pure=False)
        )
    for f in futures:
        yield from f.result()


def resolve_chains(sweep_chains: Any, client: Any, nbytes: int) -> int | None:
    """How many chains a sweep on ``client`` runs (None: data-parallel). ``sweep_chains`` is an integer
    >= 1, None (data-parallel), or ``"auto"``: one chain per worker when :data:`CHAIN_MEMORY_FACTOR`
    times ``nbytes`` (the public and private arrays) fits in every worker's memory limit (no limit
    counts as enough), else data-parallel."""
    if sweep_chains is None or (
        isinstance(sweep_chains, (int, np.integer)) and not isinstance(sweep_chains, bool) and sweep_chains >= 1
    ):
        return None if sweep_chains is None else int(sweep_chains)
    if sweep_chains != "auto":
        raise InputError("sweep_chains", f"must be 'auto', None or an integer >= 1; got {sweep_chains!r}")
    info = client.scheduler_info(n_workers=-1)["workers"]
    limits = [w.get("memory_limit") or np.inf for w in info.values()]
    if not limits:
        raise InputError("client", "the Dask cluster has no workers")
    return len(limits) if CHAIN_MEMORY_FACTOR * nbytes <= min(limits) else None


class CompetitionTasks:
    """A competition run's fits on a cluster (``client``: a ``distributed.Client`` or a scheduler
    address, whose connection is kept for later runs).

    ``data`` is ``(val_lp, val_y, test_lp, test_y)``. On construction every method of ``methods``
    but ``"renyi"`` and ``"market"`` is submitted (``fits[method]``: a future of
    :func:`~evaluation.aggregation.fit_method`'s result) and, with ``loo``, one log-pool refit per
    submission (``loo``: futures of private perplexities). ``sweep_chains`` picks how :meth:`sweep`
    runs (:func:`resolve_chains`; ``chains``: the number of chains, None when data-parallel).
    """

    def __init__(
        self, client: Any, data: tuple, methods: Sequence[str], *, loo: bool, sweep_chains: Any = "auto"
    ) -> None:
        self.client = shared_client(client)
        self.chains = resolve_chains(sweep_chains, self.client, data[0].nbytes + data[2].nbytes)
        self.data = [to_every_worker(x, self.client) for x in data]
        workers = worker_addresses(self.client)
        tasks = itertools.count()

        def submit(fn: Callable, *args: Any) -> Any:  # round-robin, each task on its worker's copies
            w = workers[next(tasks) % len(workers)]
            on = [d.on(w) for d in self.data]
            return self.client.submit(fn, *args, *on, workers=[w], allow_other_workers=True, pure=False)

        self.fits = {m: submit(_fit_method, m) for m in methods if m not in ("renyi", "market")}
        n_agents = data[0].shape[1]
        self.loo = [submit(_loo_perplexity, a) for a in range(n_agents)] if loo else []
        self.labels = (np.asarray(data[1]), np.asarray(data[3]))
        blocks = (floored_blocks(scatter_blocks(self.data[i], self.client), self.client, sweep_floor()) for i in (0, 2))
        self.blocks = [] if self.chains else list(blocks)

    def sweep(
        self,
        etas: Sequence[float],
        w0: list[float] | None,
        progress: ProgressFn | None = None,
        w_top: list[float] | None = None,
    ) -> Iterator:
        """:func:`~evaluation.aggregation.warm_points` over the sorted ``etas`` on the cluster: as
        warm chains, one task each (the later ones from ``w_top``, :func:`later_start`), or
        data-parallel (each fit's passes and the predictions over item blocks on every worker, the
        chain on the driver from ``w0``; ``w_top`` is not used)."""
        if self.chains:
            return chain_points(self.client, self.data, etas, w0, self.chains, w_top=w_top)
        (val, test), (val_y, test_y) = self.blocks, self.labels
        return warm_points(val, val_y, test, test_y, _etas(etas), w0, progress, client=self.client)

    def cancel(self) -> None:
        """Drop every task of the run that is still pending, the scattered data and its blocks."""
        blocks = [f for data in self.blocks for _, f, _, _ in data.blocks]
        copies = [f for d in self.data for f in d.futures()]
        self.client.cancel([*self.fits.values(), *self.loo, *blocks, *copies])


def warm_sweep(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    etas: Sequence[float] = DEFAULT_ETAS,
    *,
    w0: list[float] | None = None,
    client: Any = None,
    chains: int | None = None,
    costs: Sequence[float] | None = None,
    w_top: list[float] | None = None,
) -> list[dict]:
    """The Rényi sweep of :func:`~evaluation.aggregation.aggregate_submissions` (``gamma_sweep`` rows
    with the weights, sorted by ``eta``, without the linear pool's point), each gamma warm-started from
    the previous one's weights (the first from ``w0``).

    ``chains=None``: one warm chain; with a ``client``, data-parallel as in :class:`CompetitionTasks`.
    ``chains=k``: the etas cut into ``k`` warm chains (:func:`split_etas` with ``costs``), the later
    ones down from their largest eta, from ``w_top`` or the pool's own start (:func:`later_start`);
    with a ``client``, one task per chain on its worker's copies of the arrays (:func:`chain_points`),
    else in this process in turn."""
    e = _etas(etas)
    with connected(client) as c:
        if chains is not None:
            data = (val_lp, val_y, test_lp, test_y)
            shared = data if c is None else [to_every_worker(x, c) for x in data]
            points = list(chain_points(c, shared, e, w0, chains, costs=costs, w_top=w_top))
        else:
            val, test = (
                (val_lp, test_lp)
                if c is None
                else (floored_blocks(scatter_blocks(x, c), c, sweep_floor()) for x in (val_lp, test_lp))
            )
            points = list(warm_points(val, val_y, test, test_y, e, w0, client=c))
    return [_row(eta, p) for eta, p in zip(e, points)]


def _fan_out(client: Any, fn: Callable, data: tuple, points: Sequence[Any]) -> list:
    with connected(client) as c:
        if c is None:
            return [fn(*data, p) for p in points]
        shared = [to_every_worker(x, c) for x in data]
        workers = worker_addresses(c)
        futures = []
        for i, p in enumerate(points):  # round-robin, each task on its worker's copies
            w = workers[i % len(workers)]
            args = [d.on(w) for d in shared]
            futures.append(c.submit(fn, *args, p, workers=[w], allow_other_workers=True, pure=False))
        return c.gather(futures)


def gamma_sweep(
    val_lp: np.ndarray,
    val_y: np.ndarray,
    test_lp: np.ndarray,
    test_y: np.ndarray,
    etas: Sequence[float] = DEFAULT_ETAS,
    *,
    client: Any = None,
) -> list[dict]:
    """The Rényi sweep of :func:`~evaluation.aggregation.aggregate_submissions` (``gamma_sweep`` rows,
    without the linear pool's point), one independent cold-started task per ``eta``, sorted by ``eta``:
    :func:`warm_sweep` with one chain per ``eta``."""
    return warm_sweep(val_lp, val_y, test_lp, test_y, etas, client=client, chains=len(_etas(etas)))


def leave_one_out(
    val_lp: np.ndarray, val_y: np.ndarray, test_lp: np.ndarray, test_y: np.ndarray, *, client: Any = None
) -> list[float]:
    """The leave-one-out gains of :func:`~evaluation.aggregation.aggregate_submissions` (refit mode):
    private perplexity without each submission minus with all, one task per submission."""
    if val_lp.shape[1] < 2:
        raise InputError("val_lp", "leave-one-out needs at least two submissions")
    base = perplexity(fit_method("log", val_lp, val_y, test_lp)[2], test_y)
    ppl = _fan_out(client, loo_perplexity, (val_lp, val_y, test_lp, test_y), list(range(val_lp.shape[1])))
    return [p - base for p in ppl]
