"""How a competition's test items are divided: the public/private split and the private subsets.

The public part scores the public leaderboard and is where the aggregation learns its parameters;
the private part scores the final leaderboard and Table 2.3 (seed 000, section 2.7.3.1: the seed's
Kaggle-in-class competition split its test pixels at random). The organiser chooses how the public
part is drawn (:data:`SPLIT_KINDS`): at random, stratified by label, or by whole groups (beyond the
seeds: when items come in groups, such as the pixels of one image, a random split lets a model learn
a group on the public part and be scored on the same group in private). Every draw depends only on
its arguments and a seed, so it can be recomputed and never needs to be stored or sent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.errors import InputError

N_PRIVATE_SUBSETS = 10
"""The seed splits the private set into 10 subsets for mean ± std (section 2.7.3.1)."""


SPLIT_KINDS: tuple[str, ...] = ("random", "stratified", "grouped")
"""How the organiser may draw the public part: uniformly at random, stratified by label (each class
keeps its share within one item) or by whole groups (e.g. every pixel of one image on one side)."""


def _n_public(n_items: int, public_fraction: float) -> int:
    """``round(public_fraction * n_items)`` kept in ``1..n_items-1``, after checking both arguments."""
    if n_items < 2:
        raise InputError("n_items", f"a competition needs at least 2 test items; got {n_items}")
    if not 0.0 < public_fraction < 1.0:
        raise InputError("public_fraction", f"must lie in (0, 1); got {public_fraction!r}")
    return min(max(int(round(public_fraction * n_items)), 1), n_items - 1)


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), stream]))


def public_private_split(n_items: int, public_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the public items, fixed by ``seed``.

    Exactly ``round(public_fraction * n_items)`` items are public (at least one public and one
    private item when ``n_items >= 2``); the draw depends only on ``(n_items, public_fraction,
    seed)``.
    """
    n_public = _n_public(n_items, public_fraction)
    mask = np.zeros(n_items, dtype=bool)
    mask[_rng(seed, 0x5EED).permutation(n_items)[:n_public]] = True
    return mask


def _codes(values: Any, field: str, n_items: int | None = None) -> np.ndarray:
    """``values`` (one per item, numbers or strings) as integer codes ``0..n_distinct-1``."""
    arr = np.asarray(values)
    if arr.ndim != 1 or (n_items is not None and arr.shape[0] != n_items):
        want = "a 1-D array" if n_items is None else f"one value per test item ({n_items})"
        raise InputError(field, f"needs {want}; got shape {arr.shape}", code="bad_shape")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise InputError(field, "contains NaN or infinity", code="not_finite")
    return np.unique(arr, return_inverse=True)[1].ravel()


def stratified_split(labels: Any, public_fraction: float, seed: int) -> np.ndarray:
    """Public mask with each class's share kept: class ``c`` with ``n_c`` items gets
    ``floor(f n_c)`` or ``ceil(f n_c)`` public items (``f = public_fraction``), the classes with the
    largest remainders ``f n_c - floor(f n_c)`` (ties broken by the seed) rounding up until the total
    is ``round(f n)``, as :func:`public_private_split` has. Within a class the items are drawn at
    random. Fixed by ``(labels, public_fraction, seed)``."""
    y = _codes(labels, "labels")
    n = len(y)
    n_public = _n_public(n, public_fraction)
    rng = _rng(seed, 0x57A7)
    counts = np.bincount(y)
    exact = public_fraction * counts
    take = np.floor(exact).astype(np.int64)
    order = np.lexsort((rng.random(len(counts)), -(exact - take)))  # largest remainder first
    short = n_public - int(take.sum())
    take[order[: max(short, 0)]] += 1
    mask = np.zeros(n, dtype=bool)
    for c in range(len(counts)):
        members = np.flatnonzero(y == c)
        mask[rng.permutation(members)[: take[c]]] = True
    return mask


def grouped_split(groups: Any, public_fraction: float, seed: int) -> np.ndarray:
    """Public mask made of whole groups: no group has items on both sides (an image's pixels, a
    patient's records). Groups are taken in a random order fixed by ``seed``, each joining the public
    part when that brings its size closer to ``round(public_fraction * n)``; at least one group is
    public and one private. Needs at least 2 distinct groups."""
    g = _codes(groups, "groups")
    n = len(g)
    target = _n_public(n, public_fraction)
    sizes = np.bincount(g)
    if len(sizes) < 2:
        raise InputError(
            "groups", f"a grouped split needs at least 2 distinct groups; got {len(sizes)}", code="too_few"
        )
    order = _rng(seed, 0x6209).permutation(len(sizes))
    public = np.zeros(len(sizes), dtype=bool)
    size = 0
    for k in order:
        if abs(size + sizes[k] - target) < abs(size - target):
            public[k], size = True, size + int(sizes[k])
    if not public.any():
        public[order[0]] = True
    if public.all():
        public[order[-1]] = False
    return public[g]


def split_mask(
    kind: str, n_items: int, public_fraction: float, seed: int, *, labels: Any = None, groups: Any = None
) -> np.ndarray:
    """The public mask of a split of ``kind`` (one of :data:`SPLIT_KINDS`): ``labels`` are needed
    by ``"stratified"``, ``groups`` (one value per item) by ``"grouped"``."""
    if kind == "random":
        return public_private_split(n_items, public_fraction, seed)
    if kind == "stratified":
        if labels is None:
            raise InputError("labels", "a stratified split needs the labels", code="missing")
        _codes(labels, "labels", n_items)
        return stratified_split(labels, public_fraction, seed)
    if kind == "grouped":
        if groups is None:
            raise InputError("groups", "a grouped split needs one group value per test item", code="missing")
        _codes(groups, "groups", n_items)
        return grouped_split(groups, public_fraction, seed)
    raise InputError("split", f"must be one of {', '.join(SPLIT_KINDS)}; got {kind!r}", code="unknown_split")


def private_subsets(n_private: int, seed: int, n_subsets: int = N_PRIVATE_SUBSETS) -> list[np.ndarray]:
    """Split private item positions ``0..n_private-1`` into ``n_subsets`` disjoint random parts."""
    n_subsets = max(1, min(int(n_subsets), n_private))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5B5E7]))
    return [np.sort(p) for p in np.array_split(rng.permutation(n_private), n_subsets)]
