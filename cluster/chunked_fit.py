"""Pool fits on a chunked array, their passes on Dask workers (issue 18 §4; seed 000 Eq. 2.4, 2.5, §2.6).

:func:`fit_chunked` fits an unfitted pool, :class:`~aggregators.LogPool`,
:class:`~aggregators.LinearPool` or :class:`~aggregators.RenyiPool` at a fixed γ (its weights), on
``log_probs`` given as a chunked array, with the pool's own hyper-parameters and solver: the problem
is :class:`cluster.chunked_problem.ChunkedProblem`, whose blocks build the in-memory problem on their
items, and :func:`solvers.minimize` runs the same solver on it as the pool's ``fit``. Only D-vectors
and D x D matrices cross the network; by default the partial sums are added on the workers.

Sources (``log_probs``):

- a Zarr array, or the path of a Zarr store on disk: when it is more than half the workers' memory
  (or ``persist=False``) every pass reads each block from the store on the worker and keeps
  nothing, so the data may be many times the workers' memory; otherwise each block is read, floored
  once and kept on its worker;
- a ``dask.array`` (or a NumPy array): the blocks' problems are built once and kept in the workers'
  memory, each pass reads them there.

Blocks are spread round-robin over the workers; each pass runs one task per worker on the blocks it
holds. ``client=None`` runs the same blocks in this process, one after the other (Zarr stores larger
than this machine's memory fit this way too).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import numpy as np

from aggregators.linear import LinearPool
from aggregators.logpool import LogPool
from aggregators.renyi_fixed_point import check_gamma
from aggregators.renyi_pool import LIMIT_START_GAMMA, RenyiPool
from aggregators.validation import DEFAULT_FLOOR, check_sample_weight
from solvers.errors import InputError
from solvers.progress import ProgressFn
from solvers.registry import minimize

from .chunked_problem import ChunkedProblem, ZarrBlock, build_kept
from .connect import DEFAULT_TIMEOUT, connected, gather, worker_addresses
from .scattered import BLOCK_BYTES, Scattered, item_bounds

__all__ = ["fit_chunked", "fit_log_pool", "BLOCK_BYTES"]


def _zarr_path(log_probs: Any) -> str | None:
    if isinstance(log_probs, (str, Path)):
        return str(log_probs)
    store = getattr(log_probs, "store", None)
    if store is not None and getattr(log_probs, "path", None) is not None and hasattr(store, "root"):
        return str(Path(store.root) / log_probs.path) if log_probs.path else str(store.root)
    return None


def _source_shape(log_probs: Any) -> tuple[str | None, tuple[int, int, int]]:
    """The Zarr path (``None`` for other arrays) and the checked shape ``(N, A, K)``."""
    path = None if isinstance(log_probs, Scattered) else _zarr_path(log_probs)
    shape: tuple[int, ...]
    if isinstance(log_probs, Scattered):
        shape = tuple(log_probs.shape)
    elif path is not None:
        import zarr

        try:
            shape = tuple(zarr.open_array(path, mode="r").shape)
        except Exception as exc:  # noqa: BLE001 - any failure to open names the argument
            raise InputError("log_probs", f"cannot open the Zarr array at {path!r}: {exc}") from exc
    else:
        shape = tuple(getattr(log_probs, "shape", None) or np.shape(log_probs))
    if len(shape) != 3 or shape[0] < 1 or shape[1] < 1 or shape[2] < 2:
        raise InputError("log_probs", f"must have shape (n_items, n_agents, n_classes >= 2); got {shape}")
    return path, (int(shape[0]), int(shape[1]), int(shape[2]))


def _kind(pool: Any, n_agents: int) -> tuple[str, dict]:
    """Which problem ``pool`` fits, and the options its blocks need (floor, storage, γ)."""
    if isinstance(pool, LogPool):
        return "log", {"floor": pool.floor, "dtype": pool.dtype}
    if isinstance(pool, LinearPool):
        return "linear", {}
    if isinstance(pool, RenyiPool):
        fixed = not isinstance(pool.gamma, str) and pool.learn_weights and not pool.learn_lam
        if not fixed or pool.lam is not None or pool.cv:
            raise InputError(
                "pool",
                "the chunked fit learns a RenyiPool's weights at a fixed gamma (a number or one per agent); "
                "gamma grids or learnt gamma, lam or cv are not offered",
            )
        return "renyi", {"floor": pool.floor, "gamma": check_gamma(pool.gamma, n_agents), "tol": pool.fixed_point_tol}
    raise InputError("pool", f"must be an unfitted LogPool, LinearPool or RenyiPool; got {type(pool).__name__}")


def _targets(labels: np.ndarray, weights: np.ndarray | None) -> Any:
    """A block's labels, with its item weights when there are some (what :func:`build_kept` takes)."""
    return labels if weights is None else (labels, weights)


def _groups(
    kind: str,
    opts: dict,
    log_probs: Any,
    path: str | None,
    shape: tuple[int, int, int],
    targets: tuple[np.ndarray, np.ndarray | None],
    client: Any,
    how: dict,
) -> list[tuple[str | None, list]]:
    """``(worker, blocks)``: blocks of items spread round-robin over the workers, each built once and
    kept (on its worker, or in this process), or Zarr blocks by path, read at every pass
    (``persist=False``; the default for a Zarr store unless twice its size fits in the workers'
    memory limits). ``targets``: the labels and item weights (``None``: 1 each); ``how``: the
    ``chunk_items``, ``persist`` and ``timeout`` of :func:`fit_chunked`.

    On a cluster every block's input is a task (its problem built on a worker, or, read per pass, its
    labels and weights), never data scattered to one worker: Dask recomputes the results a lost
    worker held on the workers that remain (:func:`cluster.connect.gather`)."""
    N, A, K = shape
    labels, weights = targets
    persist = how["persist"]
    if persist is None:
        persist = path is None or (client is not None and 2 * N * A * K * 8 < _cluster_memory(client))
    if isinstance(log_probs, Scattered):  # blocks already on the workers: built where they lie
        if client is None:
            raise InputError("client", "blocks scattered to a cluster need its client")
        placed_on = {a: (w, f) for w, f, a, _ in log_probs.blocks}
        spans = [(a, b) for _, _, a, b in log_probs.blocks]
    else:
        own = getattr(log_probs, "chunks", None) if path is None else None
        own = own[0] if isinstance(own, tuple) and isinstance(own[0], tuple) else None  # a dask array's
        spans = item_bounds(shape, how["chunk_items"], own)
    workers: list[str | None] = [None] if client is None else list(worker_addresses(client))
    placed: dict[str | None, list] = {w: [] for w in workers}
    for i, (a, b) in enumerate(spans):
        own_targets = (labels[a:b], None if weights is None else weights[a:b])
        w, lab = workers[i % len(workers)], _targets(*own_targets)
        if isinstance(log_probs, Scattered):
            w, block = placed_on[a]
        else:
            block = ZarrBlock(path, a, b) if path is not None else log_probs[a:b]
        if client is None:
            source = (
                build_kept(kind, opts, block if path is not None else np.asarray(block), lab, a) if persist else block
            )
            placed[w].append((source, lab, a))
        elif not persist:  # the labels (and weights) a task on a worker, the block read there at every pass
            placed.setdefault(w, []).append((block, client.submit(_targets, *own_targets, pure=False), a))
        else:  # read (or computed) on a worker, built there once, and kept there
            # no worker restriction: if workers die while the blocks are built (a nanny's memory kill), Dask
            # leaves tasks restricted to departed addresses unrunnable for good, even loose ones; the
            # blocks are grouped below by the worker that holds them
            fut = client.submit(build_kept, kind, opts, block, lab, a, pure=False)
            placed.setdefault(w, []).append((fut, None, a))
    if client is not None:  # group the blocks by the worker that holds their kept problem (or labels)
        futs = [s if persist else t for blocks in placed.values() for s, t, _ in blocks]
        # raises the first block's error (bad input names its item); the kept blocks stay on the workers
        # (fetching them sent the whole array to the driver: 26 of a 28 s fit at 20,000 x 269 x 64)
        gather(client, futs, timeout=how["timeout"], fetch=False)
        holder = {k: min(v, default=None) for k, v in client.who_has(futs).items()}
        regrouped: dict[str | None, list] = {}
        for blocks in placed.values():
            for blk in blocks:
                regrouped.setdefault(holder[blk[0 if persist else 1].key], []).append(blk)
        placed = regrouped
    return [(w, sorted(blocks, key=lambda b: b[2])) for w, blocks in placed.items() if blocks]


def _on_driver(x: Any) -> np.ndarray:
    """A per-item vector (labels, weights) in this process: a dask array computed, else as it is."""
    return np.asarray(x.compute() if hasattr(x, "compute") else x)


def _cluster_memory(client: Any) -> float:
    """The sum of the workers' memory limits (infinite when a worker has none)."""
    limits = [w.get("memory_limit") or 0 for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    return float("inf") if not limits or 0 in limits else float(sum(limits))


def fit_chunked(
    pool: Any,
    log_probs: Any,
    y: Any,
    *,
    client: Any = None,
    chunk_items: int | None = None,
    persist: bool | None = None,
    reduce: str = "auto",
    timeout: float = DEFAULT_TIMEOUT,
    progress: ProgressFn | None = None,
    sample_weight: Any = None,
) -> Any:
    """Fit ``pool`` (an unfitted :class:`LogPool`, :class:`LinearPool`, or :class:`RenyiPool` at a fixed
    γ) on a chunked array with its own hyper-parameters and solver; returns the fitted pool.

    Parameters
    ----------
    log_probs : log-probabilities ``(n_items, n_agents, n_classes)`` as a Zarr array or store path, a
        ``dask.array`` (its chunks along items), a NumPy array (split into blocks), or blocks already
        on the workers (:class:`cluster.scattered.Scattered`: each is built where it lies).
    y : labels ``(n_items,)`` (held by the driver and sent once, block by block).
    client : ``None`` (the blocks in this process), a ``distributed.Client`` or a scheduler address.
    chunk_items : items per block (default: the dask array's chunks, else about 64 MiB per block).
    persist : keep the blocks' problems in the workers' memory (one read) instead of reading a Zarr
        store at every pass; default: kept, except a Zarr store more than half the workers' memory
        (and any Zarr store in-process).
    reduce : ``"auto"`` (default: ``"direct"`` on up to 16 workers, else ``"workers"``), ``"direct"``
        (one Dask actor per worker holds its blocks and a pass calls them straight from the driver,
        partial sums added here; tasks again once an actor is lost), ``"workers"`` (a task per worker
        and pass, partial sums added on the workers, one per pass to the driver) or ``"driver"`` (one
        task per block, every partial sum to the driver); :mod:`cluster.chunked_problem`.
    timeout : seconds to wait for a scheduler given by address, and for a worker when the cluster has
        none left or has lost its scheduler during the fit (then an :class:`InputError` naming
        ``client``, never a wait without end; :func:`cluster.connect.gather`).
    sample_weight : ``None`` or one non-negative weight per item (a NumPy or dask array, held by the
        driver as the labels are), with the in-memory ``fit``'s meaning
        (:func:`aggregators.validation.check_sample_weight`): a weight counts the item that many
        times, weight 0 leaves it out; every mean over items is the weighted mean.

    A worker that leaves the cluster during the fit (its process dies, the nanny restarts it) costs
    time, not the fit: the blocks it held are rebuilt by Dask on the workers that remain (from the
    array slice held in their task, or read again from the Zarr store), so the fit ends with the
    same weights. Blocks given as :class:`~cluster.scattered.Scattered` are data on one worker, not
    tasks: a worker lost with some of them ends the fit with Dask's error.

    The pool's ``fit_result_.extra`` holds ``passes_on_workers`` (passes over the blocks),
    ``driver_bytes`` (pickled bytes of the partial sums the driver received), ``pass_seconds`` (the
    driver's wall time waiting on those passes; the rest of the fit's time is the driver's own work)
    and ``first_pass_seconds`` (the first pass, which also waits for the blocks to be built).
    """
    from solvers.checks import as_labels

    path, (N, A, K) = _source_shape(log_probs)
    kind, opts = _kind(pool, A)
    labels = as_labels(_on_driver(y), N, K, field="y")
    sw = check_sample_weight(None if sample_weight is None else _on_driver(sample_weight), N)
    how = {"chunk_items": chunk_items, "persist": persist, "timeout": timeout}
    opened: list[weakref.ref] = []  # closed at the end (their actors hold the kept blocks), not kept alive
    with connected(client, timeout=timeout) as c:

        def chunked(kind: str, opts: dict) -> tuple[ChunkedProblem, int]:
            groups = _groups(kind, opts, log_probs, path, (N, A, K), (labels, sw), c, how)
            problem = ChunkedProblem(
                kind, opts, groups, (N, A, K), client=c, reduce=reduce, sample_weight=sw, timeout=timeout
            )
            opened.append(weakref.ref(problem))
            return problem, problem.setup()

        def close_all() -> None:
            while opened:
                p = opened.pop()()
                if p is not None:
                    p.close()

        try:
            problem = _fit(pool, kind, opts, chunked, progress)
        finally:
            close_all()
    pool.fit_result_.extra["passes_on_workers"] = problem.counters["passes"]
    pool.fit_result_.extra["driver_bytes"] = problem.counters["bytes_received"]
    pool.fit_result_.extra["pass_seconds"] = problem.counters["pass_seconds"]
    pool.fit_result_.extra["first_pass_seconds"] = problem.counters["first_pass_seconds"]
    direct = problem._direct["failed"]
    if direct is not None:
        pool.fit_result_.extra["direct_passes_stopped"] = direct
    return pool


def _fit(pool: Any, kind: str, opts: dict, chunked: Any, progress: ProgressFn | None) -> ChunkedProblem:
    """The weight fit of :func:`fit_chunked` on the problem ``chunked(kind, opts)`` builds; returns it."""
    problem, n_floored = chunked(kind, opts)
    A, K = problem.n_agents, problem.shape[2]
    pool.n_agents_, pool.n_classes_, pool.n_floored_ = A, K, n_floored
    if kind != "renyi":
        pool._fit_simplex_weights(problem, progress)
    else:  # RenyiPool._fit_at's weights-only path
        x0, opts_solver = None, dict(pool.solver_options or {})
        if pool.weights is not None:  # a start that is a solution (a neighbouring γ's), as in RenyiPool._fit_at
            x0, opts_solver = pool._warm_start(np.asarray(pool.weights, dtype=np.float64), A, pool.tol)
        if x0 is None and np.ndim(pool.gamma) == 0 and pool.gamma <= LIMIT_START_GAMMA:
            # RenyiPool._limit_start: a small shared γ starts from the log pool's weights (its γ → 0
            # limit), with RenyiPool._fit_at's options for a start that is a solution
            start_problem = chunked("log", {"floor": pool.floor, "dtype": "float64"})[0]
            try:
                start = np.clip(minimize(start_problem, "auto", tol=1e-6).x, 0.0, None)
            finally:
                start_problem.close()  # its blocks' second copy leaves the workers now, not at the end
            del start_problem
            x0, opts_solver = pool._warm_start(start, A, pool.tol)
        res = minimize(
            problem, pool.solver, x0=x0, tol=pool.tol, max_iter=pool.max_iter, progress=progress, **opts_solver
        )
        pool.weights_ = np.asarray(res.x) / np.sum(res.x)
        pool.gamma_ = float(opts["gamma"][0]) if np.ndim(pool.gamma) == 0 else opts["gamma"].copy()
        pool._record_result(res)
        pool.loglik_ = -float(res.fun)
    return problem


def fit_log_pool(
    log_probs: Any,
    y: Any,
    *,
    client: Any = None,
    floor: float | None = DEFAULT_FLOOR,
    solver: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    **chunking: Any,
) -> LogPool:
    """:func:`fit_chunked` of ``LogPool(solver=, floor=, tol=, max_iter=)``; ``chunking``: the other
    keyword arguments of :func:`fit_chunked` (``chunk_items``, ``persist``, ``reduce``, ``timeout``,
    ``progress``, ``sample_weight``)."""
    return fit_chunked(
        LogPool(solver=solver, floor=floor, tol=tol, max_iter=max_iter), log_probs, y, client=client, **chunking
    )
