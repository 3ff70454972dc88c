"""The mass-preserving probability floor of one normalised log-probability row, compiled.

The rule of :func:`aggregators.validation.apply_floor` (the pools' floor policy, README "Floor
policy"): every probability below ``floor`` becomes exactly ``floor`` and the other entries keep
their proportions, sharing ``1 - m floor`` (``m`` the number floored), i.e. they move by
``shift = log(1 - m floor) - log(1 - s)`` in log space, where ``s`` is the mass the floored entries
had (the unfloored mass of a normalised row is ``1 - s``); an entry that the shift pushes below the
floor is floored in turn (at most K rounds; ``floor < 1/K`` keeps the rule feasible). One kernel
serves the pools' fused validate-and-floor pass (:mod:`aggregators.validation_kernels`) and the
market's floor (:mod:`markets.kernels.floor`), so the two cannot drift apart.

A row with nothing below the floor costs one compare pass (and the copy, when ``dst`` is not
``src``); a floored row takes its masses from one vectorised
:func:`solvers.kernels.fastexp.exp_scaled` (within 2 ulp of ``exp``; a branchy scalar ``exp`` per
floored entry was 3x slower) and each round of the rule is a branch-free pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fastexp import exp_scaled


@njit(cache=True, fastmath={"reassoc", "nsz", "contract"}, error_model="numpy")
def floor_row(src, dst, floor, log_floor, e):
    """``dst`` = the normalised log-probability row ``src`` (K,) floored at ``floor`` (``log_floor =
    log(floor)``) by the rule of the module docstring; ``dst`` may be ``src`` (in place). ``e`` is
    scratch of at least K floats. Returns how many entries were floored (``dst`` marks
    them ``-inf`` while it works)."""
    K = src.shape[0]
    m = 0
    for k in range(K):  # compare only: most rows of dense beliefs stop here
        v = src[k]
        m += v < log_floor
        dst[k] = v
    if m == 0:
        return 0
    exp_scaled(src, 1.0, e[:K])
    s = 0.0
    for k in range(K):
        v = dst[k]
        low = v < log_floor
        s += e[k] if low else 0.0
        dst[k] = -np.inf if low else v
    shift = 0.0
    for _ in range(K):  # each round floors at least one more entry, or ends
        shift = np.log1p(-m * floor) - np.log1p(-s)
        newly = 0
        for k in range(K):  # branch-free (vectorisable): floored entries stay -inf
            v = dst[k]
            hit = v + shift < log_floor and v > -np.inf
            s += e[k] if hit else 0.0
            newly += hit
            dst[k] = -np.inf if hit else v
        if newly == 0:
            break
        m += newly
    for k in range(K):
        v = dst[k]
        dst[k] = log_floor if v == -np.inf else v + shift
    return m
