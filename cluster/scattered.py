"""An array's item blocks placed on the Dask workers once, for several fits and predictions (issue 18 §4).

The competition's γ sweep fits the Rényi pool (seed 000 Eq. 2.6-2.8) once per γ on the same public
items and predicts the same private items: :func:`scatter_blocks` places the blocks of items on the
workers round-robin once (from an array in this process, or sliced on each worker from the copy
every worker already holds, :class:`OnEveryWorker`), :func:`cluster.chunked_fit.fit_chunked` takes the result as its
``log_probs``, and :func:`predict_blocks` runs a fitted pool's ``predict`` on each block where it
lies. A pool's aggregate is computed item by item (the Rényi fixed point to its tolerance per item),
so the blocks' predictions are the in-memory ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aggregators.validation import as_floored_log_probs
from solvers.errors import InputError

from .connect import worker_addresses

__all__ = [
    "OnEveryWorker",
    "to_every_worker",
    "Scattered",
    "scatter_blocks",
    "floored_blocks",
    "predict_blocks",
    "item_bounds",
    "aligned",
    "BLOCK_BYTES",
]

BLOCK_BYTES = 64 * 2**20
"""Target size of one block of items (64 MiB of float64)."""


def item_bounds(shape: tuple[int, int, int], chunk_items: Any = None, chunks: Any = None) -> list[tuple[int, int]]:
    """The blocks' item spans ``(start, stop)``: ``chunk_items`` per block, else the array's own item
    ``chunks`` (a dask array's), else about :data:`BLOCK_BYTES` of float64 per block."""
    N, A, K = shape
    if chunk_items is not None:
        if not (isinstance(chunk_items, (int, np.integer)) and chunk_items >= 1):
            raise InputError("chunk_items", f"must be an integer >= 1; got {chunk_items!r}")
        bounds = np.append(np.arange(0, N, chunk_items), N)
    elif chunks is not None:
        bounds = np.cumsum((0, *chunks))
    else:
        bounds = np.append(np.arange(0, N, max(1, BLOCK_BYTES // (8 * A * K))), N)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


@dataclass(frozen=True)
class Scattered:
    """Item blocks of a ``(n_items, n_agents, n_classes)`` array held by the workers: ``blocks`` are
    ``(worker address, future of the block, start, stop)`` in item order."""

    shape: tuple[int, int, int]
    blocks: tuple[tuple[str, Any, int, int], ...]


@dataclass(frozen=True)
class OnEveryWorker:
    """One array with a copy on every worker, each copy its own Dask key (``copies``: worker address
    → future of that worker's copy).

    Why not ``client.scatter(x, broadcast=True)``: that makes one key with a replica on every
    worker, and Dask's active memory manager (on by default, every 2 s) drops the replicas that no
    queued task needs. A task submitted later to another worker then fetches the whole array again
    before it starts: measured with the sweep's chains (2,000 + 2,000 × 269 × 64, 550 MB), the second
    chain started 0.3-1.0 s late, a transfer phase in Dask's task stream. A key with one replica is
    never dropped while its future is held."""

    shape: tuple[int, ...]
    copies: dict[str, Any]

    def on(self, worker: str) -> Any:
        """The future of ``worker``'s copy (of any copy when ``worker`` holds none, e.g. a worker that
        joined later: the task then fetches it)."""
        return self.copies.get(worker, next(iter(self.copies.values())))

    def futures(self) -> list[Any]:
        return list(self.copies.values())


def to_every_worker(x: Any, client: Any) -> OnEveryWorker:
    """``x`` (an array) copied to every worker of ``client`` now, one key per worker (:class:`OnEveryWorker`)."""
    x = np.asarray(x)
    return OnEveryWorker(
        tuple(int(s) for s in x.shape),
        {w: client.scatter(x, workers=[w], hash=False) for w in worker_addresses(client)},
    )


def aligned(x: np.ndarray) -> np.ndarray:
    """``x``, copied when its data is not aligned to its item size: an array Dask received over the
    network can start at any byte of its frame, and the compiled kernels then run 2-3x slower."""
    return x if x.flags.aligned else np.array(x, order="C")


def _rows(whole: np.ndarray, start: int, stop: int) -> np.ndarray:
    return aligned(whole[start:stop])  # a view of the worker's copy when that is aligned


def scatter_blocks(log_probs: Any, client: Any, *, chunk_items: int | None = None) -> Scattered:
    """Place the item blocks of ``log_probs`` on the workers of ``client`` round-robin, once (by
    default about :data:`BLOCK_BYTES` each, and the same number on every worker).

    ``log_probs`` is an array in this process (each block is sent to its worker), or an array
    already on every worker (:class:`OnEveryWorker`; each block is a slice of the copy on its
    worker, nothing moves)."""
    everywhere = isinstance(log_probs, OnEveryWorker)
    shape = tuple(int(s) for s in (log_probs.shape if everywhere else np.shape(log_probs)))
    if len(shape) != 3:
        raise InputError("log_probs", f"must have shape (n_items, n_agents, n_classes); got {shape}")
    workers = worker_addresses(client)
    if chunk_items is None:  # about BLOCK_BYTES each, as many on every worker
        N, A, K = shape
        per_worker = -(-N // max(1, BLOCK_BYTES // (8 * A * K)) // len(workers))
        chunk_items = -(-N // (per_worker * len(workers)))
    blocks = []
    for i, (a, b) in enumerate(item_bounds(shape, chunk_items)):  # type: ignore[arg-type]
        w = workers[i % len(workers)]
        if everywhere:
            fut = client.submit(_rows, log_probs.on(w), a, b, workers=[w], allow_other_workers=True, pure=False)
        else:
            sent = client.scatter(np.ascontiguousarray(log_probs[a:b]), workers=[w])
            fut = client.submit(aligned, sent, workers=[w], allow_other_workers=True, pure=False)
        blocks.append((w, fut, a, b))
    return Scattered(shape, tuple(blocks))  # type: ignore[arg-type]


def _floored(block: np.ndarray, floor: float | None) -> Any:
    return as_floored_log_probs(block, floor=floor, field="log_probs")


def floored_blocks(data: Scattered, client: Any, floor: float | None) -> Scattered:
    """The blocks of ``data`` validated, normalised and floored with ``floor`` once, on the workers
    that hold them (each a :class:`~aggregators.validation.Predictions`): the fits and predictions of
    a pool with that floor then take them as they are, with no pass over the data and no copy (a γ
    sweep fits and predicts the same blocks at every γ). The raw blocks are not changed (they may be
    views of an array other tasks share); their futures are released with ``data``."""
    blocks = tuple(
        (w, client.submit(_floored, f, floor, workers=[w], allow_other_workers=True, pure=False), a, b)
        for w, f, a, b in data.blocks
    )
    return Scattered(data.shape, blocks)


def _predict(pool: Any, block: np.ndarray) -> np.ndarray:
    return pool.predict(block)


def predict_blocks(pool: Any, data: Scattered, client: Any) -> np.ndarray:
    """``pool.predict`` of every block, on the worker that holds it, joined in item order."""
    futs = [
        client.submit(_predict, pool, f, workers=[w], allow_other_workers=True, pure=False)
        for w, f, _, _ in data.blocks
    ]
    return np.concatenate(client.gather(futs))
