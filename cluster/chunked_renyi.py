"""The Rényi weight problem's blocks, each the in-memory problem's part (issue 18 §4, issue 13 §3).

The in-memory Newton fit of :class:`~aggregators.renyi_weight_hessian.RenyiWeightProblem` (seed 000
§2.6, the fixed point of Eq. 2.8 per item) works on views of its problem: a random quarter of the items
(``subsample``, its warm start), working sets of agents (``restrict``, of the problem or of a
subsample), each a new object whose fixed points start from the aggregate its parent solved last
(``_warm``). Each item's fixed point and curvature depend only on that item and on where its fixed
point started, so a block reproduces the in-memory numbers of its items when it holds the same views
built in the same order (and copies a subsample's items once, not at every pass): :func:`renyi_view` keeps, per block, the problems of the view the driver's
:class:`~cluster.chunked_problem.ChunkedProblem` names by its ``lineage`` (``(id, "restrict", agents)``
and ``(id, "subsample", global items)`` steps from the whole problem) and drops the others, as the
in-memory solver drops its views.

The curvature over sampled items (float32 in Newton's model Hessians) sums one BLAS product per run
of :data:`~aggregators.renyi_weight_hessian.CURVATURE_CHUNK` consecutive items of the item list;
:func:`renyi_curvature_part` cuts a block's items at the same runs and hands over the columns of a run
that a block boundary splits (:class:`~cluster.chunked_hessian.HessianPart`), so the product of every
run is formed from the same columns in the same order as in memory.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from aggregators.renyi_weight_hessian import CURVATURE_CHUNK, curvature_columns

from .chunked_hessian import HessianPart, item_mass

__all__ = ["VIEW_IDS", "renyi_view", "renyi_curvature_part"]

VIEW_IDS = itertools.count(1)
"""Identifiers of the driver's views (unique in the driver's process)."""


def renyi_view(kept: Any, lineage: tuple, start: int, local: np.ndarray | None) -> tuple[Any, np.ndarray]:
    """The block's problem of the view ``lineage`` (built now if new, the other views dropped; ``None``
    when the view's items of the block all have weight 0) and ``local`` (items of the block, indices
    from its first item; ``None``: all the view's) as indices into that problem's terms.

    ``kept``: the block's :class:`~cluster.chunked_problem.Kept` (its whole problem and its ``views``);
    ``start``: the block's first item in the whole array."""
    views = kept.views
    P, mine = kept.problem, None  # mine: the view's items in the block (from its first item); None: all
    for vid, op, arg in lineage:
        if vid not in views:
            if op == "restrict":
                views[vid] = (None if P is None else P.restrict(arg), mine)
            else:  # "subsample": sorted global items
                lo, hi = np.searchsorted(arg, (start, start + kept.shape[0]))
                its = arg[lo:hi] - start
                rel = its if mine is None else np.searchsorted(mine, its)
                keep = P is not None and item_mass(P, rel) > 0
                views[vid] = (P.subsample(rel) if keep else None, its)
        P, mine = views[vid]
    for vid in set(views) - {v for v, _, _ in lineage}:
        del views[vid]
    n_view = kept.shape[0] if mine is None else mine.size
    if local is None:
        return P, np.arange(n_view)
    return P, (local if mine is None else np.searchsorted(mine, local))


def renyi_curvature_part(
    P: Any, x: np.ndarray, dtype: Any, its: np.ndarray, position: int, total: int, K: int
) -> HessianPart:
    """The block's part of the (weighted) curvature sum at ``x`` over its items ``its`` (indices into
    ``P``'s terms), which sit at ``position`` in the whole item list of ``total`` items: the runs inside
    the block summed, the columns of split runs kept. ``P`` is ``None`` for items whose weights are all
    zero: their columns in a split run are zeros, as the in-memory kernel writes them; ``K`` classes."""
    chunk = CURVATURE_CHUNK
    H = np.zeros((x.size, x.size))
    pieces, need = {}, {}
    end = position + its.size
    if P is not None:
        args, agents = P.curvature_inputs(x, its)
        La, labels, w, gamma, log_q, c = args
        out = np.empty((w.size, chunk * (K + 1)), dtype=dtype or np.float64)
    for r in range(position // chunk, (end - 1) // chunk + 1):
        a, b = max(position, r * chunk), min(end, (r + 1) * chunk)
        sl = slice(a - position, b - position)
        size = min(chunk, total - r * chunk)
        if P is None:
            if b - a < size:
                pieces[r], need[r] = [(a, np.zeros((x.size, (b - a) * (K + 1)), dtype=dtype or np.float64))], size
            continue
        Z = curvature_columns(La, labels[sl], w, gamma, log_q[sl], c[sl], out, rows=its[sl], agents=agents)
        if b - a == size:
            H += Z @ Z.T
        else:
            pieces[r], need[r] = [(a, Z.copy())], size
    return HessianPart(H, pieces, need, chunk, K + 1)
