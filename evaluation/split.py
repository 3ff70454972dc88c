"""How a competition's test items are divided: the public/private split and the private subsets.

The public part scores the public leaderboard and is where the aggregation learns its parameters;
the private part scores the final leaderboard and Table 2.3 (seed 000, section 2.7.3.1). Both draws
depend only on their arguments and a seed, so they can be recomputed and never need to be stored
or sent.
"""

from __future__ import annotations

import numpy as np

from solvers.errors import InputError

N_PRIVATE_SUBSETS = 10
"""The seed splits the private set into 10 subsets for mean ± std (section 2.7.3.1)."""


def public_private_split(n_items: int, public_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the public items, fixed by ``seed``.

    Exactly ``round(public_fraction * n_items)`` items are public (at least one public and one
    private item when ``n_items >= 2``); the draw depends only on ``(n_items, public_fraction,
    seed)``.
    """
    if n_items < 2:
        raise InputError("n_items", f"a competition needs at least 2 test items; got {n_items}")
    if not 0.0 < public_fraction < 1.0:
        raise InputError("public_fraction", f"must lie in (0, 1); got {public_fraction!r}")
    n_public = int(round(public_fraction * n_items))
    n_public = min(max(n_public, 1), n_items - 1)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EED]))
    mask = np.zeros(n_items, dtype=bool)
    mask[rng.permutation(n_items)[:n_public]] = True
    return mask


def private_subsets(n_private: int, seed: int, n_subsets: int = N_PRIVATE_SUBSETS) -> list[np.ndarray]:
    """Split private item positions ``0..n_private-1`` into ``n_subsets`` disjoint random parts."""
    n_subsets = max(1, min(int(n_subsets), n_private))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5B5E7]))
    return [np.sort(p) for p in np.array_split(rng.permutation(n_private), n_subsets)]
