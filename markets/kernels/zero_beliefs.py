"""A compiled count of zero beliefs (``-inf`` log-probabilities), for the market's zeros policy."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True, error_model="numpy")
def count_neginf(x):
    """Number of ``-inf`` entries of the 1-D array ``x`` (zero beliefs), without a temporary."""
    c = 0
    for i in prange(x.shape[0]):
        if x[i] == -np.inf:
            c += 1
    return c
