"""The log pool's fit on a chunked array, its passes on Dask workers (issue 18 §4; seed 000 Eq. 2.5).

The log pool's objective, gradient, Hessian-vector product and Hessian are sums over items
(:mod:`solvers.problems.loglinear`): ``f = (1/N) sum_n [log Z_n(w) - <w, f_n(y_n)>]`` and so on.
:class:`ChunkedLogLinear` splits the items into blocks, evaluates each block's sum with the
in-memory problem's own kernels (a :class:`~solvers.problems.loglinear.ConditionalLogLinear` built
on the block, its mean times the block's item count), and adds the partial sums on the driver. It
offers the solver protocol (``value``, ``value_and_grad``, ``hvp``, ``hessian``, ``screen``,
``restrict``, the simplex projection), so :func:`solvers.minimize` runs the same working-set Newton
as :class:`aggregators.LogPool` on it; only D-vectors and D x D matrices cross the network.

Sources (:func:`fit_log_pool`'s ``log_probs``):

- a Zarr array, or the path of a Zarr store on disk: when it is more than half the workers' memory
  (or ``persist=False``) every pass reads each block from the store on the worker and keeps
  nothing, so the data may be many times the workers' memory; otherwise each block is read, floored
  once and kept on its worker;
- a ``dask.array`` (or a NumPy array): the floored blocks are computed once and kept in the
  workers' memory, each pass reads them there.

``client=None`` runs the same blocks in this process, one after the other (Zarr stores larger than
this machine's memory fit this way too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aggregators.logpool import LogPool
from aggregators.validation import DEFAULT_FLOOR, as_floored_log_probs
from solvers.errors import InputError
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.progress import ProgressFn
from solvers.simplex import project_simplex

from .connect import connected

__all__ = ["ChunkedLogLinear", "fit_log_pool", "BLOCK_BYTES"]

BLOCK_BYTES = 64 * 2**20
"""Target size of one block of a Zarr store read per task (64 MiB of float64)."""


@dataclass(frozen=True)
class ZarrBlock:
    """Items ``start..stop-1`` of the Zarr array at ``path`` (read on the worker at every pass)."""

    path: str
    start: int
    stop: int


def _build(block: Any, labels: np.ndarray, start: int, floor: float | None) -> tuple[ConditionalLogLinear, int]:
    """The block's problem (floored exactly as :class:`LogPool` floors its input) and its floor count;
    an error names the item in the whole array."""
    if isinstance(block, ZarrBlock):
        import zarr

        block = zarr.open_array(block.path, mode="r")[block.start : block.stop]
    try:
        preds = as_floored_log_probs(block, floor=floor, field="log_probs")
        return ConditionalLogLinear.from_log_probs(preds.log_probs, labels), preds.n_floored
    except InputError as e:
        item = None if e.item is None else e.item + start
        raise InputError(e.field, e.reason, code=e.code, item=item, agent=e.agent) from None


def _block_pass(
    source: Any, labels: np.ndarray, start: int, floor: float | None, cols: Any, op: str, *args: Any
) -> Any:
    """One block's partial sum of ``op`` (``value``, ``value_and_grad``, ``hvp``, ``hessian``,
    ``setup``) on the coordinates ``cols`` (``None``: all)."""
    if isinstance(source, tuple):  # a block built once and kept: (problem, floor count)
        P, n_floored = source
    else:
        P, n_floored = _build(source, labels, start, floor)
    n = P.n_terms
    if op == "setup":  # the label features' sum (the screen) and the floor count
        F = P.features_ndk
        return F[np.arange(n), :, P.labels].sum(axis=0), n_floored
    if cols is not None:
        P = P.restrict(cols)
    if op == "value":
        return n * P.value(args[0])
    if op == "value_and_grad":
        f, g = P.value_and_grad(args[0])
        return n * f, n * g
    if op == "hvp":
        return n * P.hvp(args[0], args[1])
    if len(args) > 1:  # a subsampled Hessian: this block's items of the sample
        return args[1].size * P.hessian(args[0], items=args[1])
    return n * P.hessian(args[0])


class ChunkedLogLinear:
    """The log pool's problem (``ConditionalLogLinear.from_log_probs``) over item blocks.

    Built by :func:`fit_log_pool`; ``blocks`` are ``(source, labels, start)`` with ``source`` a
    :class:`ZarrBlock`, or a block built once (:func:`_build`'s ``(problem, floor count)``, or a Dask
    future of it on a worker).
    """

    constraint = "simplex"
    dtype = np.float64
    mu = None

    def __init__(
        self,
        blocks: list[tuple[Any, Any, int]],
        n_items: int,
        n_agents: int,
        n_classes: int,
        *,
        client: Any,
        floor: float | None,
        cols: np.ndarray | None = None,
    ) -> None:
        self.blocks = blocks
        self.n_terms = n_items
        self.n_classes = n_classes
        self.n_agents = n_agents
        self.client = client
        self.floor = floor
        self.cols = cols
        self.dim = n_agents if cols is None else int(cols.size)
        self.project = project_simplex
        self.prox = lambda x, step=1.0: project_simplex(x)
        self.passes = [0]  # shared with the restricted problems: every pass over the blocks

    def _map(self, op: str, *args: Any, per_block: list | None = None) -> list:
        """``op`` on every block (``per_block``: one extra argument per block, ``None`` skips it)."""
        self.passes[0] += 1
        extra = per_block or [()] * len(self.blocks)
        todo = [(b, e) for b, e in zip(self.blocks, extra) if e is not None]
        if self.client is None:
            return [_block_pass(s, lab, st, self.floor, self.cols, op, *args, *e) for (s, lab, st), e in todo]
        futs = [
            self.client.submit(_block_pass, s, lab, st, self.floor, self.cols, op, *args, *e, pure=False)
            for (s, lab, st), e in todo
        ]
        return self.client.gather(futs)

    def _w(self, x: np.ndarray) -> np.ndarray:
        w = np.ascontiguousarray(x, dtype=np.float64)
        if w.shape != (self.dim,):
            raise InputError("x", f"must have shape ({self.dim},); got {w.shape}")
        return w

    def x0(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    def value(self, x: np.ndarray) -> float:
        return float(sum(self._map("value", self._w(x)))) / self.n_terms

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        parts = self._map("value_and_grad", self._w(x))
        return float(sum(p[0] for p in parts)) / self.n_terms, sum(p[1] for p in parts) / self.n_terms

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        v = np.ascontiguousarray(v, dtype=np.float64)
        return sum(self._map("hvp", self._w(x), v)) / self.n_terms

    def hessian(self, x: np.ndarray, *, items: np.ndarray | None = None) -> np.ndarray:
        """The exact Hessian, or (``items``) the mean over those items only: the subsampled Hessian the
        Newton solver uses above 8,000 items, as the in-memory problem offers it, so both take the
        same path."""
        if items is None:
            H = sum(self._map("hessian", self._w(x))) / self.n_terms
        else:
            its = np.asarray(items, dtype=np.int64)
            starts = [st for _, _, st in self.blocks] + [self.n_terms]
            local = [its[(its >= a) & (its < b)] - a for a, b in zip(starts[:-1], starts[1:])]
            H = sum(self._map("hessian", self._w(x), per_block=[(i,) if i.size else None for i in local])) / its.size
        return 0.5 * (H + H.T)

    def setup(self) -> tuple[np.ndarray, int]:
        """One pass: the sum over items of the label features (for :meth:`screen`) and the number of
        floored entries."""
        parts = self._map("setup")
        self._label_sum = sum(p[0] for p in parts)
        return self._label_sum, int(sum(p[1] for p in parts))

    def screen(self, k: int) -> np.ndarray:
        """As :meth:`ConditionalLogLinear.screen`: the ``k`` agents with the best mean log-likelihood."""
        s = self._label_sum if self.cols is None else self._label_sum[self.cols]
        return np.sort(np.argsort(-s, kind="stable")[: min(k, self.dim)])

    def restrict(self, idx: Any) -> ChunkedLogLinear:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= self.dim)):
            raise InputError("idx", f"must be 1-D indices in 0..{self.dim - 1}")
        cols = idx if self.cols is None else self.cols[idx]
        out = ChunkedLogLinear(
            self.blocks, self.n_terms, self.n_agents, self.n_classes, client=self.client, floor=self.floor, cols=cols
        )
        out._label_sum = self._label_sum
        out.passes = self.passes
        return out


def _zarr_path(log_probs: Any) -> str | None:
    if isinstance(log_probs, (str, Path)):
        return str(log_probs)
    store = getattr(log_probs, "store", None)
    if store is not None and getattr(log_probs, "path", None) is not None and hasattr(store, "root"):
        return str(Path(store.root) / log_probs.path) if log_probs.path else str(store.root)
    return None


def _source_shape(log_probs: Any) -> tuple[str | None, tuple[int, int, int]]:
    """The Zarr path (``None`` for other arrays) and the checked shape ``(N, A, K)``."""
    path = _zarr_path(log_probs)
    if path is not None:
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


def _blocks(
    log_probs: Any,
    path: str | None,
    shape: tuple[int, int, int],
    labels: np.ndarray,
    client: Any,
    floor: float | None,
    chunk_items: int | None,
    persist: bool | None,
) -> list:
    """``(source, labels, start)`` per block: blocks floored once and kept (on the workers, or in this
    process), or Zarr blocks by path, read at every pass (``persist=False``; the default for a Zarr
    store unless twice its size fits in the workers' memory limits)."""
    N, A, K = shape
    if persist is None:
        persist = path is None or (client is not None and 2 * N * A * K * 8 < _cluster_memory(client))
    if chunk_items is not None:
        if not (isinstance(chunk_items, (int, np.integer)) and chunk_items >= 1):
            raise InputError("chunk_items", f"must be an integer >= 1; got {chunk_items!r}")
        bounds = np.append(np.arange(0, N, chunk_items), N)
    elif (
        path is None
        and isinstance(getattr(log_probs, "chunks", None), tuple)
        and isinstance(log_probs.chunks[0], tuple)
    ):
        bounds = np.cumsum((0, *log_probs.chunks[0]))  # a dask array: its own item chunks
    else:
        bounds = np.append(np.arange(0, N, max(1, BLOCK_BYTES // (8 * A * K))), N)
    out: list[tuple[Any, Any, int]] = []
    for a, b in ((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a):
        lab = labels[a:b]
        block = ZarrBlock(path, a, b) if path is not None else log_probs[a:b]
        if not persist:
            out.append((block, lab if client is None else client.scatter(lab), a))
        elif client is None:
            out.append((_build(block if path is not None else np.asarray(block), lab, a, floor), lab, a))
        else:  # read (or computed) on a worker, floored there once, and kept there
            out.append((client.submit(_build, block, lab, a, floor, pure=False), None, a))
    return out


def _cluster_memory(client: Any) -> float:
    """The sum of the workers' memory limits (infinite when a worker has none)."""
    limits = [w.get("memory_limit") or 0 for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    return float("inf") if not limits or 0 in limits else float(sum(limits))


def fit_log_pool(
    log_probs: Any,
    y: Any,
    *,
    client: Any = None,
    floor: float | None = DEFAULT_FLOOR,
    solver: str = "auto",
    tol: float = 1e-10,
    max_iter: int | None = None,
    chunk_items: int | None = None,
    persist: bool | None = None,
    timeout: float = 10.0,
    progress: ProgressFn | None = None,
) -> LogPool:
    """Fit a :class:`~aggregators.LogPool` on a chunked array; returns the fitted pool.

    Parameters
    ----------
    log_probs : log-probabilities ``(n_items, n_agents, n_classes)`` as a Zarr array or store path
        (read per pass on the workers), a ``dask.array`` (its chunks along items; computed once and
        kept on the workers) or a NumPy array (split into blocks).
    y : labels ``(n_items,)`` (held by the driver and sent once, block by block).
    client : ``None`` (the blocks in this process), a ``distributed.Client`` or a scheduler address.
    floor, solver, tol, max_iter : as :class:`LogPool`.
    chunk_items : items per block (default: the dask array's chunks, else about 64 MiB per block).
    persist : keep the floored blocks in the workers' memory (one read) instead of reading a Zarr
        store at every pass; default: kept, except a Zarr store more than half the workers' memory
        (and any Zarr store in-process).
    timeout : seconds to wait for a scheduler given by address.

    The pool's ``fit_result_.extra["passes_on_workers"]`` counts the passes over the blocks.
    """
    from solvers.checks import as_labels

    path, (N, A, K) = _source_shape(log_probs)
    labels = as_labels(np.asarray(y.compute() if hasattr(y, "compute") else y), N, K, field="y")
    with connected(client, timeout=timeout) as c:
        problem = ChunkedLogLinear(
            _blocks(log_probs, path, (N, A, K), labels, c, floor, chunk_items, persist), N, A, K, client=c, floor=floor
        )
        _, n_floored = problem.setup()
        pool = LogPool(solver=solver, floor=floor, tol=tol, max_iter=max_iter)
        pool.n_agents_, pool.n_classes_, pool.n_floored_ = A, K, n_floored
        pool._fit_simplex_weights(problem, progress)
    pool.fit_result_.extra["passes_on_workers"] = problem.passes[0]
    return pool
