"""The largest element of a vector, by eight independent running maxima, for compiled loops.

The max-shift of every stable exponential pass (``exp(x - max x)``) was a loop
``m = max(m, x[y])``: one comparison after another, each waiting on the last (about 1.5 ns an
element here, the latency of a compare and select), and LLVM vectorises no floating-point max
reduction without the no-NaN flag, which it then did not use either (measured: 6.7 ms for
``1,000 × 4,096`` numbers with and without it). Eight running maxima over interleaved elements
cut the chain eight-fold: 2.3 ms, the time of reading the numbers (``/tmp/s26/mx2.py``, session 26).
In the Rényi adjoint's exponential pass at ``A = 1,000``, ``K = 4,096`` the shift was 6 of its 12 ms.

Maxima of absolute values and ratios (``vmax_abs``, ``vmax_abs_scaled``, ``vmax_abs_ratio``,
``vmax_gap_ratio``: the residuals and step sizes of the market's Newton loops, a pass over the goods
each) go further: a non-negative double orders as its bit pattern, and LLVM vectorises the integer
max, so each is one vectorised loop: 0.13 ns an element against 0.46 (a product) and 1.0 (a
quotient: the scalar division waited on too) for the loops ``if v > m: m = v`` they replace
(session 43, rows of 1,024-4,096 in L1).

The result is the exact maximum (a max is not rounded, so the order does not matter). In ``vmax`` NaN is
never taken (``v > m`` is false for it); an empty vector or one of NaN and ``-inf`` only gives ``-inf``.
The bit-pattern maxima do take NaN (its pattern lies above infinity's), and divide as NumPy does
(``error_model="numpy"``): a zero price gives ``inf`` or NaN, which no caller accepts as converged.
Until session 44 they raised ``ZeroDivisionError`` there (numba's default error model), reachable from
the market's evaluation when a price flushed to zero.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bitcast import as_float64, as_int64
from .rows import at


@njit(cache=True, inline="always")
def vmax(x):
    """``max(x)`` of a 1-D array (``-inf`` if empty), eight independent comparisons at a time."""
    return vmax_row(x, 0)


@njit(cache=True, inline="always")
def vmax_row(x, i):
    """``max(x[i])`` of a 2-D array without a view of the row (:mod:`solvers.kernels.rows`); of a 1-D
    ``x``, ``max(x)`` (``i`` ignored)."""
    n = x.shape[-1]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    y = 0
    while y + 8 <= n:
        m0 = at(x, i, y) if at(x, i, y) > m0 else m0
        m1 = at(x, i, y + 1) if at(x, i, y + 1) > m1 else m1
        m2 = at(x, i, y + 2) if at(x, i, y + 2) > m2 else m2
        m3 = at(x, i, y + 3) if at(x, i, y + 3) > m3 else m3
        m4 = at(x, i, y + 4) if at(x, i, y + 4) > m4 else m4
        m5 = at(x, i, y + 5) if at(x, i, y + 5) > m5 else m5
        m6 = at(x, i, y + 6) if at(x, i, y + 6) > m6 else m6
        m7 = at(x, i, y + 7) if at(x, i, y + 7) > m7 else m7
        y += 8
    while y < n:
        m0 = at(x, i, y) if at(x, i, y) > m0 else m0
        y += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@njit(cache=True, inline="always")
def _bits(t):
    """The bits of ``t >= 0`` as an int64, 0 for NaN: for non-negative doubles the order of the bit
    patterns is the order of the numbers (``+inf`` above every finite one), and LLVM vectorises a
    max reduction over integers, which it does not over doubles here (see the module docstring)."""
    return as_int64(t) if t == t else 0


@njit(cache=True, error_model="numpy")
def vmax_abs(x):
    """``max(0, max_k |x_k|)`` of a 1-D array (the largest entry of a step, of a correction), a NaN
    entry never taken: the same number as the serial loop ``if v > m: m = v`` from ``m = 0`` (a max
    is exact), vectorised as a max over the bit patterns."""
    m = 0
    for k in range(x.shape[0]):
        b = _bits(abs(x[k]))
        m = b if b > m else m
    return as_float64(m)


@njit(cache=True, error_model="numpy")
def vmax_abs_scaled(x, w):
    """``max(0, max_k |x_k| w_k)`` for ``w >= 0`` (a residual in a weighted max-norm), as :func:`vmax_abs`."""
    m = 0
    for k in range(x.shape[0]):
        b = _bits(abs(x[k]) * w[k])
        m = b if b > m else m
    return as_float64(m)


@njit(cache=True, error_model="numpy")
def vmax_abs_ratio(x, y):
    """``max(0, max_k |x_k| / y_k)`` for ``y > 0`` (a residual relative to the prices), as :func:`vmax_abs`;
    ``inf`` if some ``y_k`` is not positive (a price of zero: ``0 / 0`` would otherwise drop out)."""
    m = 0
    bad = 0
    for k in range(x.shape[0]):
        b = _bits(abs(x[k]) / y[k])
        m = b if b > m else m
        bad |= not y[k] > 0.0
    return np.inf if bad else as_float64(m)


@njit(cache=True, fastmath={"contract"}, error_model="numpy")
def vmax_gap_ratio(t, s, c):
    """``max(0, max_k |t_k - s c_k| / c_k)`` for ``c > 0``: the market's relative clearing error of
    spending ``t`` at prices ``c`` with total wealth ``s``, as :func:`vmax_abs`. ``t_k - s c_k`` may be
    one fused multiply-add, as it was in the evaluation's own loop (whose flags allow contraction).
    ``inf`` if some ``c_k`` is not positive (session 44: a price flushed to zero gave ``0 / 0``, whose
    pattern the max dropped, and a Newton step to it was accepted)."""
    m = 0
    bad = 0
    for k in range(t.shape[0]):
        b = _bits(abs(t[k] - s * c[k]) / c[k])
        m = b if b > m else m
        bad |= not c[k] > 0.0
    return np.inf if bad else as_float64(m)
