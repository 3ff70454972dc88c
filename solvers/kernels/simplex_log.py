"""Normalisation of a log-probability vector in place, and the softmax, for compiled per-item loops.

:func:`normalise_log` is shared by the Rényi aggregator's fixed point (:mod:`aggregators.renyi_kernels`)
and the market equilibrium kernels (:mod:`markets.kernels`): both keep their iterate as normalised
log-values (``logsumexp(u) = 0``). :func:`softmax_into` is the one stable softmax of the log-linear
and multinomial kernels (inlined, so it runs under its caller's fastmath flags).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def softmax_into(u, p):
    """``p <- softmax(u)`` (``p`` may be ``u`` itself); returns ``logsumexp(u)`` (max-shifted)."""
    K = u.shape[0]
    m = u[0]
    for k in range(1, K):
        if u[k] > m:
            m = u[k]
    s = 0.0
    for k in range(K):
        e = math.exp(u[k] - m)
        p[k] = e
        s += e
    inv = 1.0 / s
    for k in range(K):
        p[k] *= inv
    return m + math.log(s)


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
