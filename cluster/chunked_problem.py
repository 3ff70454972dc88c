"""A pool's weight-learning problem over item blocks, its passes on Dask workers (issue 18 §4).

The three pools whose weights are learnt on the simplex minimise a mean over items (seed 000):

- the log pool (Eq. 2.5), :class:`~solvers.problems.loglinear.ConditionalLogLinear`;
- the linear pool (Eq. 2.4), :class:`~solvers.problems.mixture.MixtureLikelihood`;
- the Rényi pool's weights at a fixed γ (§2.6, the fixed point of Eq. 2.8 per item),
  :class:`~aggregators.renyi_weight_hessian.RenyiWeightProblem`.

So their value, gradient, Hessian-vector product and Hessian are sums of per-block sums.
:class:`ChunkedProblem` builds the in-memory problem on each block of items (on the worker that
holds the block), evaluates the block's sum with that problem's own code (its mean times the block's
item count), and adds the partial sums. It offers the solver protocol, so :func:`solvers.minimize`
runs the same solver on it as the in-memory pool does.

Item weights (``sample_weight``, :func:`aggregators.validation.check_sample_weight`) make every mean
the weighted mean ``sum_n c_n f_n / sum_n c_n``: each block builds its problem with its items'
weights, so its mean times its weight total is its weighted sum, and the driver divides the sum by
the weight total. A block (or a block's part of a subsample) whose weights are all zero adds nothing
(it is validated and floored all the same). The linear pool's problem drops the items of weight 0
(:class:`~solvers.problems.mixture.MixtureLikelihood`), so its terms, and the indices a subsampled
Hessian draws, are the items of positive weight, as in memory.

Reduction (``reduce=``):

- ``"direct"``: one Dask actor per worker holds the worker's blocks (:mod:`cluster.block_actors`); a
  pass calls each straight from the driver (no scheduler on the way: one small pass 2.3 ms against 19 ms
  as tasks on 2 workers, measured) and adds their partial sums on the driver. When an actor is lost with its
  worker the problem drops the actors and goes on as ``"workers"``, which Dask recomputes.
- ``"workers"``: one task per worker and pass evaluates the worker's blocks one after the other and
  adds them up there; the per-worker sums are added pairwise by tasks on the workers (a tree); the
  driver receives one partial sum per pass, whatever the number of blocks or workers.
- ``"driver"``: one task per block, every block's partial sum is sent to the driver and added there.
- ``"auto"`` (default): ``"direct"`` on up to :data:`DIRECT_MAX_GROUPS` workers (the driver then
  receives one partial sum per worker and pass), ``"workers"`` above.

Hooks for the pools' internals live here, not in ``aggregators/``: :func:`_build` (which problem a
block builds, floored as the pool floors it) and :func:`_screen_sum` (the per-agent score behind each
problem's ``screen``, as a sum over items so that blocks add up).
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from aggregators.renyi_weight_hessian import RenyiWeightProblem
from aggregators.validation import as_floored_log_probs, as_log_probs
from solvers.errors import InputError
from solvers.kernels.loglinear import label_feature_sum
from solvers.problems.loglinear import ConditionalLogLinear
from solvers.problems.mixture import MixtureLikelihood
from solvers.simplex import project_simplex

from .block_actors import Holders, Lost
from .chunked_hessian import HessianPart, block_part, item_mass
from .chunked_renyi import VIEW_IDS, renyi_curvature_part, renyi_view
from .connect import DEFAULT_TIMEOUT, gather
from .zarr_rows import read_rows

__all__ = ["ChunkedProblem", "ZarrBlock", "Kept", "KINDS", "build_kept"]

KINDS: dict[str, tuple[str, ...]] = {
    "log": ("hvp", "n_classes", "subsample"),
    "linear": ("hvp", "mixture", "mixture_offset"),
    "renyi": ("subsample",),
}
"""The optional members each kind's in-memory problem offers (beyond value, gradient, Hessian,
``screen`` and ``restrict``); the chunked problem offers exactly these, so ``"auto"`` picks the same
solver."""
_OPTIONAL = ("hvp", "n_classes", "mixture", "mixture_offset", "subsample")
REDUCE = ("auto", "direct", "workers", "driver")
DIRECT_MAX_GROUPS = 16
"""``reduce="auto"`` calls the workers' actors directly up to this many workers (each pass then sends
the driver one partial sum per worker: at 1,000 agents a Hessian is 8 MB), and adds on the workers
above it."""


@dataclass(frozen=True)
class ZarrBlock:
    """Items ``start..stop-1`` of the Zarr array at ``path`` (read on the worker at every pass)."""

    path: str
    start: int
    stop: int


def _build(kind: str, opts: dict, block: Any, labels: np.ndarray, start: int, weights: Any) -> Kept:
    """The block's in-memory problem (its input floored or normalised exactly as the pool does, with
    its items' ``weights``; ``None`` when they are all zero) with its floor count, kept; an error
    names the item in the whole array."""
    owned = isinstance(block, ZarrBlock)  # a fresh array of this task's: floored in place
    if isinstance(block, ZarrBlock):
        block = read_rows(block.path, block.start, block.stop)
    elif isinstance(block, np.ndarray) and not block.flags.aligned:  # received over the network
        block = np.array(block, order="C")
    shape = tuple(np.shape(block))
    left_out = weights is not None and not weights.sum() > 0
    try:
        if kind == "linear":
            lp = as_log_probs(block, kind="log_probs", field="log_probs").log_probs
            return Kept(None if left_out else MixtureLikelihood.from_log_probs(lp, labels, weights), 0, shape)
        preds = as_floored_log_probs(block, floor=opts["floor"], field="log_probs", overwrite=owned)
        P: Any = None
        if left_out:
            pass
        elif kind == "log":
            P = ConditionalLogLinear.from_log_probs(preds.log_probs, labels, dtype=opts["dtype"], sample_weight=weights)
        else:
            P = RenyiWeightProblem(
                preds.log_probs, labels, opts["gamma"], None, tol=opts["tol"], sample_weight=weights, checked=True
            )
        return Kept(P, preds.n_floored, shape)
    except InputError as e:
        item = None if e.item is None else e.item + start
        raise InputError(e.field, e.reason, code=e.code, item=item, agent=e.agent) from None


class Kept:
    """A block's problem built once and kept (on its worker, or in this process; ``None`` when every
    item of the block has weight 0), with its floor count, its shape ``(items, agents, classes)`` and
    the last restriction to a working set (reused while the solver stays on that set)."""

    def __init__(self, problem: Any, n_floored: int, shape: tuple[int, ...]) -> None:
        self.problem, self.n_floored, self.shape = problem, n_floored, shape
        self._key: bytes | None = None
        self._sub: Any = None
        self.views: dict = {}  # the Rényi problem's views (cluster.chunked_renyi.renyi_view)

    def restricted(self, cols: np.ndarray | None) -> Any:
        if cols is None:
            return self.problem
        key = cols.tobytes()
        if key != self._key:
            self._key, self._sub = key, self.problem.restrict(cols)
        return self._sub


def build_kept(kind: str, opts: dict, block: Any, labels: Any, start: int) -> Kept:
    """:func:`_build` once, kept; ``labels``: the block's labels, or ``(labels, item weights)``."""
    labels, weights = labels if isinstance(labels, tuple) else (labels, None)
    return _build(kind, opts, block, labels, start, weights)


def _screen_sum(kind: str, P: Any) -> np.ndarray:
    """The (weighted) sum over the block's items of the per-agent score each problem's ``screen``
    ranks by (its mean): the log-probability each agent gave to the label (the linear pool's in its
    rows' scaling). The log pool's is its own ``screen`` kernel, so a subsample view
    (``P.subsample``) scores its items."""
    if kind == "log":
        out = np.empty(P.dim)
        label_feature_sum(P._F, P.cols, P._y, P._c, P._items, out)
        return out
    if kind == "linear":
        with np.errstate(divide="ignore"):
            own = np.log(P.Q)
    else:
        own = P.L[np.arange(P.n_terms), :, P.labels]
    return own.sum(axis=0) if P.sample_weight is None else P.sample_weight @ own


def _one_block(kind: str, opts: dict, cols: Any, op: str, args: tuple, block: tuple, extra: tuple) -> Any:
    """One block's partial sum of ``op`` on the coordinates ``cols`` (``None``: all); ``extra`` is
    ``(items, position)``: the block's items (local indices; ``None``: all) of a subsample view or of a
    subsampled Hessian, and the position of its first one in the whole list of items. ``None`` when
    the items' weights are all zero (nothing to add)."""
    source, labels, start = block
    local, position = extra
    kept = source if isinstance(source, Kept) else build_kept(kind, opts, source, labels, start)
    if op == "setup":  # the screen's score, the floor count, the linear pool's row-scaling offset
        P = kept.problem
        if P is None:
            return None, kept.n_floored, None
        offset = item_mass(P) * P.mixture_offset if kind == "linear" else 0.0
        return _screen_sum(kind, P), kept.n_floored, offset
    if kind == "renyi":  # cols: the view's lineage; the block holds its views as the in-memory fit does
        P, its = renyi_view(kept, cols, start, local)
        if op == "hessian":
            x, dtype, total = args
            return renyi_curvature_part(P, x, dtype, its, position, total, kept.shape[2])
        if P is None or item_mass(P) == 0:
            return None
        if op == "screen":
            return _screen_sum(kind, P)
        local = None
    elif op == "hessian":
        x, dtype, total = args
        return _hessian_sum(kind, kept, cols, x, dtype, total, local, position)
    elif kept.problem is None or item_mass(kept.problem, local) == 0:
        return None
    elif op == "screen":  # the score over a subsample view's items, every agent
        return _screen_sum(kind, kept.problem if local is None else kept.problem.subsample(local))
    else:
        P = kept.restricted(cols)
    if local is not None:  # a subsample view: the block's items of the subsample
        P = P.subsample(local)
    n = item_mass(P)
    if op == "value":
        return n * P.value(args[0])
    if op == "value_and_grad":
        f, g = P.value_and_grad(args[0])
        return n * f, n * g
    if op == "hvp":
        return n * P.hvp(args[0], args[1])
    return [(start, P.mixture(args[0]))]  # op == "mixture"


def _hessian_sum(
    kind: str, kept: Kept, cols: Any, x: np.ndarray, dtype: Any, total: int, local: Any, position: int
) -> Any:
    """The (weighted) sum of the Hessian over the block's items (``local``: those of the sample, else
    all); in reduced precision (the log pool's model Hessians) a
    :class:`~cluster.chunked_hessian.HessianPart` cut as the in-memory BLAS runs over the whole list
    of ``total`` items are (a block whose weights are all zero hands over zero columns, as in memory)."""
    P = None if kept.problem is None else kept.restricted(cols)
    its = np.arange(kept.shape[0] if P is None else P.n_terms) if local is None else local
    if dtype is not None and np.dtype(dtype) != np.float64:
        return block_part(P, x, dtype, its, position, total, kept.shape[2])
    if P is None or item_mass(P, local) == 0:
        return None
    mass = item_mass(P, local)
    kw = {} if dtype is None else {"dtype": dtype}
    return mass * P.hessian(x, **({} if local is None else {"items": local}), **kw)


def _add(a: Any, b: Any) -> Any:
    """Two partial sums added (tuples entry by entry; lists, the per-item values, joined; ``None``,
    nothing, added to anything is that thing)."""
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, tuple):
        return tuple(_add(x, y) for x, y in zip(a, b))
    return a + b


def group_pass(kind: str, opts: dict, cols: Any, op: str, args: tuple, blocks: list, extras: list) -> Any:
    """The sum of ``op`` over ``blocks`` (those whose extra argument is not ``None``), one after the other."""
    out = None
    for block, extra in zip(blocks, extras):
        if extra is not None:
            out = _add(out, _one_block(kind, opts, cols, op, args, block, extra))
    return out


class ChunkedProblem:
    """A pool's weight problem (``kind``: ``"log"``, ``"linear"`` or ``"renyi"``) over item blocks.

    ``groups`` are ``(worker address or None, blocks)``; a block is ``(source, labels, start)`` with
    ``source`` a :class:`ZarrBlock` or an array (built at every pass), or a :class:`Kept` (or a Dask
    future of one on that worker). Built by :func:`cluster.chunked_fit.fit_chunked`.
    ``bytes_received`` counts the pickled bytes of the partial sums the driver received.
    ``sample_weight``: ``None`` or the checked item weights (``(n_items,)``, held by the driver, which
    divides the blocks' weighted sums by their total; the blocks carry their own). ``timeout``:
    seconds a pass waits on a cluster without workers or scheduler before it raises
    (:func:`cluster.connect.gather`).

    Views share the blocks: :meth:`restrict` (a working set of agents, ``cols``) and, for the log
    pool, :meth:`subsample` (the mean over some items, ``items``: sorted indices into the whole array),
    so the Newton solver's warm start on a random quarter of the items runs here as in memory, on the
    same items for the same seed.
    """

    constraint = "simplex"
    mu = None

    def __init__(
        self,
        kind: str,
        opts: dict,
        groups: list[tuple[str | None, list]],
        shape: tuple[int, int, int],
        *,
        client: Any,
        reduce: str = "auto",
        sample_weight: np.ndarray | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        cols: np.ndarray | None = None,
        items: np.ndarray | None = None,
        lineage: tuple = (),
    ) -> None:
        if reduce not in REDUCE:
            raise InputError("reduce", f"must be one of {', '.join(map(repr, REDUCE))}; got {reduce!r}")
        if reduce == "auto":
            reduce = "direct" if len(groups) <= DIRECT_MAX_GROUPS else "workers"
        self.kind, self.opts, self.groups, self.client, self.reduce = kind, opts, groups, client, reduce
        self.sample_weight, self.timeout = sample_weight, timeout
        self.cols, self.items = cols, items
        self.lineage = lineage  # the Rényi problem's views from the whole problem (cluster.chunked_renyi)
        self.shape = shape
        N, self.n_agents, n_classes = shape
        starts = [st for _, blocks in groups for _, _, st in blocks]
        spans = [(a, min([b for b in starts if b > a], default=N)) for a in starts]
        self._weights = sample_weight  # one per term: every item, except in the linear pool's problem,
        if sample_weight is not None and kind == "linear":  # which drops the items of weight 0
            term = np.concatenate(([0], np.cumsum(sample_weight > 0)))
            spans, N = [(int(term[a]), int(term[b])) for a, b in spans], int(term[-1])
            self._weights = sample_weight[sample_weight > 0]
        self._spans = spans  # each block's terms
        self.n_terms = N if items is None else int(items.size)
        self._total = self._mass(items)
        self.dim = self.n_agents if cols is None else int(cols.size)
        self.dtype = np.dtype(opts.get("dtype", np.float64))  # the storage precision, as in memory
        self.hessian_approximate = kind == "renyi"  # as RenyiWeightProblem: a curvature model, secant-corrected
        self.project = _project_keeping if kind == "renyi" else project_simplex
        offered = KINDS[kind] if cols is None else tuple(m for m in KINDS[kind] if not m.startswith("mixture"))
        for m in _OPTIONAL:  # hide what this kind's in-memory problem does not offer
            if m not in offered:
                setattr(self, m, None)
        if "n_classes" in offered:
            self.n_classes = n_classes
        # shared with the restricted problems; seconds are the driver's wall time waiting on passes (the
        # first pass also waits for the blocks to be built), so a fit's time outside them is the driver's
        self.counters = {"passes": 0, "bytes_received": 0, "pass_seconds": 0.0, "first_pass_seconds": 0.0}
        self._direct: dict[str, Any] = {"holders": None, "failed": None}  # the actors, shared likewise
        self._score: np.ndarray | None = None  # the screen's per-agent score over this view's items

    def _mass(self, items: np.ndarray | None) -> float:
        """The divisor of the mean over the terms ``items`` (global indices; ``None``: all): their
        count, or their weight total (as :func:`cluster.chunked_hessian.item_mass` for one block)."""
        if self._weights is None:
            return self.n_terms if items is None else items.size
        return float(self._weights.sum() if items is None else self._weights[items].sum())

    # -- passes ---------------------------------------------------------------------------------
    def _received(self, value: Any) -> Any:
        self.counters["bytes_received"] += len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        return value

    def _per_block(self, items: np.ndarray | None) -> list:
        """Each block's extra argument for the global sorted ``items`` (``None``: all):
        ``(local indices or None, position of the first in the list)``, or ``None`` (no item there:
        the block is skipped)."""
        if items is None:
            return [(None, a) for a, _ in self._spans]
        out: list = []
        for a, b in self._spans:
            lo, hi = np.searchsorted(items, (a, b))
            out.append((items[lo:hi] - a, int(lo)) if hi > lo else None)
        return out

    def _map(self, op: str, *args: Any, items: np.ndarray | None = None) -> Any:
        """``op`` summed over the blocks, on ``items`` (sorted global indices; default this view's)."""
        t0 = time.perf_counter()
        try:
            return self._pass(op, args, items)
        finally:
            seconds = time.perf_counter() - t0
            self.counters["pass_seconds"] += seconds
            if self.counters["passes"] == 1:
                self.counters["first_pass_seconds"] = seconds

    def _pass(self, op: str, args: tuple, items: np.ndarray | None) -> Any:
        self.counters["passes"] += 1
        extras = iter(self._per_block(self.items if items is None else items))
        work = [(w, blocks, [next(extras) for _ in blocks]) for w, blocks in self.groups]
        head = (self.kind, self.opts, self.lineage if self.kind == "renyi" else self.cols, op, args)
        if self.client is None:
            parts = [group_pass(*head, b, e) for _, b, e in work]
            return _sum([p for p in parts if p is not None])
        if self.reduce == "direct" and self._direct["failed"] is None and not _cut_runs(self.kind, op, args):
            try:
                if self._direct["holders"] is None:
                    self._direct["holders"] = Holders(self.client, [(w, bs) for w, bs, _ in work])
                parts = self._direct["holders"].run(head, [es for _, _, es in work])
                return _sum([self._received(p) for p in parts if p is not None])
            except Lost as exc:  # an actor left with its worker: tasks from here on, which Dask recomputes
                self._direct["failed"] = str(exc)
                self.close()
        submit = self.client.submit
        if self.reduce == "driver":  # one task per block, every partial sum to the driver
            futs = [
                submit(group_pass, *head, [b], [e], pure=False)
                for _, bs, es in work
                for b, e in zip(bs, es)
                if e is not None
            ]
            return _sum([self._received(p) for p in gather(self.client, futs, timeout=self.timeout)])
        futs = [
            submit(group_pass, *head, bs, es, pure=False)  # runs where its kept blocks are (see _groups)
            for w, bs, es in work
            if any(e is not None for e in es)
        ]
        while len(futs) > 1:  # pairwise on the workers: a tree of depth log2(number of workers)
            pairs = [submit(_add, a, b, pure=False) for a, b in zip(futs[::2], futs[1::2])]
            futs = pairs + futs[len(pairs) * 2 :]
        return self._received(gather(self.client, futs, timeout=self.timeout)[0])

    def close(self) -> None:
        """Release the actors (and with them their references to the kept blocks)."""
        holders, self._direct["holders"] = self._direct["holders"], None
        if holders is not None:
            holders.close()

    def _w(self, x: np.ndarray) -> np.ndarray:
        w = np.ascontiguousarray(x, dtype=np.float64)
        if w.shape != (self.dim,):
            raise InputError("x", f"must have shape ({self.dim},); got {w.shape}")
        return w

    def _global(self, items: Any) -> np.ndarray:
        """Sorted distinct term indices of this view, checked as the in-memory ``subsample`` checks
        them, as indices into the whole array."""
        its = np.asarray(items, dtype=np.int64)
        if its.ndim != 1 or its.size == 0 or np.any(np.diff(its) <= 0) or its[0] < 0:
            raise InputError("items", "must be a non-empty sorted 1-D array of distinct term indices")
        if its[-1] >= self.n_terms:
            raise InputError("items", f"must be term indices in 0..{self.n_terms - 1}")
        return its if self.items is None else self.items[its]

    # -- the solver protocol --------------------------------------------------------------------
    def prox(self, x: np.ndarray, step: float = 1.0) -> np.ndarray:
        """The simplex's prox: the projection (a method, not a lambda on the instance: that closure made
        every problem a reference cycle holding its blocks until the cyclic collector ran)."""
        return self.project(x)

    def x0(self) -> np.ndarray:
        return np.full(self.dim, 1.0 / self.dim)

    def value(self, x: np.ndarray) -> float:
        return float(self._map("value", self._w(x))) / self._total

    def value_and_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self._map("value_and_grad", self._w(x))
        return float(f) / self._total, g / self._total

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.value_and_grad(x)[1]

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self._map("hvp", self._w(x), np.ascontiguousarray(v, dtype=np.float64)) / self._total

    def mixture(self, x: np.ndarray) -> np.ndarray:
        """The linear pool's ``(Q w)_n`` per item, in each row's scaling (as the in-memory problem)."""
        return np.concatenate([m for _, m in sorted(self._map("mixture", self._w(x)), key=lambda p: p[0])])

    def hessian(self, x: np.ndarray, *, items: np.ndarray | None = None, dtype: Any = None) -> np.ndarray:
        """The Hessian (the Rényi pool: its curvature), or (``items``) the mean over those items only:
        the subsampled Hessian the Newton solver uses above 8,000 items, as the in-memory problems
        offer it, so both take the same path. ``dtype``: the log and Rényi pools' BLAS precision of the
        blocks' chunk products (``np.float32``: the model Hessians after a warm start, as in memory); the
        linear pool's in-memory Hessian has no such option and ignores it."""
        dtype = None if self.kind == "linear" else dtype
        its = self.items if items is None else self._global(items)
        n = self.n_terms if its is None else its.size
        H = self._map("hessian", self._w(x), dtype, n, items=its)
        H = (H.total() if isinstance(H, HessianPart) else H) / self._mass(its)
        return 0.5 * (H + H.T)

    def setup(self) -> int:
        """One pass: the screen's per-agent score, the floor count (returned) and the linear pool's
        row-scaling offset."""
        score, n_floored, offset = self._map("setup")
        self._score = score
        if "mixture_offset" in KINDS[self.kind]:
            self.mixture_offset = float(offset) / self._total
        return int(n_floored)

    def screen(self, k: int) -> np.ndarray:
        """As the in-memory problems' ``screen``: the ``k`` agents with the best mean score (over a
        subsample view's items: one pass the first time)."""
        if self._score is None:
            self._score = self._map("screen")
        s = self._score if self.cols is None else self._score[self.cols]
        return np.sort(np.argsort(-s, kind="stable")[: min(k, self.dim)])

    def _view(self, cols: np.ndarray | None, items: np.ndarray | None, step: tuple) -> ChunkedProblem:
        out = ChunkedProblem(
            self.kind,
            self.opts,
            self.groups,
            self.shape,
            client=self.client,
            reduce=self.reduce,
            sample_weight=self.sample_weight,
            timeout=self.timeout,
            cols=cols,
            items=items,
            lineage=self.lineage + ((next(VIEW_IDS),) + step,),
        )
        out.counters, out._direct = self.counters, self._direct
        return out

    def restrict(self, idx: Any) -> ChunkedProblem:
        """The problem on the agents ``idx`` (the others at weight zero); each block restricts its own
        problem, whose ``restrict`` checks the indices, at the next pass."""
        idx = np.asarray(idx, dtype=np.int64)
        out = self._view(idx if self.cols is None else self.cols[idx], self.items, ("restrict", idx))
        out._score = self._score
        return out

    def subsample(self, items: Any) -> ChunkedProblem:
        """The log or Rényi pool's problem averaged over the terms ``items`` only (sorted, distinct; as
        :meth:`ConditionalLogLinear.subsample`, :meth:`RenyiWeightProblem.subsample`): each block
        evaluates its own items of the sample."""
        if self.kind == "linear":
            raise InputError("items", f"the {self.kind} pool's problem offers no subsample")
        its = self._global(items)
        return self._view(self.cols, its, ("subsample", its))


def _project_keeping(x: np.ndarray) -> np.ndarray:
    """The Rényi weight problem's projection (:meth:`RenyiWeightProblem.project`): a point already on
    the simplex is kept as it is (the projection's rounding would turn its zeros into 1e-17)."""
    x = np.asarray(x, dtype=np.float64)
    if x.min() >= 0 and abs(x.sum() - 1.0) <= 1e-12:
        return x.copy()
    return project_simplex(x)


def _cut_runs(kind: str, op: str, args: tuple) -> bool:
    """A Hessian pass cut into runs of items (the log pool's in reduced precision, the Rényi pool's
    curvature always): its blocks' partial sums (:class:`HessianPart`) carry the raw
    columns of every run of items their block boundaries cut, and the blocks of one worker are not
    contiguous (Dask places them), so the workers' sums carry many (177 MB over one 20,000 x 269 x 64
    fit, measured): added on the workers by a task they go worker to worker and are multiplied
    there; to the driver they cost 3-4x the pass (212 vs 54 ms at 166 agents). Such a pass runs as
    tasks (``"workers"``) in the ``"direct"`` mode too."""
    if op != "hessian":
        return False
    return kind == "renyi" or (kind == "log" and args[1] is not None and np.dtype(args[1]) != np.float64)


def _sum(parts: list) -> Any:
    out = None
    for p in parts:
        out = _add(out, p)
    return out
