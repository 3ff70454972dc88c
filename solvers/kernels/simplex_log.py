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

from .fastexp import exp_scaled
from .fastlog import log_into
from .vmax import vmax

VECTOR_MIN = 16
"""From this many entries :func:`normalise_log_with` and :func:`log_image_with` use the vectorised
``exp`` and ``log`` (:mod:`solvers.kernels.fastexp`, :mod:`solvers.kernels.fastlog`; 1 ns an element
against 5-8 ns for the scalar libm calls); below it the scalar loops (the vector kernels' fixed cost
is more than they save on a few elements)."""


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
    m = vmax(u)
    s = 0.0
    for k in range(u.shape[0]):
        s += np.exp(u[k] - m)
    lse = m + np.log(s)
    for k in range(u.shape[0]):
        u[k] -= lse


@njit(cache=True, fastmath={"nsz", "contract", "reassoc"})
def _vsum(x):
    """``Σ x`` (re-associated, so LLVM vectorises the reduction)."""
    s = 0.0
    for k in range(x.shape[0]):
        s += x[k]
    return s


@njit(cache=True, error_model="numpy")
def normalise_log_with(u, x):
    """:func:`normalise_log` with a scratch ``x`` (same length as ``u``, not ``u``) for the vectorised
    ``exp`` from :data:`VECTOR_MIN` entries. Equal to :func:`normalise_log` to a few ulp; ``u`` with a NaN
    or a ``+inf`` entry, or no finite entry (no vectorised path for those), goes to :func:`normalise_log`."""
    K = u.shape[0]
    if K < VECTOR_MIN:
        normalise_log(u)
        return
    m = vmax(u)  # NaN-blind: the sum below sees a NaN
    if not (-np.inf < m < np.inf) or np.isnan(_vsum(u)):
        normalise_log(u)
        return
    exp_scaled(u, 1.0, x, m)
    lse = m + np.log(_vsum(x))
    for k in range(K):
        u[k] -= lse


@njit(cache=True, error_model="numpy")
def log_image_with(T, out, x):
    """``out <- log T`` normalised (``logsumexp = 0``; any positive factor of ``T`` cancels), with the
    vectorised ``log`` and ``exp`` from :data:`VECTOR_MIN` entries; ``x`` a scratch of ``T``'s length
    (``out``, ``x``, ``T`` three arrays)."""
    if T.shape[0] < VECTOR_MIN:
        for k in range(T.shape[0]):
            out[k] = np.log(T[k])
        normalise_log(out)
        return
    log_into(T, out)
    normalise_log_with(out, x)
