"""Normalisation of a log-probability vector in place, for compiled per-item loops.

Shared by the Rényi aggregator's fixed point (:mod:`aggregators.renyi_kernels`) and the market
equilibrium kernels (:mod:`markets.kernels`): both keep their iterate as normalised log-values
(``logsumexp(u) = 0``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def normalise_log(u):
    """Shift ``u`` (1-D) in place so that ``logsumexp(u) = 0`` (max-shifted, one pass of exp)."""
    m = u.max()
    s = 0.0
    for k in range(u.shape[0]):
        s += np.exp(u[k] - m)
    lse = m + np.log(s)
    for k in range(u.shape[0]):
        u[k] -= lse
