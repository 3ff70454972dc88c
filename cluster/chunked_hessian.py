"""The log pool's reduced-precision Hessian over item blocks, rounded as the in-memory one (issue 18 §4).

:meth:`ConditionalLogLinear.hessian` (seed 000 Eq. 2.5's Hessian, ``(1/N) sum_n F_n (diag p_n -
p_n p_nᵀ) F_nᵀ``) sums one BLAS product ``G Gᵀ`` per run of ``chunk`` consecutive items of its item
list, in float32 for the Newton solver's model Hessians after a warm start. Float32 products of other
runs round differently (about 1e-7 relative), and Newton's iterates follow the rounding: on the flat
directions of a pool's optimum the weights end ~1e-9 apart. So the blocks cut their items where the
whole list's runs are cut: a block sums the products of the runs that lie inside it and hands over the
centred columns ``G`` of a run that a block boundary splits (:class:`HessianPart`); when the parts
of such a run meet (on a worker of the reduction tree, or on the driver), its product is formed
from the same columns in the same order as in memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.kernels.loglinear import hessian_chunk
from solvers.problems.loglinear import ConditionalLogLinear

__all__ = ["HessianPart", "block_part", "item_mass", "LOG_HESSIAN_CHUNK"]

LOG_HESSIAN_CHUNK: int = (ConditionalLogLinear.hessian.__kwdefaults__ or {})["chunk"]
"""Items per BLAS product of the in-memory log pool's Hessian."""


class HessianPart:
    """A partial sum of the Hessian (not divided by the item count): ``H`` over the complete runs seen
    so far, and the columns of the runs still split (``pieces[run]``: ``(position, G)`` pairs,
    ``need[run]``: that run's item count). Parts add with ``+``, completing the runs whose pieces meet."""

    def __init__(self, H: np.ndarray, pieces: dict[int, list], need: dict[int, int], chunk: int, K: int) -> None:
        self.H, self.pieces, self.need, self.chunk, self.K = H, pieces, need, chunk, K

    def __add__(self, other: HessianPart) -> HessianPart:
        pieces = {r: list(p) for r, p in self.pieces.items()}
        for r, p in other.pieces.items():
            pieces.setdefault(r, []).extend(p)
        need = {**self.need, **other.need}
        H = self.H + other.H
        for r in [r for r, p in pieces.items() if sum(g.shape[1] for _, g in p) == need[r] * self.K]:
            H += _run_product(sorted(pieces.pop(r), key=lambda q: q[0]), self.chunk, self.K)
            del need[r]
        return HessianPart(H, pieces, need, self.chunk, self.K)

    def total(self) -> np.ndarray:
        """The sum over every item, once every split run is complete."""
        if self.pieces:
            raise RuntimeError(f"runs {sorted(self.pieces)} of the Hessian are missing a block's items")
        return self.H


def _run_product(parts: list, chunk: int, K: int) -> np.ndarray:
    """``Gc Gcᵀ`` of one run from its columns, in a buffer laid out as the in-memory one."""
    d, dtype = parts[0][1].shape[0], parts[0][1].dtype
    G = np.empty((d, chunk * K), dtype=dtype)
    at = 0
    for _, g in parts:
        G[:, at : at + g.shape[1]] = g
        at += g.shape[1]
    Gc = G[:, :at]
    return Gc @ Gc.T


def item_mass(P: Any, items: np.ndarray | None = None) -> float:
    """What an in-memory problem ``P`` divides its sums over the terms ``items`` (``None``: all) by:
    their count, or with item weights (``P.sample_weight``) their weight total; so the mean times
    this is the block's (weighted) sum."""
    c = P.sample_weight
    if c is None:
        return P.n_terms if items is None else items.size
    return float(c.sum() if items is None else c[items].sum())


def block_part(P: Any, x: np.ndarray, dtype: Any, its: np.ndarray, position: int, total: int, K: int) -> HessianPart:
    """The block's part of the (weighted) Hessian sum at ``x`` over its items ``its`` (indices into
    ``P``'s terms), which sit at ``position`` in the whole item list of ``total`` items, cut into the
    in-memory runs. ``P`` is ``None`` for a block whose item weights are all zero: its columns in a
    split run are zeros, as the in-memory kernel writes them (``sqrt(c_n) = 0``); ``K`` classes."""
    chunk = LOG_HESSIAN_CHUNK
    end = position + its.size
    complete, pieces, need = [], {}, {}
    for r in range(position // chunk, (end - 1) // chunk + 1):
        a, b = max(position, r * chunk), min(end, (r + 1) * chunk)
        size = min(chunk, total - r * chunk)
        if b - a == size:
            complete.append((a, b))
            continue
        G = np.zeros((x.size, (b - a) * K), dtype=dtype)
        if P is not None:
            w, nz = P._w(x)
            hessian_chunk(P._F, P.cols, P._y, w, nz, P._c, P._items[its[a - position : b - position]], G)
        pieces[r], need[r] = [(a, G)], size
    H = np.zeros((x.size, x.size))
    if complete and P is not None:
        a, b = complete[0][0] - position, complete[-1][1] - position
        mass = item_mass(P, its[a:b])
        if mass > 0:
            H += mass * P.hessian(x, items=its[a:b], chunk=chunk, dtype=dtype)
    return HessianPart(H, pieces, need, chunk, K)
