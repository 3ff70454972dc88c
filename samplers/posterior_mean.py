"""The posterior-mean estimate along a chain, scored against the passes over the data (seed 000
Fig. 4.2 and 4.4: "test log likelihood / test error using posterior mean against number of passes").

At pass count ``P`` the estimate is the mean of the draws from ``discard * P`` to ``P`` (the seed
does not say how it averaged; dropping the first half of the draws so far forgets the start, as a
burn-in that grows with the run, and ``discard=0.2`` with the last checkpoint is the seed's DRBM
rule of a 20 % burn-in).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.errors import InputError


def posterior_mean_curve(
    samples: np.ndarray,
    passes_per_draw: float,
    metric: Callable[[np.ndarray], float],
    *,
    points: int = 40,
    discard: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """``(passes, values)``: ``metric(mean of draws [floor(discard k), k))`` at ``points`` draw counts
    ``k`` spread geometrically up to the last draw; ``passes = k * passes_per_draw``."""
    s = np.asarray(samples, dtype=float)
    if s.ndim != 2 or len(s) < 1:
        raise InputError("samples", f"must be an (n, D) array of at least one draw; got shape {s.shape}")
    if not 0 <= discard < 1:
        raise InputError("discard", f"must be in [0, 1); got {discard!r}")
    cs = np.vstack([np.zeros(s.shape[1]), np.cumsum(s, axis=0)])
    ks = np.unique(np.geomspace(1, len(s), points).round().astype(int))
    values = []
    for k in ks:
        a = min(int(discard * k), k - 1)
        values.append(metric((cs[k] - cs[a]) / (k - a)))
    return ks * passes_per_draw, np.array(values)
